//! The store: opening the database, the read path, and the [`StatementStore`] trait.

use crate::{
	bodies::BodyCache,
	cache::PostingCache,
	disk::DiskGuard,
	membership::{Membership, SnapshotTag},
	metrics::{Metrics, MetricsSnapshot},
	paging::PAGE_IDS,
	posting::{decode_segment, encode_segment, intersect, segment_base, PostingList},
	schema::{self, Counters, Id, PostingKey, Record},
	staging::Database,
	subscription::{Subscription, Subscriptions, DEFAULT_SUBSCRIBER_QUEUE_BYTES},
	view::ViewLock,
	wal::{self, IntentLog, LogApplier, Processor},
	AllowanceProvider, Config, Error, Result,
};
use codec::Encode;
use parking_lot::Mutex;
use statement_primitives::{
	check_match_all, AccountId, DecryptionKey, Hash, Statement, StatementSource, StatementStore,
	SubmitResult, Topic, TopicFilter,
};
use std::sync::{
	atomic::{AtomicBool, AtomicU64, Ordering},
	Arc,
};

/// How often logged commits are applied to parity-db's tables.
const LOG_APPLY_PERIOD: std::time::Duration = std::time::Duration::from_millis(50);

/// A statement store backed by parity-db. Cheap to clone; clones share one store.
///
/// Reads (`broadcasts`, `posted`, `has_statement`, ...) run concurrently from any number of
/// threads; writers are serialised and hold readers off only while they publish a commit.
#[derive(Clone)]
pub struct Store {
	pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
	/// Stopped first when the store closes, so that the last checkpoint runs alone.
	log_applier: LogApplier,
	/// parity-db with the batches not yet handed to it (see `staging`).
	pub db: Arc<Database>,
	/// The redo log every acknowledged batch is appended to (see `wal`).
	pub intent: Arc<IntentLog>,
	/// Writes queued commits to parity-db's log.
	pub processor: Arc<Processor>,
	/// Free disk space, measured by the drain thread; submits are refused while it is low.
	pub disk: Arc<DiskGuard>,
	pub config: Config,
	/// Shared by queries for their whole run; taken exclusively only to publish a commit.
	pub view: ViewLock,
	/// Serialises writers and holds the counters they start from.
	pub writer: Arc<Mutex<Counters>>,
	pub membership: Membership,
	pub cache: PostingCache,
	/// Recently read statement bodies.
	pub bodies: BodyCache,
	pub allowances: Arc<dyn AllowanceProvider>,
	pub subscriptions: Subscriptions,
	pub metrics: Metrics,
	/// Statement bodies decoded while opening, so tests can prove that opening decodes none.
	/// Counted only until `open` returns, so queries do not share a contended counter.
	pub body_decodes: AtomicU64,
	/// Cleared when `open` returns.
	pub opening: AtomicBool,
	/// Whether the keyed list may be non-empty; when not, broadcasts skip subtracting it.
	/// Set when the store holds (or admits) a statement with a key; never cleared while open.
	pub keyed: AtomicBool,
	/// Whether the store may hold a ban; when not, submits skip looking one up. Set at open
	/// if the ban order is not empty and by every ban; never cleared while open.
	pub banned: AtomicBool,
	/// Where the next allowance re-check slice starts.
	pub allowance_cursor: Mutex<Option<AccountId>>,
	/// Whether opening read the membership set from its snapshot instead of the journal.
	pub reopened_from_snapshot: bool,
	/// Statements admitted and removed since that snapshot, which opening caught up on.
	pub caught_up: (u64, u64),
	/// Position of the removal log (see [`schema::removal_segment_key`]). Changed by batches,
	/// under the writer lock.
	pub removals: AtomicU64,
	/// What the newest membership snapshot covers.
	pub snapshot_mark: Mutex<SnapshotMark>,
	/// Statements found damaged on disk, left out of answers (see [`Inner::body_from_disk`]).
	pub quarantined: Mutex<std::collections::HashSet<Id>>,
}

/// Quarantined ids remembered (so each is logged once); past this, damage is only counted.
const MAX_QUARANTINED: usize = 100_000;

/// What the newest membership snapshot covers, to decide when the next one is due.
pub struct SnapshotMark {
	/// The journal position it covers.
	pub next_id: Id,
	/// The removal-log position it covers.
	pub removals: u64,
	/// When it was written (or the store opened).
	pub at: std::time::Instant,
	/// Removal-log segments below this one are deleted.
	pub trimmed_below: u64,
}

/// One page of [`Store::statements_page`].
#[derive(Debug, Default)]
pub struct StatementsPage {
	/// `(id, hash, encoding)`, in admission order.
	pub statements: Vec<(Id, Hash, Vec<u8>)>,
	/// Where the next page starts (pass it as `after`); `None` when the walk is done.
	pub next: Option<Id>,
}

/// The membership snapshot, written when the store closes, next to parity-db's files.
pub const SNAPSHOT_FILE: &str = "membership.snapshot";

impl Inner {
	/// Redo the intent-log batches the database does not hold yet (after a crash), in order,
	/// and make parity-db hold them durably before the store is used. `tolerant` (after a
	/// gap the operator chose to skip) lets a step that no longer applies pass.
	fn redo(&self, intents: Vec<wal::Intent>, held: u64, tolerant: bool, path: &str) -> Result<()> {
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
			let batch = crate::batch::Batch::new(self, *counters).redo(steps, tolerant)?;
			*counters = batch.commit_replayed(seq)?;
		}
		drop(counters);
		// The old intent files go next: make parity-db hold the batches durably.
		self.processor.checkpoint()
	}
}

impl Drop for Inner {
	fn drop(&mut self) {
		self.log_applier.stop();
		if let Err(err) = self.processor.checkpoint() {
			log::warn!(target: "statement-store", "writing the last commits failed: {err}");
		} else {
			// parity-db now holds everything appended: the intent files are not needed.
			self.intent.release_all();
		}
		let counters = *self.writer.lock();
		let shown = self.config.path.display().to_string();
		let path = self.config.path.join(SNAPSHOT_FILE);
		let started = std::time::Instant::now();
		let removals = self.removals.load(Ordering::Acquire);
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
		let db =
			Arc::new(parity_db::Db::open_or_create(&schema::db_options(&path, config.sync_wal))?);
		let counters = read_schema(&db, &shown, config.sync_wal)?;
		// Read before anything else changes, so that a gap refuses the open untouched.
		let intent_seq = meta_position(&db, schema::KEY_INTENT)?;
		let mut intents = wal::read_intents(&path)?;
		let gap = check_intents(&intents, intent_seq, config.skip_intent_gaps, &shown)?;
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
							 the database; reading the journal"
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
						 cleanly?), reading the journal of {} statements",
						counters.count
					);
				}
				let set = Membership::default();
				let journal = load_journal(&db, &set, counters.count, sample_bodies, &shown)?;
				if journal.count != counters.count || journal.next_id > counters.next_id {
					return Err(Error::Corrupt {
						path: shown,
						detail: format!(
							"counters say {} statements and next id {}, the journal holds {} up \
							 to id {}",
							counters.count, counters.next_id, journal.count, journal.next_id
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
		let processor = Arc::new(Processor::new(db.clone(), intent.clone(), &config));
		let writer = Arc::new(Mutex::new(counters));
		let disk = Arc::new(DiskGuard::new(path.clone(), config.min_free_bytes));
		let log_applier = LogApplier::start(processor.clone(), disk.clone(), LOG_APPLY_PERIOD)
			.map_err(|err| Error::Config(format!("cannot start the log thread: {err}")))?;
		let inner = Inner {
			log_applier,
			cache: PostingCache::new(config.cache_bytes),
			bodies: BodyCache::new(config.body_cache_bytes),
			db,
			intent,
			processor,
			disk,
			config,
			view: ViewLock::default(),
			writer,
			membership,
			allowances,
			subscriptions: Subscriptions::default(),
			metrics: Metrics::default(),
			body_decodes: AtomicU64::new(0),
			opening: AtomicBool::new(true),
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
		inner.opening.store(false, Ordering::Relaxed);
		let store = Store { inner: Arc::new(inner) };
		store.trim_to_limits()?;
		Ok(store)
	}

	/// Number of statements stored.
	pub fn len(&self) -> u64 {
		self.inner.metrics.statements()
	}

	/// Whether the store is empty.
	pub fn is_empty(&self) -> bool {
		self.len() == 0
	}

	/// Counters, submit outcomes and cache figures.
	pub fn metrics(&self) -> MetricsSnapshot {
		let mut snapshot = self.inner.metrics.snapshot();
		let (hits, misses) = self.inner.cache.hit_counts();
		snapshot.cache_hits = hits;
		snapshot.cache_misses = misses;
		snapshot.cache_bytes =
			(self.inner.cache.used_bytes() + self.inner.bodies.used_bytes()) as u64;
		snapshot.subscriptions = self.inner.subscriptions.len() as u64;
		(snapshot.disk_free_bytes, snapshot.disk_low) = self.inner.disk.state();
		snapshot
	}

	/// Statement bodies decoded while opening (none: opening reads ids and hashes only).
	pub fn body_decodes_while_opening(&self) -> u64 {
		self.inner.body_decodes.load(Ordering::Relaxed)
	}

	/// How many statements admitted and removed since the membership snapshot opening read
	/// from the journal and the removal log: `(0, 0)` after a clean stop or without a
	/// snapshot (see [`Store::reopened_from_snapshot`]).
	pub fn caught_up_while_opening(&self) -> (u64, u64) {
		self.inner.caught_up
	}

	/// Write the membership snapshot now, so that opening after a crash starts from it
	/// instead of walking the journal. [`Store::maintain`] calls this when one is due (see
	/// [`Config::snapshot_changes`]); submits wait only while the set is copied.
	pub fn write_snapshot(&self) -> Result<()> {
		let inner = &self.inner;
		let started = std::time::Instant::now();
		let shown = inner.config.path.display().to_string();
		let (copy, tag) = {
			let counters = inner.writer.lock();
			// The snapshot may only cover batches parity-db holds: after a crash the intent
			// log redoes the others, and would add them a second time.
			inner.processor.drain()?;
			let removals = inner.removals.load(Ordering::Acquire);
			let tag = snapshot_tag(inner.db.raw(), &counters, removals, &shown)?;
			(inner.membership.copy(), tag)
		};
		let copied = started.elapsed();
		let path = inner.config.path.join(SNAPSHOT_FILE);
		copy.save(&path, &tag).map_err(|source| Error::Io {
			operation: "write the membership snapshot",
			path: path.display().to_string(),
			source,
		})?;
		drop(copy);
		let mut mark = inner.snapshot_mark.lock();
		let trim_below = tag.removals / schema::REMOVAL_SEGMENT;
		if trim_below > mark.trimmed_below {
			// The removal log before this snapshot is not needed any more.
			let ops = (mark.trimmed_below..trim_below)
				.map(|segment| (schema::COL_META, schema::removal_segment_key(segment), None))
				.collect();
			let _counters = inner.writer.lock();
			let _view = inner.view.write();
			inner.db.stage(ops);
		}
		*mark = SnapshotMark {
			next_id: tag.next_id,
			removals: tag.removals,
			at: std::time::Instant::now(),
			trimmed_below: trim_below.max(mark.trimmed_below),
		};
		log::debug!(
			target: "statement-store",
			"wrote {} ({} statements) in {:?}, submits held for {copied:?}",
			path.display(),
			tag.count,
			started.elapsed()
		);
		Ok(())
	}

	/// Whether enough changed since the newest membership snapshot to write another.
	pub(crate) fn snapshot_due(&self) -> bool {
		let inner = &self.inner;
		let next_id = inner.writer.lock().next_id;
		let removals = inner.removals.load(Ordering::Acquire);
		let mark = inner.snapshot_mark.lock();
		let changes = next_id.saturating_sub(mark.next_id) + removals.saturating_sub(mark.removals);
		changes >= inner.config.snapshot_changes
			|| (changes > 0 && mark.at.elapsed() >= inner.config.snapshot_period)
	}

	/// Whether opening took the membership set from the snapshot written at the last clean
	/// close, rather than reading the admission journal.
	pub fn reopened_from_snapshot(&self) -> bool {
		self.inner.reopened_from_snapshot
	}

	/// Heap bytes of the in-memory membership set (the index that is always resident).
	pub fn membership_bytes(&self) -> usize {
		self.inner.membership.heap_bytes()
	}

	/// Drop every cached posting list and body (the next queries read from disk).
	pub fn clear_cache(&self) {
		self.inner.cache.clear();
		self.inner.bodies.clear();
	}

	/// Statements admitted after `after` (an id from an earlier call, or 0 for all), oldest
	/// first, at most `limit`: `(id, hash, encoding)`. For gossip and replay.
	pub fn statements_since(&self, after: Id, limit: usize) -> Result<Vec<(Id, Hash, Vec<u8>)>> {
		self.inner.journal_since(after, limit, usize::MAX).map(|page| page.statements)
	}

	/// A page of the stored statements in admission order: those admitted after `after` (0
	/// for the first page, else the previous page's `next`), at most `max_count` and, past
	/// the first, `max_bytes` of encodings. The view lock is held only while each few hundred
	/// ids are looked up, never across pages, so writers and readers go on meanwhile; a
	/// statement admitted during the walk comes in a later page, one removed before its page
	/// is read does not come.
	pub fn statements_page(
		&self,
		after: Id,
		max_count: usize,
		max_bytes: usize,
	) -> Result<StatementsPage> {
		self.inner.journal_since(after, max_count, max_bytes)
	}

	/// Every stored statement, a page at a time, in admission order (see
	/// [`Store::statements_page`]): `each` runs between pages, with no lock held.
	fn walk_statements(
		&self,
		mut each: impl FnMut(Vec<(Id, Hash, Vec<u8>)>) -> Result<()>,
	) -> Result<()> {
		let mut after = 0;
		loop {
			let page = self.inner.journal_since(after, PAGE_IDS, usize::MAX)?;
			each(page.statements)?;
			match page.next {
				Some(next) => after = next,
				None => return Ok(()),
			}
		}
	}

	/// Subscribe with [`DEFAULT_SUBSCRIBER_QUEUE_BYTES`] of live queue; see
	/// [`Store::subscribe_with_queue`].
	pub fn subscribe(&self, filter: TopicFilter) -> Result<Subscription> {
		self.subscribe_with_queue(filter, DEFAULT_SUBSCRIBER_QUEUE_BYTES)
	}

	/// Subscribe: the stored statements matching `filter`, read page by page as the caller
	/// asks, then each new match as it commits, queued up to `queue_bytes`; a subscriber
	/// whose queue would overflow is dropped (see `subscription`).
	pub fn subscribe_with_queue(
		&self,
		filter: TopicFilter,
		queue_bytes: usize,
	) -> Result<Subscription> {
		if let TopicFilter::MatchAll(topics) = &filter {
			check_match_all(topics)?;
		}
		let _view = self.inner.view.read();
		// Every stored statement has a lower id, every later one a higher id.
		let below = {
			let mut iter = self.inner.db.iter(schema::COL_JOURNAL)?;
			iter.seek_to_last()?;
			match iter.prev()? {
				Some((key, value)) => schema::journal_entry(&key, &value)?.0 + 1,
				None => 1,
			}
		};
		let total = match &filter {
			TopicFilter::MatchAll(topics) if !topics.is_empty() => {
				let mut lists = Vec::new();
				for topic in topics {
					lists.push(self.inner.posting_list(PostingKey::Topic(topic.0))?);
				}
				intersect(&mut lists.iter().map(|list| list.ids()).collect::<Vec<_>>()).len()
			}
			TopicFilter::MatchAny(topics) => {
				let mut ids = Vec::new();
				for topic in topics {
					ids.extend_from_slice(
						self.inner.posting_list(PostingKey::Topic(topic.0))?.ids(),
					);
				}
				ids.sort_unstable();
				ids.dedup();
				ids.len()
			}
			TopicFilter::Any | TopicFilter::MatchAll(_) => self.len() as usize,
		};
		Ok(Subscription::register(self, filter, queue_bytes, below, total as u64))
	}

	/// Ids of statements carrying all `topics` and encrypted to `key`, or (no key) those
	/// without a decryption key.
	fn match_all(&self, key: Option<DecryptionKey>, topics: &[Topic]) -> Result<Vec<Id>> {
		check_match_all(topics)?;
		let mut keys = Vec::with_capacity(topics.len() + 1);
		keys.extend(key.map(PostingKey::DecryptionKey));
		keys.extend(topics.iter().map(|topic| PostingKey::Topic(topic.0)));
		if keys.is_empty() {
			keys.push(PostingKey::All);
		}
		let mut ids = self.inner.cache.with_lists(
			&keys,
			|key| self.inner.posting_list(key),
			|lists| intersect(&mut lists.iter().map(|list| list.ids()).collect::<Vec<_>>()),
		)?;
		if key.is_none() && !ids.is_empty() && self.inner.keyed.load(Ordering::Relaxed) {
			let keyed = self.inner.posting_list(PostingKey::Keyed)?;
			if !keyed.is_empty() {
				ids.retain(|id| keyed.ids().binary_search(id).is_err());
			}
		}
		Ok(ids)
	}

	/// For each matching statement, `map` of its encoding and decoded form.
	fn query<T>(
		&self,
		key: Option<DecryptionKey>,
		topics: &[Topic],
		mut map: impl FnMut(Vec<u8>, Statement) -> Option<T>,
	) -> Result<Vec<T>> {
		crate::error::catch_db_panic(|| {
			let _view = self.inner.view.read();
			let ids = self.match_all(key, topics)?;
			let mut out = Vec::with_capacity(ids.len());
			for body in self.inner.bodies(&ids)? {
				// Checked against its hash when read from disk, so this only fails for a
				// statement written by a build with another notion of validity: left out.
				let Ok(statement) = self.inner.decode_body(&body) else { continue };
				// A damaged posting list can name a sound statement under the wrong topic.
				if !carries(&statement, key, topics) {
					continue;
				}
				if let Some(item) = map(body, statement) {
					out.push(item);
				}
			}
			Ok(out)
		})
	}

	/// The stored statement with this hash, its body checked against the hash.
	fn stored_statement(&self, hash: &Hash) -> Result<Option<Statement>> {
		let _view = self.inner.view.read();
		let Some(record) = self.inner.record(hash)? else { return Ok(None) };
		let body = match self.inner.bodies.get(record.id) {
			Some(body) => body.to_vec(),
			None => match self.inner.body_from_disk(record.id, Some(hash))? {
				Some(body) => body,
				None => return Ok(None),
			},
		};
		Ok(self.inner.decode_body(&body).ok())
	}

	fn decrypt(&self, dest: &DecryptionKey, statement: &Statement) -> Option<Vec<u8>> {
		let decryptor = self.inner.config.decryptor.as_ref()?;
		decryptor.decrypt(dest, statement.data()?)
	}
}

impl Inner {
	/// Journal entries after `after` with their bodies, at most `max_count` and, past the
	/// first, `max_bytes`. Takes the view lock a page of ids at a time (see `paging`).
	pub fn journal_since(
		&self,
		mut after: Id,
		max_count: usize,
		max_bytes: usize,
	) -> Result<StatementsPage> {
		let mut page = StatementsPage { statements: Vec::new(), next: None };
		let mut bytes = 0;
		while page.statements.len() < max_count {
			let wanted = (max_count - page.statements.len()).min(PAGE_IDS);
			let ids = self.journal_page(after, Id::MAX, wanted)?;
			if ids.scanned_to.is_none() {
				return Ok(page);
			}
			let first_free = page.statements.is_empty();
			let budget = max_bytes.saturating_sub(bytes);
			let bodies = self.page_bodies(ids, after, budget, first_free)?;
			after = bodies.cursor;
			bytes += bodies.bytes;
			page.statements
				.extend(bodies.read.into_iter().map(|((id, hash), body)| (id, hash, body)));
			if !bodies.complete {
				break;
			}
		}
		page.next = Some(after);
		Ok(page)
	}

	/// The posting list for `key`, from the cache or read from disk and cached. The caller
	/// holds the view lock (shared), so a list read from disk is current when cached.
	pub fn posting_list(&self, key: PostingKey) -> Result<Arc<PostingList>> {
		if let Some(list) = self.cache.get(&key) {
			return Ok(list);
		}
		let ids = match key {
			PostingKey::All => self.all_ids()?,
			_ => {
				self.db.hand_over()?;
				segments(self.db.raw(), key)?
			}
		};
		let list = Arc::new(PostingList::from_sorted(ids));
		self.cache.insert(key, list.clone());
		Ok(list)
	}

	/// Every stored id, from the journal.
	fn all_ids(&self) -> Result<Vec<Id>> {
		let mut iter = self.db.iter(schema::COL_JOURNAL)?;
		iter.seek_to_first()?;
		let mut ids = Vec::new();
		while let Some((key, _)) = iter.next()? {
			ids.push(schema::be_u64(&key, 0).ok_or_else(|| bad(schema::COL_JOURNAL, "key"))?);
		}
		Ok(ids)
	}

	/// Encodings of these ids, leaving out quarantined ones (see [`Inner::body_from_disk`]).
	pub fn bodies(&self, ids: &[Id]) -> Result<Vec<Vec<u8>>> {
		ids.iter().filter_map(|id| self.body(*id).transpose()).collect()
	}

	/// The encoding of an indexed id, from the body cache or read and kept there; `None` if
	/// it is quarantined.
	pub fn body(&self, id: Id) -> Result<Option<Vec<u8>>> {
		if let Some(body) = self.bodies.get(id) {
			return Ok(Some(body.to_vec()));
		}
		let Some(body) = self.body_from_disk(id, None)? else { return Ok(None) };
		self.bodies.insert(id, &body);
		Ok(Some(body))
	}

	/// The encoding of an indexed id, from the database, checked against its hash, so that a
	/// damaged database never serves a statement other than the one stored: against `hash`
	/// if the caller has it, else against the membership set (blake2 of the body must be a
	/// stored hash: a damaged body passes with odds of n / 2^64, and nothing is read from
	/// disk for the check). The caller holds the view lock, so a missing body or one whose
	/// hash is not stored means the files were damaged: the statement is quarantined
	/// (logged once, counted, left out of answers) and `None` returned, so the rest of an
	/// answer still comes. `statement-node check-db` finds all damage, `repair` rebuilds
	/// the indexes without it.
	pub fn body_from_disk(&self, id: Id, hash: Option<&Hash>) -> Result<Option<Vec<u8>>> {
		let Some(body) = self.db.get(schema::COL_BODY, &schema::body_key(id))? else {
			self.quarantine(id, "is indexed but its body is missing");
			return Ok(None);
		};
		let actual = statement_primitives::hash_encoded(&body);
		let sound = match hash {
			Some(hash) => actual == *hash,
			None => self.membership.contains(&actual),
		};
		if !sound {
			self.quarantine(id, "has a body that does not match its hash");
			return Ok(None);
		}
		Ok(Some(body))
	}

	/// Leave statement `id` out of answers from now on; log it the first time.
	pub(crate) fn quarantine(&self, id: Id, problem: &str) {
		let mut quarantined = self.quarantined.lock();
		if quarantined.len() >= MAX_QUARANTINED {
			self.metrics.add_corrupt();
		} else if quarantined.insert(id) {
			self.metrics.add_corrupt();
			log::error!(
				target: "statement-store",
				"{}: statement {id} {problem}; it is left out of answers. Run `statement-node \
				 check-db` to find all damage and `statement-node repair` to rebuild the indexes \
				 from the intact statements.",
				self.config.path.display()
			);
		}
	}

	pub fn decode_body(&self, body: &[u8]) -> Result<Statement> {
		if self.opening.load(Ordering::Relaxed) {
			self.body_decodes.fetch_add(1, Ordering::Relaxed);
		}
		Statement::from_bytes(body)
			.map_err(|err| Error::BadValue { column: schema::COL_BODY, detail: err.to_string() })
	}

	/// The record of a stored statement.
	pub fn record(&self, hash: &Hash) -> Result<Option<Record>> {
		self.db
			.get(schema::COL_HASH, hash)?
			.map(|bytes| schema::decode_value(schema::COL_HASH, &bytes))
			.transpose()
	}
}

/// Whether `statement` has every one of `topics` and the decryption key `key` (none for
/// broadcasts).
fn carries(statement: &Statement, key: Option<DecryptionKey>, topics: &[Topic]) -> bool {
	statement.decryption_key() == key
		&& topics.iter().all(|topic| statement.topics().contains(topic))
}

pub(crate) fn bad(column: u8, what: &str) -> Error {
	Error::BadValue { column, detail: format!("malformed {what}") }
}

/// Whether `key` has any segment on disk.
fn has_segments(db: &parity_db::Db, key: PostingKey) -> Result<bool> {
	let prefix = key.prefix();
	let mut iter = db.iter(schema::COL_POSTING)?;
	iter.seek(&prefix)?;
	Ok(iter.next()?.is_some_and(|(segment_key, _)| segment_key.starts_with(&prefix)))
}

/// The ids in `key`'s segments on disk.
fn segments(db: &parity_db::Db, key: PostingKey) -> Result<Vec<Id>> {
	let prefix = key.prefix();
	segments_under(db, &prefix, prefix.len() + 8)
}

/// The ids in the posting segments whose keys start with `prefix` and are `key_len` long.
fn segments_under(db: &parity_db::Db, prefix: &[u8], key_len: usize) -> Result<Vec<Id>> {
	let mut iter = db.iter(schema::COL_POSTING)?;
	iter.seek(prefix)?;
	let mut ids = Vec::new();
	while let Some((segment_key, value)) = iter.next()? {
		if !segment_key.starts_with(prefix) {
			break;
		}
		if segment_key.len() == key_len {
			decode_segment(&value, &mut ids).ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
		}
	}
	Ok(ids)
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
			if journal.next()?.is_some() {
				return Err(corrupt(
					"statements are present but the schema version is missing".into(),
				));
			}
			// Id 0 is never given out, so "after 0" means "from the start".
			let counters = Counters { next_id: 1, ..Counters::default() };
			wal::commit(
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
			migrate(db, version, path, sync)?;
			let counters = db
				.get(schema::COL_META, schema::KEY_COUNTERS)?
				.ok_or_else(|| corrupt("the counters are missing".into()))?;
			schema::decode_value(schema::COL_META, &counters)
		}
	}
}

/// Bring an older schema up to [`schema::SCHEMA_VERSION`], one commit per step, so a crash
/// leaves either version, never a mix.
fn migrate(db: &parity_db::Db, version: u32, path: &str, sync: bool) -> Result<()> {
	if version < 2 {
		// Schema 2 lists the statements that have a decryption key instead of those that do
		// not: the union of the per-key lists replaces the no-key list.
		let started = std::time::Instant::now();
		log::info!(target: "statement-store", "{path}: upgrading the database to schema 2");
		let key_prefix = PostingKey::DecryptionKey([0; 32]).prefix()[..1].to_vec();
		let mut keyed = segments_under(db, &key_prefix, key_prefix.len() + 32 + 8)?;
		keyed.sort_unstable();
		keyed.dedup();
		let mut ops = Vec::new();
		let legacy = [schema::LEGACY_NO_KEY_PREFIX];
		let mut iter = db.iter(schema::COL_POSTING)?;
		iter.seek(&legacy)?;
		while let Some((segment_key, _)) = iter.next()? {
			if !segment_key.starts_with(&legacy) {
				break;
			}
			ops.push((schema::COL_POSTING, segment_key, None));
		}
		drop(iter);
		for chunk in keyed.chunk_by(|a, b| segment_base(*a) == segment_base(*b)) {
			let key = PostingKey::Keyed.segment_key(segment_base(chunk[0]));
			ops.push((schema::COL_POSTING, key, Some(encode_segment(chunk))));
		}
		ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(2u32.encode())));
		wal::commit(db, ops, sync)?;
		log::info!(
			target: "statement-store",
			"{path}: upgraded to schema 2 in {:?} ({} statements with a key)",
			started.elapsed(),
			keyed.len()
		);
	}
	Ok(())
}

/// Log what reading the intent log found; refuse a gap in its sequence numbers after
/// `held` (the newest batch the database holds) unless `skip` says to go on. Returns whether
/// a gap is being skipped.
fn check_intents(intents: &wal::IntentRead, held: u64, skip: bool, path: &str) -> Result<bool> {
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
	let Some((first, last)) = intents.gap_after(held) else { return Ok(false) };
	let detail = match intents.damaged.first() {
		Some((file, at, _)) => format!("damaged records from byte {at} of {}", file.display()),
		None => "an intent file is missing".into(),
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

struct JournalSummary {
	count: u64,
	next_id: Id,
}

/// Bodies checked against their journal hash while opening: enough to catch a truncated or
/// swapped body table, few enough that opening stays instant.
const OPEN_SAMPLES: u64 = 64;

/// A u64 position kept in the meta column (intent sequence, removal log); absent = 0.
fn meta_position(db: &parity_db::Db, key: &[u8]) -> Result<u64> {
	match db.get(schema::COL_META, key)? {
		Some(bytes) => schema::decode_value(schema::COL_META, &bytes),
		None => Ok(0),
	}
}

/// What the database says now, for tagging a membership snapshot: the counters, the
/// removal-log position and the newest journal entry, whose id must be below the next id.
fn snapshot_tag(
	db: &parity_db::Db,
	counters: &Counters,
	removals: u64,
	path: &str,
) -> Result<SnapshotTag> {
	let mut iter = db.iter(schema::COL_JOURNAL)?;
	iter.seek_to_last()?;
	let mut last_hash = [0u8; 32];
	if let Some((key, value)) = iter.prev()? {
		let (id, hash) = schema::journal_entry(&key, &value)?;
		if id >= counters.next_id {
			return Err(Error::Corrupt {
				path: path.into(),
				detail: format!(
					"the journal holds id {id} but the counters give out {} next",
					counters.next_id
				),
			});
		}
		last_hash = hash;
	}
	Ok(SnapshotTag { count: counters.count, next_id: counters.next_id, last_hash, removals })
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
		let (_, hash) = schema::journal_entry(&key, &value)?;
		set.insert(&hash);
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
					"{path}: the removal log lacks removal {at}; reading the journal"
				);
				return Ok(None);
			};
			let (id, fingerprint) = entry.split_at(8);
			if u64::from_le_bytes(id.try_into().expect("8 bytes")) < old.next_id {
				set.remove_fingerprint(fingerprint.try_into().expect("8 bytes"));
				removed += 1;
			}
		}
		position = end;
	}
	Ok(Some((added, removed)))
}

/// Check a loaded snapshot against the database: journal entries spread over the id range
/// must be in the set and their bodies must match their hashes. `Ok(false)` if the snapshot
/// disagrees with the journal (the caller reads the journal instead); an error if a body is
/// damaged.
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
	let mut iter = db.iter(schema::COL_JOURNAL)?;
	let step = (counters.next_id / OPEN_SAMPLES).max(1);
	let mut from = 1;
	while from < counters.next_id {
		iter.seek(&schema::id_key(from))?;
		let Some((key, value)) = iter.next()? else { break };
		let (id, hash) = schema::journal_entry(&key, &value)?;
		if bodies {
			check_body(db, id, &hash, path)?;
		}
		if !set.contains(&hash) {
			log::warn!(
				target: "statement-store",
				"{path}: the membership snapshot lacks statement {id}; reading the journal"
			);
			return Ok(false);
		}
		from = id.max(from) + step;
	}
	Ok(true)
}

fn check_body(db: &parity_db::Db, id: Id, hash: &Hash, path: &str) -> Result<()> {
	let body = db.get(schema::COL_BODY, &schema::body_key(id))?;
	if body.as_deref().map(statement_primitives::hash_encoded) != Some(*hash) {
		return Err(Error::Corrupt {
			path: path.into(),
			detail: format!("the body of statement {id} is missing or does not match its hash"),
		});
	}
	Ok(())
}

/// Walk the admission journal (ids and hashes only) to fill the membership set, checking an
/// evenly spread sample of bodies against their hashes (hashed, not decoded).
fn load_journal(
	db: &parity_db::Db,
	membership: &Membership,
	expected: u64,
	bodies: bool,
	path: &str,
) -> Result<JournalSummary> {
	let mut iter = db.iter(schema::COL_JOURNAL)?;
	iter.seek_to_first()?;
	let stride = (expected / OPEN_SAMPLES).max(1);
	let mut summary = JournalSummary { count: 0, next_id: 1 };
	while let Some((key, value)) = iter.next()? {
		let (id, hash) = schema::journal_entry(&key, &value)?;
		if bodies && summary.count % stride == 0 {
			check_body(db, id, &hash, path)?;
		}
		membership.insert(&hash);
		summary.count += 1;
		summary.next_id = id + 1;
		if summary.count % 1_000_000 == 0 {
			log::info!(
				target: "statement-store",
				"{path}: read {} of {expected} journal entries",
				summary.count
			);
		}
	}
	Ok(summary)
}

impl StatementStore for Store {
	fn statements(&self) -> statement_primitives::Result<Vec<(Hash, Statement)>> {
		let mut out = Vec::new();
		self.walk_statements(|page| {
			for (_, hash, body) in page {
				if let Ok(statement) = self.inner.decode_body(&body) {
					out.push((hash, statement));
				}
			}
			Ok(())
		})?;
		Ok(out)
	}

	fn statement(&self, hash: &Hash) -> statement_primitives::Result<Option<Statement>> {
		if !self.inner.membership.contains(hash) {
			return Ok(None);
		}
		Ok(crate::error::catch_db_panic(|| self.stored_statement(hash))?)
	}

	fn has_statement(&self, hash: &Hash) -> bool {
		self.inner.membership.contains(hash)
	}

	fn broadcasts(&self, topics: &[Topic]) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(None, topics, |_, statement| statement.into_data())?)
	}

	fn posted(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |_, statement| statement.into_data())?)
	}

	fn posted_clear(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |_, statement| self.decrypt(&dest, &statement))?)
	}

	fn broadcasts_stmt(&self, topics: &[Topic]) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(None, topics, |body, _| Some(body))?)
	}

	fn posted_stmt(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |body, _| Some(body))?)
	}

	fn posted_clear_stmt(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |mut body, statement| {
			let clear = self.decrypt(&dest, &statement)?;
			body.extend_from_slice(&clear);
			Some(body)
		})?)
	}

	fn submit(&self, statement: Statement, source: StatementSource) -> SubmitResult {
		self.submit_statement(statement, source)
	}

	fn remove(&self, hash: &Hash) -> statement_primitives::Result<()> {
		Ok(self.remove_statement(hash)?)
	}

	fn remove_by(&self, who: AccountId) -> statement_primitives::Result<()> {
		Ok(self.remove_account(&who)?)
	}

	fn statements_page(
		&self,
		after: Option<u64>,
		max_count: usize,
		max_bytes: usize,
	) -> statement_primitives::Result<statement_primitives::StatementsPage> {
		// Ids start at 1, so 0 asks for the first page.
		let page = Store::statements_page(self, after.unwrap_or(0), max_count, max_bytes)?;
		let statements = page.statements.into_iter().map(|(_, hash, body)| (hash, body)).collect();
		Ok(statement_primitives::StatementsPage { statements, next: page.next })
	}

	fn subscribe_with_queue(
		&self,
		filter: TopicFilter,
		queue_bytes: usize,
	) -> statement_primitives::Result<Box<dyn statement_primitives::StatementSubscription>> {
		Ok(Box::new(Store::subscribe_with_queue(self, filter, queue_bytes)?))
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::{Config, MapAllowances};

	fn open(path: &std::path::Path) -> Result<Store> {
		Store::open(Config::new(path), Arc::new(MapAllowances::new()))
	}

	/// Write raw values into a closed store's database, as a newer build or a corruption would.
	fn poke(path: &std::path::Path, ops: Vec<(u8, Vec<u8>, Option<Vec<u8>>)>) {
		let db = parity_db::Db::open(&schema::db_options(path, false)).unwrap();
		wal::commit(&db, ops, false).unwrap();
	}

	fn signed(n: u8, key: Option<u8>) -> Statement {
		use sp_core::Pair;
		let mut statement = Statement::new();
		statement.set_expiry_from_parts(u32::MAX, u32::from(n));
		statement.set_topic(0, Topic([n % 4; 32]));
		if let Some(key) = key {
			statement.set_decryption_key([key; 32]);
		}
		statement.set_plain_data(vec![n]);
		statement.sign_ed25519_private(&sp_core::ed25519::Pair::from_seed(&[n % 8; 32]));
		statement
	}

	/// Every query answer this test looks at, sorted.
	fn answers(store: &Store) -> Vec<Vec<Vec<u8>>> {
		let mut out = vec![store.broadcasts(&[]).unwrap()];
		for t in 0..4 {
			out.push(store.broadcasts(&[Topic([t; 32])]).unwrap());
			for key in 0..2 {
				out.push(store.posted(&[Topic([t; 32])], [key; 32]).unwrap());
			}
		}
		out.iter_mut().for_each(|answer| answer.sort());
		out
	}

	#[test]
	fn a_schema_1_database_is_upgraded_and_answers_the_same() {
		let dir = tempfile::tempdir().unwrap();
		let allowances = MapAllowances::new()
			.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
		let open = || Store::open(Config::new(dir.path()), Arc::new(allowances.clone())).unwrap();
		let store = open();
		for n in 0..120u8 {
			let statement = signed(n, (n % 3 == 0).then_some(n % 2));
			assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
		}
		let expected = answers(&store);
		assert_eq!(expected[0].len(), 80, "broadcasts are the 80 statements without a key");
		drop(store);

		// Rewrite the posting lists as schema 1 had them: the statements without a key in a
		// list under prefix 0, no list of keyed statements.
		let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
		let keyed = segments(&db, PostingKey::Keyed).unwrap();
		let mut ops = Vec::new();
		let mut iter = db.iter(schema::COL_POSTING).unwrap();
		iter.seek(&PostingKey::Keyed.prefix()).unwrap();
		while let Some((key, _)) = iter.next().unwrap() {
			if key.starts_with(&PostingKey::Keyed.prefix()) {
				ops.push((schema::COL_POSTING, key, None));
			}
		}
		drop(iter);
		let mut no_key = Vec::new();
		let mut journal = db.iter(schema::COL_JOURNAL).unwrap();
		journal.seek_to_first().unwrap();
		while let Some((key, _)) = journal.next().unwrap() {
			let id = schema::be_u64(&key, 0).unwrap();
			if keyed.binary_search(&id).is_err() {
				no_key.push(id);
			}
		}
		drop(journal);
		let mut legacy_key = vec![schema::LEGACY_NO_KEY_PREFIX];
		legacy_key.extend_from_slice(&0u64.to_be_bytes());
		ops.push((schema::COL_POSTING, legacy_key, Some(encode_segment(&no_key))));
		ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(1u32.encode())));
		wal::commit(&db, ops, false).unwrap();
		drop(db);

		let store = open();
		assert_eq!(answers(&store), expected);
		let statement = signed(200, None);
		assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
		assert_eq!(store.broadcasts(&[]).unwrap().len(), 81);
		drop(store);
		let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
		assert_eq!(db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(), Some(2u32.encode()));
		assert_eq!(segments(&db, PostingKey::Keyed).unwrap(), keyed);
		let mut iter = db.iter(schema::COL_POSTING).unwrap();
		iter.seek_to_first().unwrap();
		let (first, _) = iter.next().unwrap().unwrap();
		assert_ne!(first[0], schema::LEGACY_NO_KEY_PREFIX, "the schema 1 list is gone");
	}

	/// A store closed cleanly with `n` statements, and intent records for `extra` more that
	/// the database lacks, as a crash would leave them: `(first_seq, statements)`.
	fn with_pending_intents(
		dir: &std::path::Path,
		n: u8,
		extra: std::ops::Range<u8>,
		skip_at: Option<usize>,
	) -> (u64, Vec<Statement>) {
		let allowances = MapAllowances::new()
			.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
		let store = Store::open(Config::new(dir), Arc::new(allowances)).unwrap();
		for k in 0..n {
			assert_eq!(store.submit(signed(k, None), StatementSource::Local), SubmitResult::New);
		}
		drop(store);
		let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
		let held = meta_position(&db, schema::KEY_INTENT).unwrap();
		drop(db);
		let mut log = IntentLog::create(dir, false, held + 1).unwrap();
		let mut statements = Vec::new();
		for (index, k) in extra.enumerate() {
			let statement = signed(k, None);
			if Some(index) == skip_at {
				// A second file from here on, one batch further: as if a file holding that
				// batch had been removed.
				log = IntentLog::create(dir, false, log.next_seq() + 1).unwrap();
			}
			let seq = log.next_seq();
			let account = match statement.verify_signature() {
				statement_primitives::SignatureVerificationResult::Valid(account) => account,
				_ => panic!("signed"),
			};
			log.append(seq, &[wal::Step::Add { account, encoding: statement.encode() }]).unwrap();
			statements.push(statement);
		}
		(held + 1, statements)
	}

	fn open_with(dir: &std::path::Path, skip_intent_gaps: bool) -> Result<Store> {
		let allowances = MapAllowances::new()
			.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
		let mut config = Config::new(dir);
		config.skip_intent_gaps = skip_intent_gaps;
		Store::open(config, Arc::new(allowances))
	}

	#[test]
	fn pending_intents_are_redone_and_their_files_removed() {
		let dir = tempfile::tempdir().unwrap();
		let (_, pending) = with_pending_intents(dir.path(), 3, 10..20, None);
		let store = open_with(dir.path(), false).unwrap();
		assert_eq!(store.len(), 13);
		assert!(pending.iter().all(|statement| store.has_statement(&statement.hash())));
		let names: Vec<_> = std::fs::read_dir(dir.path())
			.unwrap()
			.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
			.filter(|name| name.starts_with("intent-"))
			.collect();
		assert_eq!(names.len(), 1, "only the new, empty intent file: {names:?}");
	}

	#[test]
	fn a_damaged_intent_record_refuses_open_and_skipping_keeps_every_intact_one() {
		let dir = tempfile::tempdir().unwrap();
		let (first, pending) = with_pending_intents(dir.path(), 3, 10..20, None);
		let file = dir.path().join(format!("intent-{first:020}.log"));
		let mut bytes = std::fs::read(&file).unwrap();
		// A flipped byte in the fourth of ten equally long records.
		let record = bytes.len() / 10;
		bytes[3 * record + record / 2] ^= 0x10;
		std::fs::write(&file, &bytes).unwrap();
		match open_with(dir.path(), false) {
			Err(Error::IntentGap { first: gap_first, last, detail, .. }) => {
				assert_eq!((gap_first, last), (first + 3, first + 3));
				assert!(detail.contains("damaged records"), "{detail}");
			}
			other => panic!("expected IntentGap, got {:?}", other.err()),
		}
		assert_eq!(std::fs::read(&file).unwrap(), bytes, "a refused open changes nothing");
		let store = open_with(dir.path(), true).unwrap();
		assert_eq!(store.len(), 3 + 9);
		for (k, statement) in pending.iter().enumerate() {
			assert_eq!(store.has_statement(&statement.hash()), k != 3, "statement {k}");
		}
		assert!(dir.path().join(format!("intent-{first:020}.log.damaged")).is_file());
	}

	#[test]
	fn a_missing_intent_file_is_an_error_that_names_the_batches() {
		let dir = tempfile::tempdir().unwrap();
		let (first, _) = with_pending_intents(dir.path(), 2, 10..16, Some(2));
		let err = open_with(dir.path(), false).err().expect("refused");
		let Error::IntentGap { first: missing, last, ref detail, .. } = err else {
			panic!("expected IntentGap, got {err}")
		};
		assert_eq!((missing, last), (first + 2, first + 2));
		assert!(detail.contains("missing"), "{detail}");
		assert!(
			err.to_string().contains(&format!("lacks batches {missing} to {missing}")),
			"{err}"
		);
	}

	#[test]
	fn a_dump_lets_a_writer_commit_between_its_pages() {
		use sp_core::Pair;
		let dir = tempfile::tempdir().unwrap();
		let allowances = MapAllowances::new()
			.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
		let store = Store::open(Config::new(dir.path()), Arc::new(allowances)).unwrap();
		let signed = |n: u32| {
			let mut statement = Statement::new();
			statement.set_expiry_from_parts(u32::MAX, n);
			statement.set_plain_data(n.to_le_bytes().to_vec());
			let mut seed = [7u8; 32];
			seed[..4].copy_from_slice(&(n % 16).to_le_bytes());
			statement.sign_ed25519_private(&sp_core::ed25519::Pair::from_seed(&seed));
			statement
		};
		for n in 0..(PAGE_IDS as u32 * 2 + 10) {
			assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
		}
		let mut pages = 0;
		store
			.walk_statements(|_| {
				pages += 1;
				if pages == 1 {
					// Had the walk kept the view lock, this commit would wait for the whole
					// walk, which waits for it: the receive would time out.
					let (done, finished) = std::sync::mpsc::channel();
					let writer = store.clone();
					std::thread::spawn(move || {
						let _ = done.send(writer.submit(signed(100_000), StatementSource::Local));
					});
					let result = finished.recv_timeout(std::time::Duration::from_secs(60));
					assert_eq!(result, Ok(SubmitResult::New), "the writer committed mid-walk");
				}
				Ok(())
			})
			.unwrap();
		assert!(pages >= 3, "{pages} pages");
	}

	#[test]
	fn a_damaged_posting_list_never_answers_with_a_statement_of_another_topic_or_a_missing_one() {
		let dir = tempfile::tempdir().unwrap();
		let allowances = MapAllowances::new()
			.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
		let store = Store::open(Config::new(dir.path()), Arc::new(allowances.clone())).unwrap();
		for n in 0..8u8 {
			assert_eq!(store.submit(signed(n, None), StatementSource::Local), SubmitResult::New);
		}
		drop(store);
		// Topic 0 holds statements 0 and 4 (ids 1 and 5); the damaged list adds id 2 (topic
		// 1) and id 99 (not stored).
		let key = PostingKey::Topic([0; 32]).segment_key(0);
		poke(dir.path(), vec![(schema::COL_POSTING, key, Some(encode_segment(&[1, 2, 5, 99])))]);
		let store = Store::open(Config::new(dir.path()), Arc::new(allowances)).unwrap();
		let mut answer = store.broadcasts(&[Topic([0; 32])]).unwrap();
		answer.sort();
		assert_eq!(answer, vec![vec![0], vec![4]]);
		assert_eq!(store.metrics().corrupt, 1, "the missing one is counted");
	}

	#[test]
	fn a_newer_schema_is_refused_and_left_as_it_is() {
		let dir = tempfile::tempdir().unwrap();
		drop(open(dir.path()).unwrap());
		poke(
			dir.path(),
			vec![(schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(7u32.encode()))],
		);
		match open(dir.path()) {
			Err(Error::NewerSchema { found: 7, supported: schema::SCHEMA_VERSION, .. }) => {}
			other => panic!("expected NewerSchema, got {:?}", other.err()),
		}
		let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
		assert_eq!(db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(), Some(7u32.encode()));
	}

	#[test]
	fn counters_that_contradict_the_journal_are_refused() {
		let dir = tempfile::tempdir().unwrap();
		drop(open(dir.path()).unwrap());
		let wrong = Counters { count: 5, total_size: 0, next_id: 1 };
		poke(
			dir.path(),
			vec![(schema::COL_META, schema::KEY_COUNTERS.to_vec(), Some(wrong.encode()))],
		);
		let err = open(dir.path()).err().expect("refused");
		assert!(matches!(err, Error::Corrupt { .. }), "{err}");
		assert!(err.to_string().contains("counters say 5 statements"), "{err}");
	}

	#[test]
	fn a_body_that_does_not_match_its_journal_hash_is_caught_at_open() {
		let dir = tempfile::tempdir().unwrap();
		drop(open(dir.path()).unwrap());
		poke(
			dir.path(),
			vec![
				(schema::COL_JOURNAL, schema::id_key(1).to_vec(), Some([7u8; 32].to_vec())),
				(schema::COL_BODY, schema::body_key(1).to_vec(), Some(vec![0])),
				(
					schema::COL_META,
					schema::KEY_COUNTERS.to_vec(),
					Some(Counters { count: 1, total_size: 1, next_id: 2 }.encode()),
				),
			],
		);
		let err = open(dir.path()).err().expect("refused");
		assert!(err.to_string().contains("does not match its hash"), "{err}");
	}

	#[test]
	fn a_garbled_journal_entry_is_a_typed_error_not_a_panic() {
		let dir = tempfile::tempdir().unwrap();
		drop(open(dir.path()).unwrap());
		poke(
			dir.path(),
			vec![(schema::COL_JOURNAL, schema::id_key(1).to_vec(), Some(vec![1, 2, 3]))],
		);
		let err = open(dir.path()).err().expect("refused");
		assert!(matches!(err, Error::BadValue { column: schema::COL_JOURNAL, .. }), "{err}");
	}
}
