//! `statement-node`: the statement store behind JSON-RPC, with Substrate's CLI conventions.
//!
//! ```sh
//! cargo run --release -p statement-node -- --dev
//! ```
//!
//! The node only wires parts together; each module is one of them:
//!
//! ```text
//! cli --RunCmd--> service --chain--> chain_spec   (allowances, database id)
//!                    |    --path---> database     (base path -> chains/<id>/statements)
//!                    |    --path---> keystore     (chains/<id>/keystore; the decryptor)
//!                    |    --Config-> statement-store: Store::open, maintenance every 30 s
//!                    |                  | Store handles
//!                    |                  +--> network --> statement-network (gossip over litep2p)
//!                    |                  +--> rpc --> statement-rpc + chain_*/state_*/system_*
//!                    |                  |            + author_*Key, served by statement-rpc-server
//!                    |                  |            (connection limits, origin checks, /health)
//!                    |                  +--> prometheus --> GET /metrics (store + gossip values)
//!                    +-- SIGINT/SIGTERM: stop rpc, maintenance, metrics; the store closes
//! cli --build-spec--> chain_spec      cli --sign--> sign      cli --check-db/repair--> database
//! every part --error::Error--> main, which prints it once and exits non-zero
//! ```
//!
//! - `cli`: flags and subcommands, with Substrate's names.
//! - `service`: runs the node: opens the store, starts maintenance, RPC and metrics, waits
//!   for a signal, then shuts them down in order.
//! - `chain_spec`: the built-in `dev` and `local` specs and JSON files; genesis allowances.
//! - `database`: where the database lives under the base path; `check-db` and `repair`.
//! - `keystore`: the statement keys `statement_postedClear` decrypts with, in Substrate's
//!   keystore layout; `author_insertKey` adds to it.
//! - `network`: flags to `statement-network`'s config; the node key under the base path.
//! - `rpc`: the node's JSON-RPC methods: the statement methods, the genesis-only
//!   `chain_*`/`state_*`/`system_*` surface standard clients probe, and keystore methods,
//!   served over HTTP and WebSocket on one port by `statement-rpc-server` (origin checks,
//!   `/health`, connection limits and timeouts).
//! - `prometheus`: the metrics endpoint, and the one renderer of Prometheus' text format: the
//!   store and gossip hand out values, the node writes them.
//! - `heap`: the allocator's own figures of the heap, for `/metrics`.
//! - `sign`: builds and signs a statement for `statement_submit`, its data in the clear or
//!   encrypted to a statement key.
//! - `error`: the one error type; every command returns it and `main` prints it once.

mod chain_spec;
mod cli;
mod database;
mod error;
mod grant;
mod heap;
mod keystore;
mod network;
mod prometheus;
mod rpc;
mod service;
mod sign;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

// jemalloc by default: under a million submits over WebSocket it took 9% more a second than
// glibc's allocator with the same memory, where mimalloc held 2.8x the memory (benches/HISTORY.md).
#[cfg(all(feature = "jemalloc", unix))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "mimalloc", not(all(feature = "jemalloc", unix))))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
	let cli = Cli::parse();
	init_logging(&cli.run.log);
	install_panic_hook();
	let result = match &cli.subcommand {
		Some(Command::BuildSpec(cmd) | Command::ExportChainSpec(cmd)) => {
			chain_spec::ChainSpec::load(&cmd.chain)
				.and_then(|mut spec| {
					spec.grant(&cmd.grants()?);
					spec.to_json()
				})
				.map(|json| println!("{json}"))
		}
		Some(Command::Sign(cmd)) => sign::run(cmd),
		Some(Command::CheckDb(cmd)) => database::check(cmd),
		Some(Command::Repair(cmd)) => database::repair(cmd),
		None => service::run(cli.run),
	};
	match result {
		Ok(()) => ExitCode::SUCCESS,
		Err(err) => {
			// Once, on stderr directly: the log may be filtered off, and both would repeat it.
			eprintln!("Error: {err}");
			ExitCode::FAILURE
		}
	}
}

/// `info` by default; each `-l` adds comma-separated `target=level` or `level` directives.
fn init_logging(filters: &[String]) {
	let mut builder = env_logger::Builder::new();
	builder.filter_level(log::LevelFilter::Info);
	builder.filter_module("jsonrpsee", log::LevelFilter::Warn);
	// litep2p warns "transport service closed" on every clean stop, when its transport goes
	// before the protocol tasks, and identify warns "transport service stream ended" for the
	// same reason (its only other warning is a harmless race as a connection closes); other
	// warnings stay.
	builder.filter_module("litep2p::transport-service", log::LevelFilter::Error);
	builder.filter_module("litep2p::ipfs::identify", log::LevelFilter::Error);
	for directive in filters.iter().flat_map(|filter| filter.split(',')) {
		builder.parse_filters(directive.trim());
	}
	builder.format_timestamp_millis();
	// Fails only if a logger is already installed; then that one is used and this is noise.
	if let Err(err) = builder.try_init() {
		eprintln!("warning: logging not configured: {err}");
	}
}

/// Report a panic as one error line in the log instead of a trace. The store catches
/// parity-db's panics on damaged files and answers with an error; this covers the rest.
fn install_panic_hook() {
	std::panic::set_hook(Box::new(|info| {
		let message = info
			.payload()
			.downcast_ref::<&str>()
			.map(|text| text.to_string())
			.or_else(|| info.payload().downcast_ref::<String>().cloned())
			.unwrap_or_default();
		let at = info.location().map(|at| format!(" at {at}")).unwrap_or_default();
		log::error!(
			"internal error{at}: {message}. If the database was damaged, stop the node and run \
			 `statement-node check-db`."
		);
	}));
}
