//! The store's database on disk: where it lives, and the `check-db` and `repair` commands.

use crate::{chain_spec::ChainSpec, cli::DbCmd};
use statement_store::Config;
use std::path::{Path, PathBuf};

/// `~/.local/share/statement-node`, Substrate's layout for this binary.
pub fn default_base_path() -> PathBuf {
	let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
	home.join(".local/share/statement-node")
}

/// The database directory of chain `spec` under `base`.
pub fn path(base: &Path, spec: &ChainSpec) -> PathBuf {
	base.join("chains").join(&spec.id).join("statements")
}

fn config(cmd: &DbCmd) -> Result<Config, String> {
	let spec = ChainSpec::load(&cmd.chain).map_err(|err| err.to_string())?;
	let base = cmd.base_path.clone().unwrap_or_else(default_base_path);
	let db = path(&base, &spec);
	if !db.join("metadata").is_file() {
		return Err(format!("no statement database at {}", db.display()));
	}
	Ok(Config::new(db))
}

/// `statement-node check-db`: verify every statement and index; fails if anything is wrong.
pub fn check(cmd: &DbCmd) -> Result<(), String> {
	let config = config(cmd)?;
	let shown = config.path.display().to_string();
	log::info!("Checking {shown}");
	let report = statement_store::check(config).map_err(|err| err.to_string())?;
	for problem in &report.problems {
		println!("{problem}");
	}
	if report.is_clean() {
		println!("{shown}: {} statements, no problems", report.statements);
		return Ok(());
	}
	Err(format!(
		"{shown}: {} problems in {} statements{}; `statement-node repair` rebuilds the indexes \
		 from the intact statements",
		report.problem_count,
		report.statements,
		if report.problem_count > report.problems.len() as u64 {
			" (first ones above)"
		} else {
			""
		}
	))
}

/// `statement-node repair`: rebuild the database from its intact statements.
pub fn repair(cmd: &DbCmd) -> Result<(), String> {
	let config = config(cmd)?;
	let shown = config.path.display().to_string();
	log::info!("Repairing {shown}");
	let report = statement_store::repair(config).map_err(|err| err.to_string())?;
	println!(
		"{shown}: rebuilt with {} statements; {} left out, listed in {}; the database as it was \
		 is kept at {}",
		report.kept,
		report.removed,
		report.removed_file.display(),
		report.previous.display()
	);
	Ok(())
}
