//! Durability: the store's own redo log of changes, and the thread that drives parity-db.
//!
//! parity-db queues a commit in memory and writes it to its log later; a process killed in
//! between loses it. Writing parity-db's log record on the submitting thread (what this store
//! did first) costs about half of a submit, because parity-db plans every btree and value
//! table change at that point. Instead, each change the store acknowledges is first appended
//! to a small redo log of its own, the *intent log*: one record per batch with the batch's
//! steps (statements added with their account, statements removed with their ban, bans
//! lifted), in commit order, each with a sequence number and a checksum. Appending is one
//! `write` (plus an fsync with `sync_wal`). The same sequence number goes into the batch's
//! parity-db commit (meta key `intent`), so after a crash opening knows exactly which batches
//! parity-db already holds and redoes the rest, in order, from the same starting state.
//!
//! Acknowledged batches wait in memory, staged (see `staging`), and a background thread
//! then does parity-db's work: it hands everything staged to parity-db as one commit, writes
//! it to parity-db's log, applies logged commits to the tables, recycles log files, and deletes intent files
//! whose every batch parity-db has written. parity-db runs with its own threads off; this
//! thread does what they would, plus the intent bookkeeping.

use crate::{staging::Database, Error, Result};
use codec::{Decode, Encode};
use parking_lot::{Condvar, Mutex};
use statement_primitives::{AccountId, Hash};
use std::{
	fs::File,
	hash::Hasher,
	io::{Read, Write},
	path::{Path, PathBuf},
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
	thread::JoinHandle,
	time::{Duration, Instant},
};

/// Write one commit and make it durable before returning (used outside batches: creating a
/// database, tests).
pub fn commit<I, K>(db: &parity_db::Db, ops: I, sync: bool) -> Result<()>
where
	I: IntoIterator<Item = (parity_db::ColId, K, Option<Vec<u8>>)>,
	K: AsRef<[u8]>,
{
	db.commit(ops)?;
	db.process_commits()?;
	if sync {
		db.flush_logs()?;
	}
	Ok(())
}

/// One step of a batch, enough to redo it exactly against the state it started from.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Step {
	/// A statement admitted for `account`.
	Add {
		/// The signer's account.
		account: AccountId,
		/// The statement's encoding.
		encoding: Vec<u8>,
	},
	/// A stored statement removed, banned until the given time if any.
	Remove {
		/// Its hash.
		hash: Hash,
		/// End of its ban (unix seconds).
		ban_until: Option<u64>,
	},
	/// A ban lifted.
	Unban {
		/// The banned hash.
		hash: Hash,
		/// When the ban would have ended.
		until: u64,
	},
}

/// One batch from the intent log: its sequence number and steps.
pub type Intent = (u64, Vec<Step>);

/// Intent files are named `intent-<first sequence>.log`; a new one is started past this size.
const INTENT_FILE_BYTES: u64 = 4 << 20;
const RECORD_HEADER: usize = 12;

struct Current {
	file: File,
	first_seq: u64,
	bytes: u64,
	/// Older files still needed, oldest first: (first sequence, path).
	older: Vec<(u64, PathBuf)>,
}

/// The store's redo log (see the module documentation).
pub struct IntentLog {
	dir: PathBuf,
	sync: bool,
	current: Mutex<Current>,
	next_seq: AtomicU64,
	last_appended: AtomicU64,
}

fn intent_path(dir: &Path, first_seq: u64) -> PathBuf {
	dir.join(format!("intent-{first_seq:020}.log"))
}

/// Intent files in `dir`, oldest first.
fn intent_files(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
	let mut files = Vec::new();
	for entry in std::fs::read_dir(dir)? {
		let path = entry?.path();
		let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
		if let Some(seq) = name
			.strip_prefix("intent-")
			.and_then(|rest| rest.strip_suffix(".log"))
			.and_then(|seq| seq.parse::<u64>().ok())
		{
			files.push((seq, path));
		}
	}
	files.sort();
	Ok(files)
}

/// Every intact record in the intent files of `dir`, in order, and the files read. Reading
/// stops at the first record that is cut short or fails its checksum: that is where a crash
/// interrupted an append, and nothing after it was acknowledged.
pub fn read_intents(dir: &Path) -> Result<(Vec<Intent>, Vec<PathBuf>)> {
	let io = |err: std::io::Error| Error::Config(format!("cannot read intent log: {err}"));
	let files = intent_files(dir).map_err(io)?;
	let mut records = Vec::new();
	let mut paths = Vec::new();
	let mut torn = false;
	for (_, path) in files {
		paths.push(path.clone());
		if torn {
			log::warn!(
				target: "statement-store",
				"ignoring {} after a damaged record in an earlier intent file",
				path.display()
			);
			continue;
		}
		let mut bytes = Vec::new();
		File::open(&path).and_then(|mut file| file.read_to_end(&mut bytes)).map_err(io)?;
		let mut at = 0;
		while at < bytes.len() {
			let Some(record) = parse_record(&bytes[at..]) else {
				log::warn!(
					target: "statement-store",
					"{}: the intent record at byte {at} is incomplete or damaged; it and \
					 anything after it were never acknowledged",
					path.display()
				);
				torn = true;
				break;
			};
			at += RECORD_HEADER + record.0;
			records.push(record.1);
		}
	}
	Ok((records, paths))
}

fn parse_record(bytes: &[u8]) -> Option<(usize, (u64, Vec<Step>))> {
	let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
	let checksum = u64::from_le_bytes(bytes.get(4..12)?.try_into().ok()?);
	let body = bytes.get(RECORD_HEADER..RECORD_HEADER + len)?;
	if xxh64(body) != checksum {
		return None;
	}
	let record = <(u64, Vec<Step>)>::decode(&mut &body[..]).ok()?;
	Some((len, record))
}

fn xxh64(bytes: &[u8]) -> u64 {
	let mut hasher = twox_hash::XxHash64::with_seed(0);
	hasher.write(bytes);
	hasher.finish()
}

impl IntentLog {
	/// Start a new intent file in `dir`; the first batch gets sequence `next_seq`.
	pub fn create(dir: &Path, sync: bool, next_seq: u64) -> Result<IntentLog> {
		let path = intent_path(dir, next_seq);
		// Truncate: a file of this name can only hold a record torn by a crash.
		let file = File::create(&path).map_err(|err| {
			Error::Config(format!("cannot create intent log {}: {err}", path.display()))
		})?;
		Ok(IntentLog {
			dir: dir.to_path_buf(),
			sync,
			current: Mutex::new(Current { file, first_seq: next_seq, bytes: 0, older: Vec::new() }),
			next_seq: AtomicU64::new(next_seq),
			last_appended: AtomicU64::new(next_seq - 1),
		})
	}

	/// The sequence number of the next batch. Callers hold the store's writer lock, so
	/// batches take numbers in commit order.
	pub fn allocate(&self) -> u64 {
		self.next_seq.fetch_add(1, Ordering::Relaxed)
	}

	/// Append batch `seq`. On return it survives the process being killed (and, with
	/// `sync_wal`, power loss).
	pub fn append(&self, seq: u64, steps: &[Step]) -> Result<()> {
		let body = (seq, steps).encode();
		let mut record = Vec::with_capacity(RECORD_HEADER + body.len());
		record.extend_from_slice(&(body.len() as u32).to_le_bytes());
		record.extend_from_slice(&xxh64(&body).to_le_bytes());
		record.extend_from_slice(&body);
		let io = |err: std::io::Error| Error::Config(format!("cannot write intent log: {err}"));
		let mut current = self.current.lock();
		if current.bytes >= INTENT_FILE_BYTES {
			let path = intent_path(&self.dir, seq);
			current.file = File::create(&path).map_err(io)?;
			let old_first = std::mem::replace(&mut current.first_seq, seq);
			current.older.push((old_first, intent_path(&self.dir, old_first)));
			current.bytes = 0;
		}
		current.file.write_all(&record).map_err(io)?;
		if self.sync {
			current.file.sync_data().map_err(io)?;
		}
		current.bytes += record.len() as u64;
		self.last_appended.store(seq, Ordering::Release);
		Ok(())
	}

	/// The file appends go to now.
	pub fn current_path(&self) -> PathBuf {
		intent_path(&self.dir, self.current.lock().first_seq)
	}

	/// The newest appended sequence number.
	pub fn last_appended(&self) -> u64 {
		self.last_appended.load(Ordering::Acquire)
	}

	/// parity-db holds every batch up to `seq`: delete the intent files that hold only those.
	pub fn release_through(&self, seq: u64) {
		let mut current = self.current.lock();
		let mut keep = Vec::new();
		let older = std::mem::take(&mut current.older);
		let firsts: Vec<u64> =
			older.iter().map(|(first, _)| *first).skip(1).chain([current.first_seq]).collect();
		for ((first, path), next_first) in older.into_iter().zip(firsts) {
			if next_first - 1 <= seq {
				if let Err(err) = std::fs::remove_file(&path) {
					log::warn!(target: "statement-store", "cannot delete {}: {err}", path.display());
				}
			} else {
				keep.push((first, path));
			}
		}
		current.older = keep;
	}

	/// Delete every intent file: the caller has made parity-db hold all of them.
	pub fn release_all(&self) {
		let current = self.current.lock();
		let newest = intent_path(&self.dir, current.first_seq);
		for path in current.older.iter().map(|(_, path)| path).chain([&newest]) {
			if let Err(err) = std::fs::remove_file(path) {
				log::warn!(target: "statement-store", "cannot delete {}: {err}", path.display());
			}
		}
	}
}

/// Hands staged batches to parity-db and writes them to its log; shared by the background
/// thread and writers that find too many batches staged.
///
/// Two paces. Every period the staged batches are handed over and written to parity-db's
/// log file (cheap: one commit, one `write`). Only at a *checkpoint* (by default once a
/// second, or after 32 MiB of changes) is that log closed, applied to the tables and recycled: recycling
/// makes parity-db msync every column, and the cost of that grows with the pages written
/// since the last one, not with the data, so doing it twenty times a second took a fifth
/// of a core under a submit stream.
pub struct Processor {
	db: Arc<Database>,
	intent: Arc<IntentLog>,
	sync: bool,
	lock: Mutex<()>,
	/// Newest intent batch written to parity-db's log file.
	written_through: AtomicU64,
	/// When the last checkpoint ran.
	last_checkpoint: Mutex<Instant>,
	/// Longest time between checkpoints.
	checkpoint_period: Duration,
	/// Bytes handed to parity-db after which a checkpoint runs early: parity-db holds what
	/// it has not applied to its tables in memory.
	checkpoint_bytes: u64,
}

/// Past this many staged batches a writer hands them over itself, which bounds the memory
/// they hold when the background thread falls behind.
const MAX_STAGED: usize = 4096;

impl Processor {
	/// For `db`, whose batches are also appended to `intent`; `sync` and the checkpoint
	/// pace as in [`crate::Config`].
	pub fn new(db: Arc<Database>, intent: Arc<IntentLog>, config: &crate::Config) -> Self {
		let written_through = AtomicU64::new(intent.last_appended());
		Processor {
			db,
			intent,
			sync: config.sync_wal,
			lock: Mutex::new(()),
			written_through,
			last_checkpoint: Mutex::new(Instant::now()),
			checkpoint_period: config.checkpoint_period,
			checkpoint_bytes: config.checkpoint_bytes,
		}
	}

	/// Whether writers should drain the staged batches themselves.
	pub fn backlogged(&self) -> bool {
		self.db.staged_batches() > MAX_STAGED
	}

	/// Hand every staged batch to parity-db as one commit and write it to parity-db's log
	/// file. That survives the process being killed, so without `sync_wal` the intent files
	/// it covers go now; with it they wait for the fsync at the next checkpoint.
	pub fn drain(&self) -> Result<()> {
		let _lock = self.lock.lock();
		// Read before handing over: every batch appended so far was staged before its append.
		let covered = self.intent.last_appended();
		self.db.hand_over()?;
		self.db.process()?;
		self.written_through.store(covered, Ordering::Release);
		if !self.sync {
			self.intent.release_through(covered);
		}
		Ok(())
	}

	/// Drain, then close parity-db's log file (fsynced with `sync_wal`), apply it to the
	/// tables and recycle it. Afterwards parity-db holds every batch appended before the
	/// call, durably, and no intent file is needed for them.
	pub fn checkpoint(&self) -> Result<()> {
		let started = Instant::now();
		self.drain()?;
		let db = self.db.raw();
		{
			let _lock = self.lock.lock();
			let covered = self.written_through.load(Ordering::Acquire);
			db.flush_logs()?;
			self.intent.release_through(covered);
		}
		db.enact_logs()?;
		db.clean_logs()?;
		let _lock = self.lock.lock();
		db.process_reindex()?;
		db.flush_logs()?;
		*self.last_checkpoint.lock() = Instant::now();
		let bytes = self.db.take_handed_over_bytes();
		if bytes > 0 {
			log::debug!(
				target: "statement-store",
				"checkpoint: {} KiB applied to the tables in {:?}",
				bytes >> 10,
				started.elapsed()
			);
		}
		Ok(())
	}

	/// Whether a checkpoint is due: a period has passed, or enough was handed over.
	fn checkpoint_due(&self) -> bool {
		self.db.handed_over_bytes() >= self.checkpoint_bytes
			|| self.last_checkpoint.lock().elapsed() >= self.checkpoint_period
	}
}

/// Runs [`Processor`] work in the background; stops when dropped.
///
/// Two threads: one drains every period, one checkpoints when a checkpoint is due. Kept
/// apart so that staged batches keep moving to parity-db while a checkpoint applies and
/// msyncs, which can take a second under a submit stream; otherwise the backlog grows until
/// a writer has to drain it itself, and a submit stalls.
pub struct LogApplier {
	state: Arc<(Mutex<bool>, Condvar)>,
	threads: Vec<JoinHandle<()>>,
}

impl LogApplier {
	/// Drain `processor`'s staged batches every `period` and checkpoint when one is due.
	pub fn start(processor: Arc<Processor>, period: Duration) -> std::io::Result<Self> {
		let state = Arc::new((Mutex::new(false), Condvar::new()));
		let mut applier = LogApplier { state, threads: Vec::new() };
		let drainer = processor.clone();
		applier.spawn("stmt-store-log", period, move || drainer.drain())?;
		applier.spawn("stmt-store-ckpt", period, move || {
			if processor.checkpoint_due() {
				processor.checkpoint()?;
			}
			Ok(())
		})?;
		Ok(applier)
	}

	/// Run `work` on a new thread every `period` until stopped.
	fn spawn(
		&mut self,
		name: &str,
		period: Duration,
		work: impl Fn() -> Result<()> + Send + 'static,
	) -> std::io::Result<()> {
		let shared = self.state.clone();
		let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
			let (stop, wake) = &*shared;
			loop {
				{
					let mut stopped = stop.lock();
					if !*stopped {
						wake.wait_for(&mut stopped, period);
					}
					if *stopped {
						return;
					}
				}
				if let Err(err) = work() {
					log::warn!(target: "statement-store", "writing to the database failed: {err}");
				}
			}
		})?;
		self.threads.push(thread);
		Ok(())
	}
}

impl Drop for LogApplier {
	fn drop(&mut self) {
		let (stop, wake) = &*self.state;
		*stop.lock() = true;
		wake.notify_all();
		for thread in self.threads.drain(..) {
			let _ = thread.join();
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn steps(n: u8) -> Vec<Step> {
		vec![
			Step::Add { account: [n; 32], encoding: vec![n; 40] },
			Step::Remove { hash: [n; 32], ban_until: Some(u64::from(n)) },
			Step::Unban { hash: [n; 32], until: 9 },
		]
	}

	#[test]
	fn records_read_back_in_order_and_a_torn_tail_is_dropped() {
		let dir = tempfile::tempdir().unwrap();
		let log = IntentLog::create(dir.path(), false, 5).unwrap();
		for seq in 5..8 {
			assert_eq!(log.allocate(), seq);
			log.append(seq, &steps(seq as u8)).unwrap();
		}
		drop(log);
		let (records, files) = read_intents(dir.path()).unwrap();
		assert_eq!(files.len(), 1);
		assert_eq!(records, (5..8).map(|seq| (seq, steps(seq as u8))).collect::<Vec<_>>());
		// Cut the last record short, as a kill during the append would.
		let path = &files[0];
		let len = std::fs::metadata(path).unwrap().len();
		let file = File::options().write(true).open(path).unwrap();
		file.set_len(len - 3).unwrap();
		let (records, _) = read_intents(dir.path()).unwrap();
		assert_eq!(records.len(), 2);
		// A flipped byte fails the checksum: reading stops there.
		let mut bytes = std::fs::read(path).unwrap();
		bytes[RECORD_HEADER + 2] ^= 1;
		std::fs::write(path, bytes).unwrap();
		let (records, _) = read_intents(dir.path()).unwrap();
		assert!(records.is_empty());
	}

	#[test]
	fn released_files_are_deleted_and_the_current_one_kept() {
		let dir = tempfile::tempdir().unwrap();
		let log = IntentLog::create(dir.path(), false, 1).unwrap();
		let big = vec![Step::Add { account: [0; 32], encoding: vec![0; 1 << 20] }];
		for _ in 0..10 {
			let seq = log.allocate();
			log.append(seq, &big).unwrap();
		}
		let files = intent_files(dir.path()).unwrap();
		assert!(files.len() >= 2, "{files:?}");
		log.release_through(log.last_appended());
		let left = intent_files(dir.path()).unwrap();
		assert_eq!(left.len(), 1);
		assert_eq!(left[0], *files.last().unwrap());
		log.release_all();
		assert!(intent_files(dir.path()).unwrap().is_empty());
	}
}
