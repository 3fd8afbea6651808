//! Metric values as Prometheus knows them, for every crate that counts something the node
//! exports: a [`Family`] of [`Sample`]s, each a [`Reading`], counted by a [`Value`] or a
//! [`Histogram`]. The node renders families in the text exposition format; nothing here knows
//! that format.

use std::sync::atomic::{AtomicU64, Ordering};

/// One metric as Prometheus knows it: a name, what it means, its type and its series.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
	/// The metric's name.
	pub name: &'static str,
	/// What it counts (Prometheus' `# HELP`).
	pub help: &'static str,
	/// Its type (Prometheus' `# TYPE`).
	pub kind: Kind,
	/// Its series, in the order they are shown.
	pub samples: Vec<Sample>,
}

/// A metric's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
	/// Only ever grows.
	Counter,
	/// Goes up and down.
	Gauge,
	/// Observations counted into buckets.
	Histogram,
}

/// One series of a [`Family`]: its labels and its reading.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
	/// Label names and values (plain identifiers, nothing to escape).
	pub labels: Vec<(&'static str, &'static str)>,
	/// The reading.
	pub reading: Reading,
}

/// What a series reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
	/// A counter's or a gauge's value.
	Value(u64),
	/// A histogram's cumulative counts.
	Histogram {
		/// Each upper bound and the observations at or under it.
		buckets: Vec<(f64, u64)>,
		/// Sum of the observations.
		sum: f64,
		/// Number of observations.
		count: u64,
	},
}

impl Family {
	/// A family of one unlabelled series.
	pub fn one(name: &'static str, kind: Kind, help: &'static str, value: u64) -> Family {
		Family { name, help, kind, samples: vec![Sample::value(&[], value)] }
	}
}

impl Sample {
	/// A counter's or gauge's series with `labels`.
	pub fn value(labels: &[(&'static str, &'static str)], value: u64) -> Sample {
		Sample { labels: labels.to_vec(), reading: Reading::Value(value) }
	}
}

/// A counter or gauge.
#[derive(Default, Debug)]
pub struct Value(AtomicU64);

impl Value {
	/// Add `n`.
	pub fn add(&self, n: u64) {
		self.0.fetch_add(n, Ordering::Relaxed);
	}

	/// Set to `n` (gauges).
	pub fn set(&self, n: u64) {
		self.0.store(n, Ordering::Relaxed);
	}

	/// The value.
	pub fn get(&self) -> u64 {
		self.0.load(Ordering::Relaxed)
	}
}

/// A histogram with fixed upper bounds, updated from any thread.
#[derive(Debug)]
pub struct Histogram {
	bounds: &'static [f64],
	buckets: Vec<AtomicU64>,
	count: AtomicU64,
	/// Sum of the observations, an `f64`'s bits.
	sum: AtomicU64,
}

impl Histogram {
	/// An empty histogram over `bounds` (ascending upper bounds; `+Inf` is implied).
	pub fn new(bounds: &'static [f64]) -> Self {
		Histogram {
			bounds,
			buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
			count: AtomicU64::new(0),
			sum: AtomicU64::new(0f64.to_bits()),
		}
	}

	/// Record one observation.
	pub fn observe(&self, value: f64) {
		for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
			if value <= *bound {
				bucket.fetch_add(1, Ordering::Relaxed);
			}
		}
		self.count.fetch_add(1, Ordering::Relaxed);
		// Never fails: the closure always returns a value.
		let _ = self.sum.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
			Some((f64::from_bits(bits) + value).to_bits())
		});
	}

	/// Its series, with `labels`.
	pub fn sample(&self, labels: &[(&'static str, &'static str)]) -> Sample {
		let buckets = self
			.bounds
			.iter()
			.zip(&self.buckets)
			.map(|(bound, bucket)| (*bound, bucket.load(Ordering::Relaxed)))
			.collect();
		let reading = Reading::Histogram {
			buckets,
			sum: f64::from_bits(self.sum.load(Ordering::Relaxed)),
			count: self.count.load(Ordering::Relaxed),
		};
		Sample { labels: labels.to_vec(), reading }
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_histogram_counts_cumulatively_and_sums_exactly() {
		static BOUNDS: [f64; 3] = [1.0, 10.0, 100.0];
		let histogram = Histogram::new(&BOUNDS);
		for value in [0.5, 3.0, 3.0, 1e9, 0.000_000_25] {
			histogram.observe(value);
		}
		let Reading::Histogram { buckets, sum, count } = histogram.sample(&[("kind", "x")]).reading
		else {
			panic!("not a histogram")
		};
		assert_eq!(buckets, vec![(1.0, 2), (10.0, 4), (100.0, 4)]);
		assert_eq!(count, 5);
		assert_eq!(sum, 0.5 + 3.0 + 3.0 + 1e9 + 0.000_000_25, "no rounding to millionths");
	}
}
