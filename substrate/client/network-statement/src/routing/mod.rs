//! Topic-routed storage: each statement kept by the K live nodes nearest its topics, found by
//! an iterative lookup, instead of by every node (`--statement-replication-factor K`;
//! `docs/scaling.md` has the why and the figures).
//!
//! # The rule
//! - A node's key is `blake2_256` of its PeerId's bytes; a topic's key is its own 32 bytes; a
//!   statement without topics is keyed by its hash.
//! - Distance is XOR, compared as big-endian bytes; ties go to the smaller PeerId. This is
//!   upstream's rule (polkadot-sdk's `v2dht`), so both agree on who the K nearest are when
//!   every node is known.
//! - A node holds a statement when it is among the K nearest of one of its keys, or when a
//!   local subscription names one of its topics. Any other node that admits it forwards it
//!   to the holders and drops it after [`RoutingConfig::drop_after`].
//!
//! # The parts
//! - [`Known`]: the peers this node can route through, with their keys and addresses.
//! - [`Lookup`]: one iterative lookup (Kademlia's, over [`Known`] tables and the
//!   `/statement/route/1` protocol of [`wire`]) that converges on the K nearest live nodes.
//!
//! Both are state machines without sockets or clocks; the litep2p driver runs them.

mod known;
mod lookup;
pub mod wire;

pub use known::{Known, MAX_KNOWN};
pub use lookup::Lookup;

use std::time::Duration;

/// A point of the key space.
pub type Key = [u8; 32];

/// Default of [`RoutingConfig::refresh`].
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(60);

/// Default of [`RoutingConfig::drop_after`].
pub const DEFAULT_DROP_AFTER: Duration = Duration::from_secs(60);

/// Lookups a node runs at once; more wait their turn.
pub const LOOKUPS_AT_ONCE: usize = 8;

/// Queries one lookup has in flight at once (Kademlia's alpha).
pub const ALPHA: usize = 3;

/// Fewest peers a lookup converges on, and a `Nearest` answer names, whatever K: with K = 2
/// a lookup that stopped at the 2 nearest answers it had would end short of the true
/// nearest too often in a small network. The holders are the first K of them.
pub const MIN_WIDTH: usize = 8;

/// How topic-routed storage runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingConfig {
	/// K: the nodes that hold each statement.
	pub replication_factor: usize,
	/// How often holders look their keys up again and hand over to new members, and readers
	/// renew their watches; also how long a lookup's answer is reused.
	pub refresh: Duration,
	/// How long a node that does not hold a statement keeps it after admitting it.
	pub drop_after: Duration,
}

impl RoutingConfig {
	/// How many peers lookups converge on and answers name: K, at least [`MIN_WIDTH`].
	pub fn width(&self) -> usize {
		self.replication_factor.max(MIN_WIDTH)
	}

	/// K holders, with the default intervals.
	pub fn new(replication_factor: usize) -> Self {
		RoutingConfig {
			replication_factor: replication_factor.max(1),
			refresh: DEFAULT_REFRESH,
			drop_after: DEFAULT_DROP_AFTER,
		}
	}
}

/// A peer's key: `blake2_256` of its PeerId's bytes.
pub fn key_of(peer_bytes: &[u8]) -> Key {
	sp_crypto_hashing::blake2_256(peer_bytes)
}

/// XOR distance between two keys.
pub fn distance(a: &Key, b: &Key) -> Key {
	let mut out = [0; 32];
	for (out, (a, b)) in out.iter_mut().zip(a.iter().zip(b)) {
		*out = a ^ b;
	}
	out
}

/// The keys a statement is routed by: its topics, or its hash when it has none.
pub fn keys_of(
	topics: &[statement_primitives::Topic],
	hash: &statement_primitives::Hash,
) -> Vec<Key> {
	if topics.is_empty() {
		vec![*hash]
	} else {
		topics.iter().map(|topic| topic.0).collect()
	}
}

/// The `k` nearest to `target` of `peers` (each with its key), nearest first, ties to the
/// smaller peer.
pub fn nearest<P: Copy + Ord>(
	target: &Key,
	peers: impl IntoIterator<Item = (P, Key)>,
	k: usize,
) -> Vec<P> {
	let mut ranked: Vec<(Key, P)> =
		peers.into_iter().map(|(peer, key)| (distance(target, &key), peer)).collect();
	ranked.sort_unstable();
	ranked.dedup_by(|a, b| a.1 == b.1);
	ranked.into_iter().take(k).map(|(_, peer)| peer).collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn distance_is_xor_and_ranks_as_big_endian_bytes_with_ties_to_the_smaller_peer() {
		let target = [0u8; 32];
		let mut high = [0u8; 32];
		high[0] = 1;
		let mut low = [0u8; 32];
		low[31] = 0xff;
		assert_eq!(distance(&high, &low)[0], 1);
		assert_eq!(distance(&high, &low)[31], 0xff);
		// The first byte outweighs every later one.
		assert_eq!(nearest(&target, [(1u32, high), (2, low)], 1), vec![2]);
		// Equal keys: the smaller peer first.
		assert_eq!(nearest(&target, [(9u32, low), (3, low), (5, high)], 3), vec![3, 9, 5]);
	}

	#[test]
	fn a_peers_key_is_the_blake2_256_of_its_bytes_as_upstream_derives_it() {
		let peer = crate::identity::peer_id(&[7; 32]).unwrap();
		let bytes = peer.to_bytes();
		assert_eq!(key_of(&bytes), sp_crypto_hashing::blake2_256(&bytes));
		assert_ne!(key_of(&bytes), key_of(&crate::identity::peer_id(&[8; 32]).unwrap().to_bytes()));
	}

	#[test]
	fn a_statement_without_topics_is_keyed_by_its_hash() {
		let topic = statement_primitives::Topic([4; 32]);
		assert_eq!(keys_of(&[topic], &[1; 32]), vec![[4; 32]]);
		assert_eq!(keys_of(&[], &[1; 32]), vec![[1; 32]]);
	}
}
