//! The store's database on disk: where it lives, and the `check-db` and `repair` commands.

use crate::{chain_spec::ChainSpec, cli::DbCmd, error::Error};
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

fn config(cmd: &DbCmd) -> Result<Config, Error> {
	let spec = ChainSpec::load(&cmd.chain)?;
	let base = cmd.base_path.clone().unwrap_or_else(default_base_path);
	let db = path(&base, &spec);
	if !db.join("metadata").is_file() {
		return Err(Error::NoDatabase { path: db });
	}
	Ok(Config::new(db))
}

/// `statement-node check-db`: verify every statement and index; fails if anything is wrong.
pub fn check(cmd: &DbCmd) -> Result<(), Error> {
	let config = config(cmd)?;
	let db = config.path.clone();
	let shown = db.display().to_string();
	log::info!("Checking {shown}");
	let report = statement_store::check(config).map_err(|err| Error::opening(err, db.clone()))?;
	for problem in &report.problems {
		println!("{problem}");
	}
	if report.is_clean() {
		println!("{shown}: {} statements, no problems", report.statements);
		return Ok(());
	}
	Err(Error::DatabaseDamaged {
		path: db,
		problems: report.problem_count,
		statements: report.statements,
		truncated: report.problem_count > report.problems.len() as u64,
	})
}

/// `statement-node repair`: rebuild the database from its intact statements.
pub fn repair(cmd: &DbCmd) -> Result<(), Error> {
	let config = config(cmd)?;
	let db = config.path.clone();
	let shown = db.display().to_string();
	log::info!("Repairing {shown}");
	let report = statement_store::repair(config).map_err(|err| Error::opening(err, db))?;
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
