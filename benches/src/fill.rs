//! What filling a store costs beyond time: bytes written to disk, memory held meanwhile, and
//! how long its background work runs on after the last submit.
//!
//! Bytes come from `/proc/self/io` (`write_bytes` less `cancelled_write_bytes`): the kernel
//! charges a page to the process when the process dirties it, whether by `write` or through
//! a mapping, and takes the charge back when a file is truncated or deleted before the page
//! reached the disk (a log recycled in time). The figure is process-wide, so only one store
//! may be busy while it is measured.

use crate::procfs;
use std::{
	sync::atomic::{AtomicBool, AtomicU64, Ordering},
	time::{Duration, Instant},
};

/// What one fill cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct FillReport {
	/// Time the submits took.
	pub took: Duration,
	/// How long after the last submit the writes stopped.
	pub quiet_after: Duration,
	/// Highest value of the store's own count of pending bytes seen during the fill.
	pub pending_peak: u64,
	/// Highest anonymous RSS seen, less the anonymous RSS before the fill.
	pub anon_growth: u64,
}

/// Bytes written while `work` runs (zero where `/proc/self/io` is missing).
pub fn written_by(work: impl FnOnce()) -> u64 {
	let before = procfs::written_bytes().unwrap_or(0);
	work();
	procfs::written_bytes().unwrap_or(0).saturating_sub(before)
}

/// This process's anonymous resident memory in bytes (Linux; `None` elsewhere).
pub fn anon_rss() -> Option<u64> {
	procfs::status(procfs::SELF)?.kib("RssAnon").map(|kib| kib << 10)
}

/// Writes that stop for this long count as quiet.
const QUIET: Duration = Duration::from_secs(1);
/// Give up waiting for quiet after this long.
const PATIENCE: Duration = Duration::from_secs(60);

/// Run `fill`, sampling `pending` and the anonymous RSS every 5 ms meanwhile, then wait until
/// `pending` is zero and no byte was written for a second.
pub fn watch(fill: impl FnOnce(), pending: impl Fn() -> u64 + Sync) -> FillReport {
	let anon_before = anon_rss().unwrap_or(0);
	let pending_peak = AtomicU64::new(0);
	let anon_peak = AtomicU64::new(anon_before);
	let filling = AtomicBool::new(true);
	let mut report = FillReport::default();
	std::thread::scope(|scope| {
		scope.spawn(|| {
			while filling.load(Ordering::Relaxed) {
				pending_peak.fetch_max(pending(), Ordering::Relaxed);
				anon_peak.fetch_max(anon_rss().unwrap_or(0), Ordering::Relaxed);
				std::thread::sleep(Duration::from_millis(5));
			}
		});
		let started = Instant::now();
		fill();
		report.took = started.elapsed();
		filling.store(false, Ordering::Relaxed);
	});
	let ended = Instant::now();
	let mut last = procfs::written_bytes().unwrap_or(0);
	let mut last_change = ended;
	while last_change.elapsed() < QUIET && ended.elapsed() < PATIENCE {
		std::thread::sleep(Duration::from_millis(20));
		let now = procfs::written_bytes().unwrap_or(0);
		if now != last || pending() > 0 {
			last = now;
			last_change = Instant::now();
		}
	}
	report.quiet_after = last_change.duration_since(ended);
	report.pending_peak = pending_peak.into_inner();
	report.anon_growth = anon_peak.into_inner().saturating_sub(anon_before);
	report
}
