//! `statement-node`: the statement store behind JSON-RPC, with Substrate's CLI conventions.
//!
//! ```sh
//! cargo run --release -p statement-node -- --dev
//! ```

mod chain_spec;
mod cli;
mod database;
mod prometheus;
mod rpc;
mod service;
mod sign;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
	let cli = Cli::parse();
	init_logging(&cli.run.log);
	install_panic_hook();
	let result = match &cli.subcommand {
		Some(Command::BuildSpec { chain, .. }) => chain_spec::ChainSpec::load(chain)
			.map(|spec| println!("{}", spec.to_json()))
			.map_err(|err| err.to_string()),
		Some(Command::Sign(cmd)) => sign::run(cmd),
		Some(Command::CheckDb(cmd)) => database::check(cmd),
		Some(Command::Repair(cmd)) => database::repair(cmd),
		None => service::run(cli.run),
	};
	match result {
		Ok(()) => ExitCode::SUCCESS,
		Err(message) => {
			log::error!("{message}");
			eprintln!("Error: {message}");
			ExitCode::FAILURE
		}
	}
}

/// `info` by default; each `-l` adds comma-separated `target=level` or `level` directives.
fn init_logging(filters: &[String]) {
	let mut builder = env_logger::Builder::new();
	builder.filter_level(log::LevelFilter::Info);
	builder.filter_module("jsonrpsee", log::LevelFilter::Warn);
	for directive in filters.iter().flat_map(|filter| filter.split(',')) {
		builder.parse_filters(directive.trim());
	}
	builder.format_timestamp_millis();
	let _ = builder.try_init();
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
