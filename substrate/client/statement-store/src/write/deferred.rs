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
//! removals are settled once [`DEFERRED_LIMIT`] of them wait, and before a subscription
//! counts its replay from the posting lists.
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
//!   set asks [`super::waiting::Deferred::holds`] before it calls that damage. A waiting id leaves this set
//!   only after the settling batch is published, so a reader that no longer finds it here
//!   finds it in no list either.
//! - **Bans.** Submits ask [`super::waiting::Deferred::ban_of`] as well as the ban column.
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
use parking_lot::MutexGuard;
use statement_primitives::Hash;
use std::sync::atomic::Ordering;

/// Removals waiting at most: reaching it settles them (about 300 bytes each; one settling
/// batch holds the writer lock for about a millisecond).
pub(crate) const DEFERRED_LIMIT: usize = 512;

impl Inner {
	/// The writer lock, with every waiting removal applied first: every write but a
	/// removal's own starts here, so that it plans from the state the intent log describes.
	/// Fails if the waiting removals cannot be applied; then nothing may be written.
	pub(crate) fn writer(&self) -> Result<MutexGuard<'_, Counters>> {
		let mut counters = self.writes.counters.lock();
		if self.writes.deferred.any() {
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

	/// Apply the waiting removals now, if any wait (`Store::settle`, the check).
	pub(crate) fn settle_waiting(&self) -> Result<()> {
		if self.writes.deferred.any() {
			drop(self.writer()?);
		}
		Ok(())
	}

	/// [`Inner::settle_waiting`], a failure logged (closing, metrics, a new subscription,
	/// tests). Returns whether none are left.
	pub(crate) fn settle_now(&self) -> bool {
		match self.settle_waiting() {
			Ok(()) => true,
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
		let (waiting, bytes) = {
			let publish = self.reads.publish();
			let ids: Vec<(Hash, Id)> =
				found.iter().map(|(hash, record)| (*hash, record.id)).collect();
			// Held here before the set forgets them: a reader that misses one in the set
			// finds it here (see `Deferred::holds`).
			let totals = self.writes.deferred.push(found, ban_until, seq);
			for (hash, id) in ids {
				self.membership.remove(&hash, id);
				publish.removed(id);
			}
			totals
		};
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
