//! ECIES conformance against statements upstream `sp-statement-store` encrypted and signed.
//!
//! Reads `tests/vectors/ecies.json` (vectors the upstream crate made, kept in the repository),
//! or the file named by `ECIES_VECTORS`. Each vector holds a statement
//! upstream built with `Statement::encrypt` to a destination key, signed by //Alice (sr25519),
//! and that key's seed: this crate must decrypt upstream's ciphertext, and upstream's
//! statement must decode, hash and verify here.

mod common;

use common::{array32, bytes};

use serde_json::Value;
use sp_core::{ed25519, sr25519, Pair};
use statement_primitives::{ecies, Error, SignatureVerificationResult, Statement};

fn vectors() -> Vec<Value> {
	let json = common::read_vectors("ECIES_VECTORS", "ecies.json");
	let items = json["vectors"].as_array().unwrap_or_else(|| panic!("no `vectors` array")).clone();
	assert!(!items.is_empty(), "`vectors` is empty: nothing would be checked");
	items
}

#[test]
fn every_upstream_ciphertext_decrypts_with_its_seed_to_the_plaintext() {
	let vectors = vectors();
	for (index, vector) in vectors.iter().enumerate() {
		let label = format!("vectors[{index}]");
		let seed = array32(&vector["dest_seed"]);
		let plaintext = bytes(&vector["plaintext"]);
		let clear = ecies::decrypt_ed25519(&seed, &bytes(&vector["ciphertext"]))
			.unwrap_or_else(|err| panic!("{label}: {err}"));
		assert_eq!(clear, plaintext, "{label}");
		let statement = Statement::from_bytes(&bytes(&vector["encoded"])).unwrap();
		let pair = ed25519::Pair::from_seed(&seed);
		assert_eq!(statement.decrypt_private(&pair), Ok(Some(plaintext)), "{label}: statement");
	}
	println!("decrypted {} upstream ciphertexts", vectors.len());
}

#[test]
fn every_encrypted_statement_decodes_hashes_and_verifies_as_upstream() {
	let alice = sr25519::Pair::from_string("//Alice", None).unwrap();
	for (index, vector) in vectors().iter().enumerate() {
		let label = format!("vectors[{index}]");
		let encoded = bytes(&vector["encoded"]);
		let statement =
			Statement::from_bytes(&encoded).unwrap_or_else(|err| panic!("{label}: decode: {err}"));
		assert_eq!(statement.encode(), encoded, "{label}: re-encoding");
		assert_eq!(statement.hash(), array32(&vector["hash"]), "{label}: hash");
		assert_eq!(statement.data(), Some(&bytes(&vector["ciphertext"])[..]), "{label}: data");
		assert_eq!(statement.decryption_key(), Some(array32(&vector["dest_public"])), "{label}");
		assert_eq!(
			statement.verify_signature(),
			SignatureVerificationResult::Valid(alice.public().0),
			"{label}: signature"
		);
	}
}

#[test]
fn every_destination_public_key_derives_from_its_seed() {
	for (index, vector) in vectors().iter().enumerate() {
		let pair = ed25519::Pair::from_seed(&array32(&vector["dest_seed"]));
		assert_eq!(pair.public().0, array32(&vector["dest_public"]), "vectors[{index}]");
	}
}

#[test]
fn another_key_fails_to_decrypt_every_vector_with_a_typed_error() {
	let vectors = vectors();
	for (index, vector) in vectors.iter().enumerate() {
		let label = format!("vectors[{index}]");
		assert_eq!(vector["wrong_key_fails"], Value::Bool(true), "{label}: as upstream found");
		let mut wrong = array32(&vector["dest_seed"]);
		wrong[0] ^= 1;
		let ciphertext = bytes(&vector["ciphertext"]);
		assert_eq!(
			ecies::decrypt_ed25519(&wrong, &ciphertext),
			Err(Error::DecryptionFailed),
			"{label}"
		);
		// The next vector's key is a real, unrelated key.
		let other = array32(&vectors[(index + 1) % vectors.len()]["dest_seed"]);
		if other != array32(&vector["dest_seed"]) {
			assert_eq!(ecies::decrypt_ed25519(&other, &ciphertext), Err(Error::DecryptionFailed));
		}
	}
}

#[test]
fn this_crate_encrypts_so_that_the_vectors_keys_decrypt() {
	for (index, vector) in vectors().iter().enumerate() {
		let pair = ed25519::Pair::from_seed(&array32(&vector["dest_seed"]));
		let plaintext = bytes(&vector["plaintext"]);
		let mut statement = Statement::new();
		statement.encrypt(&plaintext, &pair.public()).unwrap();
		assert_eq!(statement.decryption_key(), Some(array32(&vector["dest_public"])));
		let sealed = statement.data().unwrap();
		assert_eq!(sealed.len(), bytes(&vector["ciphertext"]).len(), "vectors[{index}]: length");
		assert_eq!(ecies::decrypt_ed25519(&pair.seed(), sealed), Ok(plaintext));
	}
}
