//! Gossip metrics, under the reference's names, rendered in Prometheus' text format.

use std::{
	fmt::Write,
	sync::atomic::{AtomicU64, Ordering},
};

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

/// A histogram with fixed upper bounds.
#[derive(Debug)]
pub struct Histogram {
	bounds: &'static [f64],
	buckets: Vec<AtomicU64>,
	count: AtomicU64,
	/// Sum of the observations, in millionths.
	sum_micros: AtomicU64,
}

impl Histogram {
	fn new(bounds: &'static [f64]) -> Self {
		Histogram {
			bounds,
			buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
			count: AtomicU64::new(0),
			sum_micros: AtomicU64::new(0),
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
		self.sum_micros.fetch_add((value * 1e6) as u64, Ordering::Relaxed);
	}

	fn render(&self, out: &mut String, name: &str, labels: &str) {
		let sep = if labels.is_empty() { "" } else { "," };
		for (bound, bucket) in self.bounds.iter().zip(&self.buckets) {
			let count = bucket.load(Ordering::Relaxed);
			let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {count}");
		}
		let count = self.count.load(Ordering::Relaxed);
		let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
		let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
		let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
		let _ = writeln!(out, "{name}_sum{braces} {sum}");
		let _ = writeln!(out, "{name}_count{braces} {count}");
	}
}

const CHUNK_BOUNDS: &[f64] = &[1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 9708.0];
const LATENCY_BOUNDS: &[f64] = &[0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0];
const SYNC_BOUNDS: &[f64] = &[0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0];

/// Everything gossip counts.
#[derive(Debug)]
pub struct Metrics {
	/// Statements sent, once per recipient.
	pub propagated: Value,
	/// Received statements the store already had.
	pub known_received: Value,
	/// Statements too large for a notification of their own.
	pub skipped_oversized: Value,
	/// Statements per notification sent.
	pub chunks: Histogram,
	/// Received statements waiting for validation (gauge).
	pub pending_validations: Value,
	/// Received statements dropped because the validation queue was full.
	pub ignored: Value,
	/// Peers with an open statement stream (gauge).
	pub peers: Value,
	/// Of those, light ones (gauge).
	pub light_peers: Value,
	/// Peers discovery has found, connected or not (gauge).
	pub discovered_peers: Value,
	/// Statements received.
	pub received: Value,
	/// Notification bytes sent.
	pub bytes_sent: Value,
	/// Notification bytes received.
	pub bytes_received: Value,
	/// Time to hand a notification to the peer's connection.
	pub send_latency: Histogram,
	/// Statements sent by initial syncs.
	pub initial_sync_sent: Value,
	/// Notifications sent by initial syncs.
	pub initial_sync_bursts: Value,
	/// Peers whose initial sync is under way (gauge).
	pub initial_sync_peers: Value,
	/// How long initial syncs took, completed.
	pub initial_sync_completed: Histogram,
	/// How long initial syncs ran before their peer went, abandoned.
	pub initial_sync_abandoned: Histogram,
	/// Bytes of initial-sync notifications in flight (gauge).
	pub initial_sync_in_flight: Value,
	/// Bytes of propagation notifications in flight (gauge).
	pub propagation_in_flight: Value,
	/// Peers caught sending over the rate limit.
	pub flooding_detected: Value,
	/// Sends that failed: the connection went.
	pub failed_network: Value,
	/// Sends that took longer than the send timeout.
	pub failed_timeout: Value,
	/// Statements dropped from a full outbox.
	pub outbox_full: Value,
	/// Undecodable notifications received.
	pub bad_notifications: Value,
	/// Statements received whose proof or form the store refused.
	pub invalid_received: Value,
	/// Peers dropped and banned for their standing.
	pub peers_banned: Value,
	/// Accepted connections open now, at any stage (gauge).
	pub inbound_connections: Value,
	/// Connections closed on accept: their address had its share.
	pub inbound_refused_address: Value,
	/// Connections closed on accept: all inbound slots were taken.
	pub inbound_refused_total: Value,
	/// Failed accepts (no descriptor left...); the listener pauses and tries again.
	pub accept_errors: Value,
}

impl Default for Metrics {
	fn default() -> Self {
		Metrics {
			propagated: Value::default(),
			known_received: Value::default(),
			skipped_oversized: Value::default(),
			chunks: Histogram::new(CHUNK_BOUNDS),
			pending_validations: Value::default(),
			ignored: Value::default(),
			peers: Value::default(),
			light_peers: Value::default(),
			discovered_peers: Value::default(),
			received: Value::default(),
			bytes_sent: Value::default(),
			bytes_received: Value::default(),
			send_latency: Histogram::new(LATENCY_BOUNDS),
			initial_sync_sent: Value::default(),
			initial_sync_bursts: Value::default(),
			initial_sync_peers: Value::default(),
			initial_sync_completed: Histogram::new(SYNC_BOUNDS),
			initial_sync_abandoned: Histogram::new(SYNC_BOUNDS),
			initial_sync_in_flight: Value::default(),
			propagation_in_flight: Value::default(),
			flooding_detected: Value::default(),
			failed_network: Value::default(),
			failed_timeout: Value::default(),
			outbox_full: Value::default(),
			bad_notifications: Value::default(),
			invalid_received: Value::default(),
			peers_banned: Value::default(),
			inbound_connections: Value::default(),
			inbound_refused_address: Value::default(),
			inbound_refused_total: Value::default(),
			accept_errors: Value::default(),
		}
	}
}

impl Metrics {
	/// The metrics in Prometheus' text format.
	pub fn render(&self) -> String {
		let mut out = String::new();
		let mut one = |name: &str, kind: &str, help: &str, value: &Value| {
			let _ =
				writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}", value.get());
		};
		one(
			"substrate_sub_libp2p_peers_count",
			"gauge",
			"Peers with an open statement stream.",
			&self.peers,
		);
		one(
			"statement_network_discovered_peers",
			"gauge",
			"Peers discovery has found, connected or not.",
			&self.discovered_peers,
		);
		one(
			"substrate_sync_propagated_statements",
			"counter",
			"Statements sent, once per recipient.",
			&self.propagated,
		);
		one(
			"substrate_sync_known_statement_received",
			"counter",
			"Received statements already stored.",
			&self.known_received,
		);
		one(
			"substrate_sync_skipped_oversized_statements",
			"counter",
			"Statements too large for a notification.",
			&self.skipped_oversized,
		);
		one(
			"substrate_sync_pending_statement_validations",
			"gauge",
			"Received statements waiting for validation.",
			&self.pending_validations,
		);
		one(
			"substrate_sync_ignored_statements",
			"counter",
			"Received statements dropped: validation queue full.",
			&self.ignored,
		);
		one(
			"substrate_sync_statements_received",
			"counter",
			"Statements received from peers.",
			&self.received,
		);
		one(
			"substrate_sync_statement_bytes_sent_total",
			"counter",
			"Notification bytes sent.",
			&self.bytes_sent,
		);
		one(
			"substrate_sync_statement_bytes_received_total",
			"counter",
			"Notification bytes received.",
			&self.bytes_received,
		);
		one(
			"substrate_sync_initial_sync_statements_sent",
			"counter",
			"Statements sent by initial syncs.",
			&self.initial_sync_sent,
		);
		one(
			"substrate_sync_initial_sync_bursts_total",
			"counter",
			"Notifications sent by initial syncs.",
			&self.initial_sync_bursts,
		);
		one(
			"substrate_sync_initial_sync_peers_active",
			"gauge",
			"Peers being initially synced.",
			&self.initial_sync_peers,
		);
		one(
			"substrate_sync_initial_sync_in_flight_bytes",
			"gauge",
			"Initial-sync bytes in flight.",
			&self.initial_sync_in_flight,
		);
		one(
			"substrate_sync_propagation_in_flight_bytes",
			"gauge",
			"Propagation bytes in flight.",
			&self.propagation_in_flight,
		);
		one(
			"substrate_sync_statement_flooding_detected",
			"counter",
			"Peers caught over the rate limit.",
			&self.flooding_detected,
		);
		one(
			"substrate_sync_statement_bad_notifications_total",
			"counter",
			"Undecodable notifications received.",
			&self.bad_notifications,
		);
		one(
			"substrate_sync_statement_invalid_received_total",
			"counter",
			"Received statements the store refused as invalid.",
			&self.invalid_received,
		);
		one(
			"substrate_sync_statement_peers_banned_total",
			"counter",
			"Peers dropped and banned.",
			&self.peers_banned,
		);
		one(
			"statement_network_inbound_connections",
			"gauge",
			"Accepted connections open now, handshaking or established.",
			&self.inbound_connections,
		);
		one(
			"statement_network_listener_accept_errors_total",
			"counter",
			"Failed accepts (such as no file descriptor left); the listener pauses and tries again.",
			&self.accept_errors,
		);
		let _ = writeln!(
			out,
			"# HELP statement_network_inbound_refused_total Connections closed on accept, by the limit they met.\n# TYPE statement_network_inbound_refused_total counter\nstatement_network_inbound_refused_total{{limit=\"per_address\"}} {}\nstatement_network_inbound_refused_total{{limit=\"total\"}} {}",
			self.inbound_refused_address.get(),
			self.inbound_refused_total.get()
		);
		let _ = writeln!(
			out,
			"# HELP substrate_sync_statement_peers_connected Peers with an open statement stream, by role.\n# TYPE substrate_sync_statement_peers_connected gauge\nsubstrate_sync_statement_peers_connected{{kind=\"full\"}} {}\nsubstrate_sync_statement_peers_connected{{kind=\"light\"}} {}",
			self.peers.get().saturating_sub(self.light_peers.get()),
			self.light_peers.get()
		);
		let _ = writeln!(
			out,
			"# HELP substrate_sync_statement_send_failures_total Statements or notifications not sent, by reason.\n# TYPE substrate_sync_statement_send_failures_total counter"
		);
		for (reason, value) in [
			("network", &self.failed_network),
			("timeout", &self.failed_timeout),
			("outbox_full", &self.outbox_full),
		] {
			let _ = writeln!(
				out,
				"substrate_sync_statement_send_failures_total{{reason=\"{reason}\"}} {}",
				value.get()
			);
		}
		let mut histogram = |name: &str, help: &str, series: &[(&str, &Histogram)]| {
			let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
			for (labels, histogram) in series {
				histogram.render(&mut out, name, labels);
			}
		};
		histogram(
			"substrate_sync_propagated_statements_chunks",
			"Statements per notification sent.",
			&[("", &self.chunks)],
		);
		histogram(
			"substrate_sync_statement_sent_latency_seconds",
			"Time to hand a notification to the connection.",
			&[("", &self.send_latency)],
		);
		histogram(
			"substrate_sync_initial_sync_duration_seconds",
			"Initial sync durations.",
			&[
				("outcome=\"completed\"", &self.initial_sync_completed),
				("outcome=\"abandoned\"", &self.initial_sync_abandoned),
			],
		);
		out
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn metrics_render_under_the_reference_names() {
		let metrics = Metrics::default();
		metrics.flooding_detected.add(2);
		metrics.chunks.observe(3.0);
		let text = metrics.render();
		assert!(text.contains("\nsubstrate_sync_statement_flooding_detected 2\n"), "{text}");
		assert!(
			text.contains("substrate_sync_propagated_statements_chunks_bucket{le=\"4\"} 1"),
			"{text}"
		);
		assert!(
			text.contains("substrate_sync_propagated_statements_chunks_bucket{le=\"1\"} 0"),
			"{text}"
		);
		assert!(text.contains(
			"substrate_sync_initial_sync_duration_seconds_count{outcome=\"completed\"} 0"
		));
		assert!(text.contains("substrate_sub_libp2p_peers_count 0"));
	}
}
