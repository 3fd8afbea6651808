//! A soak of three gossiping nodes: does anything grow, leak, get lost or log an error over
//! hours of mixed load?
//!
//! ```sh
//! cargo build --release -p statement-node -p statement-store-benches --bin statement-node --bin soak
//! target/release/soak --minutes 120      # the published run (benches/README.md)
//! target/release/soak --minutes 2 --restart-every 0.5   # the harness works (CI's form)
//! ```
//!
//! Three `statement-node --dev` processes on localhost find each other from the first. For
//! `--minutes` (120):
//! - `--rate` statements a second (50) are submitted to node 0 over HTTP, each signed when it
//!   falls due and expiring `--lifetime` seconds (120) later, so the stores turn over;
//! - one legacy subscription on node 1 reads every statement: the delivery check;
//! - every `--churn-every` seconds (2) a subscription opens on node 0 or 1 (legacy and
//!   spec-v2 in turn), reads for `--churn-hold` seconds (5) and closes (unsubscribed, or every
//!   third by dropping its connection);
//! - every `--query-every` seconds (2) `statement_broadcastsStatement` asks for the topic;
//! - every `--restart-every` minutes (10) node 2 is restarted on the same database, by
//!   SIGTERM and by SIGKILL in turn, and must catch up with node 0 within `--resync-timeout`
//!   seconds (120).
//!
//! Every `--sample-every` seconds (10) each node's RSS, RssAnon (heap and stacks), the heap
//! its allocator reports (`substrate_statement_store_heap_allocated_bytes`), the database
//! pages it maps that are in RAM, open descriptors (the database's files apart from the
//! rest), threads, queued subscription bytes and stored statements are sampled, with the
//! submit and delivery latencies of the window. The report gives each figure's slope an hour,
//! by least squares after the first 10% of the run.
//!
//! It fails (exit 1) on a slope above its bound (`--max-mib-per-hour` 8 for RssAnon and the
//! heap, `--max-descriptors-per-hour` 10 for descriptors other than the database's,
//! `--max-threads-per-hour` 10, `--max-queued-kib-per-hour` 1024; judged on runs of
//! `--judge-after-minutes` (30) or more, reported on shorter ones); on a database file open or
//! mapped twice, or held after it was deleted (any run); on any statement node 0 admitted that
//! node 1's subscriber never read; on any refused submit, failed query or subscription; and on
//! any `ERROR` line any node logged. RSS, the database's pages and its files are reported, not
//! judged by slope: see `samples`. Exits 2 if the harness could not run.

mod load;
mod samples;

use clap::Parser;
use load::{Load, Plan};
use samples::{Bounds, Sample};
use statement_store_benches::{
	cli,
	latency::Latency,
	metrics::STATEMENTS,
	topology::{NodeSettings, Nodes, Propagation},
};
use std::{
	path::PathBuf,
	process::ExitCode,
	sync::atomic::Ordering,
	time::{Duration, Instant},
};

/// Nodes in the soak; the last is the one restarted.
const NODES: usize = 3;

#[derive(Parser, Debug)]
#[command(about = "Three gossiping nodes under mixed load for hours: slopes, losses, errors.")]
struct Args {
	/// `statement-node` to run [default: beside this executable].
	#[arg(long)]
	node: Option<PathBuf>,
	/// How long the load runs.
	#[arg(long, value_parser = cli::positive, default_value = "120")]
	minutes: f64,
	/// Statements submitted a second.
	#[arg(long, value_parser = cli::positive, default_value = "50")]
	rate: f64,
	/// Seconds each statement lives.
	#[arg(long, value_parser = cli::positive, default_value = "120")]
	lifetime: f64,
	/// Minutes between restarts of node 2.
	#[arg(long, value_parser = cli::positive, default_value = "10")]
	restart_every: f64,
	/// Seconds between samples.
	#[arg(long, value_parser = cli::positive, default_value = "10")]
	sample_every: f64,
	/// Seconds between churning subscriptions.
	#[arg(long, value_parser = cli::positive, default_value = "2")]
	churn_every: f64,
	/// Seconds a churning subscription reads.
	#[arg(long, value_parser = cli::positive, default_value = "5")]
	churn_hold: f64,
	/// Seconds between queries.
	#[arg(long, value_parser = cli::positive, default_value = "2")]
	query_every: f64,
	/// Seconds after the load for node 1's subscriber to read the last statements.
	#[arg(long, value_parser = cli::positive, default_value = "30")]
	drain: f64,
	/// Seconds a restarted node may take to hold what node 0 holds.
	#[arg(long, value_parser = cli::positive, default_value = "120")]
	resync_timeout: f64,
	/// Runs shorter than this report slopes without judging them.
	#[arg(long, value_parser = cli::positive, default_value = "30")]
	judge_after_minutes: f64,
	/// Bound on RssAnon's and the heap's growth, MiB an hour.
	#[arg(long, value_parser = cli::positive, default_value = "8")]
	max_mib_per_hour: f64,
	/// Bound on open descriptors' growth an hour.
	#[arg(long, value_parser = cli::positive, default_value = "10")]
	max_descriptors_per_hour: f64,
	/// Bound on threads' growth an hour.
	#[arg(long, value_parser = cli::positive, default_value = "10")]
	max_threads_per_hour: f64,
	/// Bound on queued subscription bytes' growth, KiB an hour.
	#[arg(long, value_parser = cli::positive, default_value = "1024")]
	max_queued_kib_per_hour: f64,
}

impl Args {
	fn plan(&self) -> Plan {
		Plan {
			rate: self.rate,
			lifetime: Duration::from_secs_f64(self.lifetime),
			churn_every: Duration::from_secs_f64(self.churn_every),
			churn_hold: Duration::from_secs_f64(self.churn_hold),
			query_every: Duration::from_secs_f64(self.query_every),
		}
	}

	fn bounds(&self) -> Bounds {
		Bounds {
			mib_per_hour: self.max_mib_per_hour,
			descriptors_per_hour: self.max_descriptors_per_hour,
			threads_per_hour: self.max_threads_per_hour,
			queued_kib_per_hour: self.max_queued_kib_per_hour,
		}
	}
}

fn main() -> ExitCode {
	match run(Args::parse()) {
		Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
		Ok(failures) => {
			eprintln!("soak: FAILED");
			for failure in failures {
				eprintln!("  - {failure}");
			}
			ExitCode::from(1)
		}
		Err(message) => {
			eprintln!("soak: {message}");
			ExitCode::from(2)
		}
	}
}

/// Log lines at level error, as the node's logger writes them:
/// `[<timestamp> ERROR <target>] <message>`.
fn errors_in(lines: &[String]) -> impl Iterator<Item = &String> {
	lines.iter().filter(|line| level(line) == Some("ERROR"))
}

/// The level of a line the node's logger wrote.
fn level(line: &str) -> Option<&str> {
	line.strip_prefix('[')?.split_whitespace().nth(1)
}

/// One sample window's latencies: since the start, submit, delivery.
type Window = (Duration, Option<Latency>, Option<Latency>);

/// What the run saw besides the samples.
#[derive(Default)]
struct Seen {
	errors: Vec<String>,
	restarts: usize,
	/// Longest time a restarted node took to hold what node 0 held (sample resolution).
	slowest_resync: Duration,
	submits: Vec<Duration>,
	deliveries: Vec<Duration>,
	/// Per sample window: since the start, submit and delivery latencies.
	windows: Vec<Window>,
}

impl Seen {
	fn note_logs(&mut self, node: usize, lines: &[String]) {
		self.errors.extend(errors_in(lines).map(|line| format!("node {node}: {line}")));
	}
}

fn run(args: Args) -> Result<Vec<String>, String> {
	let binary = statement_store_benches::node::binary(args.node.clone())?;
	let settings = NodeSettings {
		binary: binary.clone(),
		propagation: Propagation::Immediate,
		rate_limit: 50_000,
	};
	let runtime = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.build()
		.map_err(|err| format!("cannot start the async runtime: {err}"))?;
	let run_for = Duration::from_secs_f64(args.minutes * 60.0);
	let sample_every = Duration::from_secs_f64(args.sample_every);
	let restart_every = Duration::from_secs_f64(args.restart_every * 60.0);
	let resync_timeout = Duration::from_secs_f64(args.resync_timeout);
	eprintln!("starting {NODES} nodes ({}) ...", binary.display());
	let mut nodes = Nodes::mesh(&settings, NODES)?;
	let mut seen = Seen::default();
	for node in &nodes.nodes {
		seen.note_logs(node.index, node.startup_log());
	}
	let ports: Vec<u16> = nodes.nodes.iter().map(|node| node.rpc_port()).collect();
	let mut load = runtime.block_on(Load::start(&args.plan(), ports[0], ports[1], &ports[..2]))?;
	let mut failures = Vec::new();
	let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); NODES];
	let started = Instant::now();
	let mut next_restart = restart_every;
	// Since when the restarted node has been behind, if it is.
	let mut resyncing: Option<Instant> = None;
	eprintln!(
		"soak: {} min, {}/s living {} s, node 2 restarted every {} min",
		args.minutes, args.rate, args.lifetime, args.restart_every
	);
	while started.elapsed() < run_for {
		let wake = samples[0].len() as u32 + 1;
		std::thread::sleep((sample_every * wake).saturating_sub(started.elapsed()));
		let at = started.elapsed();
		if let Some(err) = runtime.block_on(load.submitter_ended()) {
			return Err(err);
		}
		if let Some(err) = runtime.block_on(load.delivery_ended()) {
			return Err(err);
		}
		let mut stored = [0.0; NODES];
		for node in &nodes.nodes {
			let lines: Vec<String> = node.logs().try_iter().collect();
			seen.note_logs(node.index, &lines);
			let metrics = node.metrics().ok();
			let sample = Sample::take(at, node.pid(), node.dir(), metrics.as_ref());
			stored[node.index] = metrics.and_then(|m| m.value(STATEMENTS).ok()).unwrap_or(0.0);
			samples[node.index].push(sample);
		}
		let (submits, deliveries) = load.ledger.lock().take_window();
		seen.submits.extend(&submits);
		seen.deliveries.extend(&deliveries);
		let (submit, delivery) = (Latency::of(submits), Latency::of(deliveries));
		seen.windows.push((at, submit, delivery));
		progress(at, &stored, submit, delivery, &load);
		if let Some(since) = resyncing {
			// Caught up: within five seconds of submits of node 0.
			if stored[NODES - 1] + args.rate * 5.0 >= stored[0] {
				seen.slowest_resync = seen.slowest_resync.max(since.elapsed());
				resyncing = None;
			} else if since.elapsed() > resync_timeout {
				failures.push(format!(
					"node 2 held {} statements {:?} after its restart, node 0 {}",
					stored[NODES - 1],
					since.elapsed(),
					stored[0]
				));
				resyncing = None;
			}
		}
		if at >= next_restart && at + sample_every < run_for && resyncing.is_none() {
			let kill = seen.restarts % 2 == 1;
			eprintln!("restarting node 2 ({}) ...", if kill { "SIGKILL" } else { "SIGTERM" });
			let restarted = Instant::now();
			if let Some((status, lines)) = nodes.restart(&settings, NODES - 1, kill)? {
				seen.note_logs(NODES - 1, &lines);
				if !status.success() {
					failures.push(format!("node 2 exited with {status} on SIGTERM"));
				}
			}
			seen.note_logs(NODES - 1, nodes.nodes[NODES - 1].startup_log());
			seen.restarts += 1;
			resyncing = Some(restarted);
			next_restart = at + restart_every;
		}
	}
	let run = started.elapsed();
	runtime.block_on(load.stop_sending())?;
	let drained = drain(&mut load, Duration::from_secs_f64(args.drain));
	for node in nodes.nodes.drain(..) {
		let index = node.index;
		let lines: Vec<String> = node.logs().try_iter().collect();
		seen.note_logs(index, &lines);
	}
	let (sent, accepted, lost) = load.ledger.lock().counts();
	println!("{}", summary(&args, run, &seen, &load, sent, accepted, lost, drained));
	let judged = run >= Duration::from_secs_f64(args.judge_after_minutes * 60.0);
	println!("{}", samples::HEADER);
	for (index, node_samples) in samples.iter().enumerate() {
		let name = if index == NODES - 1 {
			"node 2 (restarted)".to_string()
		} else {
			format!("node {index}")
		};
		let (table, over) = samples::report(&name, node_samples, run, &args.bounds(), judged);
		print!("{table}");
		failures.extend(over);
	}
	if !judged {
		println!(
			"\nslopes not judged: the run was shorter than --judge-after-minutes {}",
			args.judge_after_minutes
		);
	}
	if let Some(refusal) = &load.ledger.lock().first_refusal {
		failures.push(format!("node 0 refused a submit: {refusal}"));
	}
	if lost > 0 {
		failures.push(format!("{lost} of {accepted} admitted statements never reached node 1"));
	}
	let tally = &load.tally;
	if tally.failures.load(Ordering::Relaxed) > 0 {
		failures.push(format!(
			"{} queries or subscriptions failed, the first: {}",
			tally.failures.load(Ordering::Relaxed),
			tally.first_failure.lock().clone().unwrap_or_default()
		));
	}
	if !seen.errors.is_empty() {
		failures.push(format!("{} ERROR lines, the first: {}", seen.errors.len(), seen.errors[0]));
	}
	Ok(failures)
}

/// Wait until node 1's subscriber has read every admitted statement, at most `within`.
fn drain(load: &mut Load, within: Duration) -> Duration {
	let started = Instant::now();
	while load.ledger.lock().counts().2 > 0 && started.elapsed() < within {
		std::thread::sleep(Duration::from_millis(100));
	}
	started.elapsed()
}

fn ms(latency: Option<Latency>, pick: fn(&Latency) -> Duration) -> String {
	latency.map_or("-".into(), |l| format!("{:.1}", pick(&l).as_secs_f64() * 1e3))
}

fn progress(
	at: Duration,
	stored: &[f64; NODES],
	submit: Option<Latency>,
	delivery: Option<Latency>,
	load: &Load,
) {
	let (sent, accepted, behind) = load.ledger.lock().counts();
	eprintln!(
		"{:>6.0} s: sent {sent}, admitted {accepted}, not yet at node 1 {behind}; stored {:?}; \
		 submit p99 {} ms, delivery p99 {} ms; churned {}, queries {}",
		at.as_secs_f64(),
		stored.map(|n| n as u64),
		ms(submit, |l| l.p99),
		ms(delivery, |l| l.p99),
		load.tally.churned.load(Ordering::Relaxed),
		load.tally.queries.load(Ordering::Relaxed),
	);
}

/// The run's figures besides the slopes, as Markdown.
#[allow(clippy::too_many_arguments)]
fn summary(
	args: &Args,
	run: Duration,
	seen: &Seen,
	load: &Load,
	sent: usize,
	accepted: usize,
	lost: usize,
	drained: Duration,
) -> String {
	let overall = |values: &[Duration]| Latency::of(values.to_vec());
	let (submit, delivery) = (overall(&seen.submits), overall(&seen.deliveries));
	// The worst window's p99, the drift a leak of time would show.
	let worst = |pick: fn(&Window) -> Option<Latency>| {
		seen.windows.iter().filter_map(pick).map(|l| l.p99).max()
	};
	let tally = &load.tally;
	format!(
		"\n## soak: {:.1} min, 3 nodes, {}/s living {} s, node 2 restarted {} times\n\n\
		 - statements: {sent} submitted to node 0, {accepted} admitted, {lost} never read on \
		   node 1 (drained {:.1} s after the load)\n\
		 - submit latency p50 / p99 {} / {} ms (worst window's p99 {} ms); delivery to node 1 \
		   p50 / p99 {} / {} ms (worst window's p99 {} ms)\n\
		 - restarted node caught up within {:.0} s at worst (sampled every {} s)\n\
		 - churn: {} subscriptions opened and closed, {} notifications read; {} queries; {} \
		   failed\n\
		 - ERROR lines logged: {}\n",
		run.as_secs_f64() / 60.0,
		args.rate,
		args.lifetime,
		seen.restarts,
		drained.as_secs_f64(),
		ms(submit, |l| l.p50),
		ms(submit, |l| l.p99),
		worst(|w| w.1).map_or("-".into(), |d| format!("{:.1}", d.as_secs_f64() * 1e3)),
		ms(delivery, |l| l.p50),
		ms(delivery, |l| l.p99),
		worst(|w| w.2).map_or("-".into(), |d| format!("{:.1}", d.as_secs_f64() * 1e3)),
		seen.slowest_resync.as_secs_f64(),
		args.sample_every,
		tally.churned.load(Ordering::Relaxed),
		tally.churn_events.load(Ordering::Relaxed),
		tally.queries.load(Ordering::Relaxed),
		tally.failures.load(Ordering::Relaxed),
		seen.errors.len(),
	)
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"soak --minutes 120",
			"soak --minutes 2 --restart-every 0.5",
			"soak --node n --rate 10 --lifetime 30 --sample-every 5 --churn-every 1 \
			 --churn-hold 2 --query-every 1 --drain 10 --resync-timeout 60 \
			 --judge-after-minutes 10 --max-mib-per-hour 4 --max-descriptors-per-hour 5 \
			 --max-threads-per-hour 5 --max-queued-kib-per-hour 100",
		]);
		assert!(parse_line::<Args>("soak --minutes 0").is_err());
	}

	#[test]
	fn only_error_lines_count() {
		let lines = [
			"[2026-12-02T10:00:00.000Z INFO statement_node] ready".to_string(),
			"[2026-12-02T10:00:01.000Z ERROR statement_store] the store failed".to_string(),
			"[2026-12-02T10:00:02.000Z WARN sub] an ERROR in the text is not the level".into(),
			"ERROR at the start of a line that is not the logger's".into(),
		];
		let errors: Vec<&String> = errors_in(&lines).collect();
		assert_eq!(errors, [&lines[1]]);
	}
}
