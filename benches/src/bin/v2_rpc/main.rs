//! The spec-v2 statement RPC (`statement_unstable_*`) against a release `statement-node`,
//! over real sockets. Two modes:
//!
//! - `replay` (the default): for each of `--sizes`, a store of that many statements (the
//!   fixture upstream measured its replay on: 64 accounts, 256-byte data; built once under
//!   `--dir` and reused) opened by the node, then
//!   - `add_filter` to `replayDone` for `--samples` filters of 8 matches each (a third
//!     topic every 8 consecutive statements share): p50, p99, max;
//!   - the statements/s of an `"any"` replay, against the legacy replay of
//!     `statement_subscribeStatement("any")` on the same node: the median of 5 rounds
//!     (alternating), and the node's CPU time per statement replayed;
//!   - the submits/s (`statement_unstable_submit`, 2 connections, batches of 250) while
//!     an `"any"` replay runs, against the same without it; the replay must carry exactly
//!     the statements stored when its filter was added, and the ones submitted meanwhile
//!     must come after its `replayDone`, as `newStatements`.
//! - `ring`: two nodes, peers of each other; `--clients` clients (each a count, one run
//!   each) spread over them, client `i` on node `i % 2`, `--per-connection` to a WebSocket.
//!   Client `i` subscribes to client `i + 1`'s topic (so every delivery crosses between the
//!   nodes) and, each of `--rounds` rounds, all submit their own statement at once; the
//!   latency of a delivery is from its submit to its notification. Min, average and max,
//!   on the legacy API and on v2, in one run. Clients sign with `//StatementClient//{i}`
//!   (sr25519), as upstream's `statement-latency-bench`, given allowances with
//!   `statement-node build-spec --allowance`.
//!
//! ```sh
//! cargo build --release -p statement-node -p statement-store-benches --bins
//! target/release/v2_rpc --mode replay --sizes 1000000,4194304
//! target/release/v2_rpc --mode ring --clients 1000,10000
//! ```

mod fixture;
mod replay;
mod ring;
mod wire;

use clap::{Parser, ValueEnum};
use statement_store_benches::cli::count;
use std::{path::PathBuf, process::ExitCode};

/// The spec-v2 statement RPC against a release `statement-node`, over real sockets.
#[derive(Parser, Debug)]
#[command(name = "v2_rpc")]
struct Args {
	/// What to measure.
	#[arg(long, value_enum, default_value = "replay")]
	mode: Mode,
	/// The `statement-node` executable [default: beside this one].
	#[arg(long, value_name = "PATH")]
	node: Option<PathBuf>,
	/// Store sizes `replay` measures at (statements; 64 accounts each hold a 64th).
	#[arg(long, value_name = "N,N,..", value_delimiter = ',', default_value = "1000000", value_parser = count)]
	sizes: Vec<usize>,
	/// Where `replay` keeps its fixtures (a 4.19M one takes ~2.5 GB).
	#[arg(long, value_name = "PATH")]
	dir: Option<PathBuf>,
	/// Filters of 8 matches `replay` times.
	#[arg(long, value_name = "N", default_value_t = 200, value_parser = count)]
	samples: usize,
	/// Statements `replay` submits with and without an `"any"` replay running.
	#[arg(long, value_name = "N", default_value_t = 20_000, value_parser = count)]
	submits: usize,
	/// Client counts `ring` runs, one run each.
	#[arg(long, value_name = "N,N,..", value_delimiter = ',', default_value = "1000,10000", value_parser = count)]
	clients: Vec<usize>,
	/// Clients a WebSocket connection carries in `ring`.
	#[arg(long, value_name = "N", default_value_t = 100, value_parser = count)]
	per_connection: usize,
	/// Rounds of `ring` (every client submits once a round).
	#[arg(long, value_name = "N", default_value_t = 3, value_parser = count)]
	rounds: usize,
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
	/// Replays at large store sizes, and submits beside one.
	Replay,
	/// A ring of clients over two nodes, legacy against v2.
	Ring,
}

impl Args {
	/// The node executable.
	fn node(&self) -> Result<PathBuf, String> {
		statement_store_benches::node::binary(self.node.clone())
	}

	/// The fixtures' directory.
	fn fixtures(&self) -> PathBuf {
		self.dir.clone().unwrap_or_else(|| {
			let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
			home.join(".cache/statement-store/v2-fixtures")
		})
	}
}

fn main() -> ExitCode {
	let args = Args::parse();
	let result = match args.mode {
		Mode::Replay => replay::run(&args),
		Mode::Ring => ring::run(&args),
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
			"v2_rpc --mode replay --sizes 1000000,4194304",
			"v2_rpc --mode ring --clients 1000,10000",
			"v2_rpc --sizes 100000 --samples 50 --submits 5000 --dir /tmp/fixtures",
			"v2_rpc --mode ring --clients 200 --per-connection 10 --rounds 1",
		]);
		for bad in ["v2_rpc --mode soak", "v2_rpc --sizes 0", "v2_rpc --clients x"] {
			assert!(parse_line::<Args>(bad).is_err(), "{bad}");
		}
	}

	#[test]
	fn the_defaults_are_the_documented_ones() {
		let args = parse_line::<Args>("v2_rpc").unwrap();
		assert_eq!(
			(args.mode, args.sizes.clone(), args.samples),
			(Mode::Replay, vec![1_000_000], 200)
		);
		assert_eq!(
			(args.clients.clone(), args.per_connection, args.rounds),
			(vec![1000, 10_000], 100, 3)
		);
	}
}
