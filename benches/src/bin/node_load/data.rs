//! The statements of a run, all signed before any clock starts: a stash of fresh statements
//! for submits (the benchmark data set of `fixture`, topped up between phases, never while
//! one runs) and the query set that `statement_broadcasts` reads.
//!
//! The query set has topics of its own (a tag no other statement carries), so the submits of
//! every phase leave its answers unchanged: with [`QUERY_SET`] statements the 1-topic query and
//! the 2-topic MatchAll (two posting lists of 1,000 whose intersection is 100) each return
//! [`QUERY_MATCHES`] statements.

use sp_core::ed25519;
use statement_primitives::{testing::TestStatement, Statement, Topic};
use statement_store_benches::{fixture, workload};
use std::{
	sync::{
		atomic::{AtomicUsize, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// Statements in the query set.
pub const QUERY_SET: u32 = 10_000;

/// Statements each query returns.
pub const QUERY_MATCHES: usize = 100;

/// A signed statement, and its `0x`-hex encoding for `statement_submit`.
pub struct Signed {
	/// The statement, for the in-process store.
	pub statement: Statement,
	/// `0x`-hex of its encoding, for the node.
	pub hex: String,
}

impl Signed {
	fn new(statement: Statement) -> Signed {
		let hex = format!("0x{}", hex::encode(statement.encode()));
		Signed { statement, hex }
	}
}

/// Query-set topic `n` (tagged apart from `fixture::topic`).
fn query_topic(n: u32) -> Topic {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0x9a;
	Topic(bytes)
}

/// The topics of query-set statement `i`: one of 10 (1,000 statements each), one of 10 more
/// (1,000 each, crossing the first), one of 100 (100 each).
fn query_topics(i: u32) -> [Topic; 3] {
	[query_topic(i % 10), query_topic(100 + (i / 10) % 10), query_topic(200 + i % 100)]
}

/// The 1-topic query: [`QUERY_MATCHES`] statements.
pub fn one_topic() -> Vec<Topic> {
	vec![query_topic(207)]
}

/// The 2-topic MatchAll: 1,000 statements on each topic, [`QUERY_MATCHES`] on both.
pub fn two_topics() -> Vec<Topic> {
	vec![query_topic(3), query_topic(105)]
}

/// Topics as `statement_broadcasts` takes them.
pub fn hex_topics(topics: &[Topic]) -> Vec<String> {
	topics.iter().map(|topic| statement_test_support::hex::encode(&topic.0)).collect()
}

/// The query set, signed by the data set's accounts on every core.
pub fn query_set(keys: &[ed25519::Pair]) -> Vec<Signed> {
	workload::on_every_core(0, QUERY_SET, |i| query_statement(i, keys))
}

fn query_statement(i: u32, keys: &[ed25519::Pair]) -> Signed {
	let mut data = vec![0u8; 256];
	data[..4].copy_from_slice(&i.to_le_bytes());
	data[4] = 0x9a;
	let statement = TestStatement::new()
		.expiry(u32::MAX - 1, i)
		.topics(&query_topics(i))
		.data(data)
		.signed_ed25519(&keys[(i % fixture::ACCOUNTS) as usize]);
	Signed::new(statement)
}

/// Statements signed and not yet sent to the node. The in-process store reads them first
/// (it is another store, so the node may still be sent the same ones), then the node's phases
/// borrow them as a [`Feed`] and give back what they did not send.
pub struct Stash {
	keys: Vec<ed25519::Pair>,
	unsent: Vec<Signed>,
	/// Time spent signing, all phases together.
	pub signing: Duration,
	/// Statements the phases took from their feeds (and sent), all phases together.
	pub sent: usize,
}

impl Stash {
	/// An empty stash signing with `keys`.
	pub fn new(keys: Vec<ed25519::Pair>) -> Stash {
		Stash { keys, unsent: Vec::new(), signing: Duration::ZERO, sent: 0 }
	}

	/// Sign until at least `count` statements wait unsent.
	pub fn top_up(&mut self, count: usize) {
		let missing = count.saturating_sub(self.unsent.len());
		if missing == 0 {
			return;
		}
		let started = Instant::now();
		let from = workload::fresh_indices(missing as u32);
		let keys = &self.keys;
		let signed = workload::on_every_core(from, from + missing as u32, |i| {
			Signed::new(fixture::statement(i, keys))
		});
		self.unsent.extend(signed);
		self.signing += started.elapsed();
	}

	/// The unsent statements, oldest first.
	pub fn unsent(&self) -> &[Signed] {
		&self.unsent
	}

	/// Every unsent statement, for one phase of the node's.
	pub fn lend(&mut self) -> Arc<Feed> {
		Feed::new(std::mem::take(&mut self.unsent))
	}

	/// Every unsent statement, handed out again and again (for the null store); they are not
	/// given back.
	pub fn lend_cycling(&mut self) -> Arc<Feed> {
		Feed::cycling(std::mem::take(&mut self.unsent))
	}

	/// Take back what a phase did not send; its tasks must all have ended.
	pub fn give_back(&mut self, feed: Arc<Feed>) -> Result<(), String> {
		let feed = Arc::try_unwrap(feed).map_err(|feed| {
			format!("{} holders of a phase's feed remain", Arc::strong_count(&feed) - 1)
		})?;
		let sent = feed.next.into_inner().min(feed.statements.len());
		let mut statements = feed.statements;
		self.unsent = statements.split_off(sent);
		self.sent += sent;
		Ok(())
	}
}

/// Statements handed out one at a time to the connections of a phase.
pub struct Feed {
	statements: Vec<Signed>,
	next: AtomicUsize,
	/// Start again from the first once all are taken (for the null store, which keeps
	/// nothing, so the same statements are new every time).
	cycle: bool,
}

impl Feed {
	/// A feed of `statements`, first to last.
	pub fn new(statements: Vec<Signed>) -> Arc<Feed> {
		Arc::new(Feed { statements, next: AtomicUsize::new(0), cycle: false })
	}

	/// A feed of `statements` that never runs dry: first to last, again and again.
	pub fn cycling(statements: Vec<Signed>) -> Arc<Feed> {
		Arc::new(Feed { statements, next: AtomicUsize::new(0), cycle: true })
	}

	/// The next statement no connection has taken, `None` once all are taken.
	pub fn take(&self) -> Option<&Signed> {
		let next = self.next.fetch_add(1, Ordering::Relaxed);
		match self.cycle {
			true => self.statements.get(next % self.statements.len().max(1)),
			false => self.statements.get(next),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn each_query_matches_a_hundred_statements_of_the_query_set() {
		let matching = |wanted: Vec<Topic>| {
			(0..QUERY_SET)
				.filter(|i| wanted.iter().all(|topic| query_topics(*i).contains(topic)))
				.count()
		};
		assert_eq!(matching(one_topic()), QUERY_MATCHES);
		assert_eq!(matching(two_topics()), QUERY_MATCHES);
		assert_eq!(matching(vec![query_topic(3)]), 1000);
		assert_eq!(matching(vec![query_topic(105)]), 1000);
	}

	#[test]
	fn a_feed_gives_back_exactly_what_it_did_not_hand_out() {
		let mut stash = Stash::new(fixture::keys());
		stash.top_up(5);
		let feed = stash.lend();
		assert!(stash.unsent().is_empty());
		let first = feed.take().map(|signed| signed.hex.clone());
		feed.take();
		stash.give_back(feed).unwrap();
		assert_eq!(stash.unsent().len(), 3);
		assert_eq!(stash.sent, 2);
		assert_ne!(stash.unsent().first().map(|signed| signed.hex.clone()), first);
	}

	#[test]
	fn a_cycling_feed_starts_again_after_the_last() {
		let mut stash = Stash::new(fixture::keys());
		stash.top_up(2);
		let feed = Feed::cycling(std::mem::take(&mut stash.unsent));
		let hex = |signed: Option<&Signed>| signed.map(|signed| signed.hex.clone());
		let (first, second) = (hex(feed.take()), hex(feed.take()));
		assert_ne!(first, second);
		assert_eq!(hex(feed.take()), first);
		assert_eq!(hex(feed.take()), second);
	}
}
