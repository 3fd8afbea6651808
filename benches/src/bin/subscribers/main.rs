//! Subscriptions against a release `statement-node`, over real sockets. Three
//! modes:
//!
//! - `submit` (the default): starts a node per row and submits the same pre-signed
//!   statements over HTTP JSON-RPC, alone and beside each count of WebSocket subscriptions
//!   given to `--subscribers` (a list), and prints submits/s as a ratio to the run without
//!   any, the node's RSS per subscription (15 s after the last opened) and its peak RSS. `--filter any` subscribes to
//!   every statement, `--filter idle` to a topic nobody submits on; `--clients never` leaves
//!   every answer unread (subscribers stuck in their buffers), `--clients read` reads and
//!   drops them (a live app that has nothing coming).
//! - `replay`: stores `--statements` statements on one topic, then compares the rate at which
//!   a new `matchAll` subscription on that topic gets them (its replay) with the rate of
//!   `statement_broadcastsStatement` for the same statements (in five calls, so that each
//!   answer fits the server's 10 MiB response limit).
//! - `fanout`: opens `--subscribers` reading subscriptions on one topic (1,000 a connection),
//!   then submits `--rounds` statements on it one at a time, and prints p50/p99/max of the
//!   time from the submit call to the last subscription's delivery.
//!
//! ```sh
//! cargo build --release -p statement-node
//! B="cargo run --release -p statement-store-benches --bin subscribers --"
//! $B --node target/release/statement-node --statements 20000 \
//!     --subscribers 1000,10000,100000 --per-connection 1000 --filter idle --clients read
//! $B --node target/release/statement-node --mode replay --statements 100000
//! $B --node target/release/statement-node --mode fanout --subscribers 10000 --rounds 100
//! ```
//!
//! `--budget-mib N` starts the node with `--statement-subscription-memory-mib N`: at the
//! default (64) it opens at most 16,384 subscriptions and refuses the rest, which the tables
//! count.
//!
//! Statements are signed (sr25519) by the dev accounts, which the dev chain spec gives
//! allowances; data is 256 bytes (32 in `replay`), topics as in the rest of the benchmarks.

mod fanout;
mod replay;
mod statements;
mod submit;
mod subscriptions;
mod wire;

use clap::{Parser, ValueEnum};
use statement_store_benches::{
	node::{Launch, Node},
	procfs,
};
use std::process::ExitCode;

/// Subscriptions against a release `statement-node`, over real sockets.
#[derive(Parser, Debug)]
#[command(name = "subscribers")]
struct Args {
	/// What to measure.
	#[arg(long, value_enum, default_value = "submit")]
	mode: Mode,
	/// The `statement-node` executable.
	#[arg(long, value_name = "PATH", default_value = "target/release/statement-node")]
	node: String,
	/// Statements submitted (`submit`) or stored before the replay (`replay`).
	#[arg(long, value_name = "N", default_value_t = 100_000)]
	statements: usize,
	/// Subscription counts, one run each (after a run without any, in `submit`); `fanout`
	/// opens the largest.
	#[arg(long, value_name = "N,N,..", value_delimiter = ',', default_value = "100")]
	subscribers: Vec<usize>,
	/// Subscriptions a WebSocket connection carries in `submit` (at least 1).
	#[arg(long, value_name = "N", default_value_t = 1, value_parser = at_least_one)]
	per_connection: usize,
	/// Subscribe to every statement (`any`), or to a topic nobody submits on (`idle`).
	#[arg(long, value_enum, default_value = "any")]
	filter: Filter,
	/// Whether subscribing clients read what they are sent (`read`) or leave it (`never`).
	#[arg(long, value_enum, default_value = "never")]
	clients: Clients,
	/// Statements `fanout` submits one at a time (at least 1).
	#[arg(long, value_name = "N", default_value_t = 100, value_parser = at_least_one)]
	rounds: usize,
	/// The node's `--statement-subscription-memory-mib` [default: the node's, 64].
	#[arg(long, value_name = "N")]
	budget_mib: Option<usize>,
}

/// A number where 0 counts as 1, as these options always took it.
fn at_least_one(text: &str) -> Result<usize, String> {
	text.parse::<usize>().map(|n| n.max(1)).map_err(|err| format!("{text}: {err}"))
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
	/// Submits beside each count of subscriptions.
	Submit,
	/// A subscription's replay against the query for the same statements.
	Replay,
	/// One statement at a time to many subscriptions.
	Fanout,
}

/// `--clients`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Clients {
	/// Read and drop every message (a live app that has nothing coming).
	Read,
	/// Never read past the handshake (subscribers stuck in their buffers).
	Never,
}

impl Args {
	/// Whether subscribing clients read what they are sent.
	fn read(&self) -> bool {
		self.clients == Clients::Read
	}
}

/// `--filter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Filter {
	/// Every statement.
	Any,
	/// A topic nobody submits on.
	Idle,
}

impl Filter {
	/// The filter as `statement_subscribeStatement` takes it.
	fn json(self) -> String {
		match self {
			Filter::Any => r#""any""#.into(),
			Filter::Idle => format!(r#"{{"matchAll":["0x{}"]}}"#, "ee".repeat(32)),
		}
	}
}

/// A `--dev` node on a temporary base path, with up to 1,000 RPC connections and the
/// subscription budget asked for.
fn start_node(path: &str, budget_mib: Option<usize>) -> Result<Node, String> {
	let mut args: Vec<String> = ["--rpc-max-connections", "1000"].map(String::from).to_vec();
	if let Some(mib) = budget_mib {
		args.extend(["--statement-subscription-memory-mib".to_string(), mib.to_string()]);
	}
	args.extend(["--listen-addr", "/ip4/127.0.0.1/tcp/0"].map(String::from));
	Ok(Launch::new(path).dev().args(args).start()?)
}

/// A metric of `node`, `None` if it is not exported or cannot be read.
fn metric(node: &Node, name: &str) -> Option<f64> {
	node.metric(name).ok()
}

/// A `/proc/<pid>/status` figure of `node` in MiB.
fn status_mib(node: &Node, field: &str) -> f64 {
	procfs::status_kib(node.pid(), field) as f64 / 1024.0
}

fn main() -> ExitCode {
	let args = Args::parse();
	let result = match args.mode {
		Mode::Submit => submit::run_mode(&args),
		Mode::Replay => replay::run_mode(&args),
		Mode::Fanout => fanout::run_mode(&args),
	};
	match result {
		Ok(()) => ExitCode::SUCCESS,
		Err(err) => {
			eprintln!("{err}");
			ExitCode::from(1)
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"subscribers --node target/release/statement-node --statements 20000 \
			 --subscribers 1000,10000,100000 --per-connection 1000 --filter idle --clients read",
			"subscribers --node target/release/statement-node --mode replay --statements 100000",
			"subscribers --node target/release/statement-node --mode fanout --subscribers 10000 \
			 --rounds 100",
			"subscribers --node target/release/statement-node --statements 100000 --subscribers 100",
			"subscribers --subscribers 50000 --per-connection 1000 --clients never",
			"subscribers --statements 50000 --subscribers 1000,10000,100000 --filter idle \
			 --clients read",
			"subscribers --budget-mib 256 --filter any",
		]);
		for bad in ["subscribers --mode soak", "subscribers --filter some", "subscribers x"] {
			assert!(parse_line::<Args>(bad).is_err(), "{bad}");
		}
	}

	#[test]
	fn the_defaults_are_the_documented_ones() {
		let args = parse_line::<Args>("subscribers --per-connection 0").unwrap();
		assert_eq!((args.mode, args.filter, args.read()), (Mode::Submit, Filter::Any, false));
		assert_eq!(args.node, "target/release/statement-node");
		assert_eq!((args.statements, args.per_connection, args.rounds), (100_000, 1, 100));
		assert_eq!((args.subscribers, args.budget_mib), (vec![100], None));
	}
}
