//! The `statement-node` binary under test: built once per test run from this repository, or
//! the one `STATEMENT_NODE_BIN` names.

use anyhow::{anyhow, bail, Context, Result};
use std::{
	path::{Path, PathBuf},
	process::Command,
	sync::OnceLock,
};

/// Environment variable naming a prebuilt `statement-node` to test instead of building one.
pub const BINARY_ENV: &str = "STATEMENT_NODE_BIN";

/// The node binary's absolute path. The first call runs `cargo build -p statement-node` on
/// the repository's workspace (debug profile, `CARGO_TARGET_DIR` from the environment) unless
/// [`BINARY_ENV`] names a binary; later calls reuse the answer.
pub fn node_binary() -> Result<&'static Path> {
	static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
	BINARY
		.get_or_init(|| locate_or_build().map_err(|err| format!("{err:#}")))
		.as_deref()
		.map_err(|err| anyhow!("no statement-node binary: {err}"))
}

fn locate_or_build() -> Result<PathBuf> {
	let binary = match std::env::var_os(BINARY_ENV) {
		Some(named) => std::fs::canonicalize(&named)
			.with_context(|| format!("{BINARY_ENV}={}", Path::new(&named).display()))?,
		None => build()?,
	};
	// zombienet splits its command line on whitespace.
	if binary.to_string_lossy().contains(char::is_whitespace) {
		bail!("{} contains whitespace, which zombienet cannot run", binary.display());
	}
	Ok(binary)
}

/// Builds the node with the cargo running these tests, and finds it in the target directory
/// cargo itself reports (which honours `CARGO_TARGET_DIR`).
fn build() -> Result<PathBuf> {
	let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
	let manifest = std::fs::canonicalize(&manifest)
		.with_context(|| format!("the repository manifest {}", manifest.display()))?;
	let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
	let status = Command::new(&cargo)
		.args(["build", "-p", "statement-node", "--manifest-path"])
		.arg(&manifest)
		.status()
		.context("cannot run cargo to build statement-node")?;
	if !status.success() {
		bail!("`cargo build -p statement-node` failed: {status}");
	}
	let metadata = Command::new(&cargo)
		.args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
		.arg(&manifest)
		.output()
		.context("cannot run cargo metadata")?;
	if !metadata.status.success() {
		bail!("cargo metadata failed: {}", String::from_utf8_lossy(&metadata.stderr));
	}
	let metadata: serde_json::Value =
		serde_json::from_slice(&metadata.stdout).context("cargo metadata printed no JSON")?;
	let target = metadata["target_directory"]
		.as_str()
		.ok_or_else(|| anyhow!("cargo metadata names no target_directory"))?;
	let binary = Path::new(target).join("debug").join("statement-node");
	if !binary.is_file() {
		bail!("cargo built statement-node, but {} is not there", binary.display());
	}
	Ok(binary)
}
