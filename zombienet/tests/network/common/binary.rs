//! The `statement-node` binary under test: the one the workspace's test support finds or
//! builds once per test run (`STATEMENT_NODE_BIN`, or `cargo build -p statement-node`).

use anyhow::{bail, Result};
use std::path::Path;

/// The node binary's absolute path, as zombienet can run it.
pub fn node_binary() -> Result<&'static Path> {
	let binary = statement_test_support::binary::statement_node()?;
	// zombienet splits its command line on whitespace.
	if binary.to_string_lossy().contains(char::is_whitespace) {
		bail!("{} contains whitespace, which zombienet cannot run", binary.display());
	}
	Ok(binary)
}
