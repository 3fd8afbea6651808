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
//!
//! `--mode immediate|reference|both` (default `immediate`) sets `--statement-propagation`;
//! `both` runs each scenario with each and prints reference / immediate. `--quick` shortens
//! everything (3 s of latency load, rates 2,000 and 5,000 for 2 s, 10,000 statements to sync).
//! Other options: `--node PATH` (default: `statement-node` in `$CARGO_TARGET_DIR/release`,
//! beside this executable, or in `target/release`), `--drain S` (10: how long to wait after
//! the last submit for stragglers), `--rate-limit N` (50,000, the node's
//! `--statement-rate-limit`), `--sync-timeout S` (300).
//!
//! Statements are signed (sr25519, the six dev accounts `--dev` gives allowances, 256 bytes of
//! data, one topic) before any clock starts. Exits 2 if the harness could not run, with the
//! nodes' last log lines when they fail to start or to connect within 20 s.

mod light;
mod mesh;
mod node;
mod scenario;
mod traffic;

use node::{NodeSettings, Propagation};
use scenario::Plan;
use std::{path::PathBuf, process::ExitCode, time::Duration};
use traffic::Pool;

/// A scenario `--scenario` may name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scenario {
	Latency2,
	Line5,
	MaxRate,
	Sync,
	Mesh,
	Light,
}

/// Every scenario, in the order `all` runs them.
const ALL: [Scenario; 6] = [
	Scenario::Latency2,
	Scenario::Line5,
	Scenario::MaxRate,
	Scenario::Sync,
	Scenario::Mesh,
	Scenario::Light,
];

/// Command-line options; `None` where the default depends on `--quick`.
#[derive(Default)]
struct Args {
	node: Option<PathBuf>,
	modes: Vec<Propagation>,
	scenarios: Vec<Scenario>,
	quick: bool,
	rate: Option<f64>,
	seconds: Option<f64>,
	rates: Option<Vec<f64>>,
	step_seconds: Option<f64>,
	sync_statements: Option<usize>,
	drain: Option<f64>,
	rate_limit: Option<u32>,
	sync_timeout: Option<f64>,
	mesh_nodes: Option<usize>,
	light_statements: Option<usize>,
}

const USAGE: &str = "usage: propagation [--node PATH] [--mode immediate|reference|both] \
	[--scenario latency2|line5|maxrate|sync|mesh20|light|all] [--quick] [--rate N] \
	[--seconds S] [--rates N,N,..] [--step-seconds S] [--sync-statements N] [--drain S] \
	[--rate-limit N] [--sync-timeout S] [--mesh-nodes N] [--light-statements N]";

impl Args {
	fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
		let mut parsed = Args {
			modes: vec![Propagation::Immediate],
			scenarios: ALL.to_vec(),
			..Args::default()
		};
		while let Some(arg) = args.next() {
			let mut value = || args.next().ok_or(format!("{arg} needs a value"));
			match arg.as_str() {
				"--node" => parsed.node = Some(PathBuf::from(value()?)),
				"--mode" => {
					parsed.modes = match value()?.as_str() {
						"immediate" => vec![Propagation::Immediate],
						"reference" => vec![Propagation::Reference],
						"both" => vec![Propagation::Immediate, Propagation::Reference],
						other => return Err(format!("--mode {other:?}: {USAGE}")),
					}
				}
				"--scenario" => {
					parsed.scenarios = match value()?.as_str() {
						"latency2" => vec![Scenario::Latency2],
						"line5" => vec![Scenario::Line5],
						"maxrate" => vec![Scenario::MaxRate],
						"sync" => vec![Scenario::Sync],
						"mesh20" => vec![Scenario::Mesh],
						"light" => vec![Scenario::Light],
						"all" => ALL.to_vec(),
						other => return Err(format!("--scenario {other:?}: {USAGE}")),
					}
				}
				"--quick" => parsed.quick = true,
				"--rate" => parsed.rate = Some(positive(&arg, value()?)?),
				"--seconds" => parsed.seconds = Some(positive(&arg, value()?)?),
				"--rates" => {
					let list = value()?;
					let rates = list.split(',').map(|rate| positive(&arg, rate.trim().into()));
					parsed.rates = Some(rates.collect::<Result<_, _>>()?);
				}
				"--step-seconds" => parsed.step_seconds = Some(positive(&arg, value()?)?),
				"--sync-statements" => parsed.sync_statements = Some(number(&arg, value()?)?),
				"--drain" => parsed.drain = Some(positive(&arg, value()?)?),
				"--rate-limit" => parsed.rate_limit = Some(number(&arg, value()?)?),
				"--sync-timeout" => parsed.sync_timeout = Some(positive(&arg, value()?)?),
				"--mesh-nodes" => parsed.mesh_nodes = Some(number(&arg, value()?)?),
				"--light-statements" => parsed.light_statements = Some(number(&arg, value()?)?),
				"-h" | "--help" => return Err(USAGE.into()),
				other => return Err(format!("unknown option {other:?}; {USAGE}")),
			}
		}
		Ok(parsed)
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
		}
	}

	/// `--node`, else `statement-node` in `$CARGO_TARGET_DIR/release`, beside this executable
	/// or in `target/release`, whichever exists first.
	fn node_binary(&self) -> Result<PathBuf, String> {
		if let Some(path) = &self.node {
			return Ok(path.clone());
		}
		let mut tried = Vec::new();
		if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
			tried.push(PathBuf::from(target).join("release").join("statement-node"));
		}
		if let Ok(exe) = std::env::current_exe() {
			tried.push(exe.with_file_name("statement-node"));
		}
		tried.push(PathBuf::from("target/release/statement-node"));
		if let Some(found) = tried.iter().find(|path| path.is_file()) {
			return Ok(found.clone());
		}
		let tried: Vec<String> = tried.iter().map(|path| path.display().to_string()).collect();
		Err(format!(
			"no statement-node at {}: build it (`cargo build --release -p statement-node`) or \
			 pass --node PATH",
			tried.join(", ")
		))
	}
}

/// `text` as the number option `arg` needs.
fn number<T: std::str::FromStr>(arg: &str, text: String) -> Result<T, String> {
	text.parse().map_err(|_| format!("{arg}: {text:?} is not a valid number"))
}

/// `text` as a positive, finite number.
fn positive(arg: &str, text: String) -> Result<f64, String> {
	let value: f64 = number(arg, text.clone())?;
	if value.is_finite() && value > 0.0 {
		Ok(value)
	} else {
		Err(format!("{arg}: {text:?} must be a positive number"))
	}
}

fn main() -> ExitCode {
	match Args::parse(std::env::args().skip(1)).and_then(run) {
		Ok(()) => ExitCode::SUCCESS,
		Err(message) => {
			eprintln!("propagation: {message}");
			ExitCode::from(2)
		}
	}
}

fn run(args: Args) -> Result<(), String> {
	let binary = args.node_binary()?;
	let plan = args.plan();
	let modes: Vec<NodeSettings> = args
		.modes
		.iter()
		.map(|propagation| NodeSettings {
			binary: binary.clone(),
			propagation: *propagation,
			rate_limit: args.rate_limit.unwrap_or(50_000),
		})
		.collect();
	let needed = args
		.scenarios
		.iter()
		.map(|scenario| match scenario {
			Scenario::Latency2 | Scenario::Line5 => plan.latency_statements(),
			Scenario::MaxRate => plan.max_step_statements(),
			Scenario::Sync => plan.sync_statements,
			Scenario::Mesh => plan.latency_statements(),
			Scenario::Light => 0,
		})
		.max()
		.unwrap_or(0);
	eprintln!("signing {needed} statements ...");
	let pool = Pool::sign(needed)?;
	let light_pool = if args.scenarios.contains(&Scenario::Light) {
		eprintln!(
			"signing {} statements over {} topics ...",
			plan.light_statements,
			light::LIGHT_TOPICS
		);
		Pool::sign_on(plan.light_statements, light::LIGHT_TOPICS)?
	} else {
		Pool::sign(0)?
	};
	let runtime = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.build()
		.map_err(|err| format!("cannot start the async runtime: {err}"))?;
	println!("node {}, statement rate limit {}/s", binary.display(), modes[0].rate_limit);
	for scenario in &args.scenarios {
		match scenario {
			Scenario::Latency2 => scenario::latency("latency2", 2, &modes, &runtime, &pool, &plan)?,
			Scenario::Line5 => scenario::latency("line5", 5, &modes, &runtime, &pool, &plan)?,
			Scenario::MaxRate => scenario::max_rate(&modes, &runtime, &pool, &plan)?,
			Scenario::Sync => scenario::sync(&modes, &runtime, &pool, &plan)?,
			Scenario::Mesh => mesh::mesh(&modes, &runtime, &pool, &plan)?,
			Scenario::Light => light::light(&modes, &runtime, &light_pool, &plan)?,
		}
	}
	Ok(())
}
