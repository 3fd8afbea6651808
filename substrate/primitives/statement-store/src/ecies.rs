//! ECIES: the data of a "posted" statement, encrypted to the recipient's ed25519 key.
//!
//! The scheme is upstream `sp-statement-store`'s, so that either side can be this crate or
//! upstream:
//! - the destination's ed25519 public key is taken to its x25519 (Montgomery) form;
//! - a fresh x25519 ephemeral secret gives `shared = DH(ephemeral, destination) ||
//!   ephemeral_public`;
//! - HKDF-SHA256 with no salt and empty info expands `shared` to a 32-byte AES-256 key (only
//!   the key: the nonce is random);
//! - AES-256-GCM with a random 12-byte nonce and no associated data;
//! - the output is `ephemeral_public (32) || nonce (12) || ciphertext || tag (16)`.
//!
//! The recipient's x25519 secret is the first 32 bytes of SHA-512 of its ed25519 seed, as in
//! ed25519 itself, so one seed both signs and decrypts.
//!
//! ```
//! use sp_core::Pair;
//! use statement_primitives::ecies;
//!
//! let recipient = sp_core::ed25519::Pair::from_string("//Alice", None).unwrap();
//! let sealed = ecies::encrypt_ed25519(&recipient.public(), b"for Alice only").unwrap();
//! assert_eq!(ecies::decrypt_ed25519(&recipient.seed(), &sealed).unwrap(), b"for Alice only");
//! ```

use crate::{Error, Result};
use aes_gcm::{aead::Aead, Aes256Gcm, KeyInit};
use rand::{rngs::OsRng, RngCore};
use sha2::Digest;
use sp_core::ed25519;
use x25519_dalek::{EphemeralSecret, PublicKey, SharedSecret, StaticSecret};
use zeroize::Zeroizing;

/// Bytes of the ephemeral x25519 public key that opens the output.
pub const EPHEMERAL_LEN: usize = 32;
/// Bytes of the AES-GCM nonce that follows it.
pub const NONCE_LEN: usize = 12;
/// Bytes of the AES-GCM tag that closes the output.
pub const TAG_LEN: usize = 16;
/// Bytes ECIES adds to the plaintext.
pub const OVERHEAD: usize = EPHEMERAL_LEN + NONCE_LEN + TAG_LEN;

/// The x25519 public key an ed25519 public key stands for (Edwards to Montgomery).
pub fn x25519_public(ed25519_public: &[u8; 32]) -> Result<PublicKey> {
	let point = curve25519_dalek::edwards::CompressedEdwardsY(*ed25519_public)
		.decompress()
		.ok_or(Error::NotEd25519Public)?;
	Ok(PublicKey::from(point.to_montgomery().to_bytes()))
}

/// The x25519 secret of an ed25519 seed: the first half of SHA-512 of the seed (the clamping
/// is x25519's own).
pub fn x25519_secret(ed25519_seed: &[u8; 32]) -> StaticSecret {
	let digest = Zeroizing::new(sha2::Sha512::digest(ed25519_seed));
	let mut half = Zeroizing::new([0u8; 32]);
	half.copy_from_slice(&digest[..32]);
	StaticSecret::from(*half)
}

/// Encrypt `plaintext` to an ed25519 public key; [`decrypt_ed25519`] with its seed opens it.
pub fn encrypt_ed25519(dest: &ed25519::Public, plaintext: &[u8]) -> Result<Vec<u8>> {
	encrypt_x25519(&x25519_public(&dest.0)?, plaintext)
}

/// Encrypt `plaintext` to an x25519 public key; [`decrypt_x25519`] with its secret opens it.
pub fn encrypt_x25519(dest: &PublicKey, plaintext: &[u8]) -> Result<Vec<u8>> {
	let ephemeral = EphemeralSecret::random_from_rng(OsRng);
	let ephemeral_public = PublicKey::from(&ephemeral);
	let cipher = cipher(&ephemeral.diffie_hellman(dest), &ephemeral_public)?;
	let mut nonce = [0u8; NONCE_LEN];
	OsRng.fill_bytes(&mut nonce);
	let sealed = cipher.encrypt(&nonce.into(), plaintext).map_err(|_| Error::EncryptionFailed)?;
	let mut out = Vec::with_capacity(EPHEMERAL_LEN + NONCE_LEN + sealed.len());
	out.extend_from_slice(ephemeral_public.as_bytes());
	out.extend_from_slice(&nonce);
	out.extend_from_slice(&sealed);
	Ok(out)
}

/// Decrypt what [`encrypt_ed25519`] made for the public key of `seed`.
pub fn decrypt_ed25519(seed: &[u8; 32], encrypted: &[u8]) -> Result<Vec<u8>> {
	decrypt_x25519(&x25519_secret(seed), encrypted)
}

/// Decrypt what [`encrypt_x25519`] made for the public key of `secret`.
pub fn decrypt_x25519(secret: &StaticSecret, encrypted: &[u8]) -> Result<Vec<u8>> {
	let header = EPHEMERAL_LEN + NONCE_LEN;
	let too_short = || Error::EncryptedTooShort { len: encrypted.len(), min: header };
	let ephemeral: [u8; EPHEMERAL_LEN] =
		encrypted.get(..EPHEMERAL_LEN).and_then(|b| b.try_into().ok()).ok_or_else(too_short)?;
	let nonce: [u8; NONCE_LEN] = encrypted
		.get(EPHEMERAL_LEN..header)
		.and_then(|b| b.try_into().ok())
		.ok_or_else(too_short)?;
	let ephemeral = PublicKey::from(ephemeral);
	let cipher = cipher(&secret.diffie_hellman(&ephemeral), &ephemeral)?;
	cipher.decrypt(&nonce.into(), &encrypted[header..]).map_err(|_| Error::DecryptionFailed)
}

/// AES-256-GCM keyed by HKDF-SHA256 (no salt, empty info) of `DH || ephemeral_public`.
fn cipher(shared: &SharedSecret, ephemeral_public: &PublicKey) -> Result<Aes256Gcm> {
	// A low-order key makes the DH output a constant: encrypting to it, or accepting data
	// made with it, would be encrypting in the clear.
	if !shared.was_contributory() {
		return Err(Error::WeakKey);
	}
	let mut material = Zeroizing::new([0u8; 64]);
	material[..32].copy_from_slice(shared.as_bytes());
	material[32..].copy_from_slice(ephemeral_public.as_bytes());
	let mut key = Zeroizing::new([0u8; 32]);
	hkdf::Hkdf::<sha2::Sha256>::new(None, &material[..])
		.expand(&[], &mut key[..])
		.map_err(|_| Error::EncryptionFailed)?;
	Ok(Aes256Gcm::new(&(*key).into()))
}

#[cfg(test)]
mod tests {
	use super::*;
	use sp_core::Pair;

	fn alice() -> ed25519::Pair {
		ed25519::Pair::from_string("//Alice", None).unwrap()
	}

	#[test]
	fn data_encrypted_to_a_key_decrypts_with_its_seed_only() {
		let (alice, bob) = (alice(), ed25519::Pair::from_string("//Bob", None).unwrap());
		for plaintext in [&b""[..], b"x", &[7u8; 5000][..]] {
			let sealed = encrypt_ed25519(&alice.public(), plaintext).unwrap();
			assert_eq!(sealed.len(), plaintext.len() + OVERHEAD);
			assert_eq!(decrypt_ed25519(&alice.seed(), &sealed).unwrap(), plaintext);
			assert_eq!(decrypt_ed25519(&bob.seed(), &sealed), Err(Error::DecryptionFailed));
		}
	}

	#[test]
	fn each_encryption_uses_a_fresh_ephemeral_key_and_nonce() {
		let first = encrypt_ed25519(&alice().public(), b"same").unwrap();
		let second = encrypt_ed25519(&alice().public(), b"same").unwrap();
		let nonce = EPHEMERAL_LEN..EPHEMERAL_LEN + NONCE_LEN;
		assert_ne!(first[..EPHEMERAL_LEN], second[..EPHEMERAL_LEN]);
		assert_ne!(first[nonce.clone()], second[nonce]);
	}

	#[test]
	fn any_altered_byte_fails_decryption_with_a_typed_error() {
		let pair = alice();
		let sealed = encrypt_ed25519(&pair.public(), b"do not touch").unwrap();
		for at in 0..sealed.len() {
			let mut tampered = sealed.clone();
			tampered[at] ^= 0x01;
			let result = decrypt_ed25519(&pair.seed(), &tampered);
			assert!(
				matches!(result, Err(Error::DecryptionFailed | Error::WeakKey)),
				"byte {at}: {result:?}"
			);
		}
	}

	#[test]
	fn truncated_data_is_an_error_not_a_panic() {
		let pair = alice();
		let sealed = encrypt_ed25519(&pair.public(), b"cut short").unwrap();
		for len in 0..EPHEMERAL_LEN + NONCE_LEN {
			assert_eq!(
				decrypt_ed25519(&pair.seed(), &sealed[..len]),
				Err(Error::EncryptedTooShort { len, min: EPHEMERAL_LEN + NONCE_LEN })
			);
		}
		for len in EPHEMERAL_LEN + NONCE_LEN..sealed.len() {
			assert_eq!(decrypt_ed25519(&pair.seed(), &sealed[..len]), Err(Error::DecryptionFailed));
		}
	}

	#[test]
	fn a_low_order_ephemeral_key_is_refused() {
		// The identity point: DH with it is zero whatever the secret.
		let mut forged = vec![0u8; EPHEMERAL_LEN + NONCE_LEN + TAG_LEN + 4];
		forged[..EPHEMERAL_LEN].copy_from_slice(&[0; 32]);
		assert_eq!(decrypt_ed25519(&alice().seed(), &forged), Err(Error::WeakKey));
	}

	#[test]
	fn a_low_order_or_off_curve_destination_is_refused() {
		// The ed25519 identity (y = 1) is on the curve but of order one.
		let mut identity = [0u8; 32];
		identity[0] = 1;
		assert_eq!(
			encrypt_ed25519(&ed25519::Public::from_raw(identity), b"x"),
			Err(Error::WeakKey)
		);
		let off_curve = (0u8..=255)
			.map(|byte| [byte; 32])
			.find(|bytes| x25519_public(bytes).is_err())
			.expect("some 32-byte pattern is not a curve point");
		assert_eq!(
			encrypt_ed25519(&ed25519::Public::from_raw(off_curve), b"x"),
			Err(Error::NotEd25519Public)
		);
	}

	#[test]
	fn the_x25519_forms_of_a_seed_and_its_public_key_agree() {
		let pair = alice();
		let from_secret = PublicKey::from(&x25519_secret(&pair.seed()));
		assert_eq!(from_secret, x25519_public(&pair.public().0).unwrap());
	}
}
