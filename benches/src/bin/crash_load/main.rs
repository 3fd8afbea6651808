//! Crash under load: the real `statement-node`, SIGKILLed at random moments while clients
//! submit, restarted on the same base path, and checked for every acknowledged statement.
//!
//! ```sh
//! cargo build --release -p statement-node
//! cargo run --release -p statement-store-benches --bin crash_load -- --rounds 12 --clients 20
//! ```
//!
//! Each client signs with an account of its own (a chain spec written for the run gives every
//! account an unlimited allowance, so nothing is evicted) and submits pre-signed, unique
//! statements one at a time, half the clients over HTTP, half over a WebSocket. A submit
//! answered `{"status":"new"}` is acknowledged: it must be in the store after every later
//! restart. A submit without an answer when the node died was in flight: the next start may
//! keep it or not, and whichever it did must then hold. Nothing else may ever appear. After
//! each restart every block of every client is read back by topic (data identifies each
//! statement; the blocks written in the last round also by hash), and the count the store
//! reports at open must equal what the ledgers say it holds.
//!
//! Options: `--node PATH` (default: `statement-node` beside this executable), `--rounds N`
//! (12), `--clients N` (20), `--seconds-per-round S` (8: the kill comes at a random moment
//! between S/10 and S seconds of load), `--seed N` (default: from the clock; printed, so a run's
//! kill moments can be repeated), `--keep` (keep the base path; it is always kept on failure);
//! `--help` lists them.
//! Exits 1 if anything acknowledged was lost, anything unexpected appeared or the count at open
//! disagreed, 2 if the harness itself could not run.

mod check;
mod ledger;
mod load;

use clap::{value_parser, Parser};
use jsonrpsee::http_client::HttpClientBuilder;
use ledger::{Fate, Ledger};
use load::Outcome;
use rand::{Rng, SeedableRng};
use statement_store_benches::{
	chain_spec, cli,
	client::{Client, Transport},
	node::{self, Launch},
	workload::for_each_on_every_core,
};
use std::{
	ops::Range,
	path::PathBuf,
	process::ExitCode,
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc,
	},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// Submits a second (all clients together) assumed before the first round has measured it.
const FIRST_RATE_GUESS: f64 = 6000.0;

/// How long clients may take to notice the node is gone.
const CLIENT_WIND_DOWN: Duration = Duration::from_secs(60);

/// Crash under load: the node SIGKILLed at random moments while clients submit, restarted,
/// and checked for every acknowledged statement.
#[derive(Parser, Debug)]
#[command(name = "crash_load")]
struct Args {
	/// The `statement-node` executable [default: `statement-node` beside this executable].
	#[arg(long, value_name = "PATH")]
	node: Option<PathBuf>,
	/// Rounds of load, kill and check.
	#[arg(long, default_value_t = 12, value_name = "N", value_parser = value_parser!(u32).range(1..))]
	rounds: u32,
	/// Clients submitting at once, half over HTTP, half over a WebSocket.
	#[arg(long, default_value_t = 20, value_name = "N", value_parser = value_parser!(u32).range(1..))]
	clients: u32,
	/// Seconds of load a round may last: the kill comes at a random moment between S/10 and S.
	#[arg(long, default_value_t = 8.0, value_name = "S", value_parser = cli::positive)]
	seconds_per_round: f64,
	/// Seed of the kill moments [default: from the clock; printed, so a run can be repeated].
	#[arg(long, value_name = "N")]
	seed: Option<u64>,
	/// Keep the base path (it is always kept on failure).
	#[arg(long)]
	keep: bool,
}

impl Args {
	/// `--node`, or `statement-node` in the directory of this executable.
	fn node_binary(&self) -> Result<PathBuf, String> {
		node::binary(self.node.clone())
	}
}

/// One round's figures.
#[derive(Default)]
struct Round {
	kill_after: Duration,
	acknowledged: u64,
	refused: u64,
	first_refusal: Option<String>,
	in_flight: u64,
	ran_dry: u32,
	early_errors: Vec<String>,
	restart: Duration,
	opened_with: Option<u64>,
	expected: u64,
	tally: check::Tally,
}

impl Round {
	/// Record a client's outcome in its ledger and in the round.
	fn apply(&mut self, ledger: &mut Ledger, outcome: Outcome) {
		for index in outcome.acknowledged.iter() {
			ledger.fates[*index as usize] = Fate::Acknowledged;
		}
		self.acknowledged += outcome.acknowledged.len() as u64;
		for (index, answer) in outcome.refused.iter() {
			ledger.fates[*index as usize] = Fate::Refused;
			if self.first_refusal.is_none() {
				self.first_refusal =
					Some(format!("client {} statement {index}: {answer}", ledger.client));
			}
			self.refused += 1;
		}
		match outcome.in_flight {
			Some(index) => {
				ledger.fates[index as usize] = Fate::InFlight;
				self.in_flight += 1;
			}
			None if outcome.unsent.is_empty() => self.ran_dry += 1,
			None => {}
		}
		if let Some(err) = outcome.early_error {
			self.early_errors.push(format!("client {}: {err}", ledger.client));
		}
		ledger.pending = outcome.unsent;
	}

	fn failed(&self) -> bool {
		let count_disagrees = self.opened_with.is_some_and(|n| n != self.expected);
		!self.tally.lost.is_empty()
			|| !self.tally.phantom.is_empty()
			|| !self.tally.altered.is_empty()
			|| count_disagrees
	}
}

/// Top every ledger up to `target` unsent statements, on every core.
fn sign(ledgers: &mut [Ledger], target: usize, expiry: u32) {
	for_each_on_every_core(ledgers, |ledger| ledger.top_up(target, expiry));
}

fn main() -> ExitCode {
	let mut args = Args::parse();
	let clock = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
	args.seed.get_or_insert(clock as u64);
	let outcome = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.build()
		.map_err(|err| format!("cannot start the async runtime: {err}"))
		.and_then(|runtime| runtime.block_on(run(args)));
	match outcome {
		Ok(true) => ExitCode::SUCCESS,
		Ok(false) => ExitCode::from(1),
		Err(message) => {
			eprintln!("crash_load: {message}");
			ExitCode::from(2)
		}
	}
}

/// All rounds; `Ok(false)` if any check failed.
async fn run(args: Args) -> Result<bool, String> {
	let binary = args.node_binary()?;
	let dir = tempfile::Builder::new()
		.prefix("crash-load")
		.tempdir()
		.map_err(|err| format!("cannot create a temporary directory: {err}"))?;
	let mut ledgers: Vec<Ledger> = (0..args.clients).map(Ledger::new).collect();
	let accounts: Vec<[u8; 32]> = ledgers.iter().map(Ledger::account).collect();
	let spec = dir.path().join("spec.json");
	chain_spec::write(&spec, &accounts)?;
	let launch = Launch::new(binary).chain(&spec).base_path(dir.path().join("base")).loopback();
	let base_path = dir.path().join("base");
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
	let expiry = u32::try_from(now + 2 * 24 * 3600).unwrap_or(u32::MAX);
	let seed = args.seed.unwrap_or_default();
	let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

	println!(
		"node {}, base path {}, seed {}, {} clients ({} HTTP, {} WebSocket), {} rounds, kill \
		 after {:.1}-{:.1} s of load",
		launch.binary().display(),
		base_path.display(),
		seed,
		args.clients,
		args.clients.div_ceil(2),
		args.clients / 2,
		args.rounds,
		args.seconds_per_round / 10.0,
		args.seconds_per_round,
	);
	let mut node = launch.start()?;
	let first_start = node.started_in();
	println!("first start {:.2} s\n", first_start.as_secs_f64());
	println!(
		"| round | kill at | acknowledged | submits/s | refused | in flight | kept | dropped | \
		 lost | phantom | altered | hashed | restart | at open | expected | check |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");

	let started = Instant::now();
	let mut rate_per_client = FIRST_RATE_GUESS / f64::from(args.clients);
	let mut rounds = Vec::new();
	let mut notes = Vec::new();
	let mut signing = Duration::ZERO;
	for number in 1..=args.rounds {
		// Enough for the longest possible round at the last rate, so clients rarely run dry.
		let target = (rate_per_client * args.seconds_per_round * 1.25) as usize + 64;
		let signing_started = Instant::now();
		sign(&mut ledgers, target, expiry);
		signing += signing_started.elapsed();
		let before: Vec<u32> = ledgers.iter().map(Ledger::sent).collect();

		let stop = Arc::new(AtomicBool::new(false));
		let mut tasks = Vec::new();
		for ledger in ledgers.iter_mut() {
			let transport = if ledger.client % 2 == 0 { Transport::Http } else { Transport::Ws };
			let client = Client::connect(transport, node.rpc_port()).await?;
			let queue = std::mem::take(&mut ledger.pending);
			tasks.push(tokio::spawn(load::run(client, queue, stop.clone())));
		}
		let mut round = Round {
			kill_after: Duration::from_secs_f64(
				args.seconds_per_round * (0.1 + 0.9 * rng.gen::<f64>()),
			),
			..Round::default()
		};
		tokio::time::sleep(round.kill_after).await;
		stop.store(true, Ordering::Release);
		node.kill()?;
		for (ledger, task) in ledgers.iter_mut().zip(tasks) {
			let outcome = tokio::time::timeout(CLIENT_WIND_DOWN, task)
				.await
				.map_err(|_| format!("client {} still busy after the kill", ledger.client))?
				.map_err(|err| format!("client {} failed: {err}", ledger.client))?;
			round.apply(ledger, outcome);
		}
		let load_seconds = round.kill_after.as_secs_f64();
		if round.ran_dry == 0 {
			rate_per_client = round.acknowledged as f64 / load_seconds / f64::from(args.clients);
		} else {
			// The pool ran out before the kill, so the rate is at least this; ask for more.
			rate_per_client *= 2.0;
		}

		node = launch.start()?;
		round.restart = node.started_in();
		round.opened_with = Some(node.ready().statements);
		let http = HttpClientBuilder::default()
			.max_response_size(u32::MAX)
			.request_timeout(Duration::from_secs(120))
			.build(node.http_url())
			.map_err(|err| format!("cannot build an HTTP client: {err}"))?;
		let fresh: Vec<Range<u32>> =
			before.iter().zip(&ledgers).map(|(from, ledger)| *from..ledger.sent()).collect();
		let checking = Instant::now();
		round.tally = check::check(&http, &mut ledgers, &fresh).await?;
		let check_seconds = checking.elapsed().as_secs_f64();
		round.expected = ledgers
			.iter()
			.flat_map(|ledger| ledger.fates.iter())
			.filter(|fate| fate.must_be_present())
			.count() as u64;

		let tally = &round.tally;
		println!(
			"| {number} | {:.2} s | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} s \
			 | {} | {} | {:.2} s |",
			round.kill_after.as_secs_f64(),
			round.acknowledged,
			round.acknowledged as f64 / load_seconds,
			round.refused,
			round.in_flight,
			tally.kept,
			tally.dropped,
			tally.lost.len(),
			tally.phantom.len(),
			tally.altered.len(),
			tally.hashed,
			round.restart.as_secs_f64(),
			round.opened_with.map_or("?".into(), |n| n.to_string()),
			round.expected,
			check_seconds,
		);
		if let Some(refusal) = &round.first_refusal {
			notes.push(format!("round {number}: {} refused, the first {refusal}", round.refused));
		}
		for err in &round.early_errors {
			notes.push(format!("round {number}: a submit failed before the kill: {err}"));
		}
		if round.ran_dry > 0 {
			notes.push(format!("round {number}: {} clients ran out of statements", round.ran_dry));
		}
		for (client, index) in tally.lost.iter().take(10) {
			notes.push(format!("round {number}: LOST client {client} statement {index}"));
		}
		for what in tally.phantom.iter().take(10) {
			notes.push(format!("round {number}: UNEXPECTED {what}"));
		}
		for (client, index) in tally.altered.iter().take(10) {
			notes.push(format!("round {number}: ALTERED client {client} statement {index}"));
		}
		if let Some(at_open) = round.opened_with.filter(|n| *n != round.expected) {
			notes.push(format!(
				"round {number}: the store opened with {at_open} statements, {} expected",
				round.expected
			));
		}
		rounds.push(round);
	}
	drop(node);
	if !notes.is_empty() {
		println!();
	}
	for note in &notes {
		println!("{note}");
	}

	let failed = rounds.iter().any(Round::failed);
	let sum = |f: fn(&Round) -> u64| rounds.iter().map(f).sum::<u64>();
	let mut restarts: Vec<f64> = rounds.iter().map(|r| r.restart.as_secs_f64()).collect();
	restarts.sort_by(f64::total_cmp);
	let p50 = restarts.get(restarts.len() / 2).copied().unwrap_or_default();
	let max = restarts.last().copied().unwrap_or_default();
	println!(
		"\nrounds {}, acknowledged {}, lost {}, in flight at kill {} (kept {}), unexpected {}, \
		 altered {}, refused {}, restart p50 {p50:.2} s max {max:.2} s, signing {:.0} s, {:.0} s \
		 in all",
		rounds.len(),
		sum(|r| r.acknowledged),
		sum(|r| r.tally.lost.len() as u64),
		sum(|r| r.in_flight),
		sum(|r| r.tally.kept),
		sum(|r| r.tally.phantom.len() as u64),
		sum(|r| r.tally.altered.len() as u64),
		sum(|r| r.refused),
		signing.as_secs_f64(),
		started.elapsed().as_secs_f64() + first_start.as_secs_f64(),
	);
	if failed || args.keep {
		let kept = dir.keep();
		println!("base path kept: {}", kept.join("base").display());
	}
	if failed {
		println!("FAILED: see the rounds above");
	}
	Ok(!failed)
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		let args: Args = parse_line("crash_load").unwrap();
		assert_eq!((args.rounds, args.clients, args.seconds_per_round), (12, 20, 8.0));
		assert!(args.seed.is_none() && !args.keep && args.node.is_none());
		assert_parses::<Args>(&[
			"crash_load --rounds 12 --clients 20",
			"crash_load --rounds 3 --clients 4 --seconds-per-round 3",
			"crash_load --seed 42",
			"crash_load --node target/release/statement-node --keep",
		]);
		for bad in ["crash_load --rounds 0", "crash_load --seconds-per-round -1", "crash_load -x"] {
			assert!(parse_line::<Args>(bad).is_err(), "{bad}");
		}
	}
}
