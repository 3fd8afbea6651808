//! The removals acknowledged and waiting for their index edits, which readers and submits
//! ask about (see `deferred` for what waits and why).

use crate::index::schema::{Id, Record};
use parking_lot::Mutex;
use statement_primitives::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Default)]
struct Waiting {
	/// Removals acknowledged and not yet applied, in order: hash, record, end of its ban.
	removals: Vec<(Hash, Record, Option<u64>)>,
	/// Their ids, which readers ask about; kept until the settling batch is published.
	ids: std::collections::HashSet<Id, ahash::RandomState>,
	/// Their bans, which submits ask about; kept as long as `ids`.
	bans: std::collections::HashMap<Hash, u64, ahash::RandomState>,
	/// The newest intent batch among them.
	through: u64,
	/// Bytes of their encodings, left out of the reported total.
	bytes: u64,
}

/// Removals acknowledged ahead of their index edits (see the module documentation).
#[derive(Default)]
pub(crate) struct Deferred {
	waiting: Mutex<Waiting>,
	/// Ids in `waiting.ids`: readers skip the lock while it is zero.
	held: AtomicUsize,
}

impl Deferred {
	/// Whether any removal waits.
	pub fn any(&self) -> bool {
		self.held.load(Ordering::Acquire) != 0
	}

	/// Whether statement `id` is removed and waits for its index edits: its body is still on
	/// disk and its id may still be in posting lists.
	pub fn holds(&self, id: Id) -> bool {
		self.held.load(Ordering::Acquire) != 0 && self.waiting.lock().ids.contains(&id)
	}

	/// When the ban of a waiting removal of `hash` ends, if there is one.
	pub fn ban_of(&self, hash: &Hash) -> Option<u64> {
		if self.held.load(Ordering::Acquire) == 0 {
			return None;
		}
		self.waiting.lock().bans.get(hash).copied()
	}

	/// Removals waiting, and the bytes of their encodings.
	pub fn totals(&self) -> (usize, u64) {
		let waiting = self.waiting.lock();
		(waiting.removals.len(), waiting.bytes)
	}

	/// Add removals acknowledged under intent batch `seq`; returns the totals after (see
	/// [`Deferred::totals`]).
	pub fn push(&self, removed: Vec<(Hash, Record)>, ban_until: u64, seq: u64) -> (usize, u64) {
		let mut waiting = self.waiting.lock();
		for (hash, record) in removed {
			waiting.ids.insert(record.id);
			waiting.bans.insert(hash, ban_until);
			waiting.bytes += u64::from(record.encoded_len);
			waiting.removals.push((hash, record, Some(ban_until)));
		}
		waiting.through = seq;
		self.held.store(waiting.ids.len(), Ordering::Release);
		(waiting.removals.len(), waiting.bytes)
	}

	/// The removals waiting and the newest intent batch among them, taken out to settle;
	/// their ids and bans stay until [`Deferred::settled`].
	pub fn take(&self) -> (Vec<(Hash, Record, Option<u64>)>, u64) {
		let mut waiting = self.waiting.lock();
		(std::mem::take(&mut waiting.removals), waiting.through)
	}

	/// Settling failed: the removals wait again, ahead of any that came since.
	pub fn put_back(&self, mut removals: Vec<(Hash, Record, Option<u64>)>) {
		let mut waiting = self.waiting.lock();
		removals.append(&mut waiting.removals);
		waiting.removals = removals;
	}

	/// The settling batch is published (called while readers are held off).
	pub fn settled(&self) {
		let mut waiting = self.waiting.lock();
		debug_assert!(waiting.removals.is_empty(), "removals acknowledged while settling");
		waiting.ids.clear();
		waiting.bans.clear();
		waiting.bytes = 0;
		self.held.store(0, Ordering::Release);
	}
}
