//! Recently read statement bodies by id, bounded in bytes, so that a hot query returns its
//! statements from memory instead of asking parity-db for each one.
//!
//! An id is never given out twice and a body never changes, so an entry cannot go stale;
//! removing a statement drops its entry only to give the memory back. Lookups take a shard's
//! lock shared and leave recency alone; every [`PROMOTE_EVERY`]th lookup a thread makes also
//! refreshes recency. Counting on the thread, not the shard, keeps concurrent queries from
//! writing to shared memory.

use crate::{
	limit::{ByteLimit, Weigh},
	schema::Id,
};
use parking_lot::RwLock;
use schnellru::LruMap;
use std::{cell::Cell, sync::Arc};

const SHARDS: usize = 64;
const PROMOTE_EVERY: u64 = 32;
/// What an entry costs besides its bytes (map slot, reference counts, allocation).
const ENTRY_OVERHEAD: usize = 64;

thread_local! {
	static LOOKUPS: Cell<u64> = const { Cell::new(0) };
}

impl Weigh for Arc<[u8]> {
	fn weight(&self) -> usize {
		self.len() + ENTRY_OVERHEAD
	}
}

#[repr(align(128))]
struct Shard(RwLock<LruMap<Id, Arc<[u8]>, ByteLimit>>);

/// See the module documentation.
pub struct BodyCache {
	shards: Vec<Shard>,
	/// False for a zero budget: nothing is ever kept.
	enabled: bool,
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
		}
	}

	fn shard(&self, id: Id) -> &Shard {
		&self.shards[(id % SHARDS as u64) as usize]
	}

	/// The cached body of `id`.
	pub fn get(&self, id: Id) -> Option<Arc<[u8]>> {
		let shard = self.shard(id);
		let found = shard.0.read().peek(&id).cloned()?;
		let lookups = LOOKUPS.with(|count| {
			count.set(count.get() + 1);
			count.get()
		});
		if lookups % PROMOTE_EVERY == 0 {
			if let Some(mut map) = shard.0.try_write() {
				map.get(&id);
			}
		}
		Some(found)
	}

	/// Keep `body`, just read from disk.
	pub fn insert(&self, id: Id, body: &[u8]) {
		if self.enabled {
			self.insert_shared(id, Arc::from(body));
		}
	}

	/// Keep `body`, already shared.
	pub fn insert_shared(&self, id: Id, body: Arc<[u8]>) {
		if self.enabled {
			self.shard(id).0.write().insert(id, body);
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

	#[test]
	fn bodies_are_served_kept_within_budget_and_forgotten_on_removal() {
		let cache = BodyCache::new(SHARDS * 1000);
		cache.insert(1, &[7; 100]);
		assert_eq!(cache.get(1).as_deref(), Some(&[7u8; 100][..]));
		assert!(cache.get(2).is_none());
		for id in 0..10_000 {
			cache.insert(id, &[1; 200]);
		}
		assert!(cache.used_bytes() <= SHARDS * 1000, "{}", cache.used_bytes());
		assert!(cache.get(9_999).is_some(), "the newest body is kept");
		cache.remove(9_999);
		assert!(cache.get(9_999).is_none());
		let off = BodyCache::new(0);
		off.insert(1, &[1]);
		assert!(off.get(1).is_none());
	}
}
