//! Writeback: the threads that move acknowledged batches into parity-db.
//!
//! Acknowledged batches wait in memory, staged (see `staging`), already durable in the intent
//! log (see `intent`). parity-db runs with its own threads off; [`Writeback`] does their work
//! plus the intent bookkeeping, at two paces, on two threads ([`WritebackThreads`]):
//!
//! - every 50 ms the *drain* hands everything staged to parity-db as one commit and writes it
//!   to parity-db's log file (cheap: one commit, one `write`); the intent files it covers go;
//! - a *checkpoint* (once a second, or after 32 MiB: [`crate::Config::checkpoint_period`],
//!   [`crate::Config::checkpoint_bytes`]) applies that log to parity-db's tables, msyncs them
//!   and recycles the log.
//!
//! The drain thread also measures the free disk space (see `disk`).

use crate::{disk::DiskGuard, intent::IntentLog, staging::Database, Result};
use parking_lot::{Condvar, Mutex};
use std::{
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

/// Hands staged batches to parity-db and writes them to its log; shared by the background
/// thread and writers that find too many batches staged.
///
/// Two paces. Every period the staged batches are handed over and written to parity-db's
/// log file (cheap: one commit, one `write`). Only at a *checkpoint* (by default once a
/// second, or after 32 MiB of changes) is that log closed, applied to the tables and recycled: recycling
/// makes parity-db msync every column, and the cost of that grows with the pages written
/// since the last one, not with the data, so doing it twenty times a second took a fifth
/// of a core under a submit stream.
pub struct Writeback {
	db: Arc<Database>,
	intent: Arc<IntentLog>,
	sync: bool,
	lock: Mutex<()>,
	/// Held for a whole checkpoint.
	checkpointing: Mutex<()>,
	/// Newest intent batch staged: batches are appended to the intent log before they are
	/// staged, so only this many are sure to be in a hand-over that starts now.
	staged_through: AtomicU64,
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

impl Writeback {
	/// For `db`, whose batches are also appended to `intent`; `sync` and the checkpoint
	/// pace as in [`crate::Config`].
	pub fn new(db: Arc<Database>, intent: Arc<IntentLog>, config: &crate::Config) -> Self {
		let appended = intent.last_appended();
		Writeback {
			db,
			intent,
			sync: config.sync_wal,
			lock: Mutex::new(()),
			checkpointing: Mutex::new(()),
			staged_through: AtomicU64::new(appended),
			written_through: AtomicU64::new(appended),
			last_checkpoint: Mutex::new(Instant::now()),
			checkpoint_period: config.checkpoint_period,
			checkpoint_bytes: config.checkpoint_bytes,
		}
	}

	/// Batch `seq` is staged (callers hold the writer lock, so calls come in order).
	pub fn staged(&self, seq: u64) {
		self.staged_through.store(seq, Ordering::Release);
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
		// Read before handing over, so that every batch it counts is in the hand-over.
		let covered = self.staged_through.load(Ordering::Acquire);
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
		// One at a time: parity-db's log bookkeeping (enact, clean) expects a single driver,
		// and two concurrent checkpoints lost track of a log file, which then stayed on disk
		// and was replayed at the next open.
		let _one = self.checkpointing.lock();
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

/// Runs [`Writeback`] work in the background; stops when dropped.
///
/// Two threads: one drains every period, one checkpoints when a checkpoint is due. Kept
/// apart so that staged batches keep moving to parity-db while a checkpoint applies and
/// msyncs, which can take a second under a submit stream; otherwise the backlog grows until
/// a writer has to drain it itself, and a submit stalls.
pub struct WritebackThreads {
	state: Arc<(Mutex<bool>, Condvar)>,
	threads: Vec<JoinHandle<()>>,
}

impl WritebackThreads {
	/// Drain `processor`'s staged batches every `period` and checkpoint when one is due;
	/// measure the free disk space for `disk` as often.
	pub fn start(
		processor: Arc<Writeback>,
		disk: Arc<DiskGuard>,
		period: Duration,
	) -> std::io::Result<Self> {
		let state = Arc::new((Mutex::new(false), Condvar::new()));
		let mut applier = WritebackThreads { state, threads: Vec::new() };
		let drainer = processor.clone();
		applier.spawn("stmt-store-log", period, move || {
			disk.check();
			drainer.drain()
		})?;
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

impl WritebackThreads {
	/// Stop the threads and wait for them; the store's last checkpoint runs after this.
	pub fn stop(&mut self) {
		let (stop, wake) = &*self.state;
		*stop.lock() = true;
		wake.notify_all();
		for thread in self.threads.drain(..) {
			let _ = thread.join();
		}
	}
}

impl Drop for WritebackThreads {
	fn drop(&mut self) {
		self.stop();
	}
}
