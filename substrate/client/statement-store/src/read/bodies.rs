//! Recently read statement bodies by id, bounded in bytes, so that a hot query returns its
//! statements from memory instead of asking parity-db for each one.
//!
//! An id is never given out twice and a body never changes, so an entry cannot go stale;
//! removing a statement drops its entry only to give the memory back. Ids are spread over the
//! shards by a multiplicative hash, not by their low bits: a topic's ids often form an
//! arithmetic progression (every tenth statement, say), which low bits would pile onto a
//! few shards, each then too small for its share of the topic. Lookups take a shard's
//! lock shared and leave recency alone; every [`PROMOTE_EVERY`]th lookup a thread makes also
//! refreshes recency. Counting on the thread, not the shard, keeps concurrent queries from
//! writing to shared memory.
//!
//! Each body is kept with its statement's hash (read from the body, see
//! `schema::body_value`), so that a lookup by hash is answered from memory too: the
//! membership set names the id, the kept hash confirms it is the statement asked for.

use crate::{
	index::schema::Id,
	read::limit::{ByteLimit, Weigh},
};
use parking_lot::RwLock;
use schnellru::LruMap;
use statement_primitives::Hash;
use std::{cell::Cell, sync::Arc};

const SHARDS: usize = 64;
const PROMOTE_EVERY: u64 = 32;
/// What an entry costs besides its bytes (map slot, reference counts, allocation).
const ENTRY_OVERHEAD: usize = 64;

thread_local! {
	static LOOKUPS: Cell<u64> = const { Cell::new(0) };
}

/// A kept body and its statement's hash.
#[derive(Clone)]
struct Entry {
	body: Arc<[u8]>,
	hash: Hash,
}

impl Weigh for Entry {
	fn weight(&self) -> usize {
		BodyCache::weight(&self.body)
	}
}

#[repr(align(128))]
struct Shard(RwLock<LruMap<Id, Entry, ByteLimit>>);

/// See the module documentation.
pub struct BodyCache {
	shards: Vec<Shard>,
	/// False for a zero budget: nothing is ever kept.
	enabled: bool,
	/// The budget, in bytes.
	bytes: usize,
}

impl BodyCache {
	/// A cache holding at most about `bytes` of bodies; 0 turns it off.
	pub fn new(bytes: usize) -> Self {
		let max = bytes / SHARDS;
		BodyCache {
			shards: (0..SHARDS)
				.map(|_| Shard(RwLock::new(LruMap::new(ByteLimit::new(max)))))
				.collect(),
			enabled: max > 0,
			bytes,
		}
	}

	fn shard(&self, id: Id) -> &Shard {
		// Fibonacci hashing: the top bits of id times 2^64 / golden ratio.
		let mixed = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
		&self.shards[(mixed >> (64 - SHARDS.trailing_zeros())) as usize]
	}

	/// The budget the cache was given, in bytes.
	pub fn budget(&self) -> usize {
		self.bytes
	}

	/// What keeping `body` (and its hash) costs against the budget.
	pub fn weight(body: &[u8]) -> usize {
		body.len() + ENTRY_OVERHEAD + 32
	}

	/// The cached body of `id`.
	pub fn get(&self, id: Id) -> Option<Arc<[u8]>> {
		self.get_entry(id).map(|entry| entry.body)
	}

	/// The cached body of `id` if it is the body of `hash`.
	pub fn get_hashed(&self, id: Id, hash: &Hash) -> Option<Arc<[u8]>> {
		self.get_entry(id).filter(|entry| entry.hash == *hash).map(|entry| entry.body)
	}

	/// The cached body of `id` and its statement's hash.
	pub fn get_with_hash(&self, id: Id) -> Option<(Arc<[u8]>, Hash)> {
		self.get_entry(id).map(|entry| (entry.body, entry.hash))
	}

	fn get_entry(&self, id: Id) -> Option<Entry> {
		let shard = self.shard(id);
		let found = shard.0.read().peek(&id).cloned()?;
		let lookups = LOOKUPS.with(|count| {
			count.set(count.get() + 1);
			count.get()
		});
		if lookups.is_multiple_of(PROMOTE_EVERY) {
			if let Some(mut map) = shard.0.try_write() {
				map.get(&id);
			}
		}
		Some(found)
	}

	/// Keep `body`, just read from disk and checked to be the body of `hash`.
	pub fn insert(&self, id: Id, body: Arc<[u8]>, hash: Hash) {
		if self.enabled {
			self.shard(id).0.write().insert(id, Entry { body, hash });
		}
	}

	/// Forget a removed statement's body.
	pub fn remove(&self, id: Id) {
		self.shard(id).0.write().remove(&id);
	}

	/// Bytes held now.
	pub fn used_bytes(&self) -> usize {
		self.shards.iter().map(|shard| shard.0.read().limiter().used()).sum()
	}

	/// Drop every body.
	pub fn clear(&self) {
		for shard in &self.shards {
			shard.0.write().clear();
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn insert(cache: &BodyCache, id: Id, body: &[u8]) {
		cache.insert(id, Arc::from(body), [id as u8; 32]);
	}

	#[test]
	fn bodies_are_served_kept_within_budget_and_forgotten_on_removal() {
		let cache = BodyCache::new(SHARDS * 1000);
		insert(&cache, 1, &[7; 100]);
		assert_eq!(cache.get(1).as_deref(), Some(&[7u8; 100][..]));
		assert!(cache.get(2).is_none());
		for id in 0..10_000 {
			insert(&cache, id, &[1; 200]);
		}
		assert!(cache.used_bytes() <= SHARDS * 1000, "{}", cache.used_bytes());
		assert!(cache.get(9_999).is_some(), "the newest body is kept");
		cache.remove(9_999);
		assert!(cache.get(9_999).is_none());
		let off = BodyCache::new(0);
		insert(&off, 1, &[1]);
		assert!(off.get(1).is_none());
		// Found by its own hash only.
		cache.insert(5, Arc::from(&[3u8; 10][..]), [9; 32]);
		assert_eq!(cache.get_hashed(5, &[9; 32]).as_deref(), Some(&[3u8; 10][..]));
		assert!(cache.get_hashed(5, &[8; 32]).is_none());
		assert_eq!(cache.get_with_hash(5).map(|(_, hash)| hash), Some([9; 32]));
	}

	#[test]
	fn every_tenth_id_spreads_over_every_shard() {
		// One topic of the benchmark data set: ids 3, 13, 23, ... With shards by id % 64 only
		// the odd shards were used, so a topic of half the budget overflowed them.
		let cache = BodyCache::new(SHARDS * 10_000);
		let mut used = std::collections::HashMap::new();
		for id in (3..64_000u64).step_by(10) {
			*used.entry(cache.shard(id) as *const Shard as usize).or_insert(0usize) += 1;
		}
		assert_eq!(used.len(), SHARDS);
		let (least, most) = (used.values().min().unwrap(), used.values().max().unwrap());
		assert!(most - least <= 100_usize.max(least / 4), "{least}..{most} per shard");
	}

	#[test]
	fn a_topic_of_most_of_the_budget_stays_cached() {
		let cache = BodyCache::new(SHARDS * 4_000);
		let body = [5u8; 136];
		let fits = cache.budget() / BodyCache::weight(&body);
		let ids: Vec<u64> = (7..).step_by(10).take(fits * 7 / 10).collect();
		for round in 0..2 {
			for &id in &ids {
				if cache.get(id).is_none() {
					assert_eq!(round, 0, "body {id} was evicted by its own scan");
					insert(&cache, id, &body);
				}
			}
		}
	}
}
