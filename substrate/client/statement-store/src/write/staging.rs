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
//! Point reads look in the staged changes first. Readers that walk keys in order (posting
//! lists read from disk, the journal, a subscription's start) walk parity-db with the staged
//! changes under the walk's prefix laid over it ([`Database::walk`]); they never hand
//! anything over. Maintenance's walks (expiry, bans, allowances) do the same under the
//! writer lock; eviction's walk hands the staged changes to parity-db first
//! ([`Database::iter`]). Staging never changes what a reader sees: a change
//! moves from the staged set to parity-db only after parity-db serves it.

use crate::{
	error::Result,
	index::{
		lists::{Ordered, Walk},
		schema,
	},
};
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

/// Keys a column's map keeps room for from one hand-over to the next (16,384 buckets, about
/// 800 KiB): what [`changes_like`] carries over is bounded by this, so that a burst does not
/// leave the maps large for long. A hand-over that finds nothing staged gives the room back.
const ROOM_KEPT: usize = 14_336;

/// Empty changes with the room `previous` grew to (at most [`ROOM_KEPT`] keys a column):
/// a stream of batches stages about as many keys between two hand-overs as it did before,
/// and growing the maps anew each time (rehashing every key at each doubling) cost a tenth
/// of a removal's time. The room, not the keys: sized by its keys alone, a map was too
/// small whenever a period of removals (which stage new keys: bans, deletions) followed
/// one of submits, and rehashing took a third of an expiry round's staging.
fn changes_like(previous: &[Changes]) -> Vec<Changes> {
	previous
		.iter()
		.map(|changes| {
			let room = changes.len().max(changes.capacity().min(ROOM_KEPT));
			Changes::with_capacity_and_hasher(room, Default::default())
		})
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

	/// A walk over `col` that sees every change staged so far under `prefix`, without handing
	/// anything over: parity-db's iterator with the staged values under `prefix` laid over
	/// it. The caller holds the store's view lock (shared) or the writer lock, so nothing is
	/// staged while it walks; the drain thread may hand the staged changes over meanwhile,
	/// which changes nothing the walk yields, as parity-db then holds the same values the
	/// walk took from the staged set first.
	///
	/// The last completed hand-over is not laid over: parity-db's walk already yields it
	/// (its commits are merged into its walks as soon as it takes them), and leaving it out
	/// saves every walk a look at each key it holds, a cache miss a key.
	pub fn overlay(&self, col: ColId, prefix: &[u8]) -> Result<Overlay<'_>> {
		self.overlay_below(col, prefix, None)
	}

	/// [`Database::overlay`], for a walk that stops before `end`: staged keys from `end` on
	/// are not laid over it (nor copied).
	pub fn overlay_below(
		&self,
		col: ColId,
		prefix: &[u8],
		end: Option<&[u8]>,
	) -> Result<Overlay<'_>> {
		let mut staged = Vec::new();
		if self.staged_keys.load(Ordering::Acquire) != 0 {
			let layers = self.staged.read();
			let newest_first =
				std::iter::once(&layers.current).chain(layers.handing_over.as_deref());
			for (age, layer) in newest_first.enumerate() {
				for (key, value) in layer[col as usize].iter() {
					if key.starts_with(prefix) && end.is_none_or(|end| key.as_slice() < end) {
						staged.push((key.clone(), age, value.clone()));
					}
				}
			}
		}
		// Each key once, with its newest value.
		staged.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
		staged.dedup_by(|later, first| later.0 == first.0);
		let staged = staged.into_iter().map(|(key, _, value)| (key, value)).collect();
		let db = crate::error::catch_db_panic(|| Ok(self.db.iter(col)?))?;
		Ok(Overlay { db, staged, seek: Vec::new(), direction: None, at: 0, ahead: None })
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
				// reads go straight to parity-db again, and give back the room the empty maps
				// kept for a stream that has stopped.
				let idle =
					(staged.recent.take(), std::mem::replace(&mut staged.current, empty_changes()));
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

impl Ordered for Database {
	type Walk<'a> = Overlay<'a>;

	fn walk(&self, col: ColId, prefix: &[u8]) -> Result<Overlay<'_>> {
		self.overlay(col, prefix)
	}
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
	Ascending,
	Descending,
}

/// parity-db's walk of a column with the staged values under a prefix laid over it (see
/// [`Database::overlay`]): a staged value takes the place of parity-db's for its key, a
/// staged removal hides parity-db's key.
pub struct Overlay<'a> {
	db: parity_db::BTreeIterator<'a>,
	/// The staged keys under the prefix, ascending, each with its newest value (`None`:
	/// removed).
	staged: Vec<(Vec<u8>, Option<Vec<u8>>)>,
	/// Where the walk was sought.
	seek: Vec<u8>,
	/// Which way it walks since the seek (`None`: not yet).
	direction: Option<Direction>,
	/// Ascending: the next staged entry to yield; descending: one past it.
	at: usize,
	/// parity-db's next entry in the walk's direction, once read.
	ahead: Option<Option<(Vec<u8>, Vec<u8>)>>,
}

impl Overlay<'_> {
	/// Start walking `direction` from the seek position, if not walking that way already.
	fn turn(&mut self, direction: Direction) {
		if self.direction != Some(direction) {
			self.direction = Some(direction);
			// As parity-db's walk: from the sought key itself, either way.
			let seek = self.seek.as_slice();
			self.at = match direction {
				Direction::Ascending => {
					self.staged.partition_point(|(key, _)| key.as_slice() < seek)
				}
				Direction::Descending => {
					self.staged.partition_point(|(key, _)| key.as_slice() <= seek)
				}
			};
			self.ahead = None;
		}
	}

	/// The next entry of the merged walk in `direction`.
	fn step(&mut self, direction: Direction) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
		self.turn(direction);
		loop {
			if self.ahead.is_none() {
				let read = match direction {
					Direction::Ascending => self.db.next()?,
					Direction::Descending => self.db.prev()?,
				};
				self.ahead = Some(read);
			}
			let from_db = self.ahead.as_ref().expect("read above").as_ref().map(|(key, _)| key);
			let staged = match direction {
				Direction::Ascending => self.staged.get(self.at),
				Direction::Descending => self.at.checked_sub(1).map(|at| &self.staged[at]),
			};
			let Some((staged_key, _)) = staged else {
				// Nothing staged left this way: parity-db's entry as it is.
				return Ok(self.ahead.take().expect("read above"));
			};
			let staged_first = match (from_db, direction) {
				(None, _) => true,
				(Some(key), Direction::Ascending) => staged_key <= key,
				(Some(key), Direction::Descending) => staged_key >= key,
			};
			if !staged_first {
				return Ok(self.ahead.take().expect("read above"));
			}
			if from_db == Some(staged_key) {
				// The staged value replaces parity-db's.
				self.ahead = None;
			}
			let (key, value) = match direction {
				Direction::Ascending => {
					self.at += 1;
					&self.staged[self.at - 1]
				}
				Direction::Descending => {
					self.at -= 1;
					&self.staged[self.at]
				}
			};
			if let Some(value) = value {
				return Ok(Some((key.clone(), value.clone())));
			}
			// Removed by a staged batch: walk on.
		}
	}
}

impl Walk for Overlay<'_> {
	fn seek(&mut self, key: &[u8]) -> Result<()> {
		self.db.seek(key)?;
		self.seek = key.to_vec();
		self.direction = None;
		self.ahead = None;
		Ok(())
	}

	fn next(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
		self.step(Direction::Ascending)
	}

	fn prev(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
		self.step(Direction::Descending)
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

	/// The maps for the next period keep the room the last one grew to, up to
	/// [`ROOM_KEPT`] keys, however few keys it ended with.
	#[test]
	fn the_next_maps_keep_the_room_the_last_grew_to_within_a_bound() {
		let mut previous = empty_changes();
		previous[0].reserve(4_000);
		previous[0].insert(vec![1], None);
		previous[1].reserve(100_000);
		let next = changes_like(&previous);
		assert!(next[0].capacity() >= 4_000, "room kept: {}", next[0].capacity());
		assert!(next[1].capacity() >= ROOM_KEPT, "room kept: {}", next[1].capacity());
		assert!(next[1].capacity() < 2 * ROOM_KEPT, "room bounded: {}", next[1].capacity());
		assert!(next.iter().all(HashMap::is_empty));
	}

	/// A stream that stops leaves no room behind: the hand-over after the last one finds
	/// nothing staged and gives the maps' room back.
	#[test]
	fn an_idle_hand_over_gives_the_room_back() {
		let dir = tempfile::tempdir().unwrap();
		let db = database(dir.path());
		let room =
			|db: &Database| db.staged.read().current.iter().map(HashMap::capacity).sum::<usize>();
		let many: Vec<_> =
			(0u32..5_000).map(|n| (schema::COL_META, n.to_be_bytes().to_vec(), None)).collect();
		db.stage(many);
		assert!(db.hand_over().unwrap());
		assert!(room(&db) >= 5_000, "the next period keeps the room: {}", room(&db));
		assert!(!db.hand_over().unwrap(), "nothing staged since");
		assert_eq!(room(&db), 0, "an idle hand-over gives the room back");
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

	type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

	/// Changes to keys `[first, x]`, `first` in 1..=3 (the walks below take prefix 2).
	fn ops() -> impl proptest::strategy::Strategy<Value = Ops> {
		use proptest::prelude::*;
		proptest::collection::vec(((1u8..=3, 0u8..8), proptest::option::of(0u8..=255)), 0..12)
			.prop_map(|ops| {
				ops.into_iter()
					.map(|((a, b), value)| (vec![a, b], value.map(|v| vec![v])))
					.collect()
			})
	}

	/// A database of `COL_POSTING` with `base` in parity-db, each of `handed` staged and
	/// handed over in turn, then `staged` staged.
	fn layered(dir: &std::path::Path, base: &Ops, handed: &[&Ops], staged: &Ops) -> Database {
		let db = database(dir);
		let with_col = |ops: &Ops| {
			ops.iter().map(|(k, v)| (schema::COL_POSTING, k.clone(), v.clone())).collect::<Vec<_>>()
		};
		db.raw().commit(with_col(base)).unwrap();
		for ops in handed {
			db.stage(with_col(ops));
			db.hand_over().unwrap();
		}
		db.stage(with_col(staged));
		db
	}

	/// What `layers` leave, each applied over the ones before it.
	fn model(layers: &[&Ops]) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
		let mut model = std::collections::BTreeMap::new();
		for (key, value) in layers.iter().flat_map(|ops| ops.iter()) {
			match value {
				Some(value) => model.insert(key.clone(), value.clone()),
				None => model.remove(key),
			};
		}
		model
	}

	/// Every walk's entries under `prefix`, from `seek`, ascending and descending.
	fn walks(db: &impl Ordered, prefix: &[u8], seek: &[u8]) -> (Ops, Ops) {
		let mut walk = db.walk(schema::COL_POSTING, prefix).unwrap();
		let mut up = Vec::new();
		walk.seek(seek).unwrap();
		while let Some((key, value)) = walk.next().unwrap() {
			up.push((key, Some(value)));
		}
		let mut down = Vec::new();
		walk.seek(seek).unwrap();
		while let Some((key, value)) = walk.prev().unwrap() {
			down.push((key, Some(value)));
		}
		let under =
			|entries: Ops| entries.into_iter().filter(|(k, _)| k.starts_with(prefix)).collect();
		(under(up), under(down))
	}

	proptest::proptest! {
		#![proptest_config(proptest::test_runner::Config::with_cases(256))]

		/// A walk of the staged database sees what parity-db would after a hand-over, and
		/// hands nothing over itself.
		#[test]
		fn an_overlay_walk_sees_what_parity_db_sees_after_a_hand_over(
			base in ops(), handed in ops(), staged in ops(), seek in (1u8..=3, 0u8..9),
		) {
			let dir = tempfile::tempdir().unwrap();
			let db = layered(dir.path(), &base, &[&handed], &staged);
			let batches = db.staged_batches();
			let seek = [seek.0, seek.1];
			let seen = walks(&db, &[2], &seek);
			proptest::prop_assert_eq!(db.staged_batches(), batches, "the walk handed over");
			let model = model(&[&base, &handed, &staged]);
			let under = |k: &Vec<u8>| k.starts_with(&[2]);
			let up: Ops = model.range(seek.to_vec()..).filter(|(k, _)| under(k)).map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
			let down: Ops = model.range(..=seek.to_vec()).rev().filter(|(k, _)| under(k)).map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
			proptest::prop_assert_eq!(&seen, &(up, down));
			db.hand_over().unwrap();
			proptest::prop_assert_eq!(walks(db.raw(), &[2], &seek), seen, "parity-db after the hand-over");
		}

		/// A walk that stops before a key (maintenance's, under the writer lock) sees, up
		/// to that key, what parity-db would after a hand-over, with another hand-over
		/// completed before it (which it does not lay over) and one staged since.
		#[test]
		fn a_bounded_overlay_walk_sees_what_parity_db_sees_below_its_end(
			base in ops(), handed in ops(), staged in ops(), newest in ops(),
			seek in (1u8..=3, 0u8..9), end in (1u8..=4, 0u8..9),
		) {
			let dir = tempfile::tempdir().unwrap();
			let db = layered(dir.path(), &base, &[&handed, &staged], &newest);
			let (seek, end) = ([seek.0, seek.1], [end.0, end.1]);
			let mut walk = db.overlay_below(schema::COL_POSTING, &[], Some(&end)).unwrap();
			walk.seek(&seek).unwrap();
			let mut seen = Vec::new();
			while let Some((key, value)) = walk.next().unwrap() {
				if key.as_slice() >= end.as_slice() {
					break;
				}
				seen.push((key, Some(value)));
			}
			let expected: Ops = model(&[&base, &handed, &staged, &newest])
				.range(seek.to_vec()..)
				.take_while(|(key, _)| key.as_slice() < end.as_slice())
				.map(|(k, v)| (k.clone(), Some(v.clone())))
				.collect();
			proptest::prop_assert_eq!(seen, expected);
		}
	}
}
