//! The fault suite: what a full disk, a lower limit after a restart and a clean stop under
//! load must leave behind. (Failed intent-log writes and damaged intent records are tested
//! beside the code, in `batch.rs`, `wal.rs` and `store.rs`, where a write can be made to fail.)

mod common;

use common::*;
use statement_primitives::{Error, Statement, StatementSource, StatementStore, SubmitResult};
use statement_store::Store;
use statement_test_support::privileged::{fill, Tmpfs};
use std::{
	path::{Path, PathBuf},
	process::Command,
	time::{Duration, Instant},
};

/// Needs root, to mount a tmpfs of a fixed size.
mod needs_root {
	use super::*;

	#[test]
	#[ignore = "needs root: mounts a tmpfs; run with --ignored needs_root::"]
	fn a_nearly_full_disk_refuses_new_statements_keeps_serving_and_resumes_by_itself() {
		let tmpfs = Tmpfs::mount(128);
		let clock = TestClock::new();
		let db = tmpfs.path().join("db");
		let mut config = config(&db, &clock);
		config.min_free_bytes = 16 << 20;
		config.checkpoint_bytes = 2 << 20;
		let store = Store::open(config.clone(), allowances(100_000, u32::MAX)).unwrap();
		// On tmpfs parity-db reserves a hash column's whole first index (32 MiB) when the column's
		// first write is applied. Let the body and hash columns' indexes be made before the disk
		// is filled, or they take the space the reserve is measured against all at once (and,
		// when space returns, the rest of it: the database then no longer fits to reopen).
		let first = simple(99, &[3], b"before the disk fills");
		assert_eq!(store.submit(first, StatementSource::Local), SubmitResult::New);
		let deadline = Instant::now() + Duration::from_secs(60);
		let indexes = || {
			let names: Vec<String> = std::fs::read_dir(&db)
				.unwrap()
				.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
				.collect();
			(names.iter().any(|name| name.starts_with("index_01_"))
				&& names.iter().any(|name| name.starts_with("index_02_")))
			.then_some(())
			.ok_or(names)
		};
		while let Err(names) = indexes() {
			assert!(Instant::now() < deadline, "no body and hash index after 60 s: {names:?}");
			std::thread::sleep(Duration::from_millis(20));
		}
		let filler = fill(tmpfs.path(), "filler", 40 << 20);
		let mut accepted = Vec::new();
		let mut refusal = None;
		for n in 0..5_000u32 {
			let statement = simple(n % 64, &[1], &n.to_le_bytes().repeat(4 << 10));
			match store.submit(statement.clone(), StatementSource::Local) {
				SubmitResult::New => {
					accepted.push(statement.hash());
					refusal = None;
				}
				SubmitResult::InternalError(err) => {
					// A full disk is told apart from other failures: RPC answers it as
					// "retry later".
					assert!(matches!(err, Error::DiskFull(_)), "{err:?}");
					// Writes count down an estimate between two measurements, and a measurement
					// may find more room than the estimate: a refusal that outlasts a measurement
					// (every 50 ms) is the disk's.
					if refusal.is_some() {
						break;
					}
					refusal = Some(err.to_string());
					std::thread::sleep(Duration::from_millis(150));
				}
				other => panic!("statement {n}: {other:?}"),
			}
		}
		let refusal = refusal.expect("the disk filled up without a refusal");
		// The reserve's refusal, or, when parity-db's reservation of a new index file took the
		// space faster than the reserve counts (on a tmpfs it reserves whole index files), the
		// write's own: both name the full disk, and nothing is lost either way.
		assert!(refusal.contains("nearly full") || refusal.contains("No space left"), "{refusal}");
		assert!(!accepted.is_empty());
		// Someone else fills the disk further, below half the reserve: still no crash, and the
		// refusal holds however parity-db's and the intent log's files come and go.
		let more = fill(tmpfs.path(), "more", 8 << 20);
		std::thread::sleep(Duration::from_millis(200));
		let refused = simple(5, &[2], b"while the disk is full");
		assert!(matches!(
			store.submit(refused, StatementSource::Local),
			SubmitResult::InternalError(_)
		));
		// Reads go on, and what was accepted is there.
		assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), accepted.len());
		assert!(accepted.iter().all(|hash| store.has_statement(hash)));
		assert!(store.metrics().disk_low);
		// Space returns: submits resume without a restart.
		std::fs::remove_file(filler).unwrap();
		std::fs::remove_file(more).unwrap();
		let deadline = Instant::now() + Duration::from_secs(10);
		let late = simple(7, &[2], b"after the disk was freed");
		loop {
			match store.submit(late.clone(), StatementSource::Local) {
				SubmitResult::New => break,
				SubmitResult::InternalError(_) if Instant::now() < deadline => {
					std::thread::sleep(Duration::from_millis(20))
				}
				other => panic!("after freeing space: {other:?}"),
			}
		}
		assert!(!store.metrics().disk_low);
		drop(store);
		let store = Store::open(config, allowances(100_000, u32::MAX)).unwrap();
		assert_eq!(store.len(), accepted.len() as u64 + 2);
	}
}

#[test]
fn a_restart_with_a_lower_limit_evicts_the_lowest_priority_statements() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	let mut by_expiry = Vec::new();
	for n in 0..100u32 {
		// Expiries in a shuffled order, so eviction must follow them, not admission.
		let statement = expiring(1000 + (n * 37) % 100, n, &[3])
			.data(n.to_le_bytes())
			.signed_ed25519(&ed25519_pair(n % 10));
		by_expiry.push((statement.expiry(), statement.hash()));
		assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
	}
	drop(store);
	let mut config = config(dir.path(), &clock);
	config.max_total_statements = 60;
	let store = Store::open(config.clone(), allowances(1000, 1 << 24)).unwrap();
	assert_eq!(store.len(), 60);
	by_expiry.sort();
	for (rank, (_, hash)) in by_expiry.iter().enumerate() {
		assert_eq!(store.has_statement(hash), rank >= 40, "rank {rank} by expiry");
	}
	assert_eq!(store.broadcasts(&[topic(3)]).unwrap().len(), 60);
	assert_eq!(store.metrics().evicted, 40);
	drop(store);
	let store = Store::open(config, allowances(1000, 1 << 24)).unwrap();
	assert_eq!(store.len(), 60);
}

#[test]
fn a_clean_stop_after_heavy_load_leaves_no_database_log_to_replay() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	for n in 0..5_000u32 {
		let statement = simple(n % 50, &[n % 7], &n.to_le_bytes().repeat(64));
		assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
	}
	drop(store);
	let leftovers: Vec<String> = std::fs::read_dir(dir.path())
		.unwrap()
		.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
		.filter(|name| name.starts_with("log") || name.starts_with("intent-"))
		.collect();
	assert!(leftovers.is_empty(), "left after a clean stop: {leftovers:?}");
	let store = open(dir.path(), &clock);
	assert!(store.reopened_from_snapshot());
	assert_eq!(store.len(), 5_000);
}

/// Flip one byte of `pattern` where it stands in a parity-db table file of column `col`;
/// returns the file.
fn flip_in_table(dir: &Path, col: u8, pattern: &[u8]) -> PathBuf {
	for entry in std::fs::read_dir(dir).unwrap() {
		let path = entry.unwrap().path();
		let name = path.file_name().unwrap().to_string_lossy().into_owned();
		if !name.starts_with(&format!("table_{col:02}")) {
			continue;
		}
		let mut bytes = std::fs::read(&path).unwrap();
		if let Some(at) = bytes.windows(pattern.len()).position(|window| window == pattern) {
			bytes[at + pattern.len() / 2] ^= 0x01;
			std::fs::write(&path, bytes).unwrap();
			return path;
		}
	}
	panic!("{pattern:?} is in no table file of column {col}");
}

fn damage_data(n: u32) -> Vec<u8> {
	format!("statement number {n:05} of the damage test").into_bytes()
}

/// A store of `count` statements (in a `statements` directory of a temporary one) whose
/// statement 9 has a flipped byte in its body on disk: the temporary directory, the store's,
/// its clock and that statement. It has id 10, which the sampled check at open does not look
/// at, so the store opens and meets the damage on a read.
fn with_a_damaged_body(count: u32) -> (tempfile::TempDir, PathBuf, TestClock, Statement) {
	let parent = tempfile::tempdir().unwrap();
	let dir = parent.path().join("statements");
	let clock = TestClock::new();
	let store = open(&dir, &clock);
	for n in 0..count {
		let statement = simple(n % 20, &[n % 2], &damage_data(n));
		assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
	}
	drop(store);
	flip_in_table(&dir, 1, &damage_data(9));
	(parent, dir, clock, simple(9, &[1], &damage_data(9)))
}

#[test]
fn a_damaged_body_on_disk_is_left_out_of_answers_counted_and_found_by_check() {
	let (_parent, dir, clock, damaged) = with_a_damaged_body(2_000);
	let dir = dir.as_path();
	let store = open(dir, &clock);
	let answer = store.broadcasts(&[topic(1)]).unwrap();
	assert_eq!(answer.len(), 999, "the rest of the answer comes");
	let mut expected: Vec<Vec<u8>> =
		(1..2_000).step_by(2).filter(|n| *n != 9).map(damage_data).collect();
	let mut answer = answer;
	answer.sort();
	expected.sort();
	assert_eq!(answer, expected, "exactly the intact ones, nothing altered");
	assert_eq!(store.statement(&damaged.hash()).unwrap(), None);
	assert_eq!(store.metrics().corrupt, 1);
	// Asked again (now from disk or cache): still left out, counted once.
	store.clear_cache();
	assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), 999);
	assert_eq!(store.metrics().corrupt, 1);
	drop(store);
	let report = statement_store::check(config(dir, &clock)).unwrap();
	assert_eq!(report.problem_count, 1, "{:?}", report.problems);
	assert!(report.problems[0].contains("statement 10: its body does not match its hash"));
	let repaired = statement_store::repair(config(dir, &clock)).unwrap();
	assert_eq!((repaired.kept, repaired.removed), (1999, 1));
	let store = open(dir, &clock);
	assert_eq!(store.len(), 1999);
	assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), 999);
	drop(store);
	assert!(statement_store::check(config(dir, &clock)).unwrap().is_clean());
}

#[test]
fn a_damaged_body_in_an_answer_read_on_helper_threads_is_left_out_and_counted() {
	// 2,500 statements carry topic 1, enough for their bodies to be read ahead.
	let (_parent, dir, clock, _) = with_a_damaged_body(5_000);
	let store = open(&dir, &clock);
	let expected: Vec<Vec<u8>> =
		(1..5_000).step_by(2).filter(|n| *n != 9).map(damage_data).collect();
	assert!(store.broadcasts(&[topic(1)]).unwrap() == expected, "the intact ones, in order");
	assert_eq!(store.metrics().corrupt, 1);
}

#[test]
fn a_damaged_body_holds_up_neither_expiry_nor_removals() {
	// A removal reads what to unindex from the body, so this one cannot be unindexed until
	// `repair`.
	let (_parent, dir, clock, damaged) = with_a_damaged_body(2_000);
	let dir = dir.as_path();
	let store = open(dir, &clock);
	store.remove(&damaged.hash()).unwrap();
	store.remove(&simple(11, &[1], &damage_data(11)).hash()).unwrap();
	assert_eq!(store.len(), 1999, "the intact one went, the damaged one stays");
	clock.set(NOW + 3601);
	let report = store.maintain_for(std::time::Duration::from_secs(600)).unwrap();
	assert_eq!(report.expired, 1998, "every intact statement expired past the damaged one");
	assert_eq!(store.len(), 1);
	assert_eq!(store.broadcasts(&[]).unwrap(), Vec::<Vec<u8>>::new());
	assert_eq!(store.metrics().corrupt, 1);
	drop(store);
	let report = statement_store::check(config(dir, &clock)).unwrap();
	assert_eq!(report.problem_count, 1, "{:?}", report.problems);
	let repaired = statement_store::repair(config(dir, &clock)).unwrap();
	assert_eq!((repaired.kept, repaired.removed), (0, 1));
	assert_eq!(open(dir, &clock).len(), 0);
}

const FLIP_VAR: &str = "STATEMENT_STORE_FLIP_DIR";

/// How a child opening a damaged copy ended.
enum Outcome {
	Opened,
	Refused,
	/// Killed by a signal: parity-db read a damaged address through its memory map past the
	/// end of a file (SIGBUS), which no process can catch. Which byte of which file.
	Signalled(String),
	/// A panic got out of the store (the child exited 101).
	Escaped(String),
}

/// Copy the store at `source`, flip byte `at` of file `name` in the copy, and let a child
/// process open, query and submit to it.
fn flip_and_open(source: &Path, name: &str, at: usize) -> Outcome {
	let copy = tempfile::tempdir().unwrap();
	for entry in std::fs::read_dir(source).unwrap() {
		let path = entry.unwrap().path();
		std::fs::copy(&path, copy.path().join(path.file_name().unwrap())).unwrap();
	}
	let damaged = copy.path().join(name);
	let mut bytes = std::fs::read(&damaged).unwrap();
	bytes[at] ^= 0xff;
	std::fs::write(&damaged, bytes).unwrap();
	let child = Command::new(std::env::current_exe().unwrap())
		.args(["--exact", "flip_child", "--ignored", "--nocapture", "--test-threads", "1"])
		.env(FLIP_VAR, copy.path())
		.output()
		.unwrap();
	let stdout = String::from_utf8_lossy(&child.stdout);
	match child.status.code() {
		Some(0) if stdout.contains("OPENED") => Outcome::Opened,
		Some(0) if stdout.contains("REFUSED") => Outcome::Refused,
		None => Outcome::Signalled(format!("byte {at} of {name}: {}", child.status)),
		_ => {
			let stderr = String::from_utf8_lossy(&child.stderr);
			let panic = stderr.lines().find(|line| line.contains("panicked")).unwrap_or_default();
			Outcome::Escaped(format!("byte {at} of {name}: {panic}"))
		}
	}
}

/// Check a damaged copy as `statement-node check-db` does, then open, query and submit to it;
/// prints how it went. Only does something when the parent test starts it with the variable
/// set.
#[test]
#[ignore = "entry point of the child process that the flipped-byte test starts"]
fn flip_child() {
	let Some(dir) = std::env::var_os(FLIP_VAR) else { return };
	let clock = TestClock::new();
	match statement_store::check(config(dir.as_ref(), &clock)) {
		Ok(report) if report.is_clean() => println!("CHECK clean"),
		Ok(report) => println!("CHECK found {} problems", report.problem_count),
		Err(err) => println!("CHECK refused: {err}"),
	}
	match Store::open(config(dir.as_ref(), &clock), allowances(1000, 1 << 24)) {
		Err(err) => println!("REFUSED {err}"),
		Ok(store) => {
			for t in 0..15 {
				let _ = store.broadcasts(&[topic(t)]);
			}
			let _ = store.statements();
			let _ = store.submit(simple(77, &[1], b"after damage"), StatementSource::Local);
			println!("OPENED");
		}
	}
}

/// A database for the flipped-byte test, in one of three shapes: 300 small statements; 3,000
/// on more topics with larger bodies (a grown index, more value tables); 1,000 of which half
/// were removed again (tombstones, bans, the removal log).
fn flip_source(shape: u32) -> tempfile::TempDir {
	let source = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(source.path(), &clock);
	let (count, size) = match shape {
		0 => (300u32, 8),
		1 => (3_000, 100),
		_ => (1_000, 24),
	};
	for n in 0..count {
		let statement =
			simple(n % 10, &[n % 3, 10 + n % (5 + shape)], &n.to_le_bytes().repeat(size));
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		if shape == 2 && n % 2 == 0 {
			store.remove(&statement.hash()).unwrap();
		}
	}
	drop(store);
	source
}

#[test]
fn a_flipped_byte_in_any_database_file_is_an_error_or_an_answer_never_a_panic_or_a_signal() {
	let sources: Vec<tempfile::TempDir> = (0..3).map(flip_source).collect();
	let mut cases = Vec::new();
	for (shape, source) in sources.iter().enumerate() {
		let files: Vec<PathBuf> = std::fs::read_dir(source.path())
			.unwrap()
			.map(|entry| entry.unwrap().path())
			.filter(|path| std::fs::metadata(path).is_ok_and(|meta| meta.len() > 0))
			.collect();
		assert!(files.len() > 5, "{files:?}");
		for file in &files {
			let bytes = std::fs::read(file).unwrap();
			let name = file.file_name().unwrap().to_string_lossy().into_owned();
			// In an index file, every byte of the first entry in use and of one further on:
			// their address bits point into value tables, where parity-db used to trust them
			// (a read past a table's end was a SIGBUS). Elsewhere a byte near the start and
			// one in the middle.
			let used: Vec<usize> = bytes
				.chunks(8)
				.enumerate()
				.filter(|(_, word)| word.iter().any(|byte| *byte != 0))
				.map(|(index, _)| index)
				.collect();
			let offsets: Vec<usize> = match (name.starts_with("index_") && !used.is_empty(), shape)
			{
				(true, 0) => [used[0], used[used.len() / 2]]
					.iter()
					.flat_map(|word| word * 8..word * 8 + 8)
					.collect(),
				(true, _) => (used[used.len() / 3] * 8..used[used.len() / 3] * 8 + 8).collect(),
				(false, 0) => vec![bytes.len().min(64) / 2, bytes.len() / 2],
				(false, _) => vec![bytes.len() / 2],
			};
			cases.extend(offsets.into_iter().map(|at| (shape, name.clone(), at)));
		}
	}
	// Two children at a time, one per core.
	let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
		let workers: Vec<_> = cases
			.chunks(cases.len().div_ceil(2))
			.map(|chunk| {
				let sources = &sources;
				scope.spawn(move || {
					chunk
						.iter()
						.map(|(shape, name, at)| flip_and_open(sources[*shape].path(), name, *at))
						.collect::<Vec<_>>()
				})
			})
			.collect();
		workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect()
	});
	let count = |wanted: fn(&Outcome) -> bool| outcomes.iter().filter(|o| wanted(o)).count();
	let (opened, refused) =
		(count(|o| matches!(o, Outcome::Opened)), count(|o| matches!(o, Outcome::Refused)));
	// What went wrong, case by case: a panic that got out, or a death by signal.
	let (mut escaped, mut killed) = (Vec::new(), Vec::new());
	for outcome in &outcomes {
		match outcome {
			Outcome::Escaped(what) => escaped.push(what),
			Outcome::Signalled(what) => killed.push(what),
			Outcome::Opened | Outcome::Refused => {}
		}
	}
	eprintln!(
		"{} flipped bytes in 3 databases: {opened} opened and answered, {refused} refused with \
		 an error, {} killed by a signal",
		outcomes.len(),
		killed.len()
	);
	assert!(escaped.is_empty(), "panics escaped the store: {escaped:#?}");
	assert!(killed.is_empty(), "killed by a signal (check or open): {killed:#?}");
	assert!(opened + refused > 0);
}

/// An index entry whose address points past the end of its value table: `check` (what
/// `statement-node check-db` runs) reports the damage instead of dying, and `repair` rebuilds
/// a database that checks clean.
#[test]
fn an_index_address_past_the_table_end_is_reported_by_check_and_repaired() {
	let source = flip_source(0);
	let clock = TestClock::new();
	let mut damaged = 0;
	for entry in std::fs::read_dir(source.path()).unwrap() {
		let path = entry.unwrap().path();
		let name = path.file_name().unwrap().to_string_lossy().into_owned();
		if !name.starts_with("index_") {
			continue;
		}
		let mut bytes = std::fs::read(&path).unwrap();
		// Past the statistics header, every entry in use: keep the size tier (the low byte)
		// and push the offset far past any table's end.
		let used: Vec<usize> =
			(2048..bytes.len() / 8).filter(|w| bytes[w * 8..w * 8 + 8] != [0; 8]).collect();
		for word in used {
			bytes[word * 8 + 1..word * 8 + 5].fill(0xf0);
			damaged += 1;
		}
		std::fs::write(&path, bytes).unwrap();
	}
	assert!(damaged > 0, "no index entry in use was found");
	let found = match statement_store::check(config(source.path(), &clock)) {
		Ok(report) => {
			assert!(!report.is_clean(), "{damaged} damaged index entries and a clean check");
			format!("{} problems", report.problem_count)
		}
		Err(err) => err.to_string(),
	};
	eprintln!("check on {damaged} damaged index entries: {found}");
	let repaired = statement_store::repair(config(source.path(), &clock)).unwrap();
	eprintln!("repair kept {}, left out {}", repaired.kept, repaired.removed);
	let report = statement_store::check(config(source.path(), &clock)).unwrap();
	assert!(report.is_clean(), "{:?}", report.problems);
}
