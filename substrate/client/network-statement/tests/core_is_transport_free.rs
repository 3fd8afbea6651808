//! The gossip core, the peerset and the wire formats know no transport, thread or clock: every
//! path in their code (not only `use` lines; comments aside) is checked against what a
//! simulator or another host could not provide. A driver feeds them events and the time.

use std::path::{Path, PathBuf};

/// Paths the transport-free parts may not name.
const FORBIDDEN: &[&str] = &[
	"litep2p",
	"tokio",
	"futures",
	"std::thread",
	"thread::spawn",
	"std::net",
	"std::fs",
	"Instant",
	"SystemTime",
	"crate::driver",
	"crate::interest",
	"spawn_blocking",
];

fn files(root: &Path, relative: &[&str]) -> Vec<PathBuf> {
	let mut found = Vec::new();
	for name in relative {
		let path = root.join(name);
		if path.is_dir() {
			for entry in std::fs::read_dir(&path).unwrap() {
				let entry = entry.unwrap().path();
				// A module's unit tests (`tests.rs`) may use what they like.
				let is_tests = entry.file_name().is_some_and(|name| name == "tests.rs");
				if entry.extension().is_some_and(|extension| extension == "rs") && !is_tests {
					found.push(entry);
				}
			}
		} else {
			found.push(path);
		}
	}
	found.sort();
	found
}

/// The code of a line, without its `//` comment (strings holding `//` do not occur here).
fn code(line: &str) -> &str {
	line.split("//").next().unwrap_or("")
}

#[test]
fn the_core_peerset_and_wire_name_no_transport_thread_or_clock() {
	let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
	let checked = files(&src, &["core", "peerset.rs", "wire", "affinity.rs", "rate.rs"]);
	assert!(checked.len() >= 10, "found only {checked:?}");
	let mut offences = Vec::new();
	for path in &checked {
		let text = std::fs::read_to_string(path).unwrap();
		// The core's unit tests may use what they like; the checked code ends where they start.
		let body = text.split("#[cfg(test)]").next().unwrap_or("");
		for (number, line) in body.lines().enumerate() {
			for word in FORBIDDEN {
				if code(line).contains(word) {
					offences.push(format!(
						"{}:{}: {word}: {}",
						path.display(),
						number + 1,
						line.trim()
					));
				}
			}
		}
	}
	assert!(
		offences.is_empty(),
		"transport, thread or clock in the core:\n{}",
		offences.join("\n")
	);
}
