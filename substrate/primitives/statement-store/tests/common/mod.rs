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

/// The bytes of a `0x`-hex string in a vector file.
pub fn bytes(value: &Value) -> Vec<u8> {
	let text = value.as_str().unwrap_or_else(|| panic!("expected a hex string, got {value}"));
	hex::decode(text.trim_start_matches("0x")).unwrap_or_else(|err| panic!("bad hex {text}: {err}"))
}

/// The 32 bytes of a `0x`-hex string in a vector file.
pub fn array32(value: &Value) -> [u8; 32] {
	bytes(value).try_into().unwrap_or_else(|_| panic!("expected 32 bytes, got {value}"))
}
