//! The Prometheus endpoint: `GET /metrics` in the text exposition format.
//!
//! This is the one place that format is written. The libraries hand out values: the store its
//! counters ([`MetricsSnapshot`], named here) and gossip its metric families
//! ([`statement_network::metrics::Family`], named there, with the reference's names); the
//! node renders them all with [`render`].

use crate::error::Error;
use statement_network::{
	metrics::{Family, Kind, Reading, Sample},
	Network,
};
use statement_rpc::metrics::{
	RpcMetrics, RpcMetricsSnapshot, SUBMIT_DURATION_BOUNDS, SUBMIT_RESULTS,
};
use statement_store::{MetricsSnapshot, Store};
use std::{fmt::Write, net::SocketAddr, sync::Arc, time::SystemTime};
use tokio::{
	io::{AsyncReadExt, AsyncWriteExt},
	net::TcpListener,
};

/// Serve metrics on `addr` until the task is dropped.
pub async fn serve(
	listener: TcpListener,
	store: Store,
	network: Arc<Network>,
	rpc: RpcMetrics,
	started: SystemTime,
) {
	loop {
		let mut stream = match listener.accept().await {
			Ok((stream, _)) => stream,
			Err(err) => {
				// Out of file descriptors, most likely: retrying at once would spin a core.
				log::debug!("cannot accept a metrics connection: {err}");
				tokio::time::sleep(std::time::Duration::from_millis(50)).await;
				continue;
			}
		};
		let store = store.clone();
		let network = network.clone();
		let rpc = rpc.clone();
		tokio::spawn(async move {
			let mut request = [0u8; 1024];
			// A scraper that hung up before asking needs no answer.
			let Ok(read) = stream.read(&mut request).await else { return };
			let head = String::from_utf8_lossy(&request[..read]);
			let response = if head.starts_with("GET /metrics ") {
				let body = exposition(
					&store.metrics(),
					&rpc.snapshot(),
					network.metrics().families(),
					started,
				);
				format!(
					"HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
					body.len()
				)
			} else {
				"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
					.to_string()
			};
			// A scraper that hung up before the answer loses only its own scrape.
			if let Err(err) = stream.write_all(response.as_bytes()).await {
				log::debug!("cannot answer a metrics request: {err}");
			}
		});
	}
}

/// Bind the metrics listener, with a clear error if the port is taken.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
	TcpListener::bind(addr).await.map_err(|source| Error::Metrics { addr, source })
}

/// The whole `/metrics` body: the process's and the store's metrics, the RPC's, then
/// gossip's.
fn exposition(
	store: &MetricsSnapshot,
	rpc: &RpcMetricsSnapshot,
	network: Vec<Family>,
	started: SystemTime,
) -> String {
	let mut families = store_families(store, started);
	families.extend(rpc_families(rpc));
	families.extend(network);
	render(&families)
}

/// The statement methods' metrics, under upstream's names.
fn rpc_families(rpc: &RpcMetricsSnapshot) -> Vec<Family> {
	let submits = SUBMIT_RESULTS
		.iter()
		.zip(rpc.submits)
		.map(|(result, count)| Sample::value(&[("result", result)], count))
		.collect();
	let duration = Sample {
		labels: Vec::new(),
		reading: Reading::Histogram {
			buckets: SUBMIT_DURATION_BOUNDS.iter().copied().zip(rpc.duration_buckets).collect(),
			sum: rpc.duration_sum,
			count: rpc.duration_count,
		},
	};
	vec![
		Family {
			name: "substrate_sub_statement_store_rpc_submit_calls_total",
			help: "Statement submissions over JSON-RPC (legacy and spec-v2), by result.",
			kind: Kind::Counter,
			samples: submits,
		},
		Family {
			name: "substrate_sub_statement_store_rpc_submit_duration_seconds",
			help: "Time to decode and submit a statement over JSON-RPC.",
			kind: Kind::Histogram,
			samples: vec![duration],
		},
		Family {
			name: "substrate_sub_statement_store_rpc_subscribe_calls_total",
			help: "Statement subscriptions over JSON-RPC (legacy and spec-v2), opened or refused.",
			kind: Kind::Counter,
			samples: vec![
				Sample::value(&[("result", "ok")], rpc.subscribes_ok),
				Sample::value(&[("result", "error")], rpc.subscribes_error),
			],
		},
		Family {
			name: "substrate_sub_statement_store_rpc_active_subscriptions",
			help: "Statement subscriptions open over JSON-RPC.",
			kind: Kind::Gauge,
			samples: vec![Sample::value(&[], rpc.active_subscriptions)],
		},
	]
}

/// `families` in Prometheus' text exposition format (version 0.0.4): `# HELP` and `# TYPE`,
/// then each series; a histogram's as cumulative `_bucket`s (`+Inf` last), `_sum`, `_count`.
fn render(families: &[Family]) -> String {
	let mut out = String::new();
	for family in families {
		let name = family.name;
		let kind = match family.kind {
			Kind::Counter => "counter",
			Kind::Gauge => "gauge",
			Kind::Histogram => "histogram",
		};
		// Writing to a String cannot fail.
		let _ = writeln!(out, "# HELP {name} {}\n# TYPE {name} {kind}", family.help);
		for sample in &family.samples {
			let labels = &sample.labels;
			match &sample.reading {
				Reading::Value(value) => {
					let _ = writeln!(out, "{name}{} {value}", braces(labels, None));
				}
				Reading::Histogram { buckets, sum, count } => {
					for (bound, observed) in buckets {
						let le = bound.to_string();
						let _ =
							writeln!(out, "{name}_bucket{} {observed}", braces(labels, Some(&le)));
					}
					let _ = writeln!(out, "{name}_bucket{} {count}", braces(labels, Some("+Inf")));
					let _ = writeln!(out, "{name}_sum{} {sum}", braces(labels, None));
					let _ = writeln!(out, "{name}_count{} {count}", braces(labels, None));
				}
			}
		}
	}
	out
}

/// `{name="value",...}`, with a histogram bucket's `le` last; nothing when there are no labels.
fn braces(labels: &[(&str, &str)], le: Option<&str>) -> String {
	let pairs: Vec<String> = labels
		.iter()
		.copied()
		.chain(le.map(|le| ("le", le)))
		.map(|(name, value)| format!("{name}=\"{value}\""))
		.collect();
	if pairs.is_empty() {
		String::new()
	} else {
		format!("{{{}}}", pairs.join(","))
	}
}

/// The process's start time and the store's counters, under the node's names.
fn store_families(metrics: &MetricsSnapshot, started: SystemTime) -> Vec<Family> {
	use Kind::{Counter, Gauge};
	let start = started.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| since.as_secs());
	let one = |name, kind, help, value| Family {
		name,
		help,
		kind,
		samples: vec![Sample::value(&[], value)],
	};
	let submits = metrics
		.submits
		.iter()
		.map(|(outcome, count)| Sample::value(&[("outcome", *outcome)], *count))
		.collect();
	// Upstream's name for the admitted count, which its network tests read.
	let admitted = metrics.submits.get("new").copied().unwrap_or(0);
	vec![
		one("substrate_process_start_time_seconds", Gauge, "Unix time the process started.", start),
		one("substrate_statement_store_statements", Gauge, "Statements stored.", metrics.statements),
		one("substrate_statement_store_bytes", Gauge, "Encoded bytes stored.", metrics.bytes),
		one(
			"substrate_statement_store_expired_total",
			Counter,
			"Statements removed on expiry.",
			metrics.expired,
		),
		one("substrate_statement_store_evicted_total", Counter, "Statements evicted.", metrics.evicted),
		one(
			"substrate_statement_store_cache_hits_total",
			Counter,
			"MatchAll cache hits.",
			metrics.cache_hits,
		),
		one(
			"substrate_statement_store_cache_misses_total",
			Counter,
			"MatchAll cache misses.",
			metrics.cache_misses,
		),
		one(
			"substrate_statement_store_cache_bytes",
			Gauge,
			"Bytes of cached posting lists.",
			metrics.cache_bytes,
		),
		one(
			"substrate_statement_store_pending_bytes",
			Gauge,
			"Bytes of acknowledged changes not yet applied to the database's tables (held in memory).",
			metrics.pending_bytes,
		),
		one(
			"substrate_statement_store_subscriptions",
			Gauge,
			"Open subscriptions (RPC subscribers and gossip's watch for new statements).",
			metrics.subscriptions,
		),
		one(
			"substrate_statement_store_subscription_queued_bytes",
			Gauge,
			"Bytes queued (or held unsent) for subscribers that have not read them yet, all \
			 together (bounded by --statement-subscription-memory-mib).",
			metrics.subscription_queued_bytes,
		),
		one(
			"substrate_statement_store_subscriptions_dropped_for_budget_total",
			Counter,
			"Subscribers dropped, furthest behind first, because all queues together were past \
			 their budget.",
			metrics.subscriptions_dropped_for_budget,
		),
		one(
			"substrate_statement_store_subscriptions_refused_for_budget_total",
			Counter,
			"Subscriptions refused because the open ones' own state (2 KiB each) took half of \
			 --statement-subscription-memory-mib.",
			metrics.subscriptions_refused_for_budget,
		),
		one(
			"substrate_statement_store_corrupt_total",
			Counter,
			"Statements found damaged on disk when read and left out of answers.",
			metrics.corrupt,
		),
		one(
			"substrate_statement_store_disk_free_bytes",
			Gauge,
			"Bytes free on the disk holding the database.",
			metrics.disk_free_bytes,
		),
		one(
			"substrate_statement_store_disk_space_low",
			Gauge,
			"1 while free disk space is below the reserve and new statements are refused.",
			u64::from(metrics.disk_low),
		),
		Family {
			name: "substrate_statement_store_submits_total",
			help: "Submissions by outcome.",
			kind: Counter,
			samples: submits,
		},
		one(
			"substrate_sub_statement_store_submitted_statements",
			Counter,
			"Statements admitted as new.",
			admitted,
		),
	]
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_network::Metrics;
	use std::time::Duration;

	/// The body for fixed values: every metric has a value of its own, every histogram an
	/// observation, so that a renamed, retyped, relabelled or missing series shows.
	fn sample() -> String {
		let store = MetricsSnapshot {
			statements: 1,
			bytes: 2,
			expired: 3,
			evicted: 4,
			corrupt: 5,
			submits: [("new", 6), ("known", 7), ("account_full", 8)].into_iter().collect(),
			cache_hits: 9,
			cache_misses: 10,
			cache_bytes: 11,
			pending_bytes: 12,
			subscriptions: 13,
			subscription_queued_bytes: 14,
			subscriptions_dropped_for_budget: 15,
			subscriptions_refused_for_budget: 16,
			disk_free_bytes: 17,
			disk_low: true,
		};
		let network = Metrics::default();
		let values = [
			&network.peers,
			&network.light_peers,
			&network.discovered_peers,
			&network.propagated,
			&network.known_received,
			&network.skipped_oversized,
			&network.pending_validations,
			&network.ignored,
			&network.received,
			&network.bytes_sent,
			&network.bytes_received,
			&network.initial_sync_sent,
			&network.initial_sync_bursts,
			&network.initial_sync_peers,
			&network.initial_sync_in_flight,
			&network.propagation_in_flight,
			&network.flooding_detected,
			&network.bad_notifications,
			&network.invalid_received,
			&network.peers_banned,
			&network.inbound_connections,
			&network.accept_errors,
			&network.inbound_refused_address,
			&network.inbound_refused_total,
			&network.failed_network,
			&network.failed_timeout,
			&network.outbox_full,
		];
		for (at, value) in values.into_iter().enumerate() {
			value.set(20 + at as u64);
		}
		network.chunks.observe(3.0);
		network.chunks.observe(700.0);
		network.send_latency.observe(0.0025);
		network.initial_sync_completed.observe(12.5);
		network.initial_sync_abandoned.observe(4000.0);
		let rpc = RpcMetricsSnapshot {
			submits: [40, 41, 42, 43, 44, 45, 46],
			duration_buckets: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
			duration_count: 11,
			duration_sum: 0.25,
			subscribes_ok: 47,
			subscribes_error: 48,
			active_subscriptions: 49,
		};
		let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
		exposition(&store, &rpc, network.families(), started)
	}

	#[test]
	fn the_exposition_is_byte_for_byte_the_one_scrapers_know() {
		let expected = include_str!("../tests/common/metrics.prom");
		let body = sample();
		for (at, (got, want)) in body.lines().zip(expected.lines()).enumerate() {
			assert_eq!(got, want, "line {}", at + 1);
		}
		assert_eq!(body, expected);
	}

	#[test]
	fn every_metric_keeps_its_name_and_type() {
		let types: Vec<(&str, &str)> = [
			("substrate_process_start_time_seconds", "gauge"),
			("substrate_statement_store_statements", "gauge"),
			("substrate_statement_store_bytes", "gauge"),
			("substrate_statement_store_expired_total", "counter"),
			("substrate_statement_store_evicted_total", "counter"),
			("substrate_statement_store_cache_hits_total", "counter"),
			("substrate_statement_store_cache_misses_total", "counter"),
			("substrate_statement_store_cache_bytes", "gauge"),
			("substrate_statement_store_pending_bytes", "gauge"),
			("substrate_statement_store_subscriptions", "gauge"),
			("substrate_statement_store_subscription_queued_bytes", "gauge"),
			("substrate_statement_store_subscriptions_dropped_for_budget_total", "counter"),
			("substrate_statement_store_subscriptions_refused_for_budget_total", "counter"),
			("substrate_statement_store_corrupt_total", "counter"),
			("substrate_statement_store_disk_free_bytes", "gauge"),
			("substrate_statement_store_disk_space_low", "gauge"),
			("substrate_statement_store_submits_total", "counter"),
			("substrate_sub_statement_store_submitted_statements", "counter"),
			("substrate_sub_statement_store_rpc_submit_calls_total", "counter"),
			("substrate_sub_statement_store_rpc_submit_duration_seconds", "histogram"),
			("substrate_sub_statement_store_rpc_subscribe_calls_total", "counter"),
			("substrate_sub_statement_store_rpc_active_subscriptions", "gauge"),
			("substrate_sub_libp2p_peers_count", "gauge"),
			("statement_network_discovered_peers", "gauge"),
			("substrate_sync_propagated_statements", "counter"),
			("substrate_sync_known_statement_received", "counter"),
			("substrate_sync_skipped_oversized_statements", "counter"),
			("substrate_sync_pending_statement_validations", "gauge"),
			("substrate_sync_ignored_statements", "counter"),
			("substrate_sync_statements_received", "counter"),
			("substrate_sync_statement_bytes_sent_total", "counter"),
			("substrate_sync_statement_bytes_received_total", "counter"),
			("substrate_sync_initial_sync_statements_sent", "counter"),
			("substrate_sync_initial_sync_bursts_total", "counter"),
			("substrate_sync_initial_sync_peers_active", "gauge"),
			("substrate_sync_initial_sync_in_flight_bytes", "gauge"),
			("substrate_sync_propagation_in_flight_bytes", "gauge"),
			("substrate_sync_statement_flooding_detected", "counter"),
			("substrate_sync_statement_bad_notifications_total", "counter"),
			("substrate_sync_statement_invalid_received_total", "counter"),
			("substrate_sync_statement_peers_banned_total", "counter"),
			("statement_network_inbound_connections", "gauge"),
			("statement_network_listener_accept_errors_total", "counter"),
			("statement_network_inbound_refused_total", "counter"),
			("substrate_sync_statement_peers_connected", "gauge"),
			("substrate_sync_statement_send_failures_total", "counter"),
			("substrate_sync_propagated_statements_chunks", "histogram"),
			("substrate_sync_statement_sent_latency_seconds", "histogram"),
			("substrate_sync_initial_sync_duration_seconds", "histogram"),
		]
		.into();
		let body = sample();
		let found: Vec<(&str, &str)> =
			body.lines().filter_map(|line| line.strip_prefix("# TYPE ")?.split_once(' ')).collect();
		assert_eq!(found, types);
	}
}
