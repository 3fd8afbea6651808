//! Statement gossip between real nodes: `statement-node` processes on localhost, statements
//! submitted to the first node, a WebSocket subscriber on the last one noting when each
//! arrives.
//!
//! ```sh
//! cargo build --release -p statement-node -p statement-store-benches --bin statement-node --bin propagation
//! target/release/propagation --quick                       # every scenario, short
//! target/release/propagation --mode both --scenario all    # ours against upstream's tick
//! ```
//!
//! Scenarios (`--scenario`, default `all`):
//! - `latency2`: two nodes; `--rate` statements a second (1,000) for `--seconds` (10) into the
//!   first, latency p50/p90/p99/max to the second's subscriber, and how many never arrived.
//! - `line5`: the same through five nodes in a line, node k bootnoding node k-1.
//! - `maxrate`: two nodes, fresh for each of `--rates` (2,000, 5,000, 8,000, 10,000) for
//!   `--step-seconds` (5) each, stopping at the first rate with loss, with refusals, or whose
//!   submits fell short of 95% of the target; reports the highest rate carried with no loss.
//! - `sync`: node A filled with `--sync-statements` (100,000), then node B started bootnoding
//!   A: the time until B's store holds them all, and A's RSS growth meanwhile.
//! - `mesh20`: `--mesh-nodes` (20) nodes that each know only the first find each other
//!   (Kademlia; the run starts once each has min(8, n-1) peers); `--rate` statements a second
//!   into the second node for `--seconds`, read on five nodes spread over the mesh: latency to
//!   the last of them, loss, statements sent per delivery needed (duplicates), and how many
//!   nodes end up holding every statement.
//! - `light`: `--light-statements` (20,000) statements over 10 topics into node A, half before
//!   a light node (`--statement-topics`, one topic) joins A and half after, with a full node
//!   on A beside it: bytes and statements each received, against those it wanted.
//! - `routed`: `--routed-nodes` (30) nodes with `--statement-replication-factor`
//!   `--replication-factor` (5) that find each other from the first; `--routed-statements`
//!   (3,000; quick 600), ten to a topic, at `--rate` into node 1, with an `"any"` subscription
//!   on every node and a reader on the last subscribed to 16 topics it does not hold:
//!   statements and bytes each node stores against full replication, copies per statement,
//!   latency to all K holders (by upstream's placement rule) and to the reader, and what never
//!   arrived. Runs once, whatever `--mode`.
//!
//! `--mode immediate|reference|both` (default `immediate`) sets `--statement-propagation`;
//! `both` runs each scenario with each and prints reference / immediate. `--quick` shortens
//! everything (3 s of latency load, rates 2,000 and 5,000 for 2 s, 10,000 statements to sync).
//! Other options: `--node PATH` (default: `statement-node` beside this executable, in
//! `$CARGO_TARGET_DIR/release` or in `target/release`), `--drain S` (10: how long to wait
//! after the last submit for stragglers), `--rate-limit N` (50,000, the node's
//! `--statement-rate-limit`), `--sync-timeout S` (300); `--help` lists them all.
//!
//! Statements are signed (sr25519, the six dev accounts `--dev` gives allowances, 256 bytes of
//! data, one topic) before any clock starts. Exits 2 if the harness could not run, with the
//! nodes' last log lines when they fail to start or to connect within 20 s.

mod light;
mod mesh;
mod routed;
mod scenario;
mod traffic;

use clap::{Parser, ValueEnum};
use scenario::Plan;
use statement_store_benches::{
	cli,
	topology::{NodeSettings, Propagation},
};
use std::{path::PathBuf, process::ExitCode, time::Duration};
use traffic::Pool;

/// A scenario `--scenario` may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Scenario {
	/// Two nodes: latency to the second's subscriber.
	Latency2,
	/// Five nodes in a line.
	Line5,
	/// The highest rate two nodes carry with no loss.
	#[value(name = "maxrate")]
	MaxRate,
	/// A node joining a full one.
	Sync,
	/// Nodes that find each other from one boot node.
	#[value(name = "mesh20")]
	Mesh,
	/// What a light node receives against what it asked for.
	Light,
	/// Topic-routed storage: storage per node, latency to the holders and to a reader.
	Routed,
	/// Every scenario, in this order.
	All,
}

/// Every scenario, in the order `all` runs them.
const ALL: [Scenario; 7] = [
	Scenario::Latency2,
	Scenario::Line5,
	Scenario::MaxRate,
	Scenario::Sync,
	Scenario::Mesh,
	Scenario::Light,
	Scenario::Routed,
];

/// `--mode`: which `--statement-propagation` each scenario runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
	/// Ours: sent within a short coalescing window.
	Immediate,
	/// Upstream's: once a second.
	Reference,
	/// Each scenario with each; prints reference / immediate.
	Both,
}

/// Statement gossip between real nodes on localhost: statements submitted to the first node, a
/// WebSocket subscriber on the last one noting when each arrives. Defaults marked "quick" are
/// those of `--quick`.
#[derive(Parser, Debug)]
#[command(name = "propagation")]
struct Args {
	/// The `statement-node` executable [default: `statement-node` beside this executable, in
	/// `$CARGO_TARGET_DIR/release` or in `target/release`].
	#[arg(long, value_name = "PATH")]
	node: Option<PathBuf>,
	/// `--statement-propagation` of every node.
	#[arg(long, value_enum, default_value = "immediate")]
	mode: Mode,
	/// The scenario to run.
	#[arg(long, value_enum, default_value = "all")]
	scenario: Scenario,
	/// Shorten everything.
	#[arg(long)]
	quick: bool,
	/// Statements a second in the latency scenarios [default: 1000].
	#[arg(long, value_name = "N", value_parser = cli::positive)]
	rate: Option<f64>,
	/// Seconds of load in the latency scenarios [default: 10; quick 3].
	#[arg(long, value_name = "S", value_parser = cli::positive)]
	seconds: Option<f64>,
	/// The rates `maxrate` steps through [default: 2000,5000,8000,10000; quick 2000,5000].
	#[arg(long, value_name = "N,N,..", value_delimiter = ',', value_parser = cli::positive)]
	rates: Option<Vec<f64>>,
	/// Seconds of each `maxrate` step [default: 5; quick 2].
	#[arg(long, value_name = "S", value_parser = cli::positive)]
	step_seconds: Option<f64>,
	/// Statements node A holds before node B joins in `sync` [default: 100000; quick 10000].
	#[arg(long, value_name = "N")]
	sync_statements: Option<usize>,
	/// Seconds to wait after the last submit for stragglers [default: 10].
	#[arg(long, value_name = "S", value_parser = cli::positive)]
	drain: Option<f64>,
	/// The nodes' `--statement-rate-limit` [default: 50000].
	#[arg(long, value_name = "N")]
	rate_limit: Option<u32>,
	/// Seconds `sync` may take [default: 300].
	#[arg(long, value_name = "S", value_parser = cli::positive)]
	sync_timeout: Option<f64>,
	/// Nodes in `mesh20` (at least 3) [default: 20].
	#[arg(long, value_name = "N")]
	mesh_nodes: Option<usize>,
	/// Statements over 10 topics in `light` [default: 20000; quick 2000].
	#[arg(long, value_name = "N")]
	light_statements: Option<usize>,
	/// Nodes in `routed` (at least 3) [default: 30].
	#[arg(long, value_name = "N")]
	routed_nodes: Option<usize>,
	/// `--statement-replication-factor` in `routed` [default: 5].
	#[arg(long, value_name = "K", value_parser = clap::value_parser!(u16).range(1..))]
	replication_factor: Option<u16>,
	/// Statements in `routed`, ten to a topic [default: 3000; quick 600].
	#[arg(long, value_name = "N")]
	routed_statements: Option<usize>,
}

impl Args {
	/// The propagation modes to run, ours first.
	fn modes(&self) -> Vec<Propagation> {
		match self.mode {
			Mode::Immediate => vec![Propagation::Immediate],
			Mode::Reference => vec![Propagation::Reference],
			Mode::Both => vec![Propagation::Immediate, Propagation::Reference],
		}
	}

	/// The scenarios to run, in order.
	fn scenarios(&self) -> Vec<Scenario> {
		match self.scenario {
			Scenario::All => ALL.to_vec(),
			one => vec![one],
		}
	}

	/// The scenarios' sizes: the options given, else the defaults (shorter with `--quick`).
	fn plan(&self) -> Plan {
		let quick = self.quick;
		Plan {
			rate: self.rate.unwrap_or(1000.0),
			seconds: self.seconds.unwrap_or(if quick { 3.0 } else { 10.0 }),
			rates: self.rates.clone().unwrap_or_else(|| {
				if quick {
					vec![2000.0, 5000.0]
				} else {
					vec![2000.0, 5000.0, 8000.0, 10000.0]
				}
			}),
			step_seconds: self.step_seconds.unwrap_or(if quick { 2.0 } else { 5.0 }),
			sync_statements: self.sync_statements.unwrap_or(if quick { 10_000 } else { 100_000 }),
			drain: Duration::from_secs_f64(self.drain.unwrap_or(10.0)),
			sync_timeout: Duration::from_secs_f64(self.sync_timeout.unwrap_or(300.0)),
			mesh_nodes: self.mesh_nodes.unwrap_or(20).max(3),
			light_statements: self.light_statements.unwrap_or(if quick { 2_000 } else { 20_000 }),
			routed_nodes: self.routed_nodes.unwrap_or(30).max(3),
			replication_factor: usize::from(self.replication_factor.unwrap_or(5)),
			routed_statements: self.routed_statements.unwrap_or(if quick { 600 } else { 3_000 }),
		}
	}
}

fn main() -> ExitCode {
	match run(Args::parse()) {
		Ok(()) => ExitCode::SUCCESS,
		Err(message) => {
			eprintln!("propagation: {message}");
			ExitCode::from(2)
		}
	}
}

fn run(args: Args) -> Result<(), String> {
	let binary = statement_store_benches::node::binary(args.node.clone())?;
	let plan = args.plan();
	let scenarios = args.scenarios();
	let modes: Vec<NodeSettings> = args
		.modes()
		.iter()
		.map(|propagation| NodeSettings {
			binary: binary.clone(),
			propagation: *propagation,
			rate_limit: args.rate_limit.unwrap_or(50_000),
		})
		.collect();
	let needed = scenarios
		.iter()
		.map(|scenario| match scenario {
			Scenario::Latency2 | Scenario::Line5 => plan.latency_statements(),
			Scenario::MaxRate => plan.max_step_statements(),
			Scenario::Sync => plan.sync_statements,
			Scenario::Mesh => plan.latency_statements(),
			Scenario::Light | Scenario::Routed | Scenario::All => 0,
		})
		.max()
		.unwrap_or(0);
	eprintln!("signing {needed} statements ...");
	let pool = Pool::sign(needed)?;
	let light_pool = if scenarios.contains(&Scenario::Light) {
		eprintln!(
			"signing {} statements over {} topics ...",
			plan.light_statements,
			light::LIGHT_TOPICS
		);
		Pool::sign_on(plan.light_statements, light::LIGHT_TOPICS)?
	} else {
		Pool::sign(0)?
	};
	let routed_pool = if scenarios.contains(&Scenario::Routed) {
		let topics = plan.routed_statements.div_ceil(routed::PER_TOPIC);
		eprintln!("signing {} statements over {topics} topics ...", plan.routed_statements);
		Pool::sign_on(plan.routed_statements, topics)?
	} else {
		Pool::sign(0)?
	};
	let runtime = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.build()
		.map_err(|err| format!("cannot start the async runtime: {err}"))?;
	println!("node {}, statement rate limit {}/s", binary.display(), modes[0].rate_limit);
	for scenario in &scenarios {
		match scenario {
			Scenario::Latency2 => scenario::latency("latency2", 2, &modes, &runtime, &pool, &plan)?,
			Scenario::Line5 => scenario::latency("line5", 5, &modes, &runtime, &pool, &plan)?,
			Scenario::MaxRate => scenario::max_rate(&modes, &runtime, &pool, &plan)?,
			Scenario::Sync => scenario::sync(&modes, &runtime, &pool, &plan)?,
			Scenario::Mesh => mesh::mesh(&modes, &runtime, &pool, &plan)?,
			Scenario::Light => light::light(&modes, &runtime, &light_pool, &plan)?,
			Scenario::Routed => routed::routed(&modes[0], &runtime, &routed_pool, &plan)?,
			Scenario::All => {}
		}
	}
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"propagation --quick",
			"propagation --mode both",
			"propagation --mode both --scenario all",
			"propagation --scenario line5 --rate 2000 --seconds 10",
			"propagation --scenario maxrate --rates 2000,5000,8000,10000,15000",
			"propagation --scenario sync --sync-statements 100000 --mode both",
			"propagation --scenario mesh20 --mode both --rate 250",
			"propagation --scenario mesh20 --mode both --rate 250 --seconds 10",
			"propagation --scenario light --mode both",
			"propagation --scenario routed",
			"propagation --scenario routed --routed-nodes 30 --replication-factor 5 \
			 --routed-statements 3000 --rate 200",
			"propagation --scenario latency2 --mode reference --node n --step-seconds 2 \
			 --drain 5 --rate-limit 100 --sync-timeout 60 --mesh-nodes 5 --light-statements 10",
		]);
		for bad in [
			"propagation --mode fast",
			"propagation --rate 0",
			"propagation --rates 1,x",
			"propagation --replication-factor 0",
		] {
			assert!(parse_line::<Args>(bad).is_err(), "{bad}");
		}
	}

	#[test]
	fn the_defaults_run_every_scenario_with_ours_and_quick_shortens_them() {
		let args = parse_line::<Args>("propagation").unwrap();
		assert_eq!(args.scenarios(), ALL);
		assert_eq!(args.modes(), [Propagation::Immediate]);
		let plan = args.plan();
		assert_eq!((plan.rate, plan.seconds, plan.sync_statements), (1000.0, 10.0, 100_000));
		assert_eq!(plan.rates, [2000.0, 5000.0, 8000.0, 10000.0]);
		let plan = parse_line::<Args>("propagation --quick --seconds 4").unwrap().plan();
		assert_eq!((plan.seconds, plan.step_seconds, plan.light_statements), (4.0, 2.0, 2_000));
		let args = parse_line::<Args>("propagation --scenario mesh20 --mode both").unwrap();
		assert_eq!(args.scenarios(), [Scenario::Mesh]);
		assert_eq!(args.modes(), [Propagation::Immediate, Propagation::Reference]);
	}
}
