//! Figures of a run: a latency histogram that holds millions of deliveries in a few kilobytes.

use std::time::Duration;

/// Buckets 1% wide from 1 us up: a percentile read from it is within 1% of the exact one.
const GROWTH: f64 = 1.01;
const BUCKETS: usize = 2_600; // 1.01^2600 us is far past any run

#[derive(Clone, PartialEq)]
pub struct Histogram {
	counts: Vec<u64>,
	total: u64,
	max: Duration,
}

impl Default for Histogram {
	fn default() -> Self {
		Histogram { counts: vec![0; BUCKETS], total: 0, max: Duration::ZERO }
	}
}

impl Histogram {
	pub fn record(&mut self, value: Duration) {
		let micros = value.as_secs_f64() * 1e6;
		let bucket = if micros < 1.0 { 0 } else { (micros.ln() / GROWTH.ln()) as usize + 1 };
		self.counts[bucket.min(BUCKETS - 1)] += 1;
		self.total += 1;
		self.max = self.max.max(value);
	}

	#[cfg(test)]
	pub fn count(&self) -> u64 {
		self.total
	}

	/// The value at or below which `share` of the samples lie (the bucket's upper edge), `None`
	/// without samples.
	pub fn percentile(&self, share: f64) -> Option<Duration> {
		if self.total == 0 {
			return None;
		}
		let rank = ((share * self.total as f64).ceil() as u64).max(1);
		let mut seen = 0;
		for (bucket, count) in self.counts.iter().enumerate() {
			seen += count;
			if seen >= rank {
				let edge = Duration::from_secs_f64(GROWTH.powi(bucket as i32) * 1e-6);
				return Some(edge.min(self.max));
			}
		}
		Some(self.max)
	}

	pub fn max(&self) -> Option<Duration> {
		(self.total > 0).then_some(self.max)
	}
}

impl std::fmt::Debug for Histogram {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		write!(
			f,
			"{} samples, p50 {}, p99 {}, max {}",
			self.total,
			ms(self.percentile(0.5)),
			ms(self.percentile(0.99)),
			ms(self.max())
		)
	}
}

/// `12.3 ms`, or `-` for none.
pub fn ms(value: Option<Duration>) -> String {
	match value {
		Some(value) => format!("{:.1} ms", value.as_secs_f64() * 1e3),
		None => "-".into(),
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn percentiles_are_within_one_percent() {
		let mut histogram = Histogram::default();
		for ms in 1..=1000u64 {
			histogram.record(Duration::from_millis(ms));
		}
		for (share, exact) in [(0.5, 500.0), (0.99, 990.0)] {
			let read = histogram.percentile(share).unwrap().as_secs_f64() * 1e3;
			assert!((read / exact - 1.0).abs() <= 0.011, "p{share}: read {read} ms, exact {exact}");
		}
		assert_eq!(histogram.max(), Some(Duration::from_millis(1000)));
		assert_eq!(Histogram::default().percentile(0.5), None);
	}
}
