//! Removals acknowledged before their index edits are applied.
//!
//! A removal used to be one batch of its own: the intent record, then the edits of every
//! list the statement is in (its topics, its key, its account, the list of all statements,
//! its expiry second), the removal log and the counters, each posting segment encoded
//! again for one id. Most of that was fixed cost per batch (benches/HISTORY.md).
//!
//! Now a removal does only what makes it durable and invisible, under the writer lock:
//! it finds the statement (one read, as before), appends its intent record, takes it out of
//! the membership set and the body cache, and is acknowledged. Its record waits here. The
//! edits are applied later as one batch for every removal waiting ([`Inner::settle`]), under
//! the newest of their intent numbers, before anything else is written: every other write
//! takes the writer lock through [`Inner::writer`], which settles first, and the waiting
//! removals are settled once [`DEFERRED_LIMIT`] of them wait.
//!
//! Why this is safe:
//! - **Durability.** The intent record is appended before the call returns, as for any
//!   batch. No later batch reaches parity-db before the waiting removals do (they are
//!   settled first), so the number parity-db holds never passes one of them: after a crash
//!   opening redoes them from the intent log like any batch, and the intent files holding
//!   them are kept until then.
//! - **Readers.** A waiting removal is out of the membership set, so `has_statement`,
//!   lookups by hash and every body read from disk (checked against the set) leave it out;
//!   its id may still be in a posting list, and a reader that finds its body missing from the
//!   set asks [`Deferred::holds`] before it calls that damage. A waiting id leaves this set
//!   only after the settling batch is published, so a reader that no longer finds it here
//!   finds it in no list either.
//! - **Bans.** Submits ask [`Deferred::ban_of`] as well as the ban column.
//! - **Counters.** The statement count and bytes reported leave the waiting removals out at
//!   once; the counters writers start from are exact, as the writer settles first.
//! - **Snapshots and closing.** A membership snapshot is taken only at rest, after settling;
//!   closing settles before it releases the intent files, and keeps them if it cannot.

use crate::{
	error::Result,
	index::schema::{Counters, Id, Record},
	store::Inner,
	write::intent::Step,
};
use parking_lot::{Mutex, MutexGuard};
use statement_primitives::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Removals waiting at most: reaching it settles them (about 300 bytes each; one settling
/// batch holds the writer lock for about a millisecond).
pub(crate) const DEFERRED_LIMIT: usize = 512;

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
	fn totals(&self) -> (usize, u64) {
		let waiting = self.waiting.lock();
		(waiting.removals.len(), waiting.bytes)
	}

	/// Add removals acknowledged under intent batch `seq`.
	fn push(&self, removed: Vec<(Hash, Record)>, ban_until: u64, seq: u64) {
		let mut waiting = self.waiting.lock();
		for (hash, record) in removed {
			waiting.ids.insert(record.id);
			waiting.bans.insert(hash, ban_until);
			waiting.bytes += u64::from(record.encoded_len);
			waiting.removals.push((hash, record, Some(ban_until)));
		}
		waiting.through = seq;
		self.held.store(waiting.ids.len(), Ordering::Release);
	}

	/// The removals waiting and the newest intent batch among them, taken out to settle;
	/// their ids and bans stay until [`Deferred::settled`].
	fn take(&self) -> (Vec<(Hash, Record, Option<u64>)>, u64) {
		let mut waiting = self.waiting.lock();
		(std::mem::take(&mut waiting.removals), waiting.through)
	}

	/// Settling failed: the removals wait again, ahead of any that came since.
	fn put_back(&self, mut removals: Vec<(Hash, Record, Option<u64>)>) {
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

impl Inner {
	/// The writer lock, with every waiting removal applied first: every write but a
	/// removal's own starts here, so that it plans from the state the intent log describes.
	/// Fails if the waiting removals cannot be applied; then nothing may be written.
	pub(crate) fn writer(&self) -> Result<MutexGuard<'_, Counters>> {
		let mut counters = self.writes.counters.lock();
		if self.writes.deferred.held.load(Ordering::Acquire) != 0 {
			self.settle(&mut counters)?;
		}
		Ok(counters)
	}

	/// Apply every waiting removal as one batch, under the newest of their intent numbers
	/// (the caller holds the writer lock: `counters` is what it guards).
	fn settle(&self, counters: &mut Counters) -> Result<()> {
		let (removals, through) = self.writes.deferred.take();
		if removals.is_empty() {
			return Ok(());
		}
		let mut batch = super::batch::Batch::new(self, *counters);
		let built = removals
			.iter()
			.try_for_each(|(hash, record, ban_until)| batch.remove(hash, record, *ban_until));
		match built.and_then(|()| batch.commit_acknowledged(through)) {
			Ok(after) => {
				*counters = after;
				Ok(())
			}
			Err(err) => {
				self.writes.deferred.put_back(removals);
				Err(err)
			}
		}
	}

	/// Hold writers off with every waiting removal applied, make parity-db hold every staged
	/// batch (in its log, see [`super::writeback::Writeback::drain`]) and call `at_rest` with
	/// the counters and the removal log's position that parity-db now matches.
	pub(crate) fn at_rest<T>(
		&self,
		at_rest: impl FnOnce(&Counters, u64) -> Result<T>,
	) -> Result<T> {
		let counters = self.writer()?;
		self.writes.writeback.drain()?;
		at_rest(&counters, self.writes.removals())
	}

	/// Settle the waiting removals now (closing; tests). Returns whether none are left.
	pub(crate) fn settle_now(&self) -> bool {
		match self.writer() {
			Ok(_) => true,
			Err(err) => {
				log::error!(
					target: "statement-store",
					"applying {} acknowledged removals failed: {err}; the intent log keeps them \
					 and the next open applies them",
					self.writes.deferred.totals().0
				);
				false
			}
		}
	}

	/// Remove the stored statements among `hashes` and ban them until `ban_until`: durable
	/// and invisible on return, their index edits left to the next settling (see the module
	/// documentation). One intent record serves all of them.
	pub(crate) fn remove_acknowledged(&self, hashes: &[Hash], ban_until: u64) -> Result<()> {
		let counters = self.writes.counters.lock();
		let mut found: Vec<(Hash, Record)> = Vec::with_capacity(hashes.len());
		for hash in hashes {
			if found.iter().any(|(seen, _)| seen == hash) {
				continue;
			}
			// Quarantined (its body damaged): left for `repair`, as every walk does.
			let Some((id, body)) = self.find(hash)? else { continue };
			let Some(record) = self.record_of_body(id, body.bytes()) else { continue };
			found.push((*hash, record));
		}
		if found.is_empty() {
			return Ok(());
		}
		let steps: Vec<Step> = found
			.iter()
			.map(|(hash, _)| Step::Remove { hash: *hash, ban_until: Some(ban_until) })
			.collect();
		let seq = self.writes.intent.next_seq();
		// Durable before invisible; if this fails nothing changed.
		self.writes.intent.append(seq, &steps)?;
		self.writes.banned.store(true, Ordering::Release);
		{
			let publish = self.reads.publish();
			let ids: Vec<(Hash, Id)> =
				found.iter().map(|(hash, record)| (*hash, record.id)).collect();
			// Held here before the set forgets them: a reader that misses one in the set
			// finds it here (see `Deferred::holds`).
			self.writes.deferred.push(found, ban_until, seq);
			for (hash, id) in ids {
				self.membership.remove(&hash, id);
				publish.removed(id);
			}
		}
		let (waiting, bytes) = self.writes.deferred.totals();
		self.metrics.set_totals(
			counters.count.saturating_sub(waiting as u64),
			counters.total_size.saturating_sub(bytes),
		);
		if waiting >= DEFERRED_LIMIT {
			let mut counters = counters;
			// Acknowledged already: a failure here is the next writer's to report.
			if let Err(err) = self.settle(&mut counters) {
				log::warn!(target: "statement-store", "applying acknowledged removals failed: {err}");
			}
		}
		Ok(())
	}
}

#[cfg(test)]
mod tests {
	use super::DEFERRED_LIMIT;
	use crate::{allowance::MapAllowances, config::Config, store::Store};
	use statement_primitives::testing::{ed25519_pair, TestStatement};
	use statement_primitives::{
		Statement, StatementAllowance, StatementSource, StatementStore, SubmitResult, Topic,
	};
	use std::sync::Arc;

	fn open(path: &std::path::Path) -> Store {
		let allowances =
			MapAllowances::new().with_default(StatementAllowance::new(10_000, 10 << 20));
		Store::open(Config::new(path), Arc::new(allowances)).unwrap()
	}

	/// Statement `n`, on topic 7, by one of four accounts.
	fn signed(n: u32) -> Statement {
		TestStatement::new()
			.expiry(u32::MAX, n)
			.topic(0, Topic([7; 32]))
			.data(n.to_le_bytes().to_vec())
			.signed_ed25519(&ed25519_pair(n % 4))
	}

	fn waiting(store: &Store) -> usize {
		store.inner.writes.deferred.totals().0
	}

	#[test]
	fn a_removal_waiting_for_its_index_edits_is_gone_from_every_answer_and_not_damage() {
		let dir = tempfile::tempdir().unwrap();
		let store = open(dir.path());
		for n in 0..20 {
			assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
		}
		// The topic's list and bodies cached, so that the answers below start from lists
		// that still name the removed ids.
		assert_eq!(store.broadcasts(&[Topic([7; 32])]).unwrap().len(), 20);
		for n in 0..3 {
			store.remove(&signed(n).hash()).unwrap();
		}
		assert_eq!(waiting(&store), 3, "the removals were applied at once");

		let mut data = store.broadcasts(&[Topic([7; 32])]).unwrap();
		data.sort();
		let mut left: Vec<Vec<u8>> = (3..20u32).map(|n| n.to_le_bytes().to_vec()).collect();
		left.sort();
		assert_eq!(data, left);
		assert_eq!(store.statements().unwrap().len(), 17);
		assert_eq!(store.len(), 17);
		for n in 0..3 {
			let hash = signed(n).hash();
			assert!(!store.has_statement(&hash));
			assert_eq!(store.statement(&hash).unwrap(), None);
			assert_eq!(
				store.submit(signed(n), StatementSource::Network),
				SubmitResult::KnownExpired,
				"statement {n} is banned from the network as soon as it is removed"
			);
		}
		assert_eq!(waiting(&store), 3, "nothing above settled them");
		// Taken for damage, they would have been counted (metrics settles them first).
		assert_eq!(store.metrics().corrupt, 0, "a waiting removal was quarantined");
		assert_eq!(waiting(&store), 0);

		// A later write starts from the state with them applied, and so does reopening.
		store.remove(&signed(3).hash()).unwrap();
		assert_eq!(store.submit(signed(100), StatementSource::Local), SubmitResult::New);
		assert_eq!(waiting(&store), 0, "the submit did not apply the waiting removal first");
		drop(store);
		let store = open(dir.path());
		assert_eq!(store.len(), 17);
		assert_eq!(store.broadcasts(&[Topic([7; 32])]).unwrap().len(), 17);
		let report = crate::open::check::check_open(&store).unwrap();
		assert!(report.problems.is_empty(), "{:?}", report.problems);
	}

	#[test]
	fn removals_are_applied_once_the_limit_waits_and_a_local_submit_lifts_the_ban() {
		let dir = tempfile::tempdir().unwrap();
		let store = open(dir.path());
		let count = DEFERRED_LIMIT as u32 + 10;
		for n in 0..count {
			assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
		}
		for n in 0..DEFERRED_LIMIT as u32 - 1 {
			store.remove(&signed(n).hash()).unwrap();
		}
		assert_eq!(waiting(&store), DEFERRED_LIMIT - 1);
		store.remove(&signed(DEFERRED_LIMIT as u32 - 1).hash()).unwrap();
		assert_eq!(waiting(&store), 0, "the removal that reached the limit applied them all");
		assert_eq!(store.broadcasts(&[Topic([7; 32])]).unwrap().len(), 10);
		// Waiting, then submitted again by its own client: admitted, ban lifted.
		store.remove(&signed(count - 1).hash()).unwrap();
		assert_eq!(store.submit(signed(count - 1), StatementSource::Local), SubmitResult::New);
		assert!(store.has_statement(&signed(count - 1).hash()));
		assert_eq!(store.len(), 10);
		let report = crate::open::check::check_open(&store).unwrap();
		assert!(report.problems.is_empty(), "{:?}", report.problems);
	}
}
