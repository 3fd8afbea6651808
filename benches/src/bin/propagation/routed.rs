//! `routed`: topic-routed storage (`--statement-replication-factor K`) on `--routed-nodes`
//! (30) nodes that find each other from one boot node. Statements over many topics go into
//! one node; every node holds an `"any"` subscription, so the harness sees when each
//! statement reaches each of its K holders (by upstream's placement rule, computed here from
//! the nodes' PeerIds apart from the node's code), and a reader on a node that holds none of
//! 16 topics subscribes to them. Reported: what each node stores against full replication,
//! latency to all K holders and to the reader, and statements missing at a holder.

use crate::{
	scenario::{latency_cells, Plan, SETTLE},
	traffic::{stored_sequences, submit, Pool, Subscriber},
};
use serde_json::json;
use statement_store_benches::{
	latency::Latency,
	topology::{NodeSettings, Nodes},
};
use statement_test_support::{
	hex,
	metrics::names::{STATEMENTS, STORED_BYTES},
	routing::{holders, peer_id_bytes},
};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Statements per topic: the pool spreads the load over `statements / PER_TOPIC` topics.
pub const PER_TOPIC: usize = 10;

/// Topics the reader subscribes to.
const READER_TOPICS: usize = 16;

/// The routing intervals the nodes run with: a non-holder drops what it forwarded after 5 s,
/// so that what each node stores can be read soon after the load.
const REFRESH_SECS: u64 = 10;
const DROP_AFTER_SECS: u64 = 5;

/// What one routed run measured.
struct RoutedRun {
	accepted: usize,
	/// Statements and bytes each node stores once non-holders have let go.
	stored: Vec<(f64, f64)>,
	/// From submit to the last of its K holders, over statements all K got.
	to_holders: Option<Latency>,
	/// (statement, holder) pairs whose subscription never saw the statement.
	missing: usize,
	/// At the end, from every node's store: (statement, holder) pairs not held, and
	/// (statement, non-holder) pairs held.
	missing_at_end: usize,
	extra_at_end: usize,
	/// Which nodes held those: (node, statements it does not hold by the rule).
	extra_by_node: Vec<(usize, usize)>,
	/// Subscriptions the nodes ended before the harness did, and why.
	ended: Vec<String>,
	/// From submit to the reader, over the reader's topics' statements.
	to_reader: Option<Latency>,
	reader_expected: usize,
	reader_lost: usize,
}

fn routed_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<RoutedRun, String> {
	let (n, k, count) = (plan.routed_nodes, plan.replication_factor, pool.len());
	let extra: Vec<String> = [
		"--statement-replication-factor",
		&k.to_string(),
		"--statement-routing-refresh",
		&REFRESH_SECS.to_string(),
		"--statement-routing-drop-after",
		&DROP_AFTER_SECS.to_string(),
		// Every node is on 127.0.0.1: lookups and writes connect each node to many others.
		"--max-connections-per-ip",
		"512",
	]
	.map(String::from)
	.to_vec();
	eprintln!("routed, {n} nodes, K = {k}: starting, each knowing the first ...");
	let nodes = Nodes::mesh_with(settings, n, &extra)?;
	let peers = nodes
		.nodes
		.iter()
		.map(|node| {
			peer_id_bytes(node.peer_id()).ok_or_else(|| format!("a bad PeerId {}", node.peer_id()))
		})
		.collect::<Result<Vec<_>, _>>()?;
	// Each node looks its own key up once it has peers: give the tables a refresh to fill.
	std::thread::sleep(SETTLE + Duration::from_secs(REFRESH_SECS));
	let holders_of = |seq: usize| holders(&pool.topic_of(seq).0, &peers, k);
	// The reader: the last node, on topics it does not hold.
	let reader = n - 1;
	let reader_topics: Vec<usize> = (0..pool.topics())
		.filter(|topic| !holders_of(*topic).contains(&reader))
		.take(READER_TOPICS)
		.collect();
	let filter = json!({ "matchAny": reader_topics
		.iter()
		.map(|topic| hex::encode(&pool.topic_of(*topic).0))
		.collect::<Vec<_>>() });
	let from = nodes.nodes[1].rpc_port();
	eprintln!(
		"routed: {count} statements over {} topics at {}/s into node 1, watched on all {n} ...",
		pool.topics(),
		plan.rate
	);
	let (submissions, received, read) = runtime.block_on(async {
		let mut everywhere = Vec::with_capacity(n);
		for node in &nodes.nodes {
			everywhere.push(Subscriber::open_with(node.rpc_port(), count, json!("any")).await?);
		}
		let reading =
			Subscriber::open_with(nodes.nodes[reader].rpc_port(), count, filter.clone()).await?;
		let submissions = submit(from, pool, count, Some(plan.rate)).await?;
		let deadline = Instant::now() + plan.drain;
		let expected: Vec<Vec<usize>> = (0..count).map(holders_of).collect();
		let mut wanted = vec![0usize; n];
		for (seq, holders) in expected.iter().enumerate() {
			if submissions.accepted.get(seq).copied().unwrap_or(false) {
				for holder in holders {
					wanted[*holder] += 1;
				}
			}
		}
		while Instant::now() < deadline
			&& everywhere.iter().enumerate().any(|(at, s)| s.delivered() < wanted[at] && !s.ended())
		{
			tokio::time::sleep(Duration::from_millis(20)).await;
		}
		let mut received = Vec::with_capacity(n);
		for subscriber in everywhere {
			received.push(subscriber.close().await?);
		}
		Ok::<_, String>((submissions, received, reading.close().await?))
	})?;
	let accepted = submissions.accepted_count();
	let mut to_holders = Vec::new();
	let mut missing = 0;
	let mut to_reader = Vec::new();
	let mut reader_expected = 0;
	for seq in (0..count).filter(|seq| submissions.accepted[*seq]) {
		let Some(sent) = submissions.at[seq] else { continue };
		let arrivals: Vec<Option<Instant>> =
			holders_of(seq).into_iter().map(|holder| received[holder].at[seq]).collect();
		missing += arrivals.iter().filter(|at| at.is_none()).count();
		if let Some(last) = arrivals.into_iter().collect::<Option<Vec<_>>>() {
			let last = last.into_iter().max().unwrap_or(sent);
			to_holders.push(last.saturating_duration_since(sent));
		}
		if reader_topics.contains(&(seq % pool.topics())) {
			reader_expected += 1;
			if let Some(at) = read.at[seq] {
				to_reader.push(at.saturating_duration_since(sent));
			}
		}
	}
	let reader_lost = reader_expected - to_reader.len();
	let ended: Vec<String> = received
		.iter()
		.chain(std::iter::once(&read))
		.enumerate()
		.filter_map(|(at, read)| {
			let whose = if at == n { "the reader's".into() } else { format!("node {at}'s") };
			Some(format!("{whose}: {}", read.ended.as_ref()?))
		})
		.collect();
	// Non-holders let go `drop_after` after they admitted; then count what each stores.
	std::thread::sleep(Duration::from_secs(DROP_AFTER_SECS * 2 + 2));
	let mut stored = Vec::with_capacity(n);
	let mut held = Vec::with_capacity(n);
	for node in &nodes.nodes {
		let metrics = node.metrics()?;
		stored.push((metrics.value(STATEMENTS)?, metrics.value(STORED_BYTES)?));
		let mut sequences = runtime.block_on(stored_sequences(node.rpc_port()))?;
		sequences.sort_unstable();
		held.push(sequences);
	}
	let (mut missing_at_end, mut extra_at_end) = (0, 0);
	let mut extra_by_node = vec![0; n];
	for seq in (0..count).filter(|seq| submissions.accepted[*seq]) {
		let expected = holders_of(seq);
		for (at, sequences) in held.iter().enumerate() {
			match (expected.contains(&at), sequences.binary_search(&seq).is_ok()) {
				(true, false) => missing_at_end += 1,
				(false, true) => {
					extra_at_end += 1;
					extra_by_node[at] += 1;
				}
				_ => {}
			}
		}
	}
	Ok(RoutedRun {
		accepted,
		stored,
		to_holders: Latency::of(to_holders),
		missing,
		missing_at_end,
		extra_at_end,
		extra_by_node: extra_by_node
			.into_iter()
			.enumerate()
			.filter(|(_, extra)| *extra > 0)
			.collect(),
		ended,
		to_reader: Latency::of(to_reader),
		reader_expected,
		reader_lost,
	})
}

/// Topic-routed storage on a mesh: storage per node against full replication, latency to
/// every holder and to a reader on a non-holder. Ours only: upstream's propagation modes do
/// not change the routed path.
pub fn routed(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let run = routed_run(settings, runtime, pool, plan)?;
	let (n, k) = (plan.routed_nodes, plan.replication_factor);
	let full_bytes: usize =
		(0..pool.topics()).map(|topic| pool.on_topic(topic, pool.len()).1).sum();
	let statements: Vec<f64> = run.stored.iter().map(|(count, _)| *count).collect();
	let bytes: Vec<f64> = run.stored.iter().map(|(_, bytes)| *bytes).collect();
	let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len().max(1) as f64;
	let max = |values: &[f64]| values.iter().copied().fold(0.0, f64::max);
	let accepted = run.accepted.max(1) as f64;
	println!(
		"\n### routed: {n} nodes, K = {k}, {} statements over {} topics at {}/s into one \
		 (refresh {REFRESH_SECS} s, drop after {DROP_AFTER_SECS} s)\n",
		pool.len(),
		pool.topics(),
		plan.rate
	);
	println!(
		"| accepted | stored per node, mean / max | of full replication, mean / max | bytes \
		 per node, mean / max | copies per statement | to all K holders p50 | p90 | p99 | max \
		 | not seen at a holder by the drain | at the end: missing at a holder / held by a \
		 non-holder | reader's statements | to the reader p50 | p90 | p99 | max | \
		 reader lost |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
	println!(
		"| {} | {:.1} / {:.0} | {:.1}% / {:.1}% | {:.0} / {:.0} of {full_bytes} | {:.2} | {} | {} | \
		 {} / {} | {} | {} | {} |",
		run.accepted,
		mean(&statements),
		max(&statements),
		mean(&statements) / accepted * 100.0,
		max(&statements) / accepted * 100.0,
		mean(&bytes),
		max(&bytes),
		statements.iter().sum::<f64>() / accepted,
		latency_cells(run.to_holders, true),
		run.missing,
		run.missing_at_end,
		run.extra_at_end,
		run.reader_expected,
		latency_cells(run.to_reader, true),
		run.reader_lost,
	);
	println!(
		"\nFull replication stores every statement on every node ({} statements, {full_bytes} \
		 bytes); with K = {k} of {n} the expected share is {:.1}%.",
		run.accepted,
		k as f64 / n as f64 * 100.0
	);
	if !run.extra_by_node.is_empty() {
		println!(
			"\nHeld by a non-holder at the end, (node, statements): {:?} (node 1 took the \
			 submits; node {} is the reader)",
			run.extra_by_node,
			n - 1
		);
	}
	for ended in &run.ended {
		println!("\nA subscription ended early, {ended}");
	}
	Ok(())
}
