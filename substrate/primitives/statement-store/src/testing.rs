//! The one way tests of this workspace build statements and keys (feature `testing`).
//!
//! Enable it in a crate's `[dev-dependencies]` with
//! `statement-primitives = { workspace = true, features = ["testing"] }`; nothing outside tests
//! should need it.
//!
//! ```
//! use sp_core::Pair;
//! use statement_primitives::testing::{ed25519_pair, TestStatement};
//! use statement_primitives::{SignatureVerificationResult, Topic};
//!
//! let alice = ed25519_pair(1);
//! let statement = TestStatement::new()
//!     .expiry(2_000_000_000, 7)
//!     .topic(0, Topic([1; 32]))
//!     .data(*b"hello")
//!     .signed_ed25519(&alice);
//! assert_eq!(statement.verify_signature(), SignatureVerificationResult::Valid(alice.public().0));
//! ```

use crate::{Channel, DecryptionKey, Statement, Topic};
use sp_core::{ed25519, sr25519, Pair};

/// A statement under construction: each method sets one field, a finisher signs (or not).
///
/// It starts empty, as [`Statement::new`] does: expiry 0, no topics, channel, key or data.
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until signed_ed25519, signed_sr25519 or unsigned"]
pub struct TestStatement(Statement);

impl TestStatement {
	/// An empty, unsigned statement with expiry 0.
	pub fn new() -> Self {
		Self::default()
	}

	/// Expire at unix second `expires_at`; `sequence` orders statements of that second.
	pub fn expiry(mut self, expires_at: u32, sequence: u32) -> Self {
		self.0.set_expiry_from_parts(expires_at, sequence);
		self
	}

	/// The whole 64-bit expiry at once, for tests of its encoding.
	pub fn raw_expiry(mut self, expiry: u64) -> Self {
		self.0.set_expiry(expiry);
		self
	}

	/// Topic number `index` (0-based), as [`Statement::set_topic`] places it.
	pub fn topic(mut self, index: usize, topic: Topic) -> Self {
		self.0.set_topic(index, topic);
		self
	}

	/// `topics` as topics 0, 1, … in their order.
	pub fn topics(self, topics: &[Topic]) -> Self {
		topics.iter().enumerate().fold(self, |built, (index, topic)| built.topic(index, *topic))
	}

	/// Post the statement to `key`; `None` leaves it a broadcast.
	pub fn decryption_key(mut self, key: impl Into<Option<DecryptionKey>>) -> Self {
		if let Some(key) = key.into() {
			self.0.set_decryption_key(key);
		}
		self
	}

	/// Put the statement on `channel`; `None` leaves it on none.
	pub fn channel(mut self, channel: impl Into<Option<Channel>>) -> Self {
		if let Some(channel) = channel.into() {
			self.0.set_channel(channel);
		}
		self
	}

	/// Expire `seconds` from now (the wall clock); `sequence` orders statements of that
	/// second. For tests against a node, which checks expiry against its own clock.
	pub fn expiring_in(self, seconds: u64, sequence: u32) -> Self {
		let now = std::time::SystemTime::now()
			.duration_since(std::time::UNIX_EPOCH)
			.expect("the clock is past 1970")
			.as_secs();
		self.expiry(u32::try_from(now + seconds).expect("expiry fits u32"), sequence)
	}

	/// Carry `data` encrypted to `dest` (upstream's ECIES), with `dest` as the decryption key.
	pub fn encrypted_to(mut self, dest: &ed25519::Public, data: &[u8]) -> Self {
		self.0.encrypt(data, dest).expect("encrypting to an ed25519 key");
		self
	}

	/// Carry `data` in the clear.
	pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
		self.0.set_plain_data(data.into());
		self
	}

	/// The statement signed with an ed25519 key.
	pub fn signed_ed25519(mut self, pair: &ed25519::Pair) -> Statement {
		self.0.sign_ed25519_private(pair);
		self.0
	}

	/// The statement signed with an sr25519 key.
	pub fn signed_sr25519(mut self, pair: &sr25519::Pair) -> Statement {
		self.0.sign_sr25519_private(pair);
		self.0
	}

	/// The statement without a proof.
	pub fn unsigned(self) -> Statement {
		self.0
	}
}

/// Test key `n`'s seed: `n` little-endian in the first four bytes, `0x5a` in the last, zeros
/// between. Distinct `n` give distinct keys, and a seed costs no derivation.
fn seed(n: u32) -> [u8; 32] {
	let mut seed = [0u8; 32];
	seed[..4].copy_from_slice(&n.to_le_bytes());
	seed[31] = 0x5a;
	seed
}

/// The `n`th ed25519 test key.
pub fn ed25519_pair(n: u32) -> ed25519::Pair {
	ed25519::Pair::from_seed(&seed(n))
}

/// The `n`th sr25519 test key.
pub fn sr25519_pair(n: u32) -> sr25519::Pair {
	sr25519::Pair::from_seed(&seed(n))
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::SignatureVerificationResult;

	#[test]
	fn a_statement_expiring_in_an_hour_expires_an_hour_from_now_and_encrypts_to_its_key() {
		let now =
			std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
		let dest = ed25519_pair(3);
		let statement = TestStatement::new()
			.expiring_in(3600, 9)
			.encrypted_to(&dest.public(), b"secret")
			.signed_ed25519(&ed25519_pair(1));
		let expires_at = statement.expiry() >> 32;
		assert!((now + 3600..=now + 3601 + 60).contains(&expires_at), "{expires_at} vs {now}");
		assert_eq!(statement.expiry() as u32, 9);
		assert_eq!(statement.decryption_key(), Some(dest.public().0));
		assert_ne!(statement.data(), Some(&b"secret"[..]), "the data is not in the clear");
	}

	#[test]
	fn what_the_builder_sets_is_what_the_statement_carries() {
		let statement = TestStatement::new()
			.expiry(2_000_000_000, 7)
			.topics(&[Topic([1; 32]), Topic([2; 32])])
			.topic(3, Topic([4; 32]))
			.decryption_key([5; 32])
			.channel([6; 32])
			.data(vec![1, 2, 3])
			.unsigned();
		assert_eq!(statement.expiration_timestamp_secs(), 2_000_000_000);
		assert_eq!(statement.expiry_sequence(), 7);
		assert_eq!(
			statement.topics(),
			&[Topic([1; 32]), Topic([2; 32]), Topic([0; 32]), Topic([4; 32])]
		);
		assert_eq!(statement.decryption_key(), Some([5; 32]));
		assert_eq!(statement.channel(), Some([6; 32]));
		assert_eq!(statement.data(), Some(&[1, 2, 3][..]));
		assert_eq!(statement.verify_signature(), SignatureVerificationResult::NoSignature);
	}

	#[test]
	fn what_the_builder_leaves_unset_stays_absent() {
		let statement = TestStatement::new().channel(None).decryption_key(None).unsigned();
		assert_eq!(statement, Statement::new());
		assert_eq!(TestStatement::new().raw_expiry(9).unsigned().expiry(), 9);
	}

	#[test]
	fn both_signers_sign_with_the_numbered_key_and_numbers_give_distinct_keys() {
		let built = TestStatement::new().expiry(1, 2).data(*b"x");
		let ed = built.clone().signed_ed25519(&ed25519_pair(3));
		assert_eq!(
			ed.verify_signature(),
			SignatureVerificationResult::Valid(ed25519_pair(3).public().0)
		);
		let sr = built.signed_sr25519(&sr25519_pair(3));
		assert_eq!(
			sr.verify_signature(),
			SignatureVerificationResult::Valid(sr25519_pair(3).public().0)
		);
		assert_ne!(ed25519_pair(3).public(), ed25519_pair(4).public());
		assert_ne!(sr25519_pair(3).public(), sr25519_pair(4).public());
	}
}
