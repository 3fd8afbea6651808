//! The shape of upstream's full-store benchmark (polkadot-sdk `benches/full_store`), which
//! measures a store at its default capacity: 4,194,304 statements, 64 accounts of 65,536,
//! 256-byte data, every statement expiring far in the future. Statement `i` carries:
//!
//! - topics `[T0, T1]` when `i < 1000` and `i % 10 == 0` (100 statements, the bounded set);
//! - decryption key `DK42` when `i < 1000` and `i % 10 == 5` (100 statements);
//! - topics `T2, T3` when `i % 10 == 3` (a tenth of the store, the scaled set);
//! - when `i >= 1000`, one diverse topic `1000 + i / 8` (8 statements each), and when also
//!   `i % 4 == 0` a diverse key `100_000 + i / 16` (4 statements each).
//!
//! The write groups submit as a 65th account that no fixture statement belongs to, and take
//! back what they added, so that the fixture stays as built. (Upstream's eviction group
//! evicts from fixture account 0; here the 65th account is filled to a fixture account's
//! count first and evicts from itself, so that a reused fixture is the same fixture.)
//! Topics and keys are numbered as [`fixture::topic`] and [`fixture::destination`] number
//! them; the sets and their sizes are upstream's.

use crate::fixture;
use sp_core::ed25519;
use statement_primitives::{testing::TestStatement, DecryptionKey, Statement, Topic};

/// The fixture's size: the store's default capacity.
pub const STATEMENTS: u32 = 4_194_304;

/// Every fixture statement's expiry: half the 64-bit range (its timestamp half is
/// 2038-01-19), so that higher priorities are left for the eviction group.
pub const EXPIRY: u64 = u64::MAX / 2;

/// Account number of the write groups' 65th account.
pub const SACRIFICE: u32 = fixture::ACCOUNTS;

/// Statements the bounded topic pair and the bounded key each match.
pub const BOUNDED: usize = 100;

/// Broadcasts the chosen diverse topic matches: 8 statements carry it, 2 of them posted to a
/// key (see [`diverse_topic`]).
pub const DIVERSE_TOPIC_MATCHES: usize = 6;

/// Statements that carry the chosen diverse topic (what a subscription to it replays).
pub const DIVERSE_TOPIC_CARRIERS: usize = 8;

/// Statements the chosen diverse key matches.
pub const DIVERSE_KEY_MATCHES: usize = 4;

/// The bounded topic pair `[T0, T1]`.
pub fn t01() -> [Topic; 2] {
	[fixture::topic(0), fixture::topic(1)]
}

/// The scaled topic pair `[T2, T3]`.
pub fn t23() -> [Topic; 2] {
	[fixture::topic(2), fixture::topic(3)]
}

/// The bounded decryption key.
pub fn dk42() -> DecryptionKey {
	fixture::destination(42)
}

/// Statements the scaled pair matches in a fixture of `n`.
pub fn scaled_matches(n: u32) -> usize {
	(n / 10 + u32::from(n % 10 > 3)) as usize
}

/// The diverse topic of group `g = n / 16 + 1`, near the middle of a fixture of `n` (a
/// multiple of 64): its members, statements `8g..8g+8`, belong to accounts 8 to 15, so that
/// the eviction group (account 0) leaves them alone.
pub fn diverse_topic(n: u32) -> Topic {
	fixture::topic(1000 + n / 16 + 1)
}

/// The diverse key of group `j = n / 32 + 1`: statements `16j..16j+16` that are multiples of
/// 4, of accounts 16 to 28.
pub fn diverse_key(n: u32) -> DecryptionKey {
	fixture::destination(100_000 + n / 32 + 1)
}

/// Statement `i` of the fixture, signed by `keys[i % 64]`.
pub fn statement(i: u32, keys: &[ed25519::Pair]) -> Statement {
	let mut topics = Vec::with_capacity(3);
	if i < 1000 && i.is_multiple_of(10) {
		topics.extend(t01());
	}
	if i >= 1000 {
		topics.push(fixture::topic(1000 + i / 8));
	}
	if i % 10 == 3 {
		topics.extend(t23());
	}
	let key = if i < 1000 && i % 10 == 5 {
		Some(dk42())
	} else if i >= 1000 && i.is_multiple_of(4) {
		Some(fixture::destination(100_000 + i / 16))
	} else {
		None
	};
	build(i, &topics, key, EXPIRY, 256, &keys[(i % fixture::ACCOUNTS) as usize])
}

/// Statement number `i` of the 65th account, with `topics` fresh topics of its own and data
/// shortened by 32 bytes a topic (so that its encoding stays about the same size).
pub fn sacrificial(i: u32, topics: usize, key: &ed25519::Pair) -> Statement {
	let topics: Vec<Topic> = (0..topics as u8).map(|t| sacrificial_topic(i, t)).collect();
	build(i, &topics, None, EXPIRY, 256 - 32 * topics.len(), key)
}

/// A topic of the 65th account's statement `i` only.
fn sacrificial_topic(i: u32, t: u8) -> Topic {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&i.to_le_bytes());
	bytes[4] = t;
	bytes[31] = 0x5a;
	Topic(bytes)
}

/// Statement number `i` of the 65th account carrying the scaled pair `[T2, T3]` (the mixed
/// groups' writes: the scaled set is so large that they barely change it).
pub fn scaled_writer(i: u32, key: &ed25519::Pair) -> Statement {
	build(i, &t23(), None, EXPIRY, 256, key)
}

/// Statement number `i` of the 65th account at `expiry`, which outranks every statement
/// below it: when the account is full, it evicts one.
pub fn outranking(i: u32, expiry: u64, key: &ed25519::Pair) -> Statement {
	build(i, &[], None, expiry, 256, key)
}

fn build(
	i: u32,
	topics: &[Topic],
	key: Option<DecryptionKey>,
	expiry: u64,
	data_len: usize,
	signer: &ed25519::Pair,
) -> Statement {
	let mut data = vec![0u8; data_len];
	data[..4].copy_from_slice(&i.to_le_bytes());
	TestStatement::new()
		.raw_expiry(expiry)
		.topics(topics)
		.decryption_key(key)
		.data(data)
		.signed_ed25519(signer)
}

#[cfg(test)]
mod tests {
	use super::*;

	/// The sets the groups query have upstream's sizes, counted over a whole fixture's
	/// numbering (signing with one key, since only the shape is counted).
	#[test]
	fn the_sets_have_upstreams_sizes() {
		let n = 1 << 16;
		let keys = vec![fixture::key(0); fixture::ACCOUNTS as usize];
		let (mut bounded, mut bounded_key, mut scaled, mut diverse, mut diverse_keyed) =
			(0, 0, 0, 0, 0);
		for i in 0..n {
			let statement = statement(i, &keys);
			let topics = statement.topics();
			bounded += usize::from(t01().iter().all(|t| topics.contains(t)));
			bounded_key += usize::from(statement.decryption_key() == Some(dk42()));
			scaled += usize::from(t23().iter().all(|t| topics.contains(t)));
			diverse += usize::from(
				topics.contains(&diverse_topic(n)) && statement.decryption_key().is_none(),
			);
			diverse_keyed += usize::from(statement.decryption_key() == Some(diverse_key(n)));
			assert!(topics.len() <= 4 && statement.data().map_or(0, |d| d.len()) == 256);
		}
		assert_eq!(bounded, BOUNDED);
		assert_eq!(bounded_key, BOUNDED);
		assert_eq!(scaled, scaled_matches(n));
		assert_eq!(diverse, DIVERSE_TOPIC_MATCHES);
		assert_eq!(diverse_keyed, DIVERSE_KEY_MATCHES);
	}

	#[test]
	fn sacrificial_statements_keep_their_size_and_outrank_nothing_by_account() {
		let key = fixture::key(SACRIFICE);
		let plain = sacrificial(7, 0, &key).encode().len();
		let four = sacrificial(7, 4, &key);
		assert_eq!(four.topics().len(), 4);
		assert!(four.encode().len().abs_diff(plain) <= 8, "{} vs {plain}", four.encode().len());
		assert!(outranking(1, EXPIRY + 1, &fixture::key(0)).expiry() > EXPIRY);
	}
}
