//! Where the conformance vector files are, for every test that reads one.

use serde_json::Value;
use std::path::PathBuf;

/// `shared/conformance/<file>` above this crate (the layout CI uses), or the file named by the
/// environment variable `env`; a clear panic naming both if neither is there.
pub fn vectors_path(env: &str, file: &str) -> PathBuf {
	if let Some(path) = std::env::var_os(env) {
		return PathBuf::from(path);
	}
	let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
	let wanted = format!("shared/conformance/{file}");
	manifest
		.ancestors()
		.map(|dir| dir.join(&wanted))
		.find(|candidate| candidate.is_file())
		.unwrap_or_else(|| {
			panic!("no {wanted} above {}; set {env} to the file", manifest.display())
		})
}

/// The JSON in the vector file [`vectors_path`] finds.
pub fn read_vectors(env: &str, file: &str) -> Value {
	let path = vectors_path(env, file);
	let text = std::fs::read_to_string(&path)
		.unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
	serde_json::from_str(&text)
		.unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()))
}
