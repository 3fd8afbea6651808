//! Loading the membership set at open: from its snapshot, caught up on the journal and the
//! removal log and checked against a sample of bodies, or else from every stored body on
//! several threads.

use crate::{
	error::Error,
	error::Result,
	index::lists::stored_ids,
	index::membership::{Membership, SnapshotTag},
	index::schema::{self, Counters, Id, StoredBody},
};
use statement_primitives::Hash;
use std::sync::atomic::{AtomicU64, Ordering};

pub(super) struct StoredSummary {
	pub(super) count: u64,
	pub(super) next_id: Id,
}

/// Bodies checked against their journal hash while opening: enough to catch a truncated or
/// swapped body table, few enough that opening stays instant.
const OPEN_SAMPLES: u64 = 64;
/// Threads taking those samples (they wait on the disk more than they compute).
const SAMPLE_THREADS: usize = 8;

/// A u64 position kept in the meta column (intent sequence, removal log); absent = 0.
pub(crate) fn meta_position(db: &parity_db::Db, key: &[u8]) -> Result<u64> {
	match db.get(schema::COL_META, key)? {
		Some(bytes) => schema::decode_value(schema::COL_META, &bytes),
		None => Ok(0),
	}
}

/// Bring a membership snapshot taken at `old` up to the database at `now`: add the journal's
/// entries from `old.next_id` on, take out the logged removals from `old.removals` on of
/// statements admitted before the snapshot (later ones were never added). Returns how many
/// were added and removed, or `None` if the removal log no longer reaches back that far.
pub(super) fn catch_up(
	db: &parity_db::Db,
	set: &Membership,
	old: &SnapshotTag,
	now: &SnapshotTag,
	path: &str,
) -> Result<Option<(u64, u64)>> {
	let mut added = 0;
	let mut iter = db.iter(schema::COL_JOURNAL)?;
	iter.seek(&schema::id_key(old.next_id))?;
	while let Some((key, value)) = iter.next()? {
		let (id, hash) = schema::journal_entry(&key, &value)?;
		set.insert(&hash, id);
		added += 1;
	}
	let mut removed = 0;
	let mut position = old.removals;
	while position < now.removals {
		let segment = position / schema::REMOVAL_SEGMENT;
		let entries =
			db.get(schema::COL_META, &schema::removal_segment_key(segment))?.unwrap_or_default();
		let end = ((segment + 1) * schema::REMOVAL_SEGMENT).min(now.removals);
		for at in position..end {
			let offset = (at % schema::REMOVAL_SEGMENT) as usize * schema::REMOVAL_ENTRY;
			let Some(entry) = entries.get(offset..offset + schema::REMOVAL_ENTRY) else {
				log::warn!(
					target: "statement-store",
					"{path}: the removal log lacks removal {at}; reading every statement"
				);
				return Ok(None);
			};
			let (id, fingerprint) = entry.split_at(8);
			let id = u64::from_le_bytes(id.try_into().expect("8 bytes"));
			if id < old.next_id {
				set.remove_fingerprint(fingerprint.try_into().expect("8 bytes"), id);
				removed += 1;
			}
		}
		position = end;
	}
	Ok(Some((added, removed)))
}

/// Check a loaded snapshot against the database: statements spread over the id range must
/// be in the set, and (with `bodies`) their bodies must hash to a hash stored under their id.
/// `Ok(false)` if the snapshot disagrees with the database (the caller reads every body
/// instead); an error if a body is damaged.
///
/// Each sample is a few reads (a posting segment, the body, its hash entry) of pages that are
/// not in memory on the first open after a reboot, each a wait on the disk; the samples are
/// taken on [`SAMPLE_THREADS`] threads so that the waits overlap.
pub(super) fn check_samples(
	db: &parity_db::Db,
	set: &Membership,
	counters: &Counters,
	bodies: bool,
	path: &str,
) -> Result<bool> {
	if counters.count == 0 {
		return Ok(true);
	}
	let step = (counters.next_id / OPEN_SAMPLES).max(1);
	let starts: Vec<Id> = (1..counters.next_id).step_by(step as usize).collect();
	let lanes = SAMPLE_THREADS.min(starts.len()).max(1);
	// The first stored id at or after each start; a start whose range holds none is left to
	// the next one, which would find the same statement.
	let outcomes = on_threads(lanes, path, "checking stored statements", |first| {
		for &from in starts.iter().skip(first).step_by(lanes) {
			let Some(&id) = stored_ids(db, from, counters.next_id, 1)?.first() else { break };
			if id >= from + step {
				continue;
			}
			let hash = body_hash(db, id, bodies, path)?;
			if !hash.is_some_and(|hash| set.holds(schema::fingerprint(&hash), id)) {
				log::warn!(
					target: "statement-store",
					"{path}: the membership snapshot lacks statement {id}; reading every statement"
				);
				return Ok(false);
			}
		}
		Ok(true)
	});
	let mut agree = true;
	for outcome in outcomes {
		agree &= outcome?;
	}
	Ok(agree)
}

/// Ask the kernel to start reading the first page of every parity-db value table in `path`,
/// without waiting. parity-db reads each table's header as it opens, one file after another;
/// on the first open after a reboot each read waits on the disk in turn (about 270 files at
/// 4.19M statements). A hint: what it cannot do is skipped.
#[cfg(target_os = "linux")]
pub(super) fn hint_table_headers(path: &std::path::Path) {
	let Ok(entries) = std::fs::read_dir(path) else { return };
	for entry in entries.flatten() {
		if entry.file_name().as_encoded_bytes().starts_with(b"table_") {
			if let Ok(file) = std::fs::File::open(entry.path()) {
				let page = std::num::NonZeroU64::new(4096);
				let _ = rustix::fs::fadvise(&file, 0, page, rustix::fs::Advice::WillNeed);
			}
		}
	}
}

#[cfg(not(target_os = "linux"))]
pub(super) fn hint_table_headers(_path: &std::path::Path) {}

/// The hash of statement `id`'s body; `None` if it has none. With `check`, the hash must be
/// stored under `id` (else the body is damaged, or its table truncated or swapped): an error.
fn body_hash(db: &parity_db::Db, id: Id, check: bool, path: &str) -> Result<Option<Hash>> {
	let hash = db
		.get(schema::COL_BODY, &schema::body_key(id))?
		.map(|value| StoredBody::of(value).hashed().1);
	if check {
		let stored = match &hash {
			Some(hash) => {
				db.get(schema::COL_HASH, hash)?.as_deref().and_then(schema::le_u64_prefix)
			}
			None => None,
		};
		if stored != Some(id) {
			return Err(Error::Corrupt {
				path: path.into(),
				detail: format!("the body of statement {id} is missing or does not match its hash"),
			});
		}
	}
	Ok(hash)
}

/// Stored ids read at a time while rebuilding the membership set.
const LOAD_PAGE: usize = 4096;

/// Fill the membership set from every stored statement's body (the snapshot is missing or
/// does not fit), checking an evenly spread sample against the hashes stored under their ids.
/// The bodies are read and hashed on every core, each taking a range of ids a page at a time.
pub(super) fn hash_every_body(
	db: &parity_db::Db,
	membership: &Membership,
	counters: &Counters,
	bodies: bool,
	path: &str,
) -> Result<StoredSummary> {
	let expected = counters.count;
	// Ids spread over the range: about OPEN_SAMPLES of them, fewer where many were removed.
	let stride = (counters.next_id / OPEN_SAMPLES).max(1);
	let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8) as u64;
	let span = counters.next_id.div_ceil(threads).max(1);
	let (count, last) = (AtomicU64::new(0), AtomicU64::new(0));
	let outcomes = on_threads(threads as usize, path, "hashing the stored statements", |n| {
		let n = n as u64;
		let (mut from, below) = (n * span, (n + 1) * span);
		loop {
			let ids = stored_ids(db, from, below, LOAD_PAGE)?;
			for &id in &ids {
				let done = count.fetch_add(1, Ordering::Relaxed) + 1;
				// A missing body is counted: the counters then disagree, or `check-db` finds
				// it.
				if let Some(hash) = body_hash(db, id, bodies && id % stride == 0, path)? {
					membership.insert(&hash, id);
				}
				last.fetch_max(id, Ordering::Relaxed);
				if done % 1_000_000 == 0 {
					log::info!(
						target: "statement-store",
						"{path}: hashed {done} of {expected} statements"
					);
				}
			}
			match ids.last() {
				Some(id) if ids.len() == LOAD_PAGE => from = id + 1,
				_ => return Ok(()),
			}
		}
	});
	outcomes.into_iter().collect::<Result<()>>()?;
	Ok(StoredSummary { count: count.into_inner(), next_id: last.into_inner() + 1 })
}

/// `work(lane)` for every lane in `0..lanes`, each on a thread of its own while this one
/// waits (a lane whose thread cannot be started runs here, after the others), the outcomes in
/// lane order. A thread that panicked counts as damage to the database at `path`: "a thread
/// {what} panicked".
fn on_threads<T: Send>(
	lanes: usize,
	path: &str,
	what: &str,
	work: impl Fn(usize) -> Result<T> + Sync,
) -> Vec<Result<T>> {
	let work = &work;
	std::thread::scope(|scope| {
		let spawned: Vec<_> = (0..lanes)
			.map(|lane| {
				std::thread::Builder::new()
					.name("statement-open".into())
					.spawn_scoped(scope, move || work(lane))
					.map_err(|_| lane)
			})
			.collect();
		spawned
			.into_iter()
			.map(|thread| match thread {
				Ok(thread) => thread.join().unwrap_or_else(|_| {
					Err(Error::Corrupt {
						path: path.into(),
						detail: format!("a thread {what} panicked"),
					})
				}),
				Err(lane) => work(lane),
			})
			.collect()
	})
}
