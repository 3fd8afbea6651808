//! What the statement methods count, under upstream's names (the node renders them):
//! `substrate_sub_statement_store_rpc_submit_calls_total{result}`,
//! `..._rpc_submit_duration_seconds`, `..._rpc_subscribe_calls_total{result}` and
//! `..._rpc_active_subscriptions`. Legacy and spec-v2 calls count alike.

use statement_primitives::SubmitResult;
use std::{
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
	time::Duration,
};

/// The `result` labels of submissions, in the order [`RpcMetricsSnapshot::submits`] gives.
pub const SUBMIT_RESULTS: [&str; 7] =
	["decode_error", "new", "known", "known_expired", "rejected", "invalid", "internal_error"];

/// Upper bounds of the submit duration histogram, in seconds, as upstream's.
pub const SUBMIT_DURATION_BOUNDS: [f64; 10] =
	[0.00001, 0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// The label of a submission's result.
pub fn submit_label(result: &SubmitResult) -> &'static str {
	match result {
		SubmitResult::New => "new",
		SubmitResult::Known => "known",
		SubmitResult::KnownExpired => "known_expired",
		SubmitResult::Rejected(_) => "rejected",
		SubmitResult::Invalid(_) => "invalid",
		SubmitResult::InternalError(_) => "internal_error",
	}
}

/// The counters; cloning shares them.
#[derive(Clone, Default)]
pub struct RpcMetrics(Arc<Counters>);

#[derive(Default)]
struct Counters {
	submits: [AtomicU64; SUBMIT_RESULTS.len()],
	/// Cumulative counts under each bound, then the count and the sum in microseconds.
	duration_buckets: [AtomicU64; SUBMIT_DURATION_BOUNDS.len()],
	duration_count: AtomicU64,
	duration_sum_micros: AtomicU64,
	subscribes_ok: AtomicU64,
	subscribes_error: AtomicU64,
	active: AtomicU64,
}

/// The counters' values at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RpcMetricsSnapshot {
	/// Submissions by result, in [`SUBMIT_RESULTS`]' order.
	pub submits: [u64; SUBMIT_RESULTS.len()],
	/// Submissions that took at most each of [`SUBMIT_DURATION_BOUNDS`] (cumulative).
	pub duration_buckets: [u64; SUBMIT_DURATION_BOUNDS.len()],
	/// Submissions timed.
	pub duration_count: u64,
	/// Their total time, in seconds.
	pub duration_sum: f64,
	/// Subscriptions opened.
	pub subscribes_ok: u64,
	/// Subscriptions refused.
	pub subscribes_error: u64,
	/// Subscriptions open now.
	pub active_subscriptions: u64,
}

impl RpcMetrics {
	/// Count a submission with result `label`, which took `took` (decoding included).
	pub fn submitted(&self, label: &str, took: Duration) {
		if let Some(at) = SUBMIT_RESULTS.iter().position(|known| *known == label) {
			self.0.submits[at].fetch_add(1, Ordering::Relaxed);
		}
		let seconds = took.as_secs_f64();
		for (bound, bucket) in SUBMIT_DURATION_BOUNDS.iter().zip(&self.0.duration_buckets) {
			if seconds <= *bound {
				bucket.fetch_add(1, Ordering::Relaxed);
			}
		}
		self.0.duration_count.fetch_add(1, Ordering::Relaxed);
		self.0.duration_sum_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
	}

	/// Count a subscription opened (`true`) or refused.
	pub fn subscribed(&self, ok: bool) {
		let counter = if ok { &self.0.subscribes_ok } else { &self.0.subscribes_error };
		counter.fetch_add(1, Ordering::Relaxed);
	}

	/// Count a subscription open until the guard drops.
	pub fn active(&self) -> Active {
		self.0.active.fetch_add(1, Ordering::Relaxed);
		Active(self.0.clone())
	}

	/// The values now.
	pub fn snapshot(&self) -> RpcMetricsSnapshot {
		let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
		RpcMetricsSnapshot {
			submits: std::array::from_fn(|at| load(&self.0.submits[at])),
			duration_buckets: std::array::from_fn(|at| load(&self.0.duration_buckets[at])),
			duration_count: load(&self.0.duration_count),
			duration_sum: load(&self.0.duration_sum_micros) as f64 / 1e6,
			subscribes_ok: load(&self.0.subscribes_ok),
			subscribes_error: load(&self.0.subscribes_error),
			active_subscriptions: load(&self.0.active),
		}
	}
}

/// One subscription counted as open.
pub struct Active(Arc<Counters>);

impl Drop for Active {
	fn drop(&mut self) {
		self.0.active.fetch_sub(1, Ordering::Relaxed);
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn submissions_subscriptions_and_their_times_are_counted() {
		let metrics = RpcMetrics::default();
		metrics.submitted("new", Duration::from_micros(50));
		metrics.submitted("decode_error", Duration::from_millis(2));
		metrics.subscribed(true);
		metrics.subscribed(false);
		let open = metrics.active();
		let snapshot = metrics.snapshot();
		assert_eq!(snapshot.submits[1], 1);
		assert_eq!(snapshot.submits[0], 1);
		assert_eq!(snapshot.duration_count, 2);
		// 50 us is under 0.0001 s; 2 ms only from 0.005 s.
		assert_eq!(snapshot.duration_buckets[0], 0);
		assert_eq!(snapshot.duration_buckets[1], 1);
		assert_eq!(snapshot.duration_buckets[3], 2);
		assert_eq!((snapshot.subscribes_ok, snapshot.subscribes_error), (1, 1));
		assert_eq!(snapshot.active_subscriptions, 1);
		drop(open);
		assert_eq!(metrics.snapshot().active_subscriptions, 0);
		assert_eq!(submit_label(&SubmitResult::KnownExpired), "known_expired");
	}
}
