//! Drives parity-db's write-ahead log so that an acknowledged change is on disk.
//!
//! parity-db normally queues a commit in memory and lets a background thread write it to the
//! log: a process killed right after `commit` returns can lose it. The store instead writes
//! each commit's log record itself before acknowledging it (parity-db writes a record out
//! whole as it finishes it; with `sync_wal` the log file is also fsynced), and a background
//! thread of its own applies logged records to the tables and recycles log files. parity-db
//! runs with its own threads off; the split of work between our two threads is the one
//! parity-db's threads use.

use crate::Result;
use parking_lot::{Condvar, Mutex};
use std::{sync::Arc, thread::JoinHandle, time::Duration};

/// Write one commit and make it durable before returning.
pub fn commit<I, K>(db: &parity_db::Db, ops: I, sync: bool) -> Result<()>
where
	I: IntoIterator<Item = (parity_db::ColId, K, Option<Vec<u8>>)>,
	K: AsRef<[u8]>,
{
	db.commit(ops)?;
	write_log(db, sync)
}

/// Write the queued commit's log record to the log file (and fsync it if `sync`). Callers
/// serialise this, so records reach the log in commit order.
pub fn write_log(db: &parity_db::Db, sync: bool) -> Result<()> {
	db.process_commits()?;
	if sync {
		// Closes the current log file with an fsync; the next record starts a new one.
		db.flush_logs()?;
	}
	Ok(())
}

/// Applies logged commits to the tables in the background; stops when dropped.
pub struct LogApplier {
	state: Arc<(Mutex<bool>, Condvar)>,
	thread: Option<JoinHandle<()>>,
}

impl LogApplier {
	/// Start applying `db`'s log every `period`, running index rebuild steps under `writer`
	/// (they go through the same log as commits and must not interleave with them).
	pub fn start<T: Send + 'static>(
		db: Arc<parity_db::Db>,
		writer: Arc<Mutex<T>>,
		period: Duration,
	) -> std::io::Result<Self> {
		let state = Arc::new((Mutex::new(false), Condvar::new()));
		let shared = state.clone();
		let thread =
			std::thread::Builder::new().name("statement-store-log".into()).spawn(move || {
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
					if let Err(err) = apply(&db, &writer) {
						log::warn!(target: "statement-store", "applying the database log failed: {err}");
					}
				}
			})?;
		Ok(LogApplier { state, thread: Some(thread) })
	}
}

fn apply<T>(db: &parity_db::Db, writer: &Mutex<T>) -> Result<()> {
	db.enact_logs()?;
	db.clean_logs()?;
	let _writer = writer.lock();
	db.process_reindex()?;
	db.flush_logs()?;
	Ok(())
}

impl Drop for LogApplier {
	fn drop(&mut self) {
		let (stop, wake) = &*self.state;
		*stop.lock() = true;
		wake.notify_all();
		if let Some(thread) = self.thread.take() {
			let _ = thread.join();
		}
	}
}
