//! `statement-node`: the statement store behind JSON-RPC, with Substrate's CLI conventions.
//!
//! ```sh
//! cargo run --release -p statement-node -- --dev
//! ```

mod chain_spec;
mod cli;
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
	let result = match &cli.subcommand {
		Some(Command::BuildSpec { chain, .. }) => chain_spec::ChainSpec::load(chain)
			.map(|spec| println!("{}", spec.to_json()))
			.map_err(|err| err.to_string()),
		Some(Command::Sign(cmd)) => sign::run(cmd),
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
