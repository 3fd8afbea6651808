//! Submissions on the node as spec-v2 replays see them, so that a replay gives way to them.

use std::{
	sync::atomic::{AtomicU64, AtomicUsize, Ordering},
	time::{Duration, Instant},
};

/// Submissions on the node as spec-v2 replays see them: how many are being handled, and when
/// the last one began or ended. Submissions come one call at a time, even in a batch, so the
/// count alone is zero for a moment between two calls of a stream of them: a replay that
/// looked only at it went on at once nearly every time, and took the cores the stream needed.
pub(crate) struct Submissions {
	in_progress: AtomicUsize,
	/// Microseconds after `epoch` at which a submission last began or ended.
	last: AtomicU64,
	epoch: Instant,
}

impl Default for Submissions {
	fn default() -> Self {
		Submissions {
			in_progress: AtomicUsize::new(0),
			last: AtomicU64::new(0),
			epoch: Instant::now(),
		}
	}
}

impl Submissions {
	/// One submission begins; it ends when the guard is dropped.
	pub(crate) fn begin(&self) -> Submitting<'_> {
		self.in_progress.fetch_add(1, Ordering::Relaxed);
		self.touch();
		Submitting(self)
	}

	fn touch(&self) {
		let now = u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX);
		self.last.fetch_max(now, Ordering::Relaxed);
	}

	/// Whether a submission is being handled, or one began or ended within `quiet`.
	pub(crate) fn busy(&self, quiet: Duration) -> bool {
		if self.in_progress.load(Ordering::Relaxed) > 0 {
			return true;
		}
		let last = Duration::from_micros(self.last.load(Ordering::Relaxed));
		// `last` is 0 before the first submission: busy only in the first `quiet`.
		self.epoch.elapsed().saturating_sub(last) < quiet
	}
}

/// One submission counted in progress until dropped.
pub(crate) struct Submitting<'a>(&'a Submissions);

impl Drop for Submitting<'_> {
	fn drop(&mut self) {
		self.0.in_progress.fetch_sub(1, Ordering::Relaxed);
		self.0.touch();
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn submissions_are_busy_while_one_runs_and_for_the_quiet_time_after() {
		let submissions = Submissions::default();
		// `short` is slept through before each check that it has passed; `long` is never
		// over between two lines, however busy the machine.
		let (short, long) = (Duration::from_millis(50), Duration::from_secs(60));
		std::thread::sleep(short);
		assert!(!submissions.busy(short), "none yet");
		let one = submissions.begin();
		std::thread::sleep(short);
		assert!(submissions.busy(short), "one in progress, however long");
		drop(one);
		// Between two calls of a stream: none in progress, but one just ended.
		assert!(submissions.busy(long), "one ended just now");
		std::thread::sleep(short);
		assert!(!submissions.busy(short), "quiet for as long as asked");
	}
}
