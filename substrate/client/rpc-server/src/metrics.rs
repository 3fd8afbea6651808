//! What the server counts, under the names a Substrate node's RPC server exports, so that
//! dashboards written for one read the other:
//! - `substrate_rpc_calls_started{protocol,method}`: calls received (each call of a batch
//!   counts);
//! - `substrate_rpc_calls_finished{protocol,method,is_error,is_rate_limited}`: calls answered;
//! - `substrate_rpc_calls_time{protocol,method,is_rate_limited}`: from a call's start to its
//!   answer, in **microseconds** (for a subscription, until it is accepted);
//! - `substrate_rpc_sessions_opened`, `_closed` and `_time{protocol="ws"}`: WebSocket
//!   sessions, the last observing a session's length in whole seconds into the same buckets
//!   (as Substrate does).
//!
//! `protocol` is `http` or `ws`. `method` is a method the server serves, or `unknown`, so a
//! client cannot grow the label set by calling made-up names. `is_rate_limited` is always
//! `false`: the server has no rate limiter; a connection past its budget of calls in flight is
//! simply not read, and nothing is refused.

use crate::transport::Transport;
use jsonrpsee::{
	core::{
		middleware::{Batch, BatchEntry, Notification, RpcServiceT},
		server::BatchResponseBuilder,
	},
	server::MethodResponse,
	types::Request as RpcRequest,
};
use std::{
	collections::{BTreeMap, HashSet},
	future::Future,
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc, Mutex, PoisonError, RwLock,
	},
	time::{Duration, Instant},
};

/// Upper bounds of the call-time buckets, in microseconds (Substrate's `HISTOGRAM_BUCKETS`).
pub const CALL_TIME_BOUNDS: [f64; 11] = [
	5.0,
	25.0,
	100.0,
	500.0,
	1_000.0,
	2_500.0,
	10_000.0,
	25_000.0,
	100_000.0,
	1_000_000.0,
	10_000_000.0,
];

/// The `method` label of calls to methods the server does not serve.
pub const UNKNOWN_METHOD: &str = "unknown";

/// The transport a call came over, as the `protocol` label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
	/// Plain HTTP.
	Http,
	/// A WebSocket.
	Ws,
}

impl Protocol {
	/// The label value.
	pub fn label(self) -> &'static str {
		match self {
			Protocol::Http => "http",
			Protocol::Ws => "ws",
		}
	}
}

/// Cumulative bucket counts over [`CALL_TIME_BOUNDS`], their sum and count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
	/// Observations at or below each bound.
	pub buckets: [u64; CALL_TIME_BOUNDS.len()],
	/// Sum of the observations.
	pub sum: f64,
	/// Observations.
	pub count: u64,
}

impl Histogram {
	fn observe(&mut self, value: f64) {
		for (bound, bucket) in CALL_TIME_BOUNDS.iter().zip(&mut self.buckets) {
			if value <= *bound {
				*bucket += 1;
			}
		}
		self.sum += value;
		self.count += 1;
	}
}

/// The figures of one method over one protocol.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Calls {
	/// Calls received.
	pub started: u64,
	/// Calls answered with a result.
	pub succeeded: u64,
	/// Calls answered with an error.
	pub failed: u64,
	/// Microseconds from start to answer.
	pub time: Histogram,
}

/// A copy of the figures at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerMetricsSnapshot {
	/// By protocol and method label.
	pub calls: BTreeMap<(Protocol, &'static str), Calls>,
	/// WebSocket sessions opened.
	pub sessions_opened: u64,
	/// WebSocket sessions closed.
	pub sessions_closed: u64,
	/// Length of each closed session, in whole seconds.
	pub session_time: Histogram,
}

/// The server's figures, shared by every connection; cheap to clone.
#[derive(Clone, Default)]
pub struct ServerMetrics(Arc<Shared>);

#[derive(Default)]
struct Shared {
	methods: RwLock<HashSet<&'static str>>,
	calls: Mutex<BTreeMap<(Protocol, &'static str), Calls>>,
	sessions_opened: AtomicU64,
	sessions_closed: AtomicU64,
	session_time: Mutex<Histogram>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
	// Counters only: a panic elsewhere leaves nothing half-updated that matters.
	mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ServerMetrics {
	/// The figures now.
	pub fn snapshot(&self) -> ServerMetricsSnapshot {
		ServerMetricsSnapshot {
			calls: lock(&self.0.calls).clone(),
			sessions_opened: self.0.sessions_opened.load(Ordering::Relaxed),
			sessions_closed: self.0.sessions_closed.load(Ordering::Relaxed),
			session_time: lock(&self.0.session_time).clone(),
		}
	}

	/// The methods served; calls to others are labelled [`UNKNOWN_METHOD`].
	pub(crate) fn serve(&self, methods: impl IntoIterator<Item = &'static str>) {
		let mut known = self.0.methods.write().unwrap_or_else(PoisonError::into_inner);
		known.extend(methods);
	}

	fn label(&self, method: &str) -> &'static str {
		let known = self.0.methods.read().unwrap_or_else(PoisonError::into_inner);
		known.get(method).copied().unwrap_or(UNKNOWN_METHOD)
	}

	fn started(&self, protocol: Protocol, method: &str) -> (Protocol, &'static str) {
		let key = (protocol, self.label(method));
		lock(&self.0.calls).entry(key).or_default().started += 1;
		key
	}

	fn finished(&self, key: (Protocol, &'static str), failed: bool, took: Duration) {
		let mut calls = lock(&self.0.calls);
		let calls = calls.entry(key).or_default();
		if failed {
			calls.failed += 1;
		} else {
			calls.succeeded += 1;
		}
		calls.time.observe(took.as_secs_f64() * 1e6);
	}

	/// A WebSocket session began.
	pub(crate) fn session_opened(&self) {
		self.0.sessions_opened.fetch_add(1, Ordering::Relaxed);
	}

	/// A WebSocket session that lasted `lasted` ended.
	pub(crate) fn session_closed(&self, lasted: Duration) {
		self.0.sessions_closed.fetch_add(1, Ordering::Relaxed);
		lock(&self.0.session_time).observe(lasted.as_secs() as f64);
	}
}

/// RPC middleware that counts and times every call, batch entries one by one.
#[derive(Clone)]
pub struct MeasureLayer {
	metrics: ServerMetrics,
	max_response_bytes: usize,
}

impl MeasureLayer {
	/// The layer for `metrics`; a batch's answer is limited to `max_response_bytes`, as the
	/// server limits it.
	pub fn new(metrics: ServerMetrics, max_response_bytes: u32) -> Self {
		MeasureLayer { metrics, max_response_bytes: max_response_bytes as usize }
	}
}

impl<S> tower::Layer<S> for MeasureLayer {
	type Service = Measure<S>;

	fn layer(&self, inner: S) -> Measure<S> {
		Measure { layer: self.clone(), inner }
	}
}

/// The service [`MeasureLayer`] makes.
#[derive(Clone)]
pub struct Measure<S> {
	layer: MeasureLayer,
	inner: S,
}

impl<S> RpcServiceT for Measure<S>
where
	S: RpcServiceT<
			MethodResponse = MethodResponse,
			BatchResponse = MethodResponse,
			NotificationResponse = MethodResponse,
		> + Clone
		+ Send
		+ Sync
		+ 'static,
{
	type MethodResponse = MethodResponse;
	type NotificationResponse = MethodResponse;
	type BatchResponse = MethodResponse;

	fn call<'a>(
		&self,
		request: RpcRequest<'a>,
	) -> impl Future<Output = MethodResponse> + Send + 'a {
		let protocol = match request.extensions().get::<Transport>() {
			Some(Transport::WebSocket) => Protocol::Ws,
			_ => Protocol::Http,
		};
		let metrics = self.layer.metrics.clone();
		let key = metrics.started(protocol, request.method_name());
		let began = Instant::now();
		let call = self.inner.call(request);
		async move {
			let response = call.await;
			metrics.finished(key, !response.is_success(), began.elapsed());
			response
		}
	}

	/// Each call of the batch through [`Measure::call`], so that each is counted and timed,
	/// the answers gathered as jsonrpsee gathers them.
	fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
		let service = self.clone();
		async move {
			let mut answers =
				BatchResponseBuilder::new_with_limit(service.layer.max_response_bytes);
			let mut got_notification = false;
			for entry in batch {
				let answer = match entry {
					Ok(BatchEntry::Call(request)) => service.call(request).await,
					Ok(BatchEntry::Notification(notification)) => {
						got_notification = true;
						service.inner.notification(notification).await;
						continue;
					}
					Err(err) => {
						let (err, id) = err.into_parts();
						MethodResponse::error(id, err)
					}
				};
				if let Err(too_large) = answers.append(answer) {
					return too_large;
				}
			}
			if answers.is_empty() && got_notification {
				MethodResponse::notification()
			} else {
				MethodResponse::from_batch(answers.finish())
			}
		}
	}

	fn notification<'a>(
		&self,
		notification: Notification<'a>,
	) -> impl Future<Output = MethodResponse> + Send + 'a {
		self.inner.notification(notification)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn buckets_are_cumulative_and_the_sum_and_count_follow() {
		let mut histogram = Histogram::default();
		for value in [3.0, 30.0, 5.0, 2e7] {
			histogram.observe(value);
		}
		assert_eq!(histogram.buckets[0], 2, "5 us and under");
		assert_eq!(histogram.buckets[1], 2);
		assert_eq!(histogram.buckets[2], 3, "100 us and under");
		assert_eq!(histogram.buckets[10], 3, "20 s is past every bound");
		assert_eq!((histogram.count, histogram.sum), (4, 3.0 + 30.0 + 5.0 + 2e7));
	}

	#[test]
	fn methods_not_served_are_counted_as_unknown() {
		let metrics = ServerMetrics::default();
		metrics.serve(["hello"]);
		let hello = metrics.started(Protocol::Ws, "hello");
		let made_up = metrics.started(Protocol::Http, "no_such_method_42");
		metrics.finished(hello, false, Duration::from_micros(40));
		metrics.finished(made_up, true, Duration::from_micros(2));
		let snapshot = metrics.snapshot();
		let keys: Vec<_> = snapshot.calls.keys().cloned().collect();
		assert_eq!(keys, [(Protocol::Http, UNKNOWN_METHOD), (Protocol::Ws, "hello")]);
		let hello = &snapshot.calls[&(Protocol::Ws, "hello")];
		assert_eq!((hello.started, hello.succeeded, hello.failed), (1, 1, 0));
		assert_eq!(hello.time.buckets[1..3], [0, 1], "40 us: above 25, within 100");
	}

	#[test]
	fn sessions_are_counted_in_whole_seconds() {
		let metrics = ServerMetrics::default();
		metrics.session_opened();
		metrics.session_closed(Duration::from_millis(7_900));
		let snapshot = metrics.snapshot();
		assert_eq!((snapshot.sessions_opened, snapshot.sessions_closed), (1, 1));
		assert_eq!(snapshot.session_time.sum, 7.0);
		assert_eq!(snapshot.session_time.buckets[0], 0, "7 s is above the 5 bound");
		assert_eq!(snapshot.session_time.buckets[1], 1);
	}
}
