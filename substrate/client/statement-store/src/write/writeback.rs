//! Writeback: the threads that move acknowledged batches into parity-db.
//!
//! Acknowledged batches wait in memory, staged (see `staging`), already durable in the intent
//! log (see `intent`). parity-db runs with its own threads off; [`Writeback`] does their work
//! plus the intent bookkeeping, at two paces, on two threads ([`WritebackThreads`]):
//!
//! - every 50 ms the *drain* hands everything staged to parity-db as one commit and writes it
//!   to parity-db's log file (cheap: one commit, one `write`); the intent files it covers go;
//! - a *checkpoint* (once a second, or after 1 MiB: [`crate::config::Config::checkpoint_period`],
//!   [`crate::config::Config::checkpoint_bytes`]) closes that log file and applies it to parity-db's
//!   tables, which frees the memory parity-db held for it.
//!
//! Disk writes. Without `sync_wal` parity-db runs with `sync_data` off: applying a log file
//! writes into the tables' page cache, the kernel writes the pages out in its own time, and
//! an applied log file is emptied at once (parity-db would keep 16 and replay them all after
//! a crash; a vendored patch makes that `keep_logs = 0`, see `vendor/README.md`). A killed
//! process loses nothing: the page cache holds what was applied, and opening replays only
//! the files not yet applied and does not msync what it did not write (the same patch). With
//! `sync_wal`, each checkpoint also msyncs the tables before emptying the files, as
//! parity-db does by default, so that power loss leaves consistent tables. Without it the
//! kernel writes the tables out in its own time: msyncing at every checkpoint writes each
//! dirty page of the hash indexes once per checkpoint, and their pages are hit at random
//! (about four times the bytes a fill writes otherwise; benches/HISTORY.md).
//!
//! Writers push back: past 4,096 staged batches or 24 MiB handed over and not applied, the
//! writer does the background work itself ([`Writeback::relieve`]), so a burst waits instead
//! of piling up in memory ([`crate::metrics::MetricsSnapshot::pending_bytes`]).
//!
//! The drain thread also measures the free disk space (see `disk`).
//!
//! Both threads run [`BACKGROUND_NICE`] steps below the rest of the process (Linux), so that
//! a checkpoint's burst of table writes (10-35 ms of one core under a submit stream) waits
//! for the threads serving requests on a small machine rather than the other way round.
//! Work they fall behind on is done by writers at their own priority (above), so a busy
//! machine slows them without letting the backlog grow.

use crate::{
	error::Result, write::disk::DiskGuard, write::intent::IntentLog, write::staging::Database,
};
use parking_lot::{Condvar, Mutex};
use std::{
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
	thread::JoinHandle,
	time::{Duration, Instant},
};

/// How many nice steps below the process the writeback threads run (Linux; the nice value
/// stops at 19). Ten gives them about a tenth of the CPU a request-serving thread gets when
/// the cores are contended, and all of it when they are idle.
pub const BACKGROUND_NICE: i32 = 10;

/// Lower the calling thread's CPU priority by [`BACKGROUND_NICE`]. On Linux a thread id names
/// that thread alone for `setpriority`; elsewhere this does nothing. A failure only leaves
/// the thread at the process's priority.
fn lower_priority() {
	#[cfg(target_os = "linux")]
	{
		use rustix::process::{getpriority_process, setpriority_process};
		let me = Some(rustix::thread::gettid());
		let lowered = getpriority_process(me)
			.and_then(|nice| setpriority_process(me, (nice + BACKGROUND_NICE).min(19)));
		if let Err(err) = lowered {
			let thread = std::thread::current();
			let name = thread.name().unwrap_or("a writeback thread");
			log::debug!(target: "statement-store", "{name} keeps the process's priority: {err}");
		}
	}
}

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
/// threads and writers that find too much waiting (see the module documentation).
///
/// Two paces. Every period the staged batches are handed over and written to parity-db's
/// log file (cheap: one commit, one `write`). Only at a *checkpoint* (by default once a
/// second, or after 1 MiB of changes) is that log file closed and applied to the tables.
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

/// A drain this long is logged (debug).
const SLOW_DRAIN: Duration = Duration::from_millis(10);

/// Past this many staged batches a writer hands them over itself, which bounds the memory
/// they hold when the background thread falls behind.
const MAX_STAGED: usize = 4096;

/// Past this many bytes handed to parity-db and not yet applied to its tables (which it holds
/// in memory), a writer runs a checkpoint itself.
const MAX_PENDING_BYTES: u64 = 24 << 20;

impl Writeback {
	/// Keep the background threads from handing anything over while the guard lives (a
	/// writer's own hand-over, past [`MAX_STAGED`] batches, waits for it too).
	#[cfg(test)]
	pub fn hold(&self) -> parking_lot::MutexGuard<'_, ()> {
		self.lock.lock()
	}

	/// For `db`, whose batches are also appended to `intent`; `sync` and the checkpoint
	/// pace as in [`crate::config::Config`].
	pub fn new(db: Arc<Database>, intent: Arc<IntentLog>, config: &crate::config::Config) -> Self {
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

	/// Called by a writer after each batch: when the background threads fall behind, the
	/// writer does their work itself, so that a burst waits rather than piling up changes
	/// in memory. Past [`MAX_STAGED`] staged batches it hands them to parity-db; past
	/// [`MAX_PENDING_BYTES`] (or the checkpoint size, if larger) handed over and not applied
	/// it runs a checkpoint (or waits for the one running).
	pub fn relieve(&self) -> Result<()> {
		if self.db.staged_batches() > MAX_STAGED {
			log::debug!(target: "statement-store", "a writer drains the staged batches itself");
			self.drain()?;
		}
		if self.db.handed_over_bytes() > self.checkpoint_bytes.max(MAX_PENDING_BYTES) {
			log::debug!(target: "statement-store", "a writer runs a checkpoint itself");
			self.checkpoint()?;
		}
		Ok(())
	}

	/// Bytes of acknowledged changes not yet in parity-db's tables (see
	/// [`Database::pending_bytes`]).
	pub fn pending_bytes(&self) -> u64 {
		self.db.pending_bytes()
	}

	/// Hand every staged batch to parity-db as one commit and write it to parity-db's log
	/// file. That survives the process being killed, so without `sync_wal` the intent files
	/// it covers go now; with it they wait for the fsync at the next checkpoint.
	pub fn drain(&self) -> Result<()> {
		let _lock = self.lock.lock();
		let started = Instant::now();
		// Read before handing over, so that every batch it counts is in the hand-over.
		let covered = self.staged_through.load(Ordering::Acquire);
		self.db.hand_over()?;
		let handed = started.elapsed();
		self.db.process()?;
		if started.elapsed() >= SLOW_DRAIN {
			log::debug!(
				target: "statement-store",
				"slow drain: {:?} (handed over at {handed:?})",
				started.elapsed()
			);
		}
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
		// One at a time: parity-db's log bookkeeping (enact, clean) expects a single driver;
		// two concurrent checkpoints lose track of a log file, which then stays on disk and
		// is replayed at the next open.
		let _one = self.checkpointing.lock();
		let started = Instant::now();
		self.drain()?;
		let drained = started.elapsed();
		let db = self.db.raw();
		let bytes = {
			let _lock = self.lock.lock();
			let covered = self.written_through.load(Ordering::Acquire);
			db.flush_logs()?;
			self.intent.release_through(covered);
			// Everything handed over so far is in the file just closed, applied below.
			self.db.take_handed_over_bytes()
		};
		// parity-db applies one log file per `enact_logs` call (it stops at the end of a
		// file) and, when too many applied files wait to be cleaned, blocks until a cleanup
		// that only this thread runs: so apply a file, clean, and once more for a file an
		// earlier roll left queued (a commit outside batches). Rolling a second time in the
		// same checkpoint would queue one file more than is applied, and under a submit
		// stream the queue, and the memory parity-db holds for it, would grow without end.
		let closed = started.elapsed();
		for _ in 0..2 {
			db.enact_logs()?;
			db.clean_logs()?;
		}
		let applied = started.elapsed();
		// Reindexing writes to the current log file; the next checkpoint rolls and applies it.
		let _lock = self.lock.lock();
		db.process_reindex()?;
		*self.last_checkpoint.lock() = Instant::now();
		if bytes > 0 {
			log::debug!(
				target: "statement-store",
				"checkpoint: {} KiB applied to the tables in {:?} (drained at {drained:?}, log \
				 closed at {closed:?}, applied at {applied:?})",
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

	/// Run `work` on a new thread, [`BACKGROUND_NICE`] below the process, every `period`
	/// until stopped.
	fn spawn(
		&mut self,
		name: &str,
		period: Duration,
		work: impl Fn() -> Result<()> + Send + 'static,
	) -> std::io::Result<()> {
		let shared = self.state.clone();
		let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
			lower_priority();
			let (stop, wake) = &*shared;
			// A full disk fails every round alike: warn once, then debug until it works.
			let mut failing = false;
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
				match work() {
					Err(err) if failing => {
						log::debug!(target: "statement-store", "writing to the database failed: {err}")
					}
					Err(err) => {
						failing = true;
						log::warn!(
							target: "statement-store",
							"writing to the database failed: {err}; retrying every {period:?} \
							 (further failures are logged at debug level until it works)"
						);
					}
					Ok(()) if failing => {
						failing = false;
						log::info!(target: "statement-store", "writing to the database works again");
					}
					Ok(()) => {}
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

#[cfg(test)]
mod tests;
