//! The Prometheus endpoint: `GET /metrics` in the text exposition format.

use crate::error::Error;
use statement_network::Network;
use statement_store::Store;
use std::{net::SocketAddr, sync::Arc, time::SystemTime};
use tokio::{
	io::{AsyncReadExt, AsyncWriteExt},
	net::TcpListener,
};

/// Serve metrics on `addr` until the task is dropped.
pub async fn serve(
	listener: TcpListener,
	store: Store,
	network: Arc<Network>,
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
		tokio::spawn(async move {
			let mut request = [0u8; 1024];
			// A scraper that hung up before asking needs no answer.
			let Ok(read) = stream.read(&mut request).await else { return };
			let head = String::from_utf8_lossy(&request[..read]);
			let response = if head.starts_with("GET /metrics ") {
				let mut body = render(&store, started);
				body.push_str(&network.metrics().render());
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

/// The metrics text.
pub fn render(store: &Store, started: SystemTime) -> String {
	let metrics = store.metrics();
	let start = started.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |since| since.as_secs());
	let mut out = String::new();
	let mut gauge = |name: &str, help: &str, kind: &str, value: u64| {
		out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
	};
	gauge("substrate_process_start_time_seconds", "Unix time the process started.", "gauge", start);
	gauge(
		"substrate_statement_store_statements",
		"Statements stored.",
		"gauge",
		metrics.statements,
	);
	gauge("substrate_statement_store_bytes", "Encoded bytes stored.", "gauge", metrics.bytes);
	gauge(
		"substrate_statement_store_expired_total",
		"Statements removed on expiry.",
		"counter",
		metrics.expired,
	);
	gauge(
		"substrate_statement_store_evicted_total",
		"Statements evicted.",
		"counter",
		metrics.evicted,
	);
	gauge(
		"substrate_statement_store_cache_hits_total",
		"MatchAll cache hits.",
		"counter",
		metrics.cache_hits,
	);
	gauge(
		"substrate_statement_store_cache_misses_total",
		"MatchAll cache misses.",
		"counter",
		metrics.cache_misses,
	);
	gauge(
		"substrate_statement_store_cache_bytes",
		"Bytes of cached posting lists.",
		"gauge",
		metrics.cache_bytes,
	);
	gauge(
		"substrate_statement_store_pending_bytes",
		"Bytes of acknowledged changes not yet applied to the database's tables (held in memory).",
		"gauge",
		metrics.pending_bytes,
	);
	gauge(
		"substrate_statement_store_subscriptions",
		"Open subscriptions (RPC subscribers and gossip's watch for new statements).",
		"gauge",
		metrics.subscriptions,
	);
	gauge(
		"substrate_statement_store_subscription_queued_bytes",
		"Bytes queued (or held unsent) for subscribers that have not read them yet, all \
		 together (bounded by --statement-subscription-memory-mib).",
		"gauge",
		metrics.subscription_queued_bytes,
	);
	gauge(
		"substrate_statement_store_subscriptions_dropped_for_budget_total",
		"Subscribers dropped, furthest behind first, because all queues together were past \
		 their budget.",
		"counter",
		metrics.subscriptions_dropped_for_budget,
	);
	gauge(
		"substrate_statement_store_subscriptions_refused_for_budget_total",
		"Subscriptions refused because the open ones' own state (2 KiB each) took half of \
		 --statement-subscription-memory-mib.",
		"counter",
		metrics.subscriptions_refused_for_budget,
	);
	gauge(
		"substrate_statement_store_corrupt_total",
		"Statements found damaged on disk when read and left out of answers.",
		"counter",
		metrics.corrupt,
	);
	gauge(
		"substrate_statement_store_disk_free_bytes",
		"Bytes free on the disk holding the database.",
		"gauge",
		metrics.disk_free_bytes,
	);
	gauge(
		"substrate_statement_store_disk_space_low",
		"1 while free disk space is below the reserve and new statements are refused.",
		"gauge",
		u64::from(metrics.disk_low),
	);
	out.push_str("# HELP substrate_statement_store_submits_total Submissions by outcome.\n");
	out.push_str("# TYPE substrate_statement_store_submits_total counter\n");
	for (outcome, count) in &metrics.submits {
		out.push_str(&format!(
			"substrate_statement_store_submits_total{{outcome=\"{outcome}\"}} {count}\n"
		));
	}
	// Upstream's name for the admitted count, which its network tests read.
	let admitted = metrics.submits.get("new").copied().unwrap_or(0);
	out.push_str(&format!(
		"# HELP substrate_sub_statement_store_submitted_statements Statements admitted as new.\n# TYPE substrate_sub_statement_store_submitted_statements counter\nsubstrate_sub_statement_store_submitted_statements {admitted}\n"
	));
	out
}
