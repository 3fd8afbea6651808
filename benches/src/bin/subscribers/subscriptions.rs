//! Opening many subscriptions on one node and waiting until its store has answered each,
//! counted by the node's own metrics.

use crate::{
	metric,
	wire::{contains, subscriber, Reader},
};
use statement_store_benches::{metrics::SUBSCRIPTIONS, node::Node};
use std::{
	net::TcpStream,
	sync::{
		atomic::{AtomicUsize, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// Wait until the store has answered `expected` subscriptions in all: open, or refused or
/// dropped for its memory budget. Returns how many are open.
fn wait_for_subscriptions(node: &Node, expected: f64, deadline: Instant) -> Result<f64, String> {
	let counted = |name: &str| metric(node, name).unwrap_or(0.0);
	loop {
		let open = metric(node, SUBSCRIPTIONS);
		let refused = counted("substrate_statement_store_subscriptions_refused_for_budget_total");
		let dropped = counted("substrate_statement_store_subscriptions_dropped_for_budget_total");
		if let Some(open) = open {
			if open + refused + dropped == expected {
				return Ok(open);
			}
		}
		if Instant::now() > deadline {
			return Err(format!(
				"{open:?} subscriptions open, {refused} refused and {dropped} dropped for the \
				 budget, waiting for {expected} in all"
			));
		}
		std::thread::sleep(Duration::from_millis(50));
	}
}

/// Whether `message` is a subscription notification with statements that is not a replay
/// page (replay pages say how many remain).
pub fn is_live_delivery(message: &[u8]) -> bool {
	contains(message, br#""statement_statement""#)
		&& !contains(message, br#""remaining""#)
		&& !contains(message, br#""statements":[]"#)
}

/// Open `count` subscriptions on `filter`, `per_connection` a connection, and wait until the
/// store counts them all (and, for reading clients, until each has its replay).
pub fn open_subscriptions(
	node: &Node,
	count: usize,
	per_connection: usize,
	filter: &str,
	read: bool,
	on_live: Option<Arc<dyn Fn() + Send + Sync>>,
) -> Result<(Vec<TcpStream>, usize), String> {
	// Gossip's own watch of the store counts as a subscription.
	let already = metric(node, SUBSCRIPTIONS).unwrap_or(0.0);
	let replays = Arc::new(AtomicUsize::new(0));
	let mut streams = Vec::new();
	let mut opened = 0;
	while opened < count {
		let batch = per_connection.min(count - opened);
		let reader: Option<Reader> = read.then(|| {
			let (replays, on_live) = (replays.clone(), on_live.clone());
			Box::new(move |message: &[u8]| {
				if contains(message, br#""remaining""#) {
					replays.fetch_add(1, Ordering::Relaxed);
				} else if let Some(on_live) = &on_live {
					if is_live_delivery(message) {
						on_live();
					}
				}
			}) as Reader
		});
		streams.push(subscriber(node.rpc_port(), batch, filter, reader)?);
		opened += batch;
	}
	let deadline = Instant::now() + Duration::from_secs(30 + count as u64 / 1_000);
	let open = wait_for_subscriptions(node, already + count as f64, deadline)? - already;
	// Those refused get no replay.
	let opened = open.max(0.0) as usize;
	while read && replays.load(Ordering::Relaxed) < opened {
		if Instant::now() > deadline {
			let came = replays.load(Ordering::Relaxed);
			return Err(format!("{came} of {opened} replays came ({count} subscribed)"));
		}
		std::thread::sleep(Duration::from_millis(50));
	}
	Ok((streams, opened))
}
