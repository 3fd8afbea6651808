//! The `statement-node` binary to run: the one `STATEMENT_NODE_BIN` names, or the one this
//! repository builds, looked up once per process.

use crate::{Error, Result};
use std::{
	path::{Path, PathBuf},
	process::Command,
	sync::OnceLock,
};

/// Environment variable naming a prebuilt `statement-node` to run instead.
pub const BINARY_ENV: &str = "STATEMENT_NODE_BIN";

/// The node for tests outside the node's own package (interop, zombienet): [`BINARY_ENV`]
/// if set, else `cargo build -p statement-node` (debug profile) on this repository, found
/// where cargo reports its target directory. The first call builds; later calls, from any
/// thread, reuse the answer.
pub fn statement_node() -> Result<&'static Path> {
	static BINARY: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
	BINARY
		.get_or_init(|| locate_or_build().map_err(String::from))
		.as_deref()
		.map_err(|err| Error::new(format!("no statement-node binary: {err}")))
}

fn locate_or_build() -> Result<PathBuf> {
	if let Some(named) = std::env::var_os(BINARY_ENV) {
		let path = PathBuf::from(&named);
		return std::fs::canonicalize(&path)
			.map_err(|err| Error::new(format!("{BINARY_ENV}={}: {err}", path.display())));
	}
	build()
}

/// The repository's workspace manifest: this crate sits at its root.
fn manifest() -> PathBuf {
	Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml")
}

fn build() -> Result<PathBuf> {
	let manifest = manifest();
	let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
	let status = Command::new(&cargo)
		.args(["build", "-p", "statement-node", "--manifest-path"])
		.arg(&manifest)
		.status()
		.map_err(|err| Error::new(format!("cannot run cargo: {err}")))?;
	if !status.success() {
		return Err(Error::new(format!("`cargo build -p statement-node` failed: {status}")));
	}
	let metadata = Command::new(&cargo)
		.args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
		.arg(&manifest)
		.output()
		.map_err(|err| Error::new(format!("cannot run cargo metadata: {err}")))?;
	if !metadata.status.success() {
		return Err(Error::new(format!(
			"cargo metadata failed: {}",
			String::from_utf8_lossy(&metadata.stderr)
		)));
	}
	let metadata: serde_json::Value = serde_json::from_slice(&metadata.stdout)
		.map_err(|err| Error::new(format!("cargo metadata printed no JSON: {err}")))?;
	let target = metadata["target_directory"]
		.as_str()
		.ok_or_else(|| Error::new("cargo metadata names no target_directory"))?;
	let binary = Path::new(target).join("debug").join("statement-node");
	if !binary.is_file() {
		return Err(Error::new(format!(
			"cargo built statement-node, but {} is not there",
			binary.display()
		)));
	}
	Ok(binary)
}

/// The node for a harness built in `profile` (`release` for the benchmarks): `explicit` if
/// given, else [`BINARY_ENV`], else `statement-node` beside the running executable, in
/// `$CARGO_TARGET_DIR/<profile>` or in `target/<profile>`, whichever exists first. Never
/// builds: a benchmark must not time a build.
pub fn beside_harness(explicit: Option<PathBuf>, profile: &str) -> Result<PathBuf> {
	if let Some(path) = explicit.or_else(|| std::env::var_os(BINARY_ENV).map(PathBuf::from)) {
		return Ok(path);
	}
	let mut tried = Vec::new();
	if let Ok(exe) = std::env::current_exe() {
		tried.push(exe.with_file_name("statement-node"));
	}
	if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
		tried.push(PathBuf::from(target).join(profile).join("statement-node"));
	}
	tried.push(PathBuf::from("target").join(profile).join("statement-node"));
	if let Some(found) = tried.iter().find(|path| path.is_file()) {
		return Ok(found.clone());
	}
	let tried: Vec<String> = tried.iter().map(|path| path.display().to_string()).collect();
	Err(Error::new(format!(
		"no statement-node at {}: build it (`cargo build --{profile} -p statement-node`) or \
		 name it with --node PATH or {BINARY_ENV}",
		tried.join(", ")
	)))
}
