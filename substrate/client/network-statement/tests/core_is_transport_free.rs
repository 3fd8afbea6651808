//! The gossip core, the peerset, the wire formats and the router know no transport, thread or
//! clock: every path in their code (not only `use` lines; comments aside) is checked against what a
//! simulator or another host could not provide. A driver feeds them events and the time.
//!
//! The whole of each file is read. Only items behind `#[cfg(test)]` are left out, each to its
//! own end (a `mod tests;` declaration, or a `mod tests { .. }` block matched brace for
//! brace), so code after an early test declaration is checked like any other. The checker
//! itself is tested below on planted faults, one of them in a copy of the real core.

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

/// The attribute whose item is test code, which may use what it likes.
const TEST_ONLY: &str = "#[cfg(test)]";

/// The transport-free parts, relative to `src/`: folders are read whole but for their unit
/// test files (`tests.rs`).
const CHECKED: &[&str] =
	&["core", "peerset.rs", "wire", "affinity.rs", "rate.rs", "routing", "routing/router"];

fn files(root: &Path, relative: &[&str]) -> Vec<PathBuf> {
	let mut found = Vec::new();
	for name in relative {
		let path = root.join(name);
		if path.is_dir() {
			for entry in std::fs::read_dir(&path).unwrap() {
				let entry = entry.unwrap().path();
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

/// `text` with its comments blanked out (newlines kept, so line numbers hold). String
/// literals are kept: a forbidden name inside one is reported too, which errs on the strict
/// side.
fn without_comments(text: &str) -> Vec<u8> {
	let bytes = text.as_bytes();
	let mut out = bytes.to_vec();
	let mut at = 0;
	let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
		for byte in &mut out[from..to] {
			if *byte != b'\n' {
				*byte = b' ';
			}
		}
	};
	while at < bytes.len() {
		if bytes[at..].starts_with(b"//") {
			let end = bytes[at..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| at + n);
			blank(&mut out, at, end);
			at = end;
		} else if bytes[at..].starts_with(b"/*") {
			let end = text[at + 2..].find("*/").map_or(bytes.len(), |n| at + 2 + n + 2);
			blank(&mut out, at, end);
			at = end;
		} else {
			at += 1;
		}
	}
	out
}

/// Where the item that starts at `from` ends: after its `;` if it has no body, else after the
/// `}` that closes its body. Attributes (`#[..]`) before it are part of it.
fn item_end(code: &[u8], mut from: usize) -> usize {
	let mut depth = 0usize;
	let mut brackets = 0usize;
	while from < code.len() {
		match code[from] {
			b'[' => brackets += 1,
			b']' => brackets = brackets.saturating_sub(1),
			b'{' if brackets == 0 => depth += 1,
			b'}' if brackets == 0 => {
				depth = depth.saturating_sub(1);
				if depth == 0 {
					return from + 1;
				}
			}
			b';' if depth == 0 && brackets == 0 => return from + 1,
			_ => {}
		}
		from += 1;
	}
	code.len()
}

/// The code of `text` that must be transport-free: comments and `#[cfg(test)]` items blanked.
fn checked_code(text: &str) -> String {
	let mut code = without_comments(text);
	let mut search = 0;
	while let Some(found) = find(&code[search..], TEST_ONLY.as_bytes()) {
		let start = search + found;
		let end = item_end(&code, start + TEST_ONLY.len());
		for byte in &mut code[start..end] {
			if *byte != b'\n' {
				*byte = b' ';
			}
		}
		search = end;
	}
	String::from_utf8_lossy(&code).into_owned()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
	haystack.windows(needle.len()).position(|window| window == needle)
}

/// Every forbidden name in `text`, as `name:line: word: code`.
fn offences(name: &str, text: &str) -> Vec<String> {
	let mut found = Vec::new();
	for (number, line) in checked_code(text).lines().enumerate() {
		for word in FORBIDDEN {
			if line.contains(word) {
				found.push(format!("{name}:{}: {word}: {}", number + 1, line.trim()));
			}
		}
	}
	found
}

/// Lines of `text` the check reads as code (not blank after comments and test items).
fn lines_checked(text: &str) -> usize {
	checked_code(text).lines().filter(|line| !line.trim().is_empty()).count()
}

#[test]
fn the_core_peerset_and_wire_name_no_transport_thread_or_clock() {
	let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
	let checked = files(&src, CHECKED);
	assert!(checked.len() >= 10, "found only {checked:?}");
	let mut all = Vec::new();
	let mut code_lines = 0;
	for path in &checked {
		let text = std::fs::read_to_string(path).unwrap();
		code_lines += lines_checked(&text);
		all.extend(offences(&path.display().to_string(), &text));
	}
	assert!(all.is_empty(), "transport, thread or clock in the core:\n{}", all.join("\n"));
	// The parts hold well over a thousand lines of code; a reader that stops early reads a few dozen.
	assert!(code_lines > 1_000, "only {code_lines} lines of code read in {checked:?}");
}

#[test]
fn code_after_an_early_test_declaration_is_checked() {
	let planted = "mod peer;\n#[cfg(test)]\nmod tests;\nmod time;\n\nuse tokio::sync::mpsc;\n";
	let found = offences("planted.rs", planted);
	assert_eq!(found.len(), 1, "{found:?}");
	assert!(found[0].starts_with("planted.rs:6: tokio"), "{found:?}");
}

#[test]
fn a_test_module_is_left_out_to_its_closing_brace_and_no_further() {
	let planted = "fn a() {}\n#[cfg(test)]\nmod tests {\n\tuse tokio::time;\n\t#[test]\n\tfn \
	               t() { let _ = std::time::Instant::now(); }\n}\nfn b() { std::thread::spawn(|| \
	               {}); }\n";
	let found = offences("planted.rs", planted);
	assert_eq!(found.len(), 2, "{found:?}");
	assert!(found.iter().all(|offence| offence.starts_with("planted.rs:8: ")), "{found:?}");
}

#[test]
fn comments_are_not_code_but_code_after_a_comment_is() {
	let planted = "// tokio is not used here\n/* nor Instant */ use litep2p::Foo;\n";
	let found = offences("planted.rs", planted);
	assert_eq!(found, ["planted.rs:2: litep2p: use litep2p::Foo;"]);
}

#[test]
fn a_clock_planted_in_the_real_core_after_its_test_declaration_is_found() {
	let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core/mod.rs");
	let real = std::fs::read_to_string(&path).unwrap();
	assert!(offences("core/mod.rs", &real).is_empty());
	// Below the `mod tests;` declaration, where the old check stopped reading.
	let declaration = real.find("mod tests;").expect("core/mod.rs declares its tests");
	let after = declaration + "mod tests;".len();
	let planted = format!("{}\nuse std::time::Instant;{}", &real[..after], &real[after..]);
	let found = offences("core/mod.rs", &planted);
	assert_eq!(found.len(), 1, "{found:?}");
	let line = planted[..after].lines().count() + 1;
	assert!(found[0].starts_with(&format!("core/mod.rs:{line}: Instant")), "{found:?}");
	// And at the very end of the file.
	let at_end = format!("{real}\nfn later() {{ let _ = tokio::spawn(async {{}}); }}\n");
	assert_eq!(offences("core/mod.rs", &at_end).len(), 1);
}
