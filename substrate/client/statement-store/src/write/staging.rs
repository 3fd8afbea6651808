//! The database as the store sees it: parity-db with the batches not yet handed to it staged
//! in memory in front.
//!
//! parity-db's cost per commit has a large fixed part (planning walks every value table of
//! every column) and rewrites every btree node and posting segment a commit touches. A submit
//! stream produces one small batch after another that touch the same few segments, counters
//! and the rightmost leaves of the journal and expiry btrees. So batches are not committed one
//! by one: each is *staged* here (durable already through the intent log, see `intent`), and the
//! background thread hands everything staged to parity-db as one commit, in which a key
//! written by many batches is written once with its newest value.
//!
//! Point reads look in the staged changes first. Ordered iteration (maintenance, eviction,
//! posting lists read from disk, the journal) first hands the staged changes to parity-db, so
//! parity-db's iterators see them. Staging never changes what a reader sees: a change moves
//! from the staged set to parity-db only after parity-db serves it.

use crate::{error::Result, index::schema};
use parity_db::ColId;
use parking_lot::{Mutex, RwLock};
use std::{
	collections::HashMap,
	sync::{
		atomic::{AtomicU64, AtomicUsize, Ordering},
		Arc,
	},
};

/// One column's staged changes. Keys are hashes a submitter chooses, so the hasher is keyed
/// per process; ahash because a submit stages a dozen keys and hashing them showed in
/// profiles (12% of expiry's time with the 64-bit xxHash it replaced).
type Changes = HashMap<Vec<u8>, Option<Vec<u8>>, ahash::RandomState>;

#[derive(Default)]
struct Staged {
	/// Per column, the newest value of each key written since the last hand-over.
	current: Vec<Changes>,
	/// Batches in `current`.
	batches: usize,
	/// What is being handed over right now, until parity-db serves it.
	handing_over: Option<Arc<Vec<Changes>>>,
	/// The last completed hand-over, which parity-db serves too, kept until the next one
	/// (or until a hand-over finds nothing new): the writer rereads the same keys (posting
	/// segments, account usage) batch after batch, and a parity-db read can wait behind the
	/// drain thread's log writes.
	recent: Option<Arc<Vec<Changes>>>,
}

/// parity-db plus the staged batches (see the module documentation).
pub struct Database {
	db: Arc<parity_db::Db>,
	staged: RwLock<Staged>,
	/// Keys in `current`, `handing_over` and `recent`; zero lets reads skip the staged set.
	staged_keys: AtomicUsize,
	/// Serialises hand-overs, so commits reach parity-db in staging order.
	hand_over: Mutex<()>,
	/// Commits handed to parity-db and not yet written to its log.
	unprocessed: AtomicUsize,
	/// Bytes of keys and values handed over since [`Database::take_handed_over_bytes`].
	handed_over_bytes: AtomicU64,
	/// Bytes of keys and values staged in `current` (the same key staged twice counts twice).
	staged_bytes: AtomicU64,
}

fn empty_changes() -> Vec<Changes> {
	(0..schema::COLUMNS).map(|_| Changes::default()).collect()
}

/// Empty changes sized like `previous`: a stream of batches stages about as many keys between
/// two hand-overs as it did before, and growing the maps anew each time (rehashing every key
/// at each doubling) cost a tenth of a removal's time.
fn changes_like(previous: &[Changes]) -> Vec<Changes> {
	previous
		.iter()
		.map(|changes| Changes::with_capacity_and_hasher(changes.len(), Default::default()))
		.collect()
}

impl Database {
	/// `db`, with nothing staged.
	pub fn new(db: Arc<parity_db::Db>) -> Self {
		Database {
			db,
			staged: RwLock::new(Staged { current: empty_changes(), ..Staged::default() }),
			staged_keys: AtomicUsize::new(0),
			hand_over: Mutex::new(()),
			unprocessed: AtomicUsize::new(0),
			handed_over_bytes: AtomicU64::new(0),
			staged_bytes: AtomicU64::new(0),
		}
	}

	/// parity-db itself, for code that runs before anything is staged (opening) or after
	/// everything was handed over (closing).
	pub fn raw(&self) -> &parity_db::Db {
		&self.db
	}

	/// The value of `key` in `col`: staged, or from parity-db.
	pub fn get(&self, col: ColId, key: &[u8]) -> Result<Option<Vec<u8>>> {
		match self.staged(col, key) {
			Some(value) => Ok(value),
			None => crate::error::catch_db_panic(|| Ok(self.db.get(col, key)?)),
		}
	}

	/// What the staged batches (and the last hand-over) say about `key` in `col`: `None` if
	/// none of them touches it, else its newest value there (`Some(None)`: removed).
	pub fn staged(&self, col: ColId, key: &[u8]) -> Option<Option<Vec<u8>>> {
		if self.staged_keys.load(Ordering::Acquire) == 0 {
			return None;
		}
		let staged = self.staged.read();
		if let Some(value) = staged.current[col as usize].get(key) {
			return Some(value.clone());
		}
		let found = [&staged.handing_over, &staged.recent]
			.into_iter()
			.flatten()
			.find_map(|layer| layer[col as usize].get(key).cloned());
		found
	}

	/// An ordered iterator over `col`, which sees every change staged so far.
	pub fn iter(&self, col: ColId) -> Result<parity_db::BTreeIterator<'_>> {
		self.hand_over()?;
		Ok(self.db.iter(col)?)
	}

	/// An ordered iterator over what parity-db holds of `col`, without handing the staged
	/// batches over first (which costs the caller a parity-db commit): it may show keys the
	/// staged batches removed, so the caller checks [`Database::staged`], and it misses keys
	/// they added.
	pub fn iter_behind(&self, col: ColId) -> Result<parity_db::BTreeIterator<'_>> {
		Ok(self.db.iter(col)?)
	}

	/// Stage one batch. The caller holds the store's view lock exclusively, so readers see
	/// all of the batch or none of it.
	pub fn stage(&self, ops: Vec<(ColId, Vec<u8>, Option<Vec<u8>>)>) {
		let bytes = ops_bytes(ops.iter().map(|(_, key, value)| (key, value)));
		let mut per_column = [0usize; schema::COLUMNS as usize];
		for (col, _, _) in &ops {
			per_column[*col as usize] += 1;
		}
		let mut staged = self.staged.write();
		for (changes, more) in staged.current.iter_mut().zip(per_column) {
			// At most `more` new keys: one growth instead of several for a large batch.
			changes.reserve(more);
		}
		for (col, key, value) in ops {
			staged.current[col as usize].insert(key, value);
		}
		self.staged_bytes.fetch_add(bytes, Ordering::Relaxed);
		staged.batches += 1;
		self.staged_keys.store(Self::count(&staged), Ordering::Release);
	}

	/// Batches staged and not yet handed to parity-db.
	pub fn staged_batches(&self) -> usize {
		self.staged.read().batches
	}

	fn count(staged: &Staged) -> usize {
		let keys = |changes: &[Changes]| changes.iter().map(HashMap::len).sum::<usize>();
		keys(&staged.current)
			+ [&staged.handing_over, &staged.recent]
				.into_iter()
				.flatten()
				.map(|c| keys(c))
				.sum::<usize>()
	}

	/// Hand everything staged to parity-db as one commit; parity-db serves it from memory
	/// once this returns. Returns whether there was anything to hand over.
	pub fn hand_over(&self) -> Result<bool> {
		if self.staged_keys.load(Ordering::Acquire) == 0 {
			return Ok(false);
		}
		let _serial = self.hand_over.lock();
		let changes = {
			let mut staged = self.staged.write();
			if staged.batches == 0 {
				// Nothing staged since the last hand-over: stop keeping it in front, so that
				// reads go straight to parity-db again.
				let idle = staged.recent.take();
				self.staged_keys.store(Self::count(&staged), Ordering::Release);
				drop(staged);
				drop(idle);
				return Ok(false);
			}
			let next = changes_like(&staged.current);
			let changes = Arc::new(std::mem::replace(&mut staged.current, next));
			staged.batches = 0;
			self.staged_bytes.store(0, Ordering::Relaxed);
			staged.handing_over = Some(changes.clone());
			changes
		};
		let bytes = ops_bytes(changes.iter().flat_map(|changes| changes.iter()));
		let ops = changes.iter().enumerate().flat_map(|(col, changes)| {
			changes.iter().map(move |(key, value)| (col as ColId, key.as_slice(), value.clone()))
		});
		let committed = self.db.commit(ops);
		// Let go of our reference, so a failed hand-over can take the changes back uncopied.
		drop(changes);
		let mut staged = self.staged.write();
		let mut replaced = None;
		if committed.is_ok() {
			self.unprocessed.fetch_add(1, Ordering::AcqRel);
			self.handed_over_bytes.fetch_add(bytes, Ordering::Relaxed);
			let done = staged.handing_over.take();
			replaced = std::mem::replace(&mut staged.recent, done);
		} else {
			// Keep serving the changes from memory and try again at the next hand-over.
			let failed = staged.handing_over.take().expect("set above");
			let newer = std::mem::replace(&mut staged.current, empty_changes());
			staged.current = Arc::try_unwrap(failed).unwrap_or_else(|shared| (*shared).clone());
			for (col, changes) in newer.into_iter().enumerate() {
				staged.current[col].extend(changes);
			}
			staged.batches += 1;
			self.staged_bytes.fetch_add(bytes, Ordering::Relaxed);
		}
		self.staged_keys.store(Self::count(&staged), Ordering::Release);
		drop(staged);
		// Freed outside the lock: it can hold thousands of batches.
		drop(replaced);
		committed?;
		Ok(true)
	}

	/// Bytes of keys and values handed to parity-db since the last call to
	/// [`Database::take_handed_over_bytes`].
	pub fn handed_over_bytes(&self) -> u64 {
		self.handed_over_bytes.load(Ordering::Relaxed)
	}

	/// Bytes of changes acknowledged and not yet applied to parity-db's tables: staged here,
	/// or handed over since the last checkpoint (parity-db holds those in memory until a
	/// checkpoint applies its log).
	pub fn pending_bytes(&self) -> u64 {
		self.staged_bytes.load(Ordering::Relaxed) + self.handed_over_bytes()
	}

	/// Reset [`Database::handed_over_bytes`] to zero.
	pub fn take_handed_over_bytes(&self) -> u64 {
		self.handed_over_bytes.swap(0, Ordering::Relaxed)
	}

	/// Write the commits handed over so far to parity-db's log; returns how many there were.
	pub fn process(&self) -> Result<usize> {
		let waiting = self.unprocessed.swap(0, Ordering::AcqRel);
		for _ in 0..waiting {
			self.db.process_commits()?;
		}
		Ok(waiting)
	}
}

/// Bytes of keys and values in `ops`.
fn ops_bytes<'a>(ops: impl Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)>) -> u64 {
	ops.map(|(key, value)| (key.len() + value.as_ref().map_or(0, Vec::len)) as u64).sum()
}

#[cfg(test)]
mod tests {
	use super::*;

	fn database(dir: &std::path::Path) -> Database {
		let db = parity_db::Db::open_or_create(&schema::db_options(dir, false)).unwrap();
		Database::new(Arc::new(db))
	}

	#[test]
	fn staged_values_are_read_before_handover_and_after() {
		let dir = tempfile::tempdir().unwrap();
		let db = database(dir.path());
		db.stage(vec![(schema::COL_META, b"a".to_vec(), Some(b"1".to_vec()))]);
		db.stage(vec![
			(schema::COL_META, b"a".to_vec(), Some(b"2".to_vec())),
			(schema::COL_META, b"b".to_vec(), Some(b"3".to_vec())),
		]);
		assert_eq!(db.staged_batches(), 2);
		assert_eq!(db.get(schema::COL_META, b"a").unwrap(), Some(b"2".to_vec()));
		assert_eq!(db.raw().get(schema::COL_META, b"a").unwrap(), None);
		assert!(db.hand_over().unwrap());
		assert_eq!(db.staged_batches(), 0);
		assert_eq!(db.raw().get(schema::COL_META, b"a").unwrap(), Some(b"2".to_vec()));
		db.stage(vec![(schema::COL_META, b"b".to_vec(), None)]);
		assert_eq!(db.get(schema::COL_META, b"b").unwrap(), None, "a staged removal hides");
		assert_eq!(db.process().unwrap(), 1);
		assert!(db.hand_over().unwrap());
		assert_eq!(db.process().unwrap(), 1);
		assert_eq!(db.raw().get(schema::COL_META, b"b").unwrap(), None);
		assert!(!db.hand_over().unwrap(), "nothing left to hand over");
	}

	#[test]
	fn the_last_hand_over_is_read_until_a_newer_one_or_an_idle_one() {
		let dir = tempfile::tempdir().unwrap();
		let db = database(dir.path());
		let key = b"k".to_vec();
		let col = schema::COL_META;
		db.stage(vec![(col, key.clone(), Some(b"1".to_vec()))]);
		assert!(db.hand_over().unwrap());
		db.stage(vec![(col, key.clone(), Some(b"2".to_vec()))]);
		assert_eq!(db.get(col, &key).unwrap(), Some(b"2".to_vec()), "staged before recent");
		assert!(db.hand_over().unwrap());
		db.stage(vec![(col, key.clone(), None)]);
		assert!(db.hand_over().unwrap());
		assert_eq!(db.get(col, &key).unwrap(), None, "a newer hand-over hides the older");
		assert_ne!(db.staged_keys.load(Ordering::Acquire), 0, "the last hand-over is kept");
		assert!(!db.hand_over().unwrap());
		assert_eq!(db.staged_keys.load(Ordering::Acquire), 0, "an idle hand-over drops it");
		assert_eq!(db.get(col, &key).unwrap(), None);
	}

	#[test]
	fn iteration_sees_staged_changes() {
		let dir = tempfile::tempdir().unwrap();
		let db = database(dir.path());
		for id in [3u64, 1, 2] {
			db.stage(vec![(schema::COL_JOURNAL, id.to_be_bytes().to_vec(), Some(vec![id as u8]))]);
		}
		let mut iter = db.iter(schema::COL_JOURNAL).unwrap();
		iter.seek_to_first().unwrap();
		let mut seen = Vec::new();
		while let Some((_, value)) = iter.next().unwrap() {
			seen.push(value[0]);
		}
		assert_eq!(seen, vec![1, 2, 3]);
	}
}
