//! The write path: a submit is checked (`submit`), planned into one atomic change and made
//! durable (`batch`, `intent`; concurrent removals share one, `group`), staged in memory in front of parity-db (`staging`), and moved
//! into parity-db by background threads (`writeback`). `maintenance` removes what expired or
//! no longer fits, taking an account's statements in eviction order (`priority`); `disk`
//! refuses writes while free space is low. Opening redoes the intent log through `batch`.
//! A removal is acknowledged before its index edits, which wait (`waiting`) and are applied
//! with others before the next write (`deferred`).
//!
//! [`Writes`] is the state this part owns. Other parts see it only through its methods:
//! the counters as they stand, the removal log's position, a checkpoint, free space.

pub(crate) mod batch;
pub(crate) mod deferred;
pub(crate) mod disk;
pub(crate) mod group;
pub(crate) mod intent;
pub(crate) mod maintenance;
pub(crate) mod priority;
pub(crate) mod staging;
pub(crate) mod submit;
pub(crate) mod ties;
pub(crate) mod waiting;
pub(crate) mod writeback;

use crate::{
	allowance::AllowanceProvider,
	error::{Error, Result},
	index::schema::{Counters, Id, PostingKey, Tallies},
};
use disk::DiskGuard;
use intent::IntentLog;
use parking_lot::Mutex;
use staging::Database;
use statement_primitives::AccountId;
use std::{
	collections::HashMap,
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc,
	},
};
use writeback::{Writeback, WritebackThreads};

/// How often the writeback drains staged batches into parity-db's log (checkpoints, which
/// apply that log to the tables, run at their own pace: see `writeback`).
const DRAIN_PERIOD: std::time::Duration = std::time::Duration::from_millis(50);

/// What the write path keeps between writes.
pub(crate) struct Writes {
	/// Stopped first when the store closes, so that the last checkpoint runs alone.
	threads: WritebackThreads,
	/// The redo log every acknowledged batch is appended to (see `intent`).
	intent: Arc<IntentLog>,
	/// Moves staged batches into parity-db (see `writeback`).
	writeback: Arc<Writeback>,
	/// Free disk space, measured by the drain thread; submits are refused while it is low.
	disk: Arc<DiskGuard>,
	/// Serialises writers and holds the counters they start from.
	counters: Mutex<Counters>,
	/// Accounts holding statements and bans held, as the last commit left them; changed only
	/// by commits, under the writer lock.
	tallies: Mutex<Tallies>,
	/// Where allowances come from (chain state, or a fixed map).
	allowances: Arc<dyn AllowanceProvider>,
	/// Whether the store may hold a ban; when not, submits skip looking one up. Set at open
	/// if the ban order is not empty and by every ban; never cleared while open.
	banned: AtomicBool,
	/// Where the next allowance re-check slice starts.
	allowance_cursor: Mutex<Option<AccountId>>,
	/// Posting segments as the last commits left them, decoded (see [`Decoded`]).
	segments: Decoded<(PostingKey, Id), Id>,
	/// Account-list segments as the last commits left them, decoded (see [`Decoded`]).
	account_lists: Decoded<Vec<u8>, (Id, u32)>,
	/// Concurrent removals, carried in shared batches (see `group`).
	removing: group::Removals,
	/// Removals acknowledged and waiting for their index edits (see `deferred`).
	deferred: waiting::Deferred,
	/// Position of the removal log (see [`crate::index::schema::removal_segment_key`]).
	/// Changed by batches, under the writer lock.
	removals: AtomicU64,
	/// The order of long eviction ties, kept from walk to walk (see [`ties::Ties`]).
	/// Used under the writer lock.
	ties: ties::Ties,
}

/// Most bytes the posting-segment cache holds, counted as [`Decoded::charge`] counts them: a
/// submit edits about six posting segments (the largest span 4,096 ids, 8 bytes each),
/// most of them the same as the submit before's, so this keeps a stream's working set.
const SEGMENTS_BYTES: usize = 512 << 10;

/// Most bytes the account-list cache holds. A submit edits one or two account-list segments
/// (up to 1,024 pairs, 16 bytes each), but a run of evictions from a full account takes its
/// statements by hash, from every segment of its lowest expiry at random: 64 dense segments
/// (1 MiB) for an account of 65,536 statements of one expiry. At 512 KiB, that run read and
/// decoded a segment on most submits.
const ACCOUNT_LISTS_BYTES: usize = 2 << 20;

/// What a held list costs beyond its entries: its key (an account-list key is a 49-byte
/// allocation), its slot in the map and its own allocation, about 150 bytes. Counting
/// entries alone let 65,536 one-pair account lists be held (a fill keeps one list a second
/// an account), about 10 MiB, and the peak heap while populating 4.19M rose over its bound.
const ENTRY_BYTES: usize = 160;

/// Lists recent batches edited (posting segments by list and base, account-list segments by
/// key), decoded as their commits left them, so that the next batch that edits one does not
/// read and decode it again: a submit or removal edits four to six posting segments, most of
/// them the same as the batch before's, and an eviction the account-list segments of the
/// evicted statement and the new one, up to 1,024 pairs each. Only batches write these
/// lists while the store is open, and each takes what it edits out and puts back what it
/// staged, under the writer lock, so an entry is never older than the staged value; a batch
/// that fails puts nothing back.
pub(crate) struct Decoded<K, T> {
	held: Mutex<Held<K, T>>,
	/// Most bytes held (see [`Decoded::charge`]).
	bound: usize,
}

/// The lists [`Decoded`] holds, and what they cost (see [`Decoded::charge`]).
type Held<K, T> = (HashMap<K, Vec<T>>, usize);

impl<K: std::hash::Hash + Eq, T> Decoded<K, T> {
	/// An empty cache holding at most `bound` bytes.
	pub fn new(bound: usize) -> Self {
		Decoded { held: Mutex::new((HashMap::new(), 0)), bound }
	}

	/// What holding `list` costs against the bound.
	fn charge(list: &Vec<T>) -> usize {
		list.capacity() * std::mem::size_of::<T>() + ENTRY_BYTES
	}

	/// The list under `key` if held, taken out.
	pub fn take(&self, key: &K) -> Option<Vec<T>> {
		let mut held = self.held.lock();
		let list = held.0.remove(key)?;
		held.1 -= Self::charge(&list);
		Some(list)
	}

	/// Hold lists as a commit staged them. Over the bound, lists held go (in no particular
	/// order) until half the bound is left: dropping everything each time emptied the cache
	/// in the middle of a working set just over the bound.
	pub fn put_all(&self, lists: Vec<(K, Vec<T>)>) {
		let mut held = self.held.lock();
		for (key, list) in lists {
			let charge = Self::charge(&list);
			if charge > self.bound {
				continue;
			}
			if held.1 + charge > self.bound {
				let mut left = held.1;
				held.0.retain(|_, list| {
					let keep = left + charge <= self.bound / 2;
					if !keep {
						left -= Self::charge(list);
					}
					keep
				});
				held.1 = left;
			}
			held.1 += charge;
			if let Some(old) = held.0.insert(key, list) {
				held.1 -= Self::charge(&old);
			}
		}
	}

	/// What the held lists cost (see [`Decoded::charge`]).
	#[cfg(test)]
	pub fn held_bytes(&self) -> usize {
		self.held.lock().1
	}
}

/// What opening found that the write path starts from.
pub(crate) struct Start {
	/// The counters parity-db holds.
	pub counters: Counters,
	/// The sequence number the next intent record takes.
	pub next_seq: u64,
	/// Whether the ban order is not empty.
	pub banned: bool,
	/// The removal log's position.
	pub removals: u64,
	/// The tallies parity-db holds (or opening counted).
	pub tallies: Tallies,
}

impl Writes {
	/// Open a new intent file and start the background threads that move staged batches
	/// into `db`.
	pub fn start(
		db: &Arc<Database>,
		config: &crate::config::Config,
		allowances: Arc<dyn AllowanceProvider>,
		start: Start,
	) -> Result<Writes> {
		let intent = Arc::new(IntentLog::create(&config.path, config.sync_wal, start.next_seq)?);
		let writeback = Arc::new(Writeback::new(db.clone(), intent.clone(), config));
		let disk = Arc::new(DiskGuard::new(config.path.clone(), config.min_free_bytes));
		let threads = WritebackThreads::start(writeback.clone(), disk.clone(), DRAIN_PERIOD)
			.map_err(|err| Error::Config(format!("cannot start the log thread: {err}")))?;
		Ok(Writes {
			threads,
			intent,
			writeback,
			disk,
			counters: Mutex::new(start.counters),
			tallies: Mutex::new(start.tallies),
			allowances,
			banned: AtomicBool::new(start.banned),
			allowance_cursor: Mutex::new(None),
			removing: Default::default(),
			deferred: Default::default(),
			segments: Decoded::new(SEGMENTS_BYTES),
			account_lists: Decoded::new(ACCOUNT_LISTS_BYTES),
			removals: AtomicU64::new(start.removals),
			ties: Default::default(),
		})
	}

	/// The counters as the last commit left them (waits for a write under way). Removals
	/// acknowledged and not yet applied (see `deferred`) are still in them; `next_id` is
	/// exact.
	pub fn counters(&self) -> Counters {
		*self.counters.lock()
	}

	/// Accounts holding statements and bans held, as the last commit left them.
	pub fn tallies(&self) -> Tallies {
		*self.tallies.lock()
	}

	/// What a commit changed the tallies to (under the writer lock, once it is staged).
	pub(crate) fn set_tallies(&self, tallies: Tallies) {
		*self.tallies.lock() = tallies;
	}

	/// Whether statement `id` is removed and waits for its index edits: its body is still
	/// on disk and its id may still be in posting lists (see `deferred`).
	pub fn removal_waits(&self, id: Id) -> bool {
		self.deferred.holds(id)
	}

	/// Removals acknowledged and waiting for their index edits (see `deferred`).
	#[cfg(test)]
	pub fn removals_waiting(&self) -> usize {
		self.deferred.totals().0
	}

	/// The removal log's position.
	pub fn removals(&self) -> u64 {
		self.removals.load(Ordering::Acquire)
	}

	/// Apply everything acknowledged so far to parity-db's tables (see
	/// [`Writeback::checkpoint`]).
	pub fn checkpoint(&self) -> Result<()> {
		self.writeback.checkpoint()
	}

	/// Bytes acknowledged and not yet in parity-db's tables.
	pub fn pending_bytes(&self) -> u64 {
		self.writeback.pending_bytes()
	}

	/// Free disk space as last measured, and whether it is below the floor.
	pub fn disk_state(&self) -> (u64, bool) {
		self.disk.state()
	}

	/// The intent file new batches are appended to.
	pub fn intent_path(&self) -> std::path::PathBuf {
		self.intent.current_path()
	}

	/// Stop the background threads and apply the last changes to parity-db's tables; then
	/// the intent files are not needed, unless `settled` is false (acknowledged removals
	/// could not be applied, see `deferred`: the next open redoes them from those files).
	/// Called once, as the store closes.
	pub fn close(&mut self, settled: bool) {
		self.threads.stop();
		if let Err(err) = self.writeback.checkpoint() {
			log::warn!(target: "statement-store", "writing the last commits failed: {err}");
		} else if settled {
			// parity-db now holds everything appended: the intent files are not needed.
			self.intent.release_all();
		}
	}
}

#[cfg(test)]
mod tests {
	use super::{Decoded, ACCOUNT_LISTS_BYTES, ENTRY_BYTES, SEGMENTS_BYTES};

	/// Many short lists are held within the same bound as a few long ones: each costs its
	/// key and slot as well as its entries.
	#[test]
	fn decoded_lists_are_held_within_their_bound_in_bytes() {
		let cache = Decoded::<Vec<u8>, (u64, u32)>::new(SEGMENTS_BYTES);
		// 10,000 one-pair lists: 160 KiB of pairs, four times the bound with their keys.
		let lists = (0u32..10_000).map(|n| (n.to_be_bytes().to_vec(), vec![(u64::from(n), n)]));
		cache.put_all(lists.collect());
		assert!(cache.held_bytes() <= SEGMENTS_BYTES, "held {} bytes", cache.held_bytes());
		let held = cache.held.lock().0.len();
		assert!(held <= SEGMENTS_BYTES / ENTRY_BYTES, "held {held} one-pair lists");
		assert!(held > 0, "the newest are held");
		let newest = 9_999u32.to_be_bytes().to_vec();
		assert_eq!(cache.take(&newest), Some(vec![(9_999, 9_999)]));
		let long = vec![(0u64, 0u32); 4096];
		cache.put_all(vec![(b"long".to_vec(), long.clone())]);
		assert_eq!(cache.take(&b"long".to_vec()), Some(long), "a dense segment fits");
	}

	/// An account's 64 dense segments of one expiry (65,536 statements), which a run of
	/// evictions edits at random, are held together; a segment past the bound makes room by
	/// dropping some of what is held, not all of it.
	#[test]
	fn a_run_of_evictions_keeps_its_segments_held() {
		let cache = Decoded::<Vec<u8>, (u64, u32)>::new(ACCOUNT_LISTS_BYTES);
		let dense = |n: u16| (n.to_be_bytes().to_vec(), vec![(u64::from(n), 0u32); 1024]);
		cache.put_all((0..64).map(dense).collect());
		for n in 0..64 {
			let (key, list) = dense(n);
			assert_eq!(cache.take(&key).as_ref(), Some(&list), "segment {n} held");
			cache.put_all(vec![(key, list)]);
		}
		// Over the bound (about 126 such segments): 64 more, one batch at a time.
		for n in 64..128 {
			cache.put_all(vec![dense(n)]);
			assert!(cache.held_bytes() <= ACCOUNT_LISTS_BYTES, "held {}", cache.held_bytes());
		}
		let held = (0..128).filter(|n| cache.held.lock().0.contains_key(&dense(*n).0)).count();
		assert!(held >= 48, "only {held} of 128 segments held after the bound was reached");
	}
}
