//! The fixture the crate's tests share: a real store in a temporary directory.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use statement_store::{Config, Store};
use statement_test_support::store::open_admitting_with;

pub use tempfile::TempDir;

/// A fresh temporary directory for a store.
pub fn dir() -> TempDir {
	tempfile::tempdir().expect("a temporary directory")
}

/// A store in `dir` that admits anyone, without syncing its log.
pub fn open(dir: &TempDir) -> Store {
	open_with_budget(dir, statement_store::DEFAULT_SUBSCRIPTION_BUDGET_BYTES)
}

/// [`open`], its subscriptions together given `budget` bytes of memory.
pub fn open_with_budget(dir: &TempDir, budget: usize) -> Store {
	let mut config = Config::new(dir.path());
	config.sync_wal = false;
	config.subscription_budget_bytes = budget;
	open_admitting_with(config)
}
