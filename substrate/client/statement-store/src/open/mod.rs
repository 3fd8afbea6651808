//! Opening a store: the directory and schema checks, migration, the membership set (from
//! its snapshot, caught up from the journal and the removal log, or from every body), the
//! intent-log redo after a crash, and trimming to the configured limits.

pub(crate) mod check;
pub(crate) mod migrate;
pub(crate) mod snapshot;

use crate::{
	allowance::AllowanceProvider,
	config::Config,
	error::Error,
	error::Result,
	index::lists::{has_segments, stored_ids},
	index::membership::SnapshotMark,
	index::membership::{Membership, SnapshotTag},
	index::schema::{self, Counters, Id, PostingKey, StoredBody},
	metrics::Metrics,
	open::snapshot::{snapshot_tag, SNAPSHOT_FILE},
	read::bodies::BodyCache,
	read::cache::PostingCache,
	read::view::ViewLock,
	store::{Inner, Store, DRAIN_PERIOD},
	subscription::registry::Subscriptions,
	write::disk::DiskGuard,
	write::intent::{self, IntentLog},
	write::staging::Database,
	write::writeback::{self, Writeback, WritebackThreads},
};
use codec::Encode;
use parking_lot::Mutex;
use statement_primitives::Hash;
use std::sync::{
	atomic::{AtomicBool, AtomicU64, Ordering},
	Arc,
};

impl Inner {
	/// Redo the intent-log batches the database does not hold yet (after a crash), in order,
	/// and make parity-db hold them durably before the store is used. `tolerant` (after a
	/// gap the operator chose to skip) lets a step that no longer applies pass.
	fn redo(
		&self,
		intents: Vec<intent::Intent>,
		held: u64,
		tolerant: bool,
		path: &str,
	) -> Result<()> {
		let pending: Vec<_> = intents.into_iter().filter(|(seq, _)| *seq > held).collect();
		if pending.is_empty() {
			return Ok(());
		}
		log::info!(
			target: "statement-store",
			"{path}: redoing {} changes from the intent log that the database lacks",
			pending.len()
		);
		let mut counters = self.writer.lock();
		for (seq, steps) in pending {
			let batch = crate::write::batch::Batch::new(self, *counters).redo(steps, tolerant)?;
			*counters = batch.commit_replayed(seq)?;
		}
		drop(counters);
		// The old intent files go next: make parity-db hold the batches durably.
		self.writeback.checkpoint()
	}
}

impl Store {
	/// Open (or create) the store described by `config`, reading allowances from `allowances`.
	///
	/// Refuses, without changing anything on disk, a directory that is not a database of this
	/// store, one written by a newer schema, or one whose counters contradict its journal.
	pub fn open(config: Config, allowances: Arc<dyn AllowanceProvider>) -> Result<Store> {
		Store::open_checked(config, allowances, true)
	}

	/// [`Store::open`]; `sample_bodies` checks a sample of bodies against their hashes and
	/// refuses the database if one does not match (off for `check` and `repair`, which look
	/// at every body themselves).
	pub(crate) fn open_checked(
		config: Config,
		allowances: Arc<dyn AllowanceProvider>,
		sample_bodies: bool,
	) -> Result<Store> {
		crate::error::catch_db_panic(|| Store::open_unguarded(config, allowances, sample_bodies))
	}

	fn open_unguarded(
		config: Config,
		allowances: Arc<dyn AllowanceProvider>,
		sample_bodies: bool,
	) -> Result<Store> {
		let path = config.path.clone();
		let shown = path.display().to_string();
		check_directory(&path)?;
		std::fs::create_dir_all(&path).map_err(|source| Error::Io {
			operation: "create the database directory",
			path: shown.clone(),
			source,
		})?;
		hint_table_headers(&path);
		let db =
			Arc::new(parity_db::Db::open_or_create(&schema::db_options(&path, config.sync_wal))?);
		let counters = read_schema(&db, &shown, config.sync_wal)?;
		// Read before anything else changes, so that a gap refuses the open untouched.
		let intent_seq = meta_position(&db, schema::KEY_INTENT)?;
		let mut intents = intent::read_intents(&path)?;
		let mark = intent::read_mark(&path);
		let gap = check_intents(&intents, intent_seq, mark, config.skip_intent_gaps, &shown)?;
		let removals = meta_position(&db, schema::KEY_REMOVALS)?;
		let tag = snapshot_tag(&db, &counters, removals, &shown)?;
		let snapshot = path.join(SNAPSHOT_FILE);
		// A snapshot from before the database's state can be brought up to date; one from
		// after it (the database lost commits it covers, to power loss) cannot.
		let loaded = match Membership::load(&snapshot, |old| {
			old.next_id <= tag.next_id && old.removals <= tag.removals
		}) {
			Ok(loaded) => loaded,
			Err(err) => {
				log::warn!(target: "statement-store", "cannot read {}: {err}", snapshot.display());
				None
			}
		};
		let mut caught_up = (0, 0);
		let from_snapshot = match loaded {
			Some((set, old)) => {
				let delta = if old == tag {
					Some((0, 0))
				} else {
					catch_up(&db, &set, &old, &tag, &shown)?
				};
				match delta {
					Some(delta)
						if set.len() == counters.count
							&& check_samples(&db, &set, &counters, sample_bodies, &shown)? =>
					{
						caught_up = delta;
						Some((set, old))
					}
					Some(_) => {
						log::warn!(
							target: "statement-store",
							"{shown}: the membership snapshot and the removal log do not add up to \
							 the database; reading every statement"
						);
						None
					}
					None => None,
				}
			}
			None => None,
		};
		let reopened_from_snapshot = from_snapshot.is_some();
		let mark = match &from_snapshot {
			Some((_, old)) => SnapshotMark {
				next_id: old.next_id,
				removals: old.removals,
				at: std::time::Instant::now(),
				trimmed_below: old.removals / schema::REMOVAL_SEGMENT,
			},
			// No usable snapshot: the first maintenance run writes one.
			None => SnapshotMark {
				next_id: 0,
				removals: 0,
				at: std::time::Instant::now(),
				trimmed_below: 0,
			},
		};
		let membership = match from_snapshot {
			Some((set, _)) => set,
			None => {
				if counters.count > 0 {
					log::info!(
						target: "statement-store",
						"{shown}: no usable membership snapshot (the last run did not close \
						 cleanly?), reading the bodies of {} statements",
						counters.count
					);
				}
				let set = Membership::default();
				let stored = hash_every_body(&db, &set, &counters, sample_bodies, &shown)?;
				if stored.count != counters.count || stored.next_id > counters.next_id {
					return Err(Error::Corrupt {
						path: shown,
						detail: format!(
							"counters say {} statements and next id {}, the stored ids are {} up \
							 to id {}",
							counters.count, counters.next_id, stored.count, stored.next_id
						),
					});
				}
				set
			}
		};
		log::info!(
			target: "statement-store",
			"opened {shown}: {} statements, {} bytes{}",
			counters.count,
			counters.total_size,
			match (reopened_from_snapshot, caught_up) {
				(false, _) => String::new(),
				(true, (0, 0)) => " (membership from snapshot)".into(),
				(true, (added, removed)) => format!(
					" (membership from snapshot, then {added} admitted and {removed} removed since)"
				),
			}
		);
		let keyed = has_segments(&db, PostingKey::Keyed)?;
		let banned = {
			let mut iter = db.iter(schema::COL_BAN_ORDER)?;
			iter.seek_to_first()?;
			iter.next()?.is_some()
		};
		let next_seq = intents.records.last().map_or(0, |(seq, _)| *seq).max(intent_seq) + 1;
		let intent = Arc::new(IntentLog::create(&path, config.sync_wal, next_seq)?);
		let db = Arc::new(Database::new(db));
		let writeback = Arc::new(Writeback::new(db.clone(), intent.clone(), &config));
		let writer = Arc::new(Mutex::new(counters));
		let disk = Arc::new(DiskGuard::new(path.clone(), config.min_free_bytes));
		let threads = WritebackThreads::start(writeback.clone(), disk.clone(), DRAIN_PERIOD)
			.map_err(|err| Error::Config(format!("cannot start the log thread: {err}")))?;
		let subscription_budget = config.subscription_budget_bytes;
		let inner = Inner {
			threads,
			cache: PostingCache::new(config.cache_bytes),
			bodies: BodyCache::new(config.body_cache_bytes),
			db,
			intent,
			writeback,
			disk,
			config,
			view: ViewLock::default(),
			writer,
			membership,
			allowances,
			subscriptions: Subscriptions::with_budget(subscription_budget),
			metrics: Metrics::default(),
			keyed: AtomicBool::new(keyed),
			banned: AtomicBool::new(banned),
			allowance_cursor: Mutex::new(None),
			reopened_from_snapshot,
			caught_up,
			removals: AtomicU64::new(removals),
			snapshot_mark: Mutex::new(mark),
			quarantined: Mutex::default(),
		};
		let old_intent_files = std::mem::take(&mut intents.files);
		inner.redo(intents.records, intent_seq, gap, &shown)?;
		// parity-db now holds every batch they had: delete them, or after a skipped gap keep
		// them aside for the operator.
		let current = inner.intent.current_path();
		for file in old_intent_files.iter().filter(|file| **file != current) {
			let done = if gap {
				std::fs::rename(file, file.with_extension("log.damaged"))
			} else {
				std::fs::remove_file(file)
			};
			if let Err(err) = done {
				log::warn!(target: "statement-store", "cannot move or delete {}: {err}", file.display());
			}
		}
		let counters = *inner.writer.lock();
		inner.metrics.set_totals(counters.count, counters.total_size);
		let store = Store { inner: Arc::new(inner) };
		store.trim_to_limits()?;
		Ok(store)
	}
}

/// Refuse a directory that holds files but no parity-db metadata: opening it would create a
/// fresh database over someone's data.
fn check_directory(path: &std::path::Path) -> Result<()> {
	let Ok(mut entries) = std::fs::read_dir(path) else { return Ok(()) };
	let has_files = entries.next().is_some();
	if has_files && !path.join("metadata").is_file() {
		return Err(Error::Corrupt {
			path: path.display().to_string(),
			detail: "the directory is not empty but has no parity-db metadata file".into(),
		});
	}
	Ok(())
}

/// Read (or, for a new database, write) the schema version and the counters.
fn read_schema(db: &parity_db::Db, path: &str, sync: bool) -> Result<Counters> {
	let corrupt = |detail: String| Error::Corrupt { path: path.into(), detail };
	match db.get(schema::COL_META, schema::KEY_SCHEMA)? {
		None => {
			let mut journal = db.iter(schema::COL_JOURNAL)?;
			journal.seek_to_first()?;
			if journal.next()?.is_some() || has_segments(db, PostingKey::All)? {
				return Err(corrupt(
					"statements are present but the schema version is missing".into(),
				));
			}
			// Id 0 is never given out, so "after 0" means "from the start".
			let counters = Counters { next_id: 1, ..Counters::default() };
			writeback::commit(
				db,
				[
					(
						schema::COL_META,
						schema::KEY_SCHEMA.to_vec(),
						Some(schema::SCHEMA_VERSION.encode()),
					),
					(schema::COL_META, schema::KEY_COUNTERS.to_vec(), Some(counters.encode())),
				],
				sync,
			)?;
			Ok(counters)
		}
		Some(bytes) => {
			let version: u32 = schema::decode_value(schema::COL_META, &bytes)?;
			if version > schema::SCHEMA_VERSION {
				return Err(Error::NewerSchema {
					path: path.into(),
					found: version,
					supported: schema::SCHEMA_VERSION,
				});
			}
			crate::open::migrate::migrate(db, version, path, sync)?;
			let counters = db
				.get(schema::COL_META, schema::KEY_COUNTERS)?
				.ok_or_else(|| corrupt("the counters are missing".into()))?;
			schema::decode_value(schema::COL_META, &counters)
		}
	}
}

/// Log what reading the intent log found; refuse a gap in its sequence numbers after
/// `held` (the newest batch the database holds) unless `skip` says to go on. Returns whether
/// a gap is being skipped.
/// Refuse (or, with `skip`, only log) batches acknowledged but found neither in the database
/// (which holds up to `held`) nor in the intent files: a gap between intent records, or a
/// missing end, which only the `mark` (the newest acknowledged batch) shows.
fn check_intents(
	intents: &intent::IntentRead,
	held: u64,
	mark: Option<u64>,
	skip: bool,
	path: &str,
) -> Result<bool> {
	let last_file = intents.files.last();
	for (file, at, len) in &intents.damaged {
		let at_end = Some(file) == last_file
			&& std::fs::metadata(file).is_ok_and(|meta| meta.len() == (at + len) as u64);
		if at_end {
			log::info!(
				target: "statement-store",
				"{}: the last intent record was cut short at byte {at} (a crash during an \
				 append); it was never acknowledged",
				file.display()
			);
		} else {
			log::warn!(
				target: "statement-store",
				"{}: {len} damaged bytes at byte {at} skipped; reading went on at the next \
				 intact record",
				file.display()
			);
		}
	}
	let newest = intents.records.last().map_or(0, |(seq, _)| *seq).max(held);
	let (first, last, detail) = match (intents.gap_after(held), mark) {
		(Some((first, last)), _) => {
			let detail = match intents.damaged.first() {
				Some((file, at, _)) => {
					format!("damaged records from byte {at} of {}", file.display())
				}
				None => "an intent file is missing".into(),
			};
			(first, last, detail)
		}
		// Nothing missing in between, but batches were acknowledged past the newest one found:
		// the end of the log is gone (its newest file, or records cut off its end).
		(None, Some(mark)) if mark > newest => (
			newest + 1,
			mark,
			format!(
				"the end of the intent log is missing: {} says batch {mark} was acknowledged, \
				 the newest intent record is batch {newest}",
				intent::MARK_FILE
			),
		),
		_ => return Ok(false),
	};
	if !skip {
		return Err(Error::IntentGap { path: path.into(), first, last, detail });
	}
	log::error!(
		target: "statement-store",
		"{path}: the intent log lacks batches {first} to {last} ({detail}); redoing the intact \
		 batches as asked, the intent files are kept as *.damaged"
	);
	Ok(true)
}

struct StoredSummary {
	count: u64,
	next_id: Id,
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
fn catch_up(
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
fn check_samples(
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
fn hint_table_headers(path: &std::path::Path) {
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
fn hint_table_headers(_path: &std::path::Path) {}

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
fn hash_every_body(
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

#[cfg(test)]
mod tests;
