//! The peers a node routes through: those that speak the route protocol, with their keys and
//! addresses, learnt from identify and from other nodes' lookup answers.

use super::key::{nearest, Key};
use std::{collections::HashMap, time::Duration};

/// Most peers a table keeps; past it the one heard from longest ago goes.
pub const MAX_KNOWN: usize = 8_192;

/// Most addresses kept for one peer.
const MAX_ADDRESSES: usize = 8;

#[derive(Clone, Debug)]
struct Entry<A> {
	key: Key,
	addresses: Vec<A>,
	seen: Duration,
}

/// A node's table of routing peers.
#[derive(Clone, Debug)]
pub struct Known<P, A> {
	peers: HashMap<P, Entry<A>>,
	capacity: usize,
}

impl<P: Copy + Ord + std::hash::Hash, A: Clone + PartialEq> Known<P, A> {
	/// An empty table of at most [`MAX_KNOWN`] peers.
	pub fn new() -> Self {
		Self::with_capacity(MAX_KNOWN)
	}

	/// An empty table of at most `capacity` peers.
	pub fn with_capacity(capacity: usize) -> Self {
		Known { peers: HashMap::new(), capacity: capacity.max(1) }
	}

	/// A peer heard of now, with its key and some of its addresses (merged with those known).
	pub fn learn(
		&mut self,
		peer: P,
		key: Key,
		addresses: impl IntoIterator<Item = A>,
		now: Duration,
	) {
		if !self.peers.contains_key(&peer) && self.peers.len() >= self.capacity {
			if let Some(oldest) =
				self.peers.iter().min_by_key(|(peer, entry)| (entry.seen, **peer)).map(|(p, _)| *p)
			{
				self.peers.remove(&oldest);
			}
		}
		let entry =
			self.peers.entry(peer).or_insert(Entry { key, addresses: Vec::new(), seen: now });
		entry.seen = entry.seen.max(now);
		for address in addresses {
			if !entry.addresses.contains(&address) {
				if entry.addresses.len() >= MAX_ADDRESSES {
					entry.addresses.remove(0);
				}
				entry.addresses.push(address);
			}
		}
	}

	/// A peer that did not answer: forgotten until someone names it again.
	pub fn forget(&mut self, peer: &P) {
		self.peers.remove(peer);
	}

	/// How many peers are known.
	pub fn len(&self) -> usize {
		self.peers.len()
	}

	/// Whether none is.
	pub fn is_empty(&self) -> bool {
		self.peers.is_empty()
	}

	/// Whether this peer is known.
	pub fn contains(&self, peer: &P) -> bool {
		self.peers.contains_key(peer)
	}

	/// The key and addresses of a known peer.
	pub fn get(&self, peer: &P) -> Option<(Key, &[A])> {
		self.peers.get(peer).map(|entry| (entry.key, entry.addresses.as_slice()))
	}

	/// The `k` known peers nearest `target`, nearest first, leaving out `except`.
	pub fn nearest(&self, target: &Key, k: usize, except: Option<&P>) -> Vec<(P, Key)> {
		let peers = self
			.peers
			.iter()
			.filter(|(peer, _)| Some(*peer) != except)
			.map(|(peer, entry)| (*peer, entry.key));
		nearest(target, peers, k).into_iter().map(|peer| (peer, self.peers[&peer].key)).collect()
	}
}

impl<P: Copy + Ord + std::hash::Hash, A: Clone + PartialEq> Default for Known<P, A> {
	fn default() -> Self {
		Self::new()
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_table_answers_the_nearest_merges_addresses_and_drops_the_oldest_when_full() {
		let mut known: Known<u32, &str> = Known::with_capacity(3);
		let key = |byte: u8| [byte; 32];
		known.learn(1, key(1), ["a"], Duration::from_secs(1));
		known.learn(2, key(2), ["b"], Duration::from_secs(2));
		known.learn(3, key(3), ["c"], Duration::from_secs(3));
		known.learn(1, key(1), ["a", "a2"], Duration::from_secs(4));
		assert_eq!(known.get(&1).unwrap().1, ["a", "a2"]);
		// Full: 2 was heard from longest ago.
		known.learn(4, key(4), ["d"], Duration::from_secs(5));
		assert!(!known.contains(&2) && known.len() == 3);
		let nearest: Vec<u32> =
			known.nearest(&key(3), 2, None).into_iter().map(|(peer, _)| peer).collect();
		assert_eq!(nearest, vec![3, 1], "3 ^ 3 = 0, 3 ^ 1 = 2, 3 ^ 4 = 7");
		let without: Vec<u32> =
			known.nearest(&key(3), 2, Some(&3)).into_iter().map(|(peer, _)| peer).collect();
		assert_eq!(without, vec![1, 4]);
		known.forget(&1);
		assert!(!known.contains(&1));
	}
}
