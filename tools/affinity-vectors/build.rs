//! Copies sc-network-statement 0.44.0's `src/affinity.rs` and `src/config.rs` out of cargo's
//! registry (run `cargo fetch` first), leaving out only their inner doc comments, which
//! `include!` cannot take.

use std::{env, fs, path::PathBuf};

fn main() {
	let home = env::var_os("CARGO_HOME")
		.map(PathBuf::from)
		.or_else(|| env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")))
		.expect("CARGO_HOME or HOME");
	let registry = home.join("registry").join("src");
	let source = fs::read_dir(&registry)
		.expect("cargo's registry: run `cargo fetch` first")
		.filter_map(Result::ok)
		.map(|index| index.path().join("sc-network-statement-0.44.0").join("src"))
		.find(|path| path.is_dir())
		.expect("sc-network-statement 0.44.0 in cargo's registry: run `cargo fetch` first");
	let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
	for file in ["affinity.rs", "config.rs"] {
		let text = fs::read_to_string(source.join(file)).expect("readable");
		let kept: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//!")).collect();
		fs::write(out.join(file), kept.join("\n")).expect("writable");
		println!("cargo:rerun-if-changed={}", source.join(file).display());
	}
}
