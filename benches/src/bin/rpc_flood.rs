//! One RPC client that sends without ever reading its answers, against everyone else: another
//! client's `system_health` latency alone and beside the flood, and the node's memory, with
//! the per-connection limits on (the defaults) and off.
//!
//! ```sh
//! cargo build --release -p statement-node -p statement-store-benches --bin statement-node --bin rpc_flood
//! target/release/rpc_flood                       # bounded (defaults) and unbounded
//! target/release/rpc_flood --modes bounded --requests 1000000 --probes 2000
//! ```
//!
//! For each mode a fresh `--dev` node: `--probes` (2,000) `system_health` calls over one
//! WebSocket, one after another, alone; then a second connection writes up to `--requests`
//! (1,000,000) `system_health` requests as fast as the node reads them and never reads an
//! answer, until the node stops reading it for 10 s; the probe runs again while the flood
//! goes on (from a thread of its own) and again once it has stalled. `unbounded` passes
//! `u32::MAX` to `--rpc-max-calls-in-flight-per-connection` and
//! `--rpc-max-answer-bytes-per-connection`, which is how the node behaved before the limits.
//! Reported: probe p50 and p99 in each phase, requests the flood got in, and the growth of
//! the node's RssAnon (peak, sampled every 100 ms) over its value before the flood.

use clap::Parser;
use statement_store_benches::{
	cli,
	latency::Latency,
	node::{self, Launch},
	procfs,
};
use statement_test_support::ws;
use std::{
	net::TcpStream,
	path::PathBuf,
	process::ExitCode,
	time::{Duration, Instant},
};

const HEALTH: &str = r#"{"jsonrpc":"2.0","id":1,"method":"system_health","params":[]}"#;

/// How long the node may not read the flood before it counts as stalled.
const STALL: Duration = Duration::from_secs(10);

#[derive(Parser, Debug)]
#[command(
	about = "Another client's latency and the node's memory beside a client that never reads."
)]
struct Args {
	/// `statement-node` to run [default: beside this executable].
	#[arg(long)]
	node: Option<PathBuf>,
	/// `bounded` (the node's defaults), `unbounded` (limits at u32::MAX), or both.
	#[arg(long, value_delimiter = ',', default_value = "bounded,unbounded")]
	modes: Vec<Mode>,
	/// Most requests the flood sends.
	#[arg(long, value_parser = cli::count, default_value = "1000000")]
	requests: usize,
	/// Calls the probe makes in each phase.
	#[arg(long, value_parser = cli::count, default_value = "2000")]
	probes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
	/// The node's default per-connection limits.
	Bounded,
	/// No per-connection limits, as before them.
	Unbounded,
}

/// One mode's figures.
struct Row {
	mode: Mode,
	alone: Latency,
	during: Latency,
	after: Latency,
	flooded: ws::Flooded,
	grew_kib: u64,
}

fn main() -> ExitCode {
	match run(Args::parse()) {
		Ok(()) => ExitCode::SUCCESS,
		Err(message) => {
			eprintln!("rpc_flood: {message}");
			ExitCode::from(2)
		}
	}
}

fn run(args: Args) -> Result<(), String> {
	let binary = node::binary(args.node.clone())?;
	let mut rows = Vec::new();
	for mode in &args.modes {
		eprintln!("{mode:?}: starting {} ...", binary.display());
		rows.push(measure(&binary, *mode, &args)?);
	}
	println!("| mode | probe p50 / p99 alone | beside the flood | after it stalled | flood requests in | RssAnon growth |");
	println!("|---|---|---|---|---|---|");
	let ms = |latency: &Latency, pick: fn(&Latency) -> Duration| {
		format!("{:.2}", pick(latency).as_secs_f64() * 1e3)
	};
	for row in &rows {
		let cell = |l: &Latency| format!("{} / {} ms", ms(l, |l| l.p50), ms(l, |l| l.p99));
		println!(
			"| {:?} | {} | {} | {} | {}{} | {:.1} MiB |",
			row.mode,
			cell(&row.alone),
			cell(&row.during),
			cell(&row.after),
			row.flooded.sent,
			if row.flooded.stalled { " (stalled)" } else { " (all)" },
			row.grew_kib as f64 / 1024.0,
		);
	}
	Ok(())
}

fn measure(binary: &std::path::Path, mode: Mode, args: &Args) -> Result<Row, String> {
	let mut launch = Launch::new(binary).dev().arg("--tmp").loopback();
	if mode == Mode::Unbounded {
		let most = u32::MAX.to_string();
		launch = launch.args([
			"--rpc-max-calls-in-flight-per-connection",
			most.as_str(),
			"--rpc-max-answer-bytes-per-connection",
			most.as_str(),
		]);
	}
	let node = launch.start().map_err(|err| err.to_string())?;
	let port = node.rpc_port();
	let mut probe = ws::connect(port).map_err(|err| err.to_string())?;
	probe.set_read_timeout(Some(Duration::from_secs(60))).map_err(|err| err.to_string())?;
	let alone = probes(&mut probe, args.probes)?;
	let before = procfs::status_kib(node.pid(), "RssAnon");
	let peak = procfs::RssPeak::start(node.pid(), Duration::from_millis(100));
	let mut flood_socket = ws::connect(port).map_err(|err| err.to_string())?;
	let requests = args.requests;
	let flood = std::thread::spawn(move || {
		let flooded = ws::flood(&mut flood_socket, HEALTH, requests, STALL, |_| {});
		flooded.map(|flooded| (flooded, flood_socket))
	});
	// Give the flood a head start, so that the probe runs beside a full queue.
	std::thread::sleep(Duration::from_secs(1));
	let during = probes(&mut probe, args.probes)?;
	let (flooded, flood_socket) = flood
		.join()
		.map_err(|_| "the flood thread panicked".to_string())?
		.map_err(|err| err.to_string())?;
	let after = probes(&mut probe, args.probes)?;
	let grew_kib = peak.finish().saturating_sub(before);
	drop(flood_socket);
	node.kill().map_err(|err| err.to_string())?;
	Ok(Row { mode, alone, during, after, flooded, grew_kib })
}

/// `count` `system_health` round trips over `probe`, one after another.
fn probes(probe: &mut TcpStream, count: usize) -> Result<Latency, String> {
	let mut times = Vec::with_capacity(count);
	let frame = ws::text(HEALTH);
	for _ in 0..count {
		let started = Instant::now();
		std::io::Write::write_all(probe, &frame).map_err(|err| format!("probe write: {err}"))?;
		let payload = ws::read_text(probe).map_err(|err| format!("probe read: {err}"))?;
		if !String::from_utf8_lossy(&payload).contains("\"peers\"") {
			return Err(format!("system_health answered {}", String::from_utf8_lossy(&payload)));
		}
		times.push(started.elapsed());
	}
	Latency::of(times).ok_or_else(|| "no probe ran".to_string())
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"rpc_flood",
			"rpc_flood --modes bounded --requests 1000000 --probes 2000",
		]);
		assert_eq!(
			parse_line::<Args>("rpc_flood").unwrap().modes,
			[Mode::Bounded, Mode::Unbounded]
		);
		assert!(parse_line::<Args>("rpc_flood --modes fast").is_err());
	}
}
