//! Wire-format conformance against vectors made by upstream `sp-statement-store` 29.
//!
//! Reads `tests/vectors/statements.json` (vectors the upstream crate made, kept in the
//! repository), or the file named by `STATEMENT_VECTORS`.

mod common;

use common::{array32, bytes};

use codec::Decode;
use serde_json::Value;
use sp_core::Pair;
use statement_primitives::{
	hash_encoded, statement_allowance_key, Proof, SignatureVerificationResult, Statement,
	StatementAllowance,
};

fn vectors() -> Value {
	common::read_vectors("STATEMENT_VECTORS", "statements.json")
}

fn section<'a>(vectors: &'a Value, name: &str) -> &'a [Value] {
	let items = vectors[name].as_array().unwrap_or_else(|| panic!("no `{name}` array"));
	assert!(!items.is_empty(), "`{name}` is empty: nothing would be checked");
	items
}

fn optional32(value: &Value) -> Option<[u8; 32]> {
	(!value.is_null()).then(|| array32(value))
}

fn number(value: &Value) -> u64 {
	match value {
		Value::String(text) => {
			text.parse().unwrap_or_else(|err| panic!("bad number {text}: {err}"))
		}
		other => other.as_u64().unwrap_or_else(|| panic!("expected a number, got {other}")),
	}
}

fn scheme(statement: &Statement) -> &'static str {
	match statement.proof() {
		None => "unsigned",
		Some(Proof::Sr25519 { .. }) => "sr25519",
		Some(Proof::Ed25519 { .. }) => "ed25519",
		Some(Proof::Secp256k1Ecdsa { .. }) => "ecdsa",
	}
}

/// Decode one vector and check its fields; returns the decoded statement.
fn check_fields(vector: &Value, label: &str) -> Statement {
	let encoded = bytes(&vector["encoded"]);
	let statement =
		Statement::from_bytes(&encoded).unwrap_or_else(|err| panic!("{label}: decode: {err}"));
	assert_eq!(statement.encode(), encoded, "{label}: re-encoding differs");
	assert_eq!(statement.encoded_size(), encoded.len(), "{label}: encoded_size");
	assert_eq!(hash_encoded(&encoded), array32(&vector["hash"]), "{label}: hash of the bytes");
	assert_eq!(statement.hash(), array32(&vector["hash"]), "{label}: statement hash");
	if let Some(len) = vector.get("encoded_len") {
		assert_eq!(encoded.len() as u64, number(len), "{label}: encoded_len");
	}
	assert_eq!(statement.expiry(), number(&vector["expiry"]), "{label}: expiry");
	assert_eq!(statement.channel(), optional32(&vector["channel"]), "{label}: channel");
	assert_eq!(
		statement.decryption_key(),
		optional32(&vector["decryption_key"]),
		"{label}: decryption key"
	);
	let topics: Vec<[u8; 32]> =
		vector["topics"].as_array().expect("topics array").iter().map(array32).collect();
	let decoded_topics: Vec<[u8; 32]> = statement.topics().iter().map(|t| t.0).collect();
	assert_eq!(decoded_topics, topics, "{label}: topics");
	let data = (!vector["data"].is_null()).then(|| bytes(&vector["data"]));
	assert_eq!(statement.data().map(<[u8]>::to_vec), data, "{label}: data");
	if let Some(len) = vector.get("data_len") {
		assert_eq!(statement.data_len() as u64, number(len), "{label}: data_len");
	}
	assert_eq!(scheme(&statement), vector["scheme"].as_str().expect("scheme"), "{label}: scheme");
	statement
}

fn expected_verdict(vector: &Value, label: &str) -> SignatureVerificationResult {
	let signature = &vector["signature"];
	match signature["result"].as_str() {
		Some("valid") => SignatureVerificationResult::Valid(array32(&signature["account"])),
		Some("invalid") => SignatureVerificationResult::Invalid,
		Some("no_signature") => SignatureVerificationResult::NoSignature,
		other => panic!("{label}: unknown verdict {other:?}"),
	}
}

/// The signer seed must give the key in the proof; for the deterministic schemes (ed25519 and
/// RFC 6979 ecdsa) signing again must give the very same bytes.
fn check_signer_seed(vector: &Value, statement: &Statement, label: &str) {
	let Some(seed) = vector.get("signer_seed").filter(|seed| !seed.is_null()) else { return };
	let seed = array32(seed);
	let mut resigned = statement.clone();
	match statement.proof() {
		Some(Proof::Sr25519 { signer, .. }) => {
			assert_eq!(sp_core::sr25519::Pair::from_seed(&seed).public().0, *signer, "{label}");
			return;
		}
		Some(Proof::Ed25519 { .. }) => {
			resigned.sign_ed25519_private(&sp_core::ed25519::Pair::from_seed(&seed))
		}
		Some(Proof::Secp256k1Ecdsa { .. }) => {
			resigned.sign_ecdsa_private(&sp_core::ecdsa::Pair::from_seed(&seed))
		}
		None => return,
	}
	assert_eq!(resigned.encode(), statement.encode(), "{label}: signing again from the seed");
}

#[test]
fn every_statement_vector_round_trips_hashes_and_verifies_as_upstream() {
	let vectors = vectors();
	let statements = section(&vectors, "statements");
	for (index, vector) in statements.iter().enumerate() {
		let label = format!("statements[{index}]");
		let statement = check_fields(vector, &label);
		assert_eq!(statement.verify_signature(), expected_verdict(vector, &label), "{label}");
		if let SignatureVerificationResult::Valid(account) = expected_verdict(vector, &label) {
			assert_eq!(statement.account_id(), Some(account), "{label}: account");
		}
		check_signer_seed(vector, &statement, &label);
		let lenient = Statement::decode(&mut &bytes(&vector["encoded"])[..]).expect("codec decode");
		assert_eq!(lenient, statement, "{label}: codec::Decode agrees with from_bytes");
	}
	println!("checked {} statement vectors", statements.len());
}

#[test]
fn every_tampered_vector_decodes_but_fails_verification() {
	let vectors = vectors();
	let tampered = section(&vectors, "tampered");
	for (index, vector) in tampered.iter().enumerate() {
		let label = format!("tampered[{index}]");
		let statement = check_fields(vector, &label);
		assert_eq!(statement.verify_signature(), SignatureVerificationResult::Invalid, "{label}");
		assert_eq!(expected_verdict(vector, &label), SignatureVerificationResult::Invalid);
	}
	println!("checked {} tampered vectors", tampered.len());
}

#[test]
fn every_malformed_vector_is_refused_as_upstream_refuses_it() {
	let vectors = vectors();
	let malformed = section(&vectors, "malformed");
	for vector in malformed {
		let name = vector["name"].as_str().unwrap_or("unnamed");
		let encoded = bytes(&vector["encoded"]);
		let upstream_decodes = vector["upstream_decodes"].as_bool().expect("upstream_decodes");
		let lenient = Statement::decode(&mut &encoded[..]);
		assert_eq!(lenient.is_ok(), upstream_decodes, "{name}: codec::Decode verdict");
		if !upstream_decodes {
			let err = Statement::from_bytes(&encoded).expect_err(name);
			println!("{name}: {err}");
		}
	}
	println!("checked {} malformed vectors", malformed.len());
}

#[test]
fn every_allowance_vector_has_the_same_key_and_value() {
	let vectors = vectors();
	let allowances = section(&vectors, "allowances");
	for (index, vector) in allowances.iter().enumerate() {
		let label = format!("allowances[{index}]");
		let account = array32(&vector["account"]);
		assert_eq!(statement_allowance_key(&account), bytes(&vector["storage_key"]), "{label}");
		let allowance = StatementAllowance::new(
			number(&vector["max_count"]) as u32,
			number(&vector["max_size"]) as u32,
		);
		let value = bytes(&vector["value"]);
		assert_eq!(codec::Encode::encode(&allowance), value, "{label}: value");
		assert_eq!(StatementAllowance::decode(&mut &value[..]).ok(), Some(allowance), "{label}");
	}
	println!("checked {} allowance vectors", allowances.len());
}
