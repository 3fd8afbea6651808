//! `node_load`'s command line.

use crate::window::Timing;
use clap::Parser;
use statement_store_benches::cli;
use std::{path::PathBuf, time::Duration};

/// The node under load, each figure beside the in-process ceiling measured in the same run.
#[derive(Parser, Debug)]
#[command(name = "node_load")]
pub struct Cli {
	/// The `statement-node` executable [default: `statement-node` beside this executable].
	#[arg(long, value_name = "PATH")]
	node: Option<PathBuf>,
	/// Seconds each phase is measured [default: 10, 1 with --quick].
	#[arg(long, value_name = "S", value_parser = cli::positive)]
	seconds: Option<f64>,
	/// Seconds each phase runs before it is measured [default: 1, 0.25 with --quick].
	#[arg(long, value_name = "S", value_parser = cli::seconds)]
	warm_up: Option<Duration>,
	/// Connection counts of the submit phases, comma separated.
	#[arg(
		long,
		value_name = "N,N,..",
		value_delimiter = ',',
		default_value = "1,8,32",
		value_parser = cli::count
	)]
	connections: Vec<usize>,
	/// Threads of the in-process phases [default: every core].
	#[arg(long, value_name = "N", value_parser = cli::count)]
	threads: Option<usize>,
	/// A smoke check: 1 s phases after 0.25 s of warm-up.
	#[arg(long)]
	quick: bool,
	/// Record the WebSocket submit phase at the most connections and the 1-topic query phase
	/// with `perf record` into PREFIX.submit and PREFIX.broadcasts.
	#[arg(long, value_name = "PREFIX")]
	perf: Option<PathBuf>,
	/// Only submit N statements and watch the node's memory.
	#[arg(long, value_name = "N")]
	soak: Option<usize>,
	/// Serve the RPC methods over a store that does nothing (the harness runs itself so).
	#[arg(long, hide = true)]
	pub serve_null: bool,
}

/// The options, with the defaults that depend on others filled in.
pub struct Args {
	pub node: Option<PathBuf>,
	pub timing: Timing,
	pub connections: Vec<usize>,
	pub threads: usize,
	pub perf: Option<PathBuf>,
	/// `--soak N`: only submit N statements and watch the node's memory.
	pub soak: Option<usize>,
}

impl Cli {
	/// The options to run with.
	pub fn args(self) -> Args {
		let (warm_up, measured) = if self.quick {
			(Duration::from_millis(250), Duration::from_secs(1))
		} else {
			(Duration::from_secs(1), Duration::from_secs(10))
		};
		Args {
			node: self.node,
			timing: Timing {
				warm_up: self.warm_up.unwrap_or(warm_up),
				measured: self.seconds.map_or(measured, Duration::from_secs_f64),
			},
			connections: self.connections,
			threads: self
				.threads
				.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
			perf: self.perf,
			soak: self.soak,
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line as parse};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Cli>(&[
			"node_load",
			"node_load --quick",
			"node_load --perf /tmp/nl",
			"node_load --soak 1000000",
			"node_load --serve-null",
			"node_load --node target/release/statement-node --seconds 10 --warm-up 1 \
			 --connections 1,8,32 --threads 2",
		]);
		for bad in ["node_load --seconds 0", "node_load --connections 1,0", "node_load --threads 0"]
		{
			assert!(parse::<Cli>(bad).is_err(), "{bad}");
		}
	}

	#[test]
	fn quick_shortens_the_phases_and_explicit_times_win() {
		let args = parse::<Cli>("node_load").unwrap().args();
		assert_eq!(args.timing.measured, Duration::from_secs(10));
		assert_eq!(args.timing.warm_up, Duration::from_secs(1));
		assert_eq!(args.connections, [1, 8, 32]);
		let args = parse::<Cli>("node_load --quick").unwrap().args();
		assert_eq!(args.timing.measured, Duration::from_secs(1));
		assert_eq!(args.timing.warm_up, Duration::from_millis(250));
		let args = parse::<Cli>("node_load --quick --seconds 3 --warm-up 0").unwrap().args();
		assert_eq!(
			(args.timing.measured, args.timing.warm_up),
			(Duration::from_secs(3), Duration::ZERO)
		);
	}
}
