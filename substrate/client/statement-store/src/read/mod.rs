//! The read path: MatchAll queries and body reads (`query`), answers walked a page at a time
//! (`paging`) with large answers' bodies read on helper threads (`read_ahead`), the
//! byte-bounded posting-list and body caches (`cache`, `bodies`, `limit`), and the view lock
//! readers share (`view`).
//!
//! [`Reads`] is the state this part owns. Writers reach it only to publish a commit
//! ([`Reads::publish`]), and subscriptions to hold the view while they start
//! ([`Reads::view`]).

pub(crate) mod bodies;
pub(crate) mod cache;
pub(crate) mod limit;
pub(crate) mod paging;
pub(crate) mod query;
pub(crate) mod read_ahead;
#[cfg(test)]
mod tests;
pub(crate) mod view;

use crate::{
	config::Config,
	index::schema::{Id, PostingKey},
};
use bodies::BodyCache;
use cache::PostingCache;
use parking_lot::Mutex;
use std::{
	collections::HashSet,
	sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
use view::ViewLock;

/// Quarantined ids remembered (so each is logged once); past this, damage is only counted.
const MAX_QUARANTINED: usize = 100_000;

/// What the read path keeps between queries.
pub(crate) struct Reads {
	/// Shared by queries for their whole run; taken exclusively only to publish a commit.
	view: ViewLock,
	/// Posting lists recently read.
	cache: PostingCache,
	/// Recently read statement bodies.
	bodies: BodyCache,
	/// Whether the keyed list may be non-empty; when not, broadcasts skip subtracting it.
	/// Set when the store holds (or admits) a statement with a key; never cleared while open.
	keyed: AtomicBool,
	/// Posting lists read from disk since the store opened.
	lists_read: AtomicU64,
	/// Statements found damaged on disk, left out of answers (see
	/// [`crate::store::Inner::quarantine`]).
	quarantined: Mutex<HashSet<Id>>,
}

impl Reads {
	/// Empty caches of the configured sizes; `keyed` says whether the store holds a
	/// statement with a decryption key.
	pub fn new(config: &Config, keyed: bool) -> Reads {
		Reads {
			view: ViewLock::default(),
			cache: PostingCache::new(config.cache_bytes),
			bodies: BodyCache::new(config.body_cache_bytes),
			keyed: AtomicBool::new(keyed),
			lists_read: AtomicU64::new(0),
			quarantined: Mutex::default(),
		}
	}

	/// Posting lists read from disk since the store opened.
	#[cfg(test)]
	pub fn lists_read(&self) -> u64 {
		self.lists_read.load(Ordering::Relaxed)
	}

	/// Hold the view shared: no commit is published until the guard is dropped.
	pub fn view(&self) -> view::ReadGuard<'_> {
		self.view.read()
	}

	/// Hold readers off (waiting for the queries running) to publish a commit; the guard
	/// mirrors the commit's changes into the caches.
	pub fn publish(&self) -> Publish<'_> {
		Publish { reads: self, _view: self.view.write() }
	}

	/// Note statement `id` as damaged (see [`crate::store::Inner::quarantine`]). `None` if
	/// it was already; else whether this is news to log (`false` once [`MAX_QUARANTINED`]
	/// are remembered: then damage is only counted).
	pub fn quarantine(&self, id: Id) -> Option<bool> {
		let mut quarantined = self.quarantined.lock();
		if quarantined.len() >= MAX_QUARANTINED {
			Some(false)
		} else if quarantined.insert(id) {
			Some(true)
		} else {
			None
		}
	}

	/// Cache hits, misses and the bytes both caches hold.
	pub fn cache_figures(&self) -> (u64, u64, usize) {
		let (hits, misses) = self.cache.hit_counts();
		(hits, misses, self.cache.used_bytes() + self.bodies.used_bytes())
	}

	/// Drop every cached posting list and body.
	pub fn clear(&self) {
		self.cache.clear();
		self.bodies.clear();
	}
}

/// Readers held off while a commit is published (see [`Reads::publish`]).
pub(crate) struct Publish<'a> {
	reads: &'a Reads,
	_view: view::WriteGuard<'a>,
}

impl Publish<'_> {
	/// The commit adds (`true`) or removes ids in these lists.
	pub fn lists(&self, changes: &[(PostingKey, Id, bool)]) {
		if changes.is_empty() {
			return;
		}
		let cache = &self.reads.cache;
		cache.changed();
		for (key, id, add) in changes {
			cache.update(key, |list| if *add { list.insert(*id) } else { list.remove(*id) });
		}
	}

	/// The commit admits a statement with a decryption key.
	pub fn keyed(&self) {
		self.reads.keyed.store(true, Ordering::Relaxed);
	}

	/// The commit removes statement `id`.
	pub fn removed(&self, id: Id) {
		self.reads.bodies.remove(id);
	}
}
