//! The scenarios, each run once per propagation mode on fresh nodes, each printing a Markdown
//! table: latency over a line of nodes and over a mesh the nodes found themselves, the highest
//! rate carried with no loss, the initial sync of a node that joins a full one, and what a
//! light node receives against what it asked for.

use crate::{
	node::{NodeSettings, Nodes, Propagation, PEER_TIMEOUT},
	traffic::{bench_topic, deliver, submit, Delivery, Pool},
};
use statement_store_benches::{
	latency::Latency,
	metrics::{self, PEERS, STATEMENTS},
	procfs::{cpu_time, rss_kib, RssPeak},
};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Pause between the nodes seeing each other and the load, so connection set-up is done.
const SETTLE: Duration = Duration::from_millis(500);

/// A rate step is carried only if submits reached this share of the target.
const KEEPING_UP: f64 = 0.95;

/// How often the sync scenario samples node A's RSS.
const RSS_PERIOD: Duration = Duration::from_millis(50);

/// How often the sync scenario reads the new node's metrics.
const SYNC_POLL: Duration = Duration::from_millis(50);

/// Sizes and durations of the scenarios.
pub struct Plan {
	/// Submits a second in the latency scenarios.
	pub rate: f64,
	/// Seconds of load in the latency scenarios.
	pub seconds: f64,
	/// Rates tried, in order, by the highest-rate search.
	pub rates: Vec<f64>,
	/// Seconds of load per rate in the search.
	pub step_seconds: f64,
	/// Statements on the full node in the sync scenario.
	pub sync_statements: usize,
	/// How long to wait after the last submit for the last statements to arrive.
	pub drain: Duration,
	/// Longest the sync scenario waits for the new node to hold every statement.
	pub sync_timeout: Duration,
	/// Nodes in the mesh scenario.
	pub mesh_nodes: usize,
	/// Statements the light scenario submits, over [`LIGHT_TOPICS`] topics.
	pub light_statements: usize,
}

impl Plan {
	/// Statements the latency scenarios submit.
	pub fn latency_statements(&self) -> usize {
		(self.rate * self.seconds).ceil() as usize
	}

	/// Statements the search submits at `rate`.
	fn step_statements(&self, rate: f64) -> usize {
		(rate * self.step_seconds).ceil() as usize
	}

	/// Statements the search submits at its highest rate.
	pub fn max_step_statements(&self) -> usize {
		self.rates.iter().map(|rate| self.step_statements(*rate)).max().unwrap_or(0)
	}
}

/// One latency run.
pub struct LatencyRun {
	propagation: Propagation,
	peers: Vec<Option<u64>>,
	delivery: Delivery,
	held_by_last: Option<u64>,
}

/// Submit to the first of `nodes` in a line at the plan's rate, subscribe on the last.
fn latency_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	nodes: usize,
	rate: f64,
	count: usize,
	drain: Duration,
) -> Result<LatencyRun, String> {
	eprintln!(
		"{nodes} nodes, {} propagation: {count} statements at {rate}/s ...",
		settings.propagation.flag()
	);
	let line = Nodes::line(settings, nodes)?;
	let peers = line.peers()?;
	std::thread::sleep(SETTLE);
	let (from, to) = (line.first().rpc_port, line.last().rpc_port);
	let delivery = runtime.block_on(deliver(from, &[to], pool, count, rate, drain))?;
	let held_by_last = line.last().metric(STATEMENTS)?.map(|n| n as u64);
	Ok(LatencyRun { propagation: settings.propagation, peers, delivery, held_by_last })
}

/// Latency over `nodes` in a line, once per mode; prints the table.
pub fn latency(
	name: &str,
	nodes: usize,
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let count = plan.latency_statements();
	let mut runs = Vec::new();
	for settings in modes {
		runs.push(latency_run(settings, runtime, pool, nodes, plan.rate, count, plan.drain)?);
	}
	println!("\n### {name}: {nodes} nodes in a line, {} /s for {} s\n", plan.rate, plan.seconds);
	println!(
		"| propagation | nodes (peers) | submitted/s | accepted | delivered | lost | p50 | p90 \
		 | p99 | max | held by last node |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|");
	for run in &runs {
		let delivery = &run.delivery;
		println!(
			"| {} | {} | {:.0} | {} | {} | {} | {} | {} |",
			run.propagation.flag(),
			peers_text(&run.peers),
			delivery.submit_rate,
			delivery.accepted,
			delivery.delivered,
			delivery.lost(),
			latency_cells(delivery.latency, true),
			run.held_by_last.map_or("?".into(), |n| n.to_string()),
		);
	}
	print_footer(runs.iter().map(|run| (run.propagation, &run.delivery)).collect());
	Ok(())
}

/// What became of one rate step.
enum Verdict {
	Carried,
	Lost,
	Refused,
	Slow,
}

impl Verdict {
	fn of(delivery: &Delivery, rate: f64) -> Verdict {
		if delivery.lost() > 0 {
			Verdict::Lost
		} else if delivery.accepted < delivery.submitted {
			Verdict::Refused
		} else if delivery.submit_rate < rate * KEEPING_UP {
			Verdict::Slow
		} else {
			Verdict::Carried
		}
	}

	fn text(&self) -> &'static str {
		match self {
			Verdict::Carried => "carried, no loss",
			Verdict::Lost => "loss: stop",
			Verdict::Refused => "the first node refused some: stop",
			Verdict::Slow => "submits could not keep up: stop",
		}
	}
}

/// The highest rate two nodes carry with no loss: the plan's rates in order, each on fresh
/// nodes, stopping at the first with loss, refusals or submits short of the target.
pub fn max_rate(
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let mut steps = Vec::new();
	let mut best = Vec::new();
	for settings in modes {
		let mut carried = None;
		for &rate in &plan.rates {
			let count = plan.step_statements(rate);
			let run = latency_run(settings, runtime, pool, 2, rate, count, plan.drain)?;
			let verdict = Verdict::of(&run.delivery, rate);
			let go_on = matches!(verdict, Verdict::Carried);
			if go_on {
				carried = Some((rate, run.delivery.submit_rate));
			}
			steps.push((rate, run, verdict));
			if !go_on {
				break;
			}
		}
		best.push((settings.propagation, carried));
	}
	println!("\n### maxrate: 2 nodes, {} s per rate\n", plan.step_seconds);
	println!(
		"| propagation | target /s | submitted/s | accepted | delivered | lost | p50 | p99 | max \
		 | result |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|");
	for (rate, run, verdict) in &steps {
		let delivery = &run.delivery;
		println!(
			"| {} | {rate} | {:.0} | {} | {} | {} | {} | {} |",
			run.propagation.flag(),
			delivery.submit_rate,
			delivery.accepted,
			delivery.delivered,
			delivery.lost(),
			latency_cells(delivery.latency, false),
			verdict.text(),
		);
	}
	print_notes(steps.iter().map(|(_, run, _)| (run.propagation, &run.delivery)));
	println!();
	for (propagation, carried) in best {
		match carried {
			Some((rate, achieved)) => println!(
				"highest rate carried node to node with no loss, {}: {rate}/s target, \
				 {achieved:.0}/s submitted",
				propagation.flag()
			),
			None => println!(
				"highest rate carried node to node with no loss, {}: none of those tried",
				propagation.flag()
			),
		}
	}
	Ok(())
}

/// One initial sync.
struct SyncRun {
	propagation: Propagation,
	statements: usize,
	fill: Duration,
	connected_after: Option<Duration>,
	synced_after: Duration,
	rss_before_kib: u64,
	rss_peak_kib: u64,
}

fn sync_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<SyncRun, String> {
	let count = plan.sync_statements;
	eprintln!(
		"sync, {} propagation: filling node A with {count} statements ...",
		settings.propagation.flag()
	);
	let mut line = Nodes::line(settings, 1)?;
	let fill_started = Instant::now();
	let filled = runtime.block_on(submit(line.first().rpc_port, pool, count, None))?;
	let fill = fill_started.elapsed();
	let statements = filled.accepted_count();
	if statements < count {
		return Err(format!(
			"node A admitted {statements} of {count} statements; the first refusal: {}",
			filled.first_refusal.unwrap_or_default()
		));
	}
	let pid = line.first().pid();
	let rss_before_kib = rss_kib(pid);
	let peak = RssPeak::start(pid, RSS_PERIOD);
	eprintln!("sync: starting node B ...");
	let started = Instant::now();
	let joined = line.join(settings, 0, &[])?;
	let mut connected_after = None;
	loop {
		let metrics = joined.metrics()?;
		let peers = metrics::value(&metrics, PEERS);
		if connected_after.is_none() && peers.is_some_and(|peers| peers >= 1.0) {
			connected_after = Some(started.elapsed());
		}
		let held = metrics::value(&metrics, STATEMENTS).unwrap_or(0.0);
		if held >= statements as f64 {
			break;
		}
		let waited = started.elapsed();
		if connected_after.is_none() && waited > PEER_TIMEOUT {
			let peers = peers.map_or("not exported".into(), |peers| peers.to_string());
			return Err(format!(
				"node B did not connect to node A within {PEER_TIMEOUT:?} ({PEERS}: \
				 {peers}); its log:\n{}",
				joined.log_tail()
			));
		}
		if waited > plan.sync_timeout {
			return Err(format!(
				"node B holds {held} of {statements} statements after {waited:?}; its log:\n{}",
				joined.log_tail()
			));
		}
		std::thread::sleep(SYNC_POLL);
	}
	let synced_after = started.elapsed();
	Ok(SyncRun {
		propagation: settings.propagation,
		statements,
		fill,
		connected_after,
		synced_after,
		rss_before_kib,
		rss_peak_kib: peak.finish(),
	})
}

/// A full node A, then a new node B bootnoding it: how long until B holds everything, and
/// how much A's memory grows meanwhile; once per mode, then the table.
pub fn sync(
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let runs = modes
		.iter()
		.map(|settings| sync_run(settings, runtime, pool, plan))
		.collect::<Result<Vec<_>, _>>()?;
	println!("\n### sync: a new node joins one holding {} statements\n", plan.sync_statements);
	println!(
		"| propagation | statements | fill A | B connected after | B holds all after | \
		 statements/s | A RSS before | A peak RSS | A growth |"
	);
	println!("|---|---|---|---|---|---|---|---|---|");
	for run in &runs {
		let mib = |kib: u64| kib as f64 / 1024.0;
		println!(
			"| {} | {} | {:.1} s | {} | {:.2} s | {:.0} | {:.0} MiB | {:.0} MiB | {:+.0} MiB |",
			run.propagation.flag(),
			run.statements,
			run.fill.as_secs_f64(),
			run.connected_after.map_or("?".into(), |d| format!("{:.2} s", d.as_secs_f64())),
			run.synced_after.as_secs_f64(),
			run.statements as f64 / run.synced_after.as_secs_f64(),
			mib(run.rss_before_kib),
			mib(run.rss_peak_kib),
			mib(run.rss_peak_kib) - mib(run.rss_before_kib),
		);
	}
	if let [ours, reference] = &runs[..] {
		println!(
			"\nreference / immediate: sync time {:.2}x, A growth {:.2}x",
			reference.synced_after.as_secs_f64() / ours.synced_after.as_secs_f64(),
			reference.rss_peak_kib.saturating_sub(reference.rss_before_kib) as f64
				/ ours.rss_peak_kib.saturating_sub(ours.rss_before_kib).max(1) as f64,
		);
	}
	Ok(())
}

/// Topics the light scenario's statements are spread over; the light node wants one.
pub const LIGHT_TOPICS: usize = 10;

/// Metrics the mesh and light scenarios read.
const PROPAGATED: &str = "substrate_sync_propagated_statements";
const KNOWN_RECEIVED: &str = "substrate_sync_known_statement_received";
const BYTES_RECEIVED: &str = "substrate_sync_statement_bytes_received_total";
const RECEIVED: &str = "substrate_sync_statements_received";

/// A metric summed over `nodes` (missing counts as 0).
fn total(nodes: &Nodes, name: &str) -> Result<f64, String> {
	let mut sum = 0.0;
	for node in &nodes.nodes {
		sum += node.metric(name)?.unwrap_or(0.0);
	}
	Ok(sum)
}

/// One run over a mesh.
struct MeshRun {
	propagation: Propagation,
	peers: Vec<Option<u64>>,
	delivery: Delivery,
	/// Statements sent to peers, over statements admitted times the other nodes.
	sends_per_delivery: f64,
	/// Received statements the receiver already had, per statement admitted.
	known_per_statement: f64,
	/// Nodes holding every admitted statement at the end.
	holding_all: usize,
	/// CPU the nodes used during the load and drain, all together, per statement admitted.
	cpu_per_statement: Duration,
}

fn mesh_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<MeshRun, String> {
	let count = plan.latency_statements();
	let n = plan.mesh_nodes;
	eprintln!(
		"mesh of {n}, {} propagation: starting, each knowing the first ...",
		settings.propagation.flag()
	);
	let nodes = Nodes::mesh(settings, n)?;
	let peers = nodes.peers()?;
	std::thread::sleep(SETTLE);
	let (sent_before, known_before) = (total(&nodes, PROPAGATED)?, total(&nodes, KNOWN_RECEIVED)?);
	let cpu = || nodes.nodes.iter().map(|node| cpu_time(node.pid())).sum::<Duration>();
	let cpu_before = cpu();
	// Submitted to the second node; read on five others spread over the mesh.
	let from = nodes.nodes[1].rpc_port;
	let mut watched: Vec<usize> = vec![0, n / 4, n / 2, 3 * n / 4, n - 1];
	watched.retain(|k| *k != 1);
	watched.dedup();
	let to: Vec<u16> = watched.iter().map(|k| nodes.nodes[*k].rpc_port).collect();
	eprintln!(
		"mesh of {n}: {count} statements at {}/s into node 1, read on nodes {watched:?} ...",
		plan.rate
	);
	let delivery = runtime.block_on(deliver(from, &to, pool, count, plan.rate, plan.drain))?;
	// Gossip goes on after the watched nodes have everything: let it finish before counting.
	std::thread::sleep(Duration::from_secs(2));
	let accepted = delivery.accepted.max(1) as f64;
	let cpu_per_statement = (cpu() - cpu_before).div_f64(accepted);
	let sent = total(&nodes, PROPAGATED)? - sent_before;
	let known = total(&nodes, KNOWN_RECEIVED)? - known_before;
	let mut holding_all = 0;
	for node in &nodes.nodes {
		if node.metric(STATEMENTS)?.unwrap_or(0.0) >= delivery.accepted as f64 {
			holding_all += 1;
		}
	}
	Ok(MeshRun {
		propagation: settings.propagation,
		peers,
		delivery,
		sends_per_delivery: sent / (accepted * (n - 1) as f64),
		known_per_statement: known / accepted,
		holding_all,
		cpu_per_statement,
	})
}

/// Latency over a mesh of nodes that found each other from one boot node, once per mode.
pub fn mesh(
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let runs = modes
		.iter()
		.map(|settings| mesh_run(settings, runtime, pool, plan))
		.collect::<Result<Vec<_>, _>>()?;
	let n = plan.mesh_nodes;
	println!(
		"\n### mesh{n}: {n} nodes that know only the first, {} /s for {} s into one\n",
		plan.rate, plan.seconds
	);
	println!(
		"| propagation | peers min/mean/max | submitted/s | accepted | reached 5 watched | lost | p50 \
		 | p90 | p99 | max | sends per delivery | duplicates received per statement | nodes holding all \
		 | node CPU per statement (all nodes) |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
	for run in &runs {
		let delivery = &run.delivery;
		let seen: Vec<u64> = run.peers.iter().flatten().copied().collect();
		let mean = seen.iter().sum::<u64>() as f64 / seen.len().max(1) as f64;
		println!(
			"| {} | {}/{mean:.1}/{} | {:.0} | {} | {} | {} | {} | {:.2} | {:.2} | {}/{n} | {:.0} us |",
			run.propagation.flag(),
			seen.iter().min().unwrap_or(&0),
			seen.iter().max().unwrap_or(&0),
			delivery.submit_rate,
			delivery.accepted,
			delivery.delivered,
			delivery.lost(),
			latency_cells(delivery.latency, true),
			run.sends_per_delivery,
			run.known_per_statement,
			run.holding_all,
			run.cpu_per_statement.as_secs_f64() * 1e6,
		);
	}
	print_footer(runs.iter().map(|run| (run.propagation, &run.delivery)).collect());
	Ok(())
}

/// What one node received in the light scenario.
struct Intake {
	statements: f64,
	bytes: f64,
}

fn intake(node: &crate::node::Node) -> Result<Intake, String> {
	let metrics = node.metrics()?;
	Ok(Intake {
		statements: metrics::value(&metrics, RECEIVED).unwrap_or(0.0),
		bytes: metrics::value(&metrics, BYTES_RECEIVED).unwrap_or(0.0),
	})
}

/// Wait until `node` holds `count` statements, or fail after `within`.
fn await_held(node: &crate::node::Node, count: usize, within: Duration) -> Result<(), String> {
	let deadline = Instant::now() + within;
	loop {
		let held = node.metric(STATEMENTS)?.unwrap_or(0.0);
		if held >= count as f64 {
			return Ok(());
		}
		if Instant::now() > deadline {
			return Err(format!(
				"node {} holds {held} of {count} statements after {within:?}; its log:\n{}",
				node.index,
				node.log_tail()
			));
		}
		std::thread::sleep(SYNC_POLL);
	}
}

fn light_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(Intake, Intake), String> {
	let count = plan.light_statements;
	let half = count / 2;
	eprintln!(
		"light, {} propagation: {count} statements over {LIGHT_TOPICS} topics ...",
		settings.propagation.flag()
	);
	// A alone takes the submits; the full observer F and the light node L each peer with A only.
	let mut nodes = Nodes::line(settings, 1)?;
	let alone = ["--no-discovery".to_string()];
	nodes.join(settings, 0, &alone)?;
	let rpc = nodes.first().rpc_port;
	runtime.block_on(submit(rpc, pool, half, Some(plan.rate)))?;
	await_held(&nodes.nodes[1], half, plan.sync_timeout)?;
	let wanted = format!("0x{}", hex::encode(bench_topic(0).0));
	let light = [alone[0].clone(), "--statement-topics".into(), wanted];
	nodes.join(settings, 0, &light)?;
	// Its initial sync: the first half's statements on its topic.
	await_held(&nodes.nodes[2], pool.on_topic(0, half).0, plan.sync_timeout)?;
	let tail = pool.range(half, count);
	runtime.block_on(submit(rpc, &tail, count - half, Some(plan.rate)))?;
	await_held(&nodes.nodes[1], count, plan.sync_timeout)?;
	await_held(&nodes.nodes[2], pool.on_topic(0, count).0, plan.sync_timeout)?;
	std::thread::sleep(Duration::from_secs(1));
	Ok((intake(&nodes.nodes[1])?, intake(&nodes.nodes[2])?))
}

/// A light node wanting one topic in ten and a full node, each peering with the node that
/// takes the submits: what each receives against what it wanted; once per mode.
pub fn light(
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let count = plan.light_statements;
	let (all_statements, all_bytes) = (0..LIGHT_TOPICS)
		.map(|k| pool.on_topic(k, count))
		.fold((0, 0), |(n, b), (tn, tb)| (n + tn, b + tb));
	let (wanted_statements, wanted_bytes) = pool.on_topic(0, count);
	println!(
		"\n### light: {count} statements over {LIGHT_TOPICS} topics, half before the light node \
		 joins (initial sync), half after\n"
	);
	println!(
		"| propagation | node | wants | statements received | bytes received | statements \
		 wanted | bytes of them | received / wanted bytes |"
	);
	println!("|---|---|---|---|---|---|---|---|");
	for settings in modes {
		let (full, light) = light_run(settings, runtime, pool, plan)?;
		for (node, wants, intake, statements, bytes) in [
			("full", "everything", full, all_statements, all_bytes),
			("light", "1 topic of 10", light, wanted_statements, wanted_bytes),
		] {
			println!(
				"| {} | {node} | {wants} | {:.0} | {:.0} | {statements} | {bytes} | {:.3}x |",
				settings.propagation.flag(),
				intake.statements,
				intake.bytes,
				intake.bytes / bytes.max(1) as f64,
			);
		}
	}
	Ok(())
}

/// The notes on each run, then reference / immediate when both modes ran.
fn print_footer(runs: Vec<(Propagation, &Delivery)>) {
	print_notes(runs.iter().copied());
	if let [(_, ours), (_, reference)] = &runs[..] {
		if let (Some(ours), Some(reference)) = (ours.latency, reference.latency) {
			println!("\nreference / immediate: {}", ratio_text(reference, ours));
		}
	}
}

/// `5 (1,2,2,2,1)`: nodes, then the peers each saw when the load started.
fn peers_text(peers: &[Option<u64>]) -> String {
	let each: Vec<String> =
		peers.iter().map(|peers| peers.map_or("-".into(), |n| n.to_string())).collect();
	format!("{} ({})", peers.len(), each.join(","))
}

/// Milliseconds, two decimals below 10 ms.
fn ms(duration: Duration) -> String {
	let ms = duration.as_secs_f64() * 1000.0;
	if ms < 10.0 {
		format!("{ms:.2} ms")
	} else {
		format!("{ms:.1} ms")
	}
}

/// The latency columns: p50, p90 (if `with_p90`), p99, max.
fn latency_cells(latency: Option<Latency>, with_p90: bool) -> String {
	let Some(latency) = latency else {
		return if with_p90 { "- | - | - | -" } else { "- | - | -" }.into();
	};
	let mut cells = vec![ms(latency.p50)];
	if with_p90 {
		cells.push(ms(latency.p90));
	}
	cells.push(ms(latency.p99));
	cells.push(ms(latency.max));
	cells.join(" | ")
}

/// `p50 12.3x, p90 ...`: each percentile of `slow` over `fast`.
fn ratio_text(slow: Latency, fast: Latency) -> String {
	let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
	format!(
		"p50 {:.1}x, p90 {:.1}x, p99 {:.1}x, max {:.1}x",
		ratio(slow.p50, fast.p50),
		ratio(slow.p90, fast.p90),
		ratio(slow.p99, fast.p99),
		ratio(slow.max, fast.max),
	)
}

/// Refusals and subscriptions that ended early, below a table.
fn print_notes<'a>(runs: impl Iterator<Item = (Propagation, &'a Delivery)>) {
	for (propagation, delivery) in runs {
		if let Some(refusal) = &delivery.first_refusal {
			println!("\n{}: the first node refused {refusal}", propagation.flag());
		}
		if let Some(ended) = &delivery.subscription_ended {
			println!("\n{}: {ended}", propagation.flag());
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn milliseconds_keep_two_decimals_below_ten() {
		assert_eq!(ms(Duration::from_micros(1_234)), "1.23 ms");
		assert_eq!(ms(Duration::from_micros(12_345)), "12.3 ms");
	}

	#[test]
	fn peers_show_the_count_then_each_node() {
		assert_eq!(peers_text(&[Some(1), Some(2), None]), "3 (1,2,-)");
	}
}
