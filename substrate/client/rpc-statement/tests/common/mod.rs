//! The fixture the crate's tests share: a real store in a temporary directory.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use statement_primitives::StatementAllowance;
use statement_store::{Config, MapAllowances, Store};
use std::{sync::Arc, time::Instant};

/// A directory under the system's temporary directory, removed when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
	/// A fresh path for the test `name`.
	pub fn new(name: &str) -> TempDir {
		let path = std::env::temp_dir().join(format!(
			"statement-rpc-{name}-{}-{:?}",
			std::process::id(),
			Instant::now()
		));
		TempDir(path)
	}
}

impl Drop for TempDir {
	fn drop(&mut self) {
		let _ = std::fs::remove_dir_all(&self.0);
	}
}

/// A store in `dir` that admits anyone, without syncing its log.
pub fn open(dir: &TempDir) -> Store {
	open_with_budget(dir, statement_store::DEFAULT_SUBSCRIPTION_BUDGET_BYTES)
}

/// [`open`], its subscriptions together given `budget` bytes of memory.
pub fn open_with_budget(dir: &TempDir, budget: usize) -> Store {
	let allowances = MapAllowances::new().with_default(StatementAllowance::new(10_000, 1 << 26));
	let mut config = Config::new(&dir.0);
	config.sync_wal = false;
	config.subscription_budget_bytes = budget;
	Store::open(config, Arc::new(allowances)).unwrap()
}
