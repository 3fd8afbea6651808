//! A phase's clock: a warm-up whose work is done but not counted, then the measured span.

use std::time::{Duration, Instant};

/// How long a phase warms up and how long it is measured.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
	/// Run, not counted.
	pub warm_up: Duration,
	/// Run and counted.
	pub measured: Duration,
}

/// One phase's warm-up and measured span, from the moment it opened.
#[derive(Clone, Copy, Debug)]
pub struct Window {
	/// When the phase opened (the warm-up began).
	pub opened: Instant,
	/// When counting begins.
	pub from: Instant,
	/// When the phase ends: no request starts after it.
	pub end: Instant,
}

impl Window {
	/// A window opening now.
	pub fn open(timing: Timing) -> Window {
		let opened = Instant::now();
		let from = opened + timing.warm_up;
		Window { opened, from, end: from + timing.measured }
	}

	/// Whether work started at `at` is counted: inside the measured span.
	pub fn counts(&self, at: Instant) -> bool {
		at >= self.from && at < self.end
	}

	/// Length of the measured span in seconds.
	pub fn seconds(&self) -> f64 {
		(self.end - self.from).as_secs_f64()
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn only_work_started_in_the_measured_span_counts() {
		let window = Window::open(Timing {
			warm_up: Duration::from_secs(1),
			measured: Duration::from_secs(10),
		});
		assert!(!window.counts(window.opened));
		assert!(window.counts(window.from));
		assert!(window.counts(window.opened + Duration::from_secs(10)));
		assert!(!window.counts(window.end));
		assert_eq!(window.seconds(), 10.0);
	}
}
