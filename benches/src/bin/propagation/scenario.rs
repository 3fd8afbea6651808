//! The scenarios, each run once per propagation mode on fresh nodes, each printing a Markdown
//! table: latency over a line of nodes, the highest rate carried with no loss, and the initial
//! sync of a node that joins a full one; and the table cells and notes that `mesh.rs` and
//! `light.rs` print with too.

use crate::traffic::{deliver, submit, Delivery, Pool};
use statement_store_benches::{
	latency::Latency,
	procfs::{rss_kib, RssPeak},
	topology::{NodeSettings, Nodes, Propagation, PEER_TIMEOUT},
};
use statement_test_support::metrics::names::{PEERS, STATEMENTS};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Pause between the nodes seeing each other and the load, so connection set-up is done.
pub const SETTLE: Duration = Duration::from_millis(500);

/// A rate step is carried only if submits reached this share of the target.
const KEEPING_UP: f64 = 0.95;

/// How often the sync scenario samples node A's RSS.
const RSS_PERIOD: Duration = Duration::from_millis(50);

/// How often the sync scenario reads the new node's metrics.
pub const SYNC_POLL: Duration = Duration::from_millis(50);

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
	/// Statements the light scenario submits, over [`LIGHT_TOPICS`](crate::light::LIGHT_TOPICS) topics.
	pub light_statements: usize,
	/// Nodes in the routed scenario.
	pub routed_nodes: usize,
	/// Their `--statement-replication-factor`.
	pub replication_factor: usize,
	/// Statements the routed scenario submits, [`PER_TOPIC`](crate::routed::PER_TOPIC) to a
	/// topic.
	pub routed_statements: usize,
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
	let (from, to) = (line.first().rpc_port(), line.last().rpc_port());
	let delivery = runtime.block_on(deliver(from, &[to], pool, count, rate, drain))?;
	let held_by_last = Some(line.last().metric(STATEMENTS)? as u64);
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
	let filled = runtime.block_on(submit(line.first().rpc_port(), pool, count, None))?;
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
		let peers = metrics.value(PEERS).ok();
		if connected_after.is_none() && peers.is_some_and(|peers| peers >= 1.0) {
			connected_after = Some(started.elapsed());
		}
		let held = metrics.value(STATEMENTS)?;
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

/// The notes on each run, then reference / immediate when both modes ran.
pub fn print_footer(runs: Vec<(Propagation, &Delivery)>) {
	print_notes(runs.iter().copied());
	if let [(_, ours), (_, reference)] = &runs[..] {
		if let (Some(ours), Some(reference)) = (ours.latency, reference.latency) {
			println!("\nreference / immediate: {}", ratio_text(reference, ours));
		}
	}
}

/// `5 (1,2,2,2,1)`: nodes, then the peers each saw when the load started.
pub fn peers_text(peers: &[Option<u64>]) -> String {
	let each: Vec<String> =
		peers.iter().map(|peers| peers.map_or("-".into(), |n| n.to_string())).collect();
	format!("{} ({})", peers.len(), each.join(","))
}

/// Milliseconds, two decimals below 10 ms.
pub fn ms(duration: Duration) -> String {
	let ms = duration.as_secs_f64() * 1000.0;
	if ms < 10.0 {
		format!("{ms:.2} ms")
	} else {
		format!("{ms:.1} ms")
	}
}

/// The latency columns: p50, p90 (if `with_p90`), p99, max.
pub fn latency_cells(latency: Option<Latency>, with_p90: bool) -> String {
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
pub fn ratio_text(slow: Latency, fast: Latency) -> String {
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
pub fn print_notes<'a>(runs: impl Iterator<Item = (Propagation, &'a Delivery)>) {
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
