//! Membership snapshots: when the next one is due and writing it (see `membership` for the
//! file, `open` for reading it back).

use crate::{
	error::Error,
	error::Result,
	index::membership::SnapshotTag,
	index::schema::{self, Counters, Id, StoredBody},
	store::{Inner, Store},
};

/// Journal entries deleted per staged change when a snapshot covers them.
const PRUNE_CHUNK: usize = 16_384;

/// The membership snapshot, written when the store closes, next to parity-db's files.
pub const SNAPSHOT_FILE: &str = "membership.snapshot";

impl Store {
	/// Write the membership snapshot now, so that opening after a crash starts from it
	/// instead of walking the journal. [`Store::maintain`] calls this when one is due (see
	/// [`crate::config::Config::snapshot_changes`]); submits wait only while the set is copied.
	pub fn write_snapshot(&self) -> Result<()> {
		let inner = &self.inner;
		let started = std::time::Instant::now();
		let shown = inner.config.path.display().to_string();
		// The snapshot may only cover batches parity-db holds: after a crash the intent
		// log redoes the others, and would add them a second time.
		let (copy, tag) = inner.at_rest(|counters, removals| {
			let tag = snapshot_tag(inner.db.raw(), counters, removals, &shown)?;
			Ok((inner.membership.copy(), tag))
		})?;
		let copied = started.elapsed();
		let path = inner.config.path.join(SNAPSHOT_FILE);
		copy.save(&path, &tag).map_err(|source| Error::Io {
			operation: "write the membership snapshot",
			path: path.display().to_string(),
			source,
		})?;
		drop(copy);
		// The removal log before this snapshot is not needed any more.
		inner.snapshots.written(&tag, |segments| {
			let ops = segments
				.map(|segment| (schema::COL_META, schema::removal_segment_key(segment), None))
				.collect();
			inner.stage_covered(ops);
		});
		self.prune_journal(tag.next_id)?;
		log::debug!(
			target: "statement-store",
			"wrote {} ({} statements) in {:?}, submits held for {copied:?}",
			path.display(),
			tag.count,
			started.elapsed()
		);
		Ok(())
	}

	/// Delete the journal's entries below `below` (the next id of the snapshot just written,
	/// which holds their hashes): a chunk per staged change, each taking the writer lock
	/// only while it is staged. After an upgrade from schema 2 this is every statement's
	/// entry, once.
	fn prune_journal(&self, below: Id) -> Result<()> {
		let inner = &self.inner;
		let mut pruned = 0u64;
		loop {
			let mut ops = Vec::new();
			// Hands the staged changes over first, so the last chunk's deletes are seen.
			let mut iter = inner.db.iter(schema::COL_JOURNAL)?;
			iter.seek_to_first()?;
			while ops.len() < PRUNE_CHUNK {
				let Some((key, _)) = iter.next()? else { break };
				if schema::be_u64(&key, 0).is_none_or(|id| id >= below) {
					break;
				}
				ops.push((schema::COL_JOURNAL, key, None));
			}
			drop(iter);
			let chunk = ops.len();
			if chunk > 0 {
				inner.stage_covered(ops);
			}
			pruned += chunk as u64;
			if chunk < PRUNE_CHUNK {
				break;
			}
		}
		if pruned >= PRUNE_CHUNK as u64 {
			log::info!(target: "statement-store", "pruned {pruned} journal entries the snapshot covers");
		}
		Ok(())
	}

	/// Whether enough changed since the newest membership snapshot to write another.
	pub(crate) fn snapshot_due(&self) -> bool {
		let inner = &self.inner;
		inner.snapshots.due(
			inner.writes.counters().next_id,
			inner.writes.removals(),
			inner.config.snapshot_changes,
			inner.config.snapshot_period,
		)
	}
}

impl Inner {
	/// Write the membership snapshot as the store closes, so that the next open reads it
	/// instead of the journal; a failure only costs that next open a journal walk.
	pub(crate) fn save_snapshot_at_close(&self) {
		let counters = self.writes.counters();
		let shown = self.config.path.display().to_string();
		let path = self.config.path.join(SNAPSHOT_FILE);
		let started = std::time::Instant::now();
		let removals = self.writes.removals();
		let saved = snapshot_tag(self.db.raw(), &counters, removals, &shown)
			.map_err(|err| err.to_string())
			.and_then(|tag| self.membership.save(&path, &tag).map_err(|err| err.to_string()));
		match saved {
			Ok(()) => log::debug!(
				target: "statement-store",
				"wrote {} in {:?}",
				path.display(),
				started.elapsed()
			),
			Err(err) => log::warn!(
				target: "statement-store",
				"cannot write {}: {err}; the next open reads the journal instead",
				path.display()
			),
		}
	}
}

/// What the database says now, for tagging a membership snapshot: the counters, the
/// removal-log position and the hash of the newest stored statement, whose id must be below
/// the next id.
pub(crate) fn snapshot_tag(
	db: &parity_db::Db,
	counters: &Counters,
	removals: u64,
	path: &str,
) -> Result<SnapshotTag> {
	let mut last_hash = [0u8; 32];
	if let Some(id) = crate::index::lists::last_stored_id(db)? {
		if id >= counters.next_id {
			return Err(Error::Corrupt {
				path: path.into(),
				detail: format!(
					"statement {id} is stored but the counters give out {} next",
					counters.next_id
				),
			});
		}
		if let Some(value) = db.get(schema::COL_BODY, &schema::body_key(id))? {
			last_hash = StoredBody::of(value).hashed().1;
		}
	}
	Ok(SnapshotTag { count: counters.count, next_id: counters.next_id, last_hash, removals })
}
