//! The hot set-intersection cache: decoded posting lists of hot topics and keys, bounded in
//! bytes, sharded so that concurrent queries rarely meet on one lock.
//!
//! Hits take a shard's lock shared and do not touch recency; every [`PROMOTE_EVERY`]th hit on
//! a shard also marks the list recently used, if the lock is free. Hot lists are hit often, so
//! they stay recent, and concurrent queries for the same lists do not queue on one lock.
//!
//! Invariant: a cached list always equals the list on disk. Writers change both while holding
//! the store's view lock exclusively; readers fill the cache while holding it shared, so a list
//! a reader loads from disk cannot be outdated by a commit before it is cached.

use crate::{posting::PostingList, schema::PostingKey};
use parking_lot::RwLock;
use schnellru::{Limiter, LruMap};
use std::{
	hash::BuildHasher,
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
};

const SHARDS: usize = 16;
/// One hit in this many also refreshes the list's recency.
const PROMOTE_EVERY: u64 = 32;

type Lru = LruMap<PostingKey, Arc<PostingList>, ByteLimit>;

/// One shard: its map and its own counters (so shards share no cache line).
#[repr(align(128))]
struct Shard {
	map: RwLock<Lru>,
	hits: AtomicU64,
	misses: AtomicU64,
}

/// Sharded LRU of posting lists, bounded by the bytes the lists hold.
pub struct PostingCache {
	shards: Vec<Shard>,
	hasher: std::collections::hash_map::RandomState,
}

impl PostingCache {
	/// A cache holding at most about `bytes` of posting lists.
	pub fn new(bytes: usize) -> Self {
		let per_shard = bytes / SHARDS;
		PostingCache {
			shards: (0..SHARDS)
				.map(|_| Shard {
					map: RwLock::new(LruMap::new(ByteLimit { max: per_shard, used: 0 })),
					hits: AtomicU64::new(0),
					misses: AtomicU64::new(0),
				})
				.collect(),
			hasher: Default::default(),
		}
	}

	fn shard(&self, key: &PostingKey) -> &Shard {
		&self.shards[self.hasher.hash_one(key) as usize % SHARDS]
	}

	/// The cached list (see the module documentation for how recency is kept).
	pub fn get(&self, key: &PostingKey) -> Option<Arc<PostingList>> {
		let shard = self.shard(key);
		let found = shard.map.read().peek(key).cloned();
		if found.is_none() {
			shard.misses.fetch_add(1, Ordering::Relaxed);
			return None;
		}
		let hits = shard.hits.fetch_add(1, Ordering::Relaxed) + 1;
		if hits % PROMOTE_EVERY == 0 {
			if let Some(mut map) = shard.map.try_write() {
				map.get(key);
			}
		}
		found
	}

	/// Cache a list just loaded from disk.
	pub fn insert(&self, key: PostingKey, list: Arc<PostingList>) {
		self.shard(&key).map.write().insert(key, list);
	}

	/// Apply a committed change to a cached list; uncached lists are left to the disk.
	pub fn update(&self, key: &PostingKey, change: impl FnOnce(&mut PostingList)) {
		let mut shard = self.shard(key).map.write();
		// Taken out and put back, so the byte budget sees the new size and no reader's copy is
		// cloned (readers hold no copies while a writer holds the view lock).
		if let Some(mut list) = shard.remove(key) {
			change(Arc::make_mut(&mut list));
			shard.insert(*key, list);
		}
	}

	/// Drop every cached list.
	pub fn clear(&self) {
		for shard in &self.shards {
			shard.map.write().clear();
		}
	}

	/// (hits, misses) since the store opened.
	pub fn hit_counts(&self) -> (u64, u64) {
		self.shards.iter().fold((0, 0), |(hits, misses), shard| {
			(
				hits + shard.hits.load(Ordering::Relaxed),
				misses + shard.misses.load(Ordering::Relaxed),
			)
		})
	}

	/// Bytes of lists cached now.
	pub fn used_bytes(&self) -> usize {
		self.shards.iter().map(|shard| shard.map.read().limiter().used).sum()
	}
}

/// Counts the heap bytes of the cached lists; a list larger than a whole shard is not cached.
struct ByteLimit {
	max: usize,
	used: usize,
}

impl Limiter<PostingKey, Arc<PostingList>> for ByteLimit {
	type KeyToInsert<'a> = PostingKey;
	type LinkType = u32;

	fn is_over_the_limit(&self, _length: usize) -> bool {
		self.used > self.max
	}

	fn on_insert(
		&mut self,
		_length: usize,
		key: PostingKey,
		value: Arc<PostingList>,
	) -> Option<(PostingKey, Arc<PostingList>)> {
		let cost = value.heap_bytes();
		if cost > self.max {
			return None;
		}
		self.used += cost;
		Some((key, value))
	}

	fn on_replace(
		&mut self,
		_length: usize,
		_old_key: &mut PostingKey,
		_new_key: PostingKey,
		old_value: &mut Arc<PostingList>,
		new_value: &mut Arc<PostingList>,
	) -> bool {
		let (old, new) = (old_value.heap_bytes(), new_value.heap_bytes());
		if new > self.max {
			return false;
		}
		self.used = self.used - old + new;
		true
	}

	fn on_removed(&mut self, _key: &mut PostingKey, value: &mut Arc<PostingList>) {
		self.used -= value.heap_bytes();
	}

	fn on_cleared(&mut self) {
		self.used = 0;
	}

	fn on_grow(&mut self, new_memory_usage: usize) -> bool {
		new_memory_usage <= self.max.max(4096)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn list(n: u64) -> Arc<PostingList> {
		Arc::new(PostingList::from_sorted((0..n).collect()))
	}

	#[test]
	fn updates_reach_cached_lists_and_skip_uncached_ones() {
		let cache = PostingCache::new(1 << 20);
		cache.insert(PostingKey::Topic([1; 32]), list(3));
		cache.update(&PostingKey::Topic([1; 32]), |l| l.insert(10));
		cache.update(&PostingKey::Topic([2; 32]), |l| l.insert(10));
		assert_eq!(cache.get(&PostingKey::Topic([1; 32])).unwrap().ids(), &[0, 1, 2, 10]);
		assert!(cache.get(&PostingKey::Topic([2; 32])).is_none());
		assert_eq!(cache.hit_counts(), (1, 1));
	}

	#[test]
	fn the_byte_budget_evicts_least_recently_used_lists() {
		let cache = PostingCache::new(SHARDS * 2000);
		for byte in 0..64u8 {
			cache.insert(PostingKey::Topic([byte; 32]), list(100));
		}
		assert!(cache.used_bytes() <= SHARDS * 2000, "{}", cache.used_bytes());
		cache.insert(PostingKey::Keyed, list(10_000));
		assert!(
			cache.get(&PostingKey::Keyed).is_none(),
			"a list over a shard's budget is not kept"
		);
	}
}
