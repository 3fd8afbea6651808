//! The node the harnesses run: the workspace's launcher (`statement-test-support`), and the
//! binary looked up where a release harness expects it.

use std::path::PathBuf;

pub use statement_test_support::node::{Launch, Node, Ready};

/// `--node` if given, else `STATEMENT_NODE_BIN`, else `statement-node` beside this executable,
/// in `$CARGO_TARGET_DIR/release` or in `target/release`; never built here, so that no
/// benchmark times a build.
pub fn binary(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
	statement_test_support::binary::beside_harness(explicit, "release").map_err(String::from)
}
