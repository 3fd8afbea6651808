//! Who signed a statement, and whether the signature holds.

use crate::AccountId;
use sp_core::{crypto::Pair as _, ecdsa, ed25519, sr25519};

/// A statement's authenticity proof: a signature over its signed bytes and the signer's key.
///
/// SCALE: a one-byte kind (0 sr25519, 1 ed25519, 2 secp256k1 ecdsa), then signature, then signer.
#[derive(Clone, Debug, PartialEq, Eq, codec::Encode, codec::Decode, codec::MaxEncodedLen)]
pub enum Proof {
	/// An sr25519 signature and public key.
	Sr25519 {
		/// The signature.
		signature: [u8; 64],
		/// The public key, which is also the account id.
		signer: [u8; 32],
	},
	/// An ed25519 signature and public key.
	Ed25519 {
		/// The signature.
		signature: [u8; 64],
		/// The public key, which is also the account id.
		signer: [u8; 32],
	},
	/// A recoverable secp256k1 ecdsa signature and compressed public key.
	Secp256k1Ecdsa {
		/// The signature (r, s, recovery id).
		signature: [u8; 65],
		/// The compressed public key; the account id is its blake2-256.
		signer: [u8; 33],
	},
}

/// Outcome of checking a statement's proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureVerificationResult {
	/// The signature holds; the statement belongs to this account.
	Valid(AccountId),
	/// There is a proof but its signature does not hold for the signed bytes.
	Invalid,
	/// The statement carries no proof.
	NoSignature,
}

impl Proof {
	/// The account the proof's signer is charged as.
	pub fn account_id(&self) -> AccountId {
		match self {
			Proof::Sr25519 { signer, .. } | Proof::Ed25519 { signer, .. } => *signer,
			Proof::Secp256k1Ecdsa { signer, .. } => sp_crypto_hashing::blake2_256(signer),
		}
	}

	/// Whether the signature holds for `message`.
	pub fn verify(&self, message: &[u8]) -> bool {
		match self {
			Proof::Sr25519 { signature, signer } => sr25519::Pair::verify(
				&sr25519::Signature::from_raw(*signature),
				message,
				&sr25519::Public::from_raw(*signer),
			),
			Proof::Ed25519 { signature, signer } => ed25519::Pair::verify(
				&ed25519::Signature::from_raw(*signature),
				message,
				&ed25519::Public::from_raw(*signer),
			),
			Proof::Secp256k1Ecdsa { signature, signer } => ecdsa::Pair::verify(
				&ecdsa::Signature::from_raw(*signature),
				message,
				&ecdsa::Public::from_raw(*signer),
			),
		}
	}

	/// Sign `message` with an sr25519 key.
	pub fn sign_sr25519(pair: &sr25519::Pair, message: &[u8]) -> Self {
		Proof::Sr25519 { signature: pair.sign(message).0, signer: pair.public().0 }
	}

	/// Sign `message` with an ed25519 key.
	pub fn sign_ed25519(pair: &ed25519::Pair, message: &[u8]) -> Self {
		Proof::Ed25519 { signature: pair.sign(message).0, signer: pair.public().0 }
	}

	/// Sign `message` with a secp256k1 ecdsa key (blake2-256 of the message is what is signed).
	pub fn sign_ecdsa(pair: &ecdsa::Pair, message: &[u8]) -> Self {
		Proof::Secp256k1Ecdsa { signature: pair.sign(message).0, signer: pair.public().0 }
	}
}
