//! The hot set-intersection cache: decoded posting lists of hot topics and keys, bounded in
//! bytes, sharded so that concurrent queries rarely meet on one lock.
//!
//! Shared hits take a shard's lock shared and do not touch recency; every [`PROMOTE_EVERY`]th
//! hit on a shard also marks the list recently used, if the lock is free. Hot lists are hit
//! often, so they stay recent, and concurrent queries for the same lists do not queue on one
//! lock.
//!
//! In front of the shards each thread keeps a small memo of the lists its last queries used,
//! valid while no writer has changed any posting list since (an *epoch* counter, bumped by
//! every batch). A query whose lists are all in its thread's memo reads them without writing
//! to any shared memory: no lock word, no reference count, no hit counter is touched, so
//! queries on different cores do not slow each other down. The memo holds only lists of up to
//! [`MEMO_MAX_IDS`] ids, so what it keeps beyond the byte budget stays small.
//!
//! Invariant: a cached list always equals the list on disk. Writers change both while holding
//! the store's view lock exclusively; readers fill the cache while holding it shared, so a list
//! a reader loads from disk cannot be outdated by a commit before it is cached.

use crate::{
	error::Result,
	index::posting::PostingList,
	index::schema::{Id, PostingKey},
	read::limit::{ByteLimit, Weigh},
};
use parking_lot::RwLock;
use schnellru::LruMap;
use std::{
	cell::RefCell,
	hash::BuildHasher,
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
};

const SHARDS: usize = 16;
/// One hit in this many also refreshes the list's recency.
const PROMOTE_EVERY: u64 = 32;
/// Lists a thread's memo holds.
const MEMO_ENTRIES: usize = 8;
/// Longest list a memo holds (128 KiB of ids).
pub const MEMO_MAX_IDS: usize = 16 * 1024;
/// Most lists one query intersects: a decryption key and four topics.
const MAX_LISTS: usize = 8;

/// Lists are bounded by their heap bytes; a list larger than a whole shard is not cached.
type Lru = LruMap<PostingKey, Arc<PostingList>, ByteLimit>;

impl Weigh for Arc<PostingList> {
	fn weight(&self) -> usize {
		self.heap_bytes()
	}
}

/// One shard: its map and its own counters (so shards share no cache line).
#[repr(align(128))]
struct Shard {
	map: RwLock<Lru>,
	hits: AtomicU64,
	misses: AtomicU64,
}

struct MemoEntry {
	cache: u64,
	epoch: u64,
	key: PostingKey,
	list: Arc<PostingList>,
}

#[derive(Default)]
struct Memo {
	entries: Vec<MemoEntry>,
	/// Next entry to replace when all are valid.
	victim: usize,
	/// Queries answered from the memo, for promotion and hit counting.
	served: u64,
}

impl Memo {
	fn find(&self, cache: u64, epoch: u64, key: &PostingKey) -> Option<&PostingList> {
		self.entries
			.iter()
			.find(|entry| entry.cache == cache && entry.epoch == epoch && entry.key == *key)
			.map(|entry| &*entry.list)
	}

	fn put(&mut self, cache: u64, epoch: u64, key: PostingKey, list: Arc<PostingList>) {
		let entry = MemoEntry { cache, epoch, key, list };
		let stale = self
			.entries
			.iter()
			.position(|old| old.cache == cache && (old.key == key || old.epoch != epoch));
		match stale {
			Some(at) => self.entries[at] = entry,
			None if self.entries.len() < MEMO_ENTRIES => self.entries.push(entry),
			None => {
				self.victim = (self.victim + 1) % MEMO_ENTRIES;
				self.entries[self.victim] = entry;
			}
		}
	}
}

thread_local! {
	static MEMO: RefCell<Memo> = RefCell::default();
}

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(0);
static EMPTY: PostingList = PostingList::EMPTY;

/// Sharded LRU of posting lists, bounded by the bytes the lists hold, with per-thread memos.
pub struct PostingCache {
	shards: Vec<Shard>,
	hasher: std::collections::hash_map::RandomState,
	/// Tells this cache's memo entries from another store's.
	id: u64,
	/// Bumped by every change to any posting list; memo entries of older epochs are stale.
	epoch: AtomicU64,
}

impl PostingCache {
	/// A cache holding at most about `bytes` of posting lists.
	pub fn new(bytes: usize) -> Self {
		let per_shard = bytes / SHARDS;
		PostingCache {
			shards: (0..SHARDS)
				.map(|_| Shard {
					map: RwLock::new(LruMap::new(ByteLimit::new(per_shard))),
					hits: AtomicU64::new(0),
					misses: AtomicU64::new(0),
				})
				.collect(),
			hasher: Default::default(),
			id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
			epoch: AtomicU64::new(0),
		}
	}

	/// A writer is changing posting lists: every memo entry is now stale. Called with the
	/// view lock held exclusively.
	pub fn changed(&self) {
		self.epoch.fetch_add(1, Ordering::Release);
	}

	/// The list for `key`: from the shared cache, else read by `load` (from disk) and
	/// cached. The caller holds the view lock shared, so a list read from disk is current.
	pub fn get_or_load(
		&self,
		key: PostingKey,
		load: impl FnOnce(PostingKey) -> Result<Vec<Id>>,
	) -> Result<Arc<PostingList>> {
		if let Some(list) = self.get(&key) {
			return Ok(list);
		}
		let list = Arc::new(PostingList::from_sorted(load(key)?));
		self.insert(key, list.clone());
		Ok(list)
	}

	/// Run `intersect` over the lists for `keys` (at most eight), taken from this thread's
	/// memo when all of them are there, else from the shared cache, else read by `load` (from
	/// disk). The caller holds the view lock shared, so the lists cannot change meanwhile.
	pub fn with_lists<R>(
		&self,
		keys: &[PostingKey],
		mut load: impl FnMut(PostingKey) -> Result<Vec<Id>>,
		intersect: impl FnOnce(&[&PostingList]) -> R,
	) -> Result<R> {
		assert!(keys.len() <= MAX_LISTS, "a query intersects at most {MAX_LISTS} lists");
		let epoch = self.epoch.load(Ordering::Acquire);
		let mut intersect = Some(intersect);
		let served = MEMO.with(|memo| {
			let mut memo = memo.borrow_mut();
			let mut lists = [&EMPTY; MAX_LISTS];
			for (slot, key) in lists.iter_mut().zip(keys) {
				*slot = memo.find(self.id, epoch, key)?;
			}
			let answer = intersect.take().map(|f| f(&lists[..keys.len()]));
			memo.served += 1;
			Some((answer, memo.served))
		});
		if let Some((Some(answer), served)) = served {
			if served % PROMOTE_EVERY == 0 {
				// Keep the lists recent in the shared cache and count these hits there.
				for key in keys {
					self.lookup(key, PROMOTE_EVERY, true);
				}
			}
			return Ok(answer);
		}
		let lists =
			keys.iter().map(|key| self.get_or_load(*key, &mut load)).collect::<Result<Vec<_>>>()?;
		MEMO.with(|memo| {
			let mut memo = memo.borrow_mut();
			for (key, list) in keys.iter().zip(&lists) {
				if list.len() <= MEMO_MAX_IDS {
					memo.put(self.id, epoch, *key, list.clone());
				}
			}
		});
		let refs: Vec<&PostingList> = lists.iter().map(|list| &**list).collect();
		Ok(intersect.take().expect("not used by the memo path")(&refs))
	}

	fn shard(&self, key: &PostingKey) -> &Shard {
		&self.shards[self.hasher.hash_one(key) as usize % SHARDS]
	}

	/// The cached list (see the module documentation for how recency is kept).
	pub fn get(&self, key: &PostingKey) -> Option<Arc<PostingList>> {
		self.lookup(key, 1, false)
	}

	/// Look `key` up, counting `hits` hits if found; refresh its recency every
	/// [`PROMOTE_EVERY`]th hit, or now if `promote`.
	fn lookup(&self, key: &PostingKey, hits: u64, promote: bool) -> Option<Arc<PostingList>> {
		let shard = self.shard(key);
		let found = shard.map.read().peek(key).cloned();
		if found.is_none() {
			shard.misses.fetch_add(1, Ordering::Relaxed);
			return None;
		}
		let total = shard.hits.fetch_add(hits, Ordering::Relaxed) + hits;
		if promote || total.is_multiple_of(PROMOTE_EVERY) {
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

	/// Drop every cached list (and, through the epoch, every memo entry).
	pub fn clear(&self) {
		self.changed();
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
		self.shards.iter().map(|shard| shard.map.read().limiter().used()).sum()
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
	fn a_thread_memo_serves_until_a_writer_changes_lists() {
		let cache = PostingCache::new(1 << 20);
		let key = [PostingKey::Topic([1; 32])];
		let loads = std::cell::Cell::new(0);
		let load = |n: u64| {
			let loads = &loads;
			move |_| {
				loads.set(loads.get() + 1);
				Ok(list(n).ids().to_vec())
			}
		};
		let len = |lists: &[&PostingList]| lists[0].len();
		assert_eq!(cache.with_lists(&key, load(3), len).unwrap(), 3);
		assert_eq!(cache.with_lists(&key, load(9), len).unwrap(), 3, "served from the memo");
		assert_eq!(loads.get(), 1);
		// A writer changes the shared list: the memo goes stale, the shared cache serves.
		cache.update(&key[0], |list| list.insert(99));
		cache.changed();
		assert_eq!(cache.with_lists(&key, load(5), len).unwrap(), 4, "the memo went stale");
		assert_eq!(loads.get(), 1, "the shared cache had it");
		cache.clear();
		assert_eq!(cache.with_lists(&key, load(5), len).unwrap(), 5, "read again");
		assert_eq!(loads.get(), 2);
		let other = PostingCache::new(1 << 20);
		assert_eq!(other.with_lists(&key, load(7), len).unwrap(), 7, "memos are per cache");
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
