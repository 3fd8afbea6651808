//! The Prometheus endpoint: `GET /metrics` in the text exposition format.
//!
//! This is the one place that format is written. The libraries hand out values: the store its
//! counters ([`MetricsSnapshot`], named here), the RPC server and the statement methods theirs
//! (named here), and gossip its metric families ([`statement_network::metrics::Family`],
//! named there); the node renders them all with [`render`], each series labelled
//! `chain="<chain spec id>"` as a Substrate node labels them.
//!
//! Every name a dashboard written for upstream's node queries is exported under upstream's
//! name, type, labels and buckets (docs/grafana/, README's metrics section); the node's own
//! extra metrics keep the `substrate_statement_store_*` and `statement_network_*` names.

use crate::{error::Error, heap::Heap};
use statement_network::{
	metrics::{Family, Kind, Reading, Sample},
	Network,
};
use statement_primitives::{INVALID_LABELS, REJECTION_LABELS};
use statement_rpc::metrics::{
	RpcMetrics, RpcMetricsSnapshot, SUBMIT_DURATION_BOUNDS, SUBMIT_RESULTS,
};
use statement_rpc_server::{
	metrics::{self as server_metrics, CALL_TIME_BOUNDS},
	ServerMetrics, ServerMetricsSnapshot,
};
use statement_store::{MetricsSnapshot, Store, DURATION_BOUNDS};
use std::{fmt::Write, net::SocketAddr, sync::Arc, time::SystemTime};
use tokio::{
	io::{AsyncReadExt, AsyncWriteExt},
	net::TcpListener,
};

/// Where the endpoint reads what it exports.
#[derive(Clone)]
pub struct Sources {
	/// The store's counters.
	pub store: Store,
	/// Gossip's families.
	pub network: Arc<Network>,
	/// The statement methods' counters.
	pub rpc: RpcMetrics,
	/// The RPC server's counters.
	pub server: ServerMetrics,
	/// The chain spec's id, the `chain` label of every series.
	pub chain: String,
	/// When the process started.
	pub started: SystemTime,
}

impl Sources {
	/// Every value now, rendered.
	fn exposition(&self) -> String {
		let readings = Readings {
			store: self.store.metrics(),
			rpc: self.rpc.snapshot(),
			server: self.server.snapshot(),
			network: self.network.metrics().families(),
			heap: crate::heap::read(),
		};
		exposition(&self.chain, &readings, self.started)
	}
}

/// The values of one scrape.
struct Readings {
	store: MetricsSnapshot,
	rpc: RpcMetricsSnapshot,
	server: ServerMetricsSnapshot,
	network: Vec<Family>,
	/// The allocator's figures, when it keeps them.
	heap: Option<Heap>,
}

/// Serve metrics on `addr` until the task is dropped.
pub async fn serve(listener: TcpListener, sources: Sources) {
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
		let sources = sources.clone();
		tokio::spawn(async move {
			let mut request = [0u8; 1024];
			// A scraper that hung up before asking needs no answer.
			let Ok(read) = stream.read(&mut request).await else { return };
			let head = String::from_utf8_lossy(&request[..read]);
			let response = if head.starts_with("GET /metrics ") {
				let body = sources.exposition();
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

/// The whole `/metrics` body: the process's and the store's metrics, the statement methods',
/// the RPC server's, then gossip's; every series labelled `chain`.
fn exposition(chain: &str, readings: &Readings, started: SystemTime) -> String {
	let mut families = store_families(&readings.store, started);
	families.extend(readings.heap.map_or_else(Vec::new, heap_families));
	families.extend(rpc_families(&readings.rpc));
	families.extend(server_families(&readings.server));
	families.extend(readings.network.iter().cloned());
	render(&families, chain)
}

/// The allocator's account of the heap (the node's own names; polkadot exports the same
/// figures as `polkadot_memory_allocated` and `_resident`).
fn heap_families(heap: Heap) -> Vec<Family> {
	let gauge = |name, help, value| Family {
		name,
		help,
		kind: Kind::Gauge,
		samples: vec![Sample::value(&[], value)],
	};
	vec![
		gauge(
			"substrate_statement_store_heap_allocated_bytes",
			"Bytes in live allocations, as the node's allocator (jemalloc) counts them.",
			heap.allocated,
		),
		gauge(
			"substrate_statement_store_heap_resident_bytes",
			"Bytes of the allocator's pages in RAM: live allocations, kept free space, bookkeeping.",
			heap.resident,
		),
	]
}

/// Upstream's RPC server metrics (`substrate_rpc_*`).
fn server_families(server: &ServerMetricsSnapshot) -> Vec<Family> {
	let histogram = |histogram: &server_metrics::Histogram, bounds: &[f64]| Reading::Histogram {
		buckets: bounds.iter().copied().zip(histogram.buckets).collect(),
		sum: histogram.sum,
		count: histogram.count,
	};
	let mut started = Vec::new();
	let mut finished = Vec::new();
	let mut time = Vec::new();
	for ((protocol, method), calls) in &server.calls {
		let (protocol, method) = (protocol.label(), *method);
		started.push(Sample::value(&[("protocol", protocol), ("method", method)], calls.started));
		for (is_error, count) in [("false", calls.succeeded), ("true", calls.failed)] {
			let labels = [
				("protocol", protocol),
				("method", method),
				("is_error", is_error),
				("is_rate_limited", "false"),
			];
			finished.push(Sample::value(&labels, count));
		}
		time.push(Sample {
			labels: vec![("protocol", protocol), ("method", method), ("is_rate_limited", "false")],
			reading: histogram(&calls.time, &CALL_TIME_BOUNDS),
		});
	}
	let one = |value| vec![Sample::value(&[], value)];
	vec![
		Family {
			name: "substrate_rpc_calls_started",
			help: "Number of received RPC calls (unique un-batched requests).",
			kind: Kind::Counter,
			samples: started,
		},
		Family {
			name: "substrate_rpc_calls_finished",
			help: "Number of processed RPC calls (unique un-batched requests).",
			kind: Kind::Counter,
			samples: finished,
		},
		Family {
			name: "substrate_rpc_calls_time",
			help: "Total time [μs] of processed RPC calls.",
			kind: Kind::Histogram,
			samples: time,
		},
		Family {
			name: "substrate_rpc_sessions_opened",
			help: "Number of persistent RPC sessions opened.",
			kind: Kind::Counter,
			samples: one(server.sessions_opened),
		},
		Family {
			name: "substrate_rpc_sessions_closed",
			help: "Number of persistent RPC sessions closed.",
			kind: Kind::Counter,
			samples: one(server.sessions_closed),
		},
		Family {
			name: "substrate_rpc_sessions_time",
			help: "Total time [s] for each websocket session.",
			kind: Kind::Histogram,
			samples: vec![Sample {
				labels: vec![("protocol", "ws")],
				reading: histogram(&server.session_time, &CALL_TIME_BOUNDS),
			}],
		},
	]
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
/// then each series, `chain` its first label; a histogram's as cumulative `_bucket`s (`+Inf`
/// last), `_sum`, `_count`.
fn render(families: &[Family], chain: &str) -> String {
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
			let labels: Vec<(&str, &str)> =
				std::iter::once(("chain", chain)).chain(sample.labels.iter().copied()).collect();
			let labels = &labels;
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

/// The process's start time and the store's counters: upstream's families under upstream's
/// names, then the node's own.
fn store_families(metrics: &MetricsSnapshot, started: SystemTime) -> Vec<Family> {
	use Kind::{Counter, Gauge};
	let start = started.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| since.as_secs());
	let one = |name, kind, help, value| Family {
		name,
		help,
		kind,
		samples: vec![Sample::value(&[], value)],
	};
	let outcome = |label: &str| metrics.submits.get(label).copied().unwrap_or(0);
	// Every label value a family can take, at zero until it happens, so that a rate over it
	// reads 0 rather than nothing.
	let by = |label: &'static str, values: &[&'static str], count: &dyn Fn(&str) -> u64| {
		values.iter().map(|value| Sample::value(&[(label, *value)], count(value))).collect()
	};
	let internal = |source: &str| metrics.internal_errors.get(source).copied().unwrap_or(0);
	let duration = |reading: &Option<Reading>| Sample {
		labels: Vec::new(),
		reading: reading.clone().unwrap_or_else(|| Reading::Histogram {
			buckets: DURATION_BOUNDS.iter().map(|bound| (*bound, 0)).collect(),
			sum: 0.0,
			count: 0,
		}),
	};
	vec![
		one("substrate_process_start_time_seconds", Gauge, "Unix time the process started.", start),
		one(
			"substrate_sub_statement_store_statements_total",
			Gauge,
			"Current number of statements in the store.",
			metrics.statements,
		),
		one(
			"substrate_sub_statement_store_bytes_total",
			Gauge,
			"Current total size of the stored statements, encoded, in bytes (the size the \
			 store's limit counts).",
			metrics.bytes,
		),
		one(
			"substrate_sub_statement_store_accounts_total",
			Gauge,
			"Current number of unique accounts with statements.",
			metrics.accounts,
		),
		one(
			"substrate_sub_statement_store_expired_total",
			Gauge,
			"Current number of removed statements (expired, evicted or replaced) whose hashes \
			 are kept, refused, until they are purged.",
			metrics.bans,
		),
		one(
			"substrate_sub_statement_store_capacity_statements",
			Gauge,
			"Maximum number of statements the store can hold.",
			metrics.capacity_statements,
		),
		one(
			"substrate_sub_statement_store_capacity_bytes",
			Gauge,
			"Maximum total size of the stored statements, encoded, in bytes.",
			metrics.capacity_bytes,
		),
		one(
			"substrate_sub_statement_store_submitted_statements",
			Counter,
			"Total number of new statements accepted into the store (from RPC and gossip).",
			outcome("new"),
		),
		Family {
			name: "substrate_sub_statement_store_known_statements_total",
			help: "Submissions of statements already stored (known) or seen and since removed \
			       (known_expired).",
			kind: Counter,
			samples: by("state", &["known", "known_expired"], &outcome),
		},
		Family {
			name: "substrate_sub_statement_store_validations_invalid",
			help: "Statement validation failures during submission, by reason.",
			kind: Counter,
			samples: by("reason", &INVALID_LABELS, &outcome),
		},
		Family {
			name: "substrate_sub_statement_store_rejections_total",
			help: "Statement rejections by reason.",
			kind: Counter,
			samples: by("reason", &REJECTION_LABELS, &outcome),
		},
		Family {
			name: "substrate_sub_statement_store_internal_errors_total",
			help: "Submissions the store failed, by where (read_allowance, db_read, db_commit).",
			kind: Counter,
			samples: by("source", &["read_allowance", "db_read", "db_commit"], &internal),
		},
		one(
			"substrate_sub_statement_store_statements_expired_total",
			Counter,
			"Total number of statements that expired and were removed; the hash is kept \
			 (banned) until the ban period ends.",
			metrics.expired,
		),
		one(
			"substrate_sub_statement_store_statements_pruned_total",
			Counter,
			"Bans of removed statements lifted after the ban period.",
			metrics.bans_purged,
		),
		Family {
			name: "substrate_sub_statement_store_submit_duration_seconds",
			help: "Time to submit a statement to the store (checks, proof, allowance, commit).",
			kind: Kind::Histogram,
			samples: vec![duration(&metrics.submit_duration)],
		},
		Family {
			name: "substrate_sub_statement_store_check_expiration_duration_seconds",
			help: "Time of one maintenance pass removing expired statements.",
			kind: Kind::Histogram,
			samples: vec![duration(&metrics.expiry_duration)],
		},
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
			submits: [("new", 6), ("known", 7), ("account_full", 8), ("bad_proof", 18)]
				.into_iter()
				.collect(),
			internal_errors: [("db_commit", 19)].into_iter().collect(),
			bans_purged: 50,
			accounts: 51,
			bans: 52,
			capacity_statements: 53,
			capacity_bytes: 54,
			submit_duration: Some(Reading::Histogram {
				buckets: DURATION_BOUNDS.iter().zip(55..).map(|(bound, n)| (*bound, n)).collect(),
				sum: 0.5,
				count: 62,
			}),
			expiry_duration: None,
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
			&network.undelivered_network,
			&network.undelivered_timeout,
			&network.undelivered_outbox_full,
			&network.routing_known_peers,
			&network.routing_connected_peers,
			&network.routing_eligible_peers,
			&network.routing_holder,
			&network.routing_interest,
			&network.routing_transient,
			&network.routing_lookups,
			&network.routing_held_keys,
			&network.routing_forwarded,
			&network.routing_handed_over,
			&network.routing_released,
			&network.routing_fetches,
		];
		for (at, value) in values.into_iter().enumerate() {
			value.set(20 + at as u64);
		}
		// A routed node's: the `v2dht` families are shown.
		network.routing_enabled.set(1);
		network.propagation_chunks.observe(3.0);
		network.initial_sync_chunks.observe(700.0);
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
		let time = |n: u64| server_metrics::Histogram {
			buckets: std::array::from_fn(|at| n + at as u64),
			sum: n as f64 * 10.0,
			count: n + 20,
		};
		let calls = |n: u64| server_metrics::Calls {
			started: n,
			succeeded: n + 1,
			failed: n + 2,
			time: time(n + 3),
		};
		let server = ServerMetricsSnapshot {
			calls: [
				((server_metrics::Protocol::Http, "statement_submit"), calls(70)),
				((server_metrics::Protocol::Ws, server_metrics::UNKNOWN_METHOD), calls(80)),
			]
			.into_iter()
			.collect(),
			sessions_opened: 90,
			sessions_closed: 91,
			session_time: time(92),
		};
		let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
		let heap = Some(Heap { allocated: 100, resident: 101 });
		let readings = Readings { store, rpc, server, network: network.families(), heap };
		exposition("dev", &readings, started)
	}

	#[test]
	fn the_exposition_is_byte_for_byte_the_one_scrapers_know() {
		let expected = include_str!("../tests/common/metrics.prom");
		let body = sample();
		// After a deliberate change of names, labels or buckets, rewrite the fixture with
		// `UPDATE_METRICS_FIXTURE=1 cargo test -p statement-node the_exposition`, and review
		// its diff: scrapers and dashboards read these lines.
		if std::env::var_os("UPDATE_METRICS_FIXTURE").is_some() {
			let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/metrics.prom");
			std::fs::write(path, &body).unwrap();
		}
		for (at, (got, want)) in body.lines().zip(expected.lines()).enumerate() {
			assert_eq!(got, want, "line {}", at + 1);
		}
		assert_eq!(body, expected);
	}

	/// The family names of the exposition `body` that `readme` does not name (in backticks).
	fn unlisted<'a>(body: &'a str, readme: &str) -> Vec<&'a str> {
		body.lines()
			.filter_map(|line| line.strip_prefix("# TYPE ")?.split(' ').next())
			.filter(|name| !readme.contains(&format!("`{name}`")))
			.collect()
	}

	#[test]
	fn the_readme_lists_every_metric_the_node_exports() {
		let readme = include_str!("../../README.md");
		assert_eq!(unlisted(&sample(), readme), Vec::<&str>::new(), "README's Metrics section");
		let planted = "# TYPE substrate_sub_statement_store_made_up gauge\n";
		assert_eq!(unlisted(planted, readme), ["substrate_sub_statement_store_made_up"]);
	}

	#[test]
	fn every_metric_keeps_its_name_and_type() {
		let types: Vec<(&str, &str)> = [
			("substrate_process_start_time_seconds", "gauge"),
			("substrate_sub_statement_store_statements_total", "gauge"),
			("substrate_sub_statement_store_bytes_total", "gauge"),
			("substrate_sub_statement_store_accounts_total", "gauge"),
			("substrate_sub_statement_store_expired_total", "gauge"),
			("substrate_sub_statement_store_capacity_statements", "gauge"),
			("substrate_sub_statement_store_capacity_bytes", "gauge"),
			("substrate_sub_statement_store_submitted_statements", "counter"),
			("substrate_sub_statement_store_known_statements_total", "counter"),
			("substrate_sub_statement_store_validations_invalid", "counter"),
			("substrate_sub_statement_store_rejections_total", "counter"),
			("substrate_sub_statement_store_internal_errors_total", "counter"),
			("substrate_sub_statement_store_statements_expired_total", "counter"),
			("substrate_sub_statement_store_statements_pruned_total", "counter"),
			("substrate_sub_statement_store_submit_duration_seconds", "histogram"),
			("substrate_sub_statement_store_check_expiration_duration_seconds", "histogram"),
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
			("substrate_statement_store_heap_allocated_bytes", "gauge"),
			("substrate_statement_store_heap_resident_bytes", "gauge"),
			("substrate_sub_statement_store_rpc_submit_calls_total", "counter"),
			("substrate_sub_statement_store_rpc_submit_duration_seconds", "histogram"),
			("substrate_sub_statement_store_rpc_subscribe_calls_total", "counter"),
			("substrate_sub_statement_store_rpc_active_subscriptions", "gauge"),
			("substrate_rpc_calls_started", "counter"),
			("substrate_rpc_calls_finished", "counter"),
			("substrate_rpc_calls_time", "histogram"),
			("substrate_rpc_sessions_opened", "counter"),
			("substrate_rpc_sessions_closed", "counter"),
			("substrate_rpc_sessions_time", "histogram"),
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
			("substrate_sync_statement_undelivered_total", "counter"),
			("substrate_sync_statement_v2dht_known_peers", "gauge"),
			("substrate_sync_statement_v2dht_connected_peers", "gauge"),
			("substrate_sync_statement_v2dht_eligible_peers", "gauge"),
			("substrate_sync_statement_v2dht_retention_decisions_total", "counter"),
			("substrate_sync_statement_v2dht_lookups_total", "counter"),
			("substrate_sync_statement_v2dht_held_keys", "gauge"),
			("substrate_sync_statement_v2dht_forwarded_total", "counter"),
			("substrate_sync_statement_v2dht_handed_over_total", "counter"),
			("substrate_sync_statement_v2dht_released_total", "counter"),
			("substrate_sync_statement_v2dht_fetches_total", "counter"),
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
