//! Which hashes the store holds, answered from memory for every gossiped statement.
//!
//! Keeps the first 8 bytes of each hash (a 64-bit fingerprint) in sharded sets. A hash that
//! is not stored is reported as stored only if it shares its 64-bit prefix with a stored one:
//! about n / 2^64, 2e-13 at 4M statements. Prefixes shared by two stored statements are
//! counted, so removing one does not hide the other.

use parking_lot::RwLock;
use statement_primitives::Hash;
use std::collections::{HashMap, HashSet};

const SHARDS: usize = 64;

/// Sharded set of hash fingerprints.
pub struct Membership {
	shards: Vec<RwLock<Shard>>,
}

#[derive(Default)]
struct Shard {
	prefixes: HashSet<u64, PrefixHasher>,
	/// Prefixes held by more than one stored hash: extra holders beyond the first.
	shared: HashMap<u64, u32>,
}

impl Default for Membership {
	fn default() -> Self {
		Membership { shards: (0..SHARDS).map(|_| RwLock::new(Shard::default())).collect() }
	}
}

fn split(hash: &Hash) -> (usize, u64) {
	let mut prefix = [0u8; 8];
	prefix.copy_from_slice(&hash[..8]);
	let prefix = u64::from_le_bytes(prefix);
	((hash[8] as usize) % SHARDS, prefix)
}

impl Membership {
	/// Whether `hash` is (almost certainly) stored.
	pub fn contains(&self, hash: &Hash) -> bool {
		let (shard, prefix) = split(hash);
		self.shards[shard].read().prefixes.contains(&prefix)
	}

	/// Record a stored hash.
	pub fn insert(&self, hash: &Hash) {
		let (shard, prefix) = split(hash);
		let mut shard = self.shards[shard].write();
		if !shard.prefixes.insert(prefix) {
			*shard.shared.entry(prefix).or_default() += 1;
		}
	}

	/// Forget a hash that was stored.
	pub fn remove(&self, hash: &Hash) {
		let (shard, prefix) = split(hash);
		let mut shard = self.shards[shard].write();
		match shard.shared.get_mut(&prefix) {
			Some(extra) if *extra > 1 => *extra -= 1,
			Some(_) => {
				shard.shared.remove(&prefix);
			}
			None => {
				shard.prefixes.remove(&prefix);
			}
		}
	}
}

/// The fingerprints are already uniform hash bytes: use them as they are.
#[derive(Clone, Copy, Default)]
struct PrefixHasher;

impl std::hash::BuildHasher for PrefixHasher {
	type Hasher = PrefixHash;
	fn build_hasher(&self) -> PrefixHash {
		PrefixHash(0)
	}
}

struct PrefixHash(u64);

impl std::hash::Hasher for PrefixHash {
	fn finish(&self) -> u64 {
		self.0
	}
	fn write(&mut self, bytes: &[u8]) {
		for &byte in bytes {
			self.0 = self.0.rotate_left(8) ^ u64::from(byte);
		}
	}
	fn write_u64(&mut self, value: u64) {
		self.0 = value;
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn insert_contains_remove() {
		let set = Membership::default();
		set.insert(&[1; 32]);
		assert!(set.contains(&[1; 32]));
		assert!(!set.contains(&[2; 32]));
		set.remove(&[1; 32]);
		assert!(!set.contains(&[1; 32]));
	}

	#[test]
	fn removing_one_of_two_hashes_with_one_prefix_keeps_the_other() {
		let set = Membership::default();
		let a = [7u8; 32];
		let mut b = a;
		b[31] = 0;
		set.insert(&a);
		set.insert(&b);
		set.remove(&a);
		assert!(set.contains(&b));
		set.remove(&b);
		assert!(!set.contains(&b));
	}
}
