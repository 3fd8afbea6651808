//! Free disk space: refuse new statements before a full disk can make a write fail.
//!
//! parity-db writes its tables through memory maps. The vendored parity-db allocates a file's
//! blocks before a write through its map reaches them, so a full disk is an I/O error rather
//! than a SIGBUS; still, a write that fails midway costs a retry, and the space another
//! process takes can come at any moment. So the store does not wait for a write to fail: the
//! background drain
//! thread measures the free space of the database's file system every time it runs (every
//! 50 ms), and while it is below [`crate::config::Config::min_free_bytes`] submits are refused with
//! [`crate::error::Error::DiskFull`]. Reads, removals, maintenance and checkpoints go on: they free
//! space, or write only into the reserve (a checkpoint applies what was handed to parity-db
//! since the last one, about [`crate::config::Config::checkpoint_bytes`], and writers wait past 24 MiB
//! pending). When space returns (a quarter of the
//! reserve more than the reserve, so that submits do not flap), submits resume by themselves.
//!
//! Between two measurements every committed batch counts its bytes off the last figure
//! (three times over: the intent log, parity-db's log and its tables), so a fast stream is
//! refused before the next measurement rather than after; the default reserve (128 MiB)
//! holds what can be pending several times over.

use crate::error::{mib, Error};
use std::{
	path::PathBuf,
	sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

/// Watches the free space under the database directory.
pub struct DiskGuard {
	path: PathBuf,
	reserve: u64,
	free: AtomicU64,
	low: AtomicBool,
}

impl DiskGuard {
	/// A guard for the file system holding `path` that keeps `reserve` bytes free; measures
	/// once now.
	pub fn new(path: PathBuf, reserve: u64) -> Self {
		let guard = DiskGuard { path, reserve, free: AtomicU64::new(u64::MAX), low: false.into() };
		guard.check();
		guard
	}

	/// Measure the free space now; logs when it drops below the reserve and when it is back.
	pub fn check(&self) {
		let free = match fs2::available_space(&self.path) {
			Ok(free) => free,
			Err(err) => {
				log::debug!(
					target: "statement-store",
					"cannot measure the free space at {}: {err}",
					self.path.display()
				);
				return;
			}
		};
		self.free.store(free, Ordering::Relaxed);
		let resume = self.resume();
		let low = free < self.reserve || (self.low.load(Ordering::Acquire) && free < resume);
		if self.low.swap(low, Ordering::AcqRel) != low {
			if low {
				log::warn!(
					target: "statement-store",
					"{}: {} of disk free, below the reserve of {}: new statements are refused \
					 until {} are free",
					self.path.display(),
					mib(free),
					mib(self.reserve),
					mib(resume)
				);
			} else {
				log::info!(
					target: "statement-store",
					"{}: {} of disk free again: accepting new statements",
					self.path.display(),
					mib(free)
				);
			}
		}
	}

	/// `bytes` are about to be written: count them off the last measurement, so that a fast
	/// stream is refused before the next measurement rather than after.
	pub fn spend(&self, bytes: u64) {
		let before =
			self.free.fetch_sub(bytes.min(self.free.load(Ordering::Relaxed)), Ordering::Relaxed);
		if before.saturating_sub(bytes) < self.reserve && !self.low.swap(true, Ordering::AcqRel) {
			log::warn!(
				target: "statement-store",
				"{}: the disk is about to fall below the reserve of {}: new statements are \
				 refused until {} are free",
				self.path.display(),
				mib(self.reserve),
				mib(self.resume())
			);
		}
	}

	/// Why a new statement must be refused now, if it must.
	pub fn refusal(&self) -> Option<Error> {
		if !self.low.load(Ordering::Acquire) {
			return None;
		}
		Some(Error::DiskFull {
			path: self.path.display().to_string(),
			free: self.free.load(Ordering::Relaxed),
			reserve: self.reserve,
			resume: self.resume(),
		})
	}

	/// Once low, the store stays low until a quarter of the reserve more is free, so that
	/// submits do not flap on and off while log files come and go at the threshold.
	fn resume(&self) -> u64 {
		self.reserve.saturating_add(self.reserve / 4)
	}

	/// Bytes free at the last measurement, and whether that was below the reserve.
	pub fn state(&self) -> (u64, bool) {
		(self.free.load(Ordering::Relaxed), self.low.load(Ordering::Acquire))
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_refusal_between_the_reserve_and_the_resume_mark_says_which_figure_it_waits_for() {
		let dir = tempfile::tempdir().unwrap();
		let guard = DiskGuard::new(dir.path().to_path_buf(), 4 << 20);
		guard.low.store(true, Ordering::Release);
		guard.free.store(4 << 20 | 1 << 19, Ordering::Relaxed);
		let err = guard.refusal().expect("low").to_string();
		assert!(err.contains("4.5 MiB free"), "{err}");
		assert!(err.contains("until 5.0 MiB are free"), "{err}");
		assert!(err.contains("reserve of 4.0 MiB"), "{err}");
	}

	#[test]
	fn a_reserve_larger_than_the_disk_refuses_and_names_the_figures() {
		let dir = tempfile::tempdir().unwrap();
		let guard = DiskGuard::new(dir.path().to_path_buf(), u64::MAX);
		let err = guard.refusal().expect("nothing can have u64::MAX bytes free");
		assert!(err.to_string().contains("nearly full"), "{err}");
		assert!(guard.state().1);
		let guard = DiskGuard::new(dir.path().to_path_buf(), 0);
		assert!(guard.refusal().is_none());
		assert!(guard.state().0 > 0);
	}
}
