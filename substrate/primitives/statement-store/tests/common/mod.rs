//! Where the conformance vector files are, for every test that reads one.

use serde_json::Value;
use std::path::PathBuf;

/// The vector file `file`: the one the environment variable `env` names, else this crate's
/// copy in `tests/vectors/` (made by the upstream crates, kept in the repository so that a
/// fresh clone tests on its own).
pub fn vectors_path(env: &str, file: &str) -> PathBuf {
	if let Some(path) = std::env::var_os(env) {
		return PathBuf::from(path);
	}
	let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors").join(file);
	assert!(path.is_file(), "no {}; set {env} to the file", path.display());
	path
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
