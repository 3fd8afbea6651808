//! Fixtures for tests of code that links the store (feature `testing`, and this crate's own
//! unit tests): allowances that admit every account, and stores opened on them.

use crate::{allowance::MapAllowances, config::Config, store::Store};
use statement_primitives::StatementAllowance;
use std::{path::Path, sync::Arc};

/// Allowances that give every account `count` statements and `size` data bytes.
pub fn admitting(count: u32, size: u32) -> Arc<MapAllowances> {
	Arc::new(MapAllowances::new().with_default(StatementAllowance::new(count, size)))
}

/// A store in `dir` with the default configuration that admits every account
/// ([`MapAllowances::unlimited`]: the store's own limits still hold); panics if it cannot
/// open, as a fixture should.
pub fn open_admitting(dir: &Path) -> Store {
	open_admitting_with(Config::new(dir))
}

/// A store opened with `config` that admits every account.
pub fn open_admitting_with(config: Config) -> Store {
	let path = config.path.display().to_string();
	Store::open(config, Arc::new(MapAllowances::unlimited()))
		.unwrap_or_else(|err| panic!("the store in {path} opens: {err}"))
}
