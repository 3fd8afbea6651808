//! Latency percentiles of a load run (nearest rank).

use std::time::Duration;

/// Latency percentiles (nearest rank).
#[derive(Clone, Copy)]
pub struct Latency {
	/// Median.
	pub p50: Duration,
	/// 90th percentile.
	pub p90: Duration,
	/// 99th percentile.
	pub p99: Duration,
	/// Largest.
	pub max: Duration,
}

impl Latency {
	/// The percentiles of `samples`, `None` if there are none.
	pub fn of(mut samples: Vec<Duration>) -> Option<Latency> {
		samples.sort_unstable();
		let rank = |p: f64| {
			let index = ((p * samples.len() as f64).ceil() as usize).saturating_sub(1);
			samples.get(index.min(samples.len().saturating_sub(1))).copied()
		};
		Some(Latency { p50: rank(0.50)?, p90: rank(0.90)?, p99: rank(0.99)?, max: rank(1.0)? })
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn percentiles_take_the_nearest_rank() {
		let samples = (1..=100).map(Duration::from_millis).collect();
		let latency = Latency::of(samples).unwrap();
		assert_eq!(latency.p50, Duration::from_millis(50));
		assert_eq!(latency.p90, Duration::from_millis(90));
		assert_eq!(latency.p99, Duration::from_millis(99));
		assert_eq!(latency.max, Duration::from_millis(100));
		assert!(Latency::of(Vec::new()).is_none());
	}
}
