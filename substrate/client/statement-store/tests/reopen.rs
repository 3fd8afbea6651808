//! Reopening: same answers without decoding bodies; bad directories get clear errors and keep
//! their files.

mod common;

use common::*;
use statement_primitives::{StatementSource, StatementStore, SubmitResult};
use statement_store::{Error, Store};

/// 100,000 statements by default; `REOPEN_STATEMENTS` sets another count.
#[test]
fn reopening_gives_the_same_answers_without_decoding_any_body() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let count =
		std::env::var("REOPEN_STATEMENTS").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000u32);
	let mut hashes = Vec::new();
	{
		let store =
			Store::open(config(dir.path(), &clock), allowances(u32::MAX, u32::MAX)).unwrap();
		for n in 0..count {
			let s = simple(n % 64, &[n % 10, 1000 + n % 100], &n.to_le_bytes());
			hashes.push(s.hash());
			assert_eq!(store.submit(s, StatementSource::Local), SubmitResult::New);
		}
	}
	// A clean close leaves no intent log: parity-db holds every batch.
	let intent_files = std::fs::read_dir(dir.path())
		.unwrap()
		.filter(|entry| {
			entry.as_ref().unwrap().file_name().to_string_lossy().starts_with("intent-")
		})
		.count();
	assert_eq!(intent_files, 0);
	// First from the snapshot written at close, then (snapshot gone, as after a crash) from
	// the journal: both give the same answers.
	for from_snapshot in [true, false] {
		if !from_snapshot {
			std::fs::remove_file(dir.path().join(statement_store::SNAPSHOT_FILE)).unwrap();
		}
		let store =
			Store::open(config(dir.path(), &clock), allowances(u32::MAX, u32::MAX)).unwrap();
		assert_eq!(store.reopened_from_snapshot(), from_snapshot);
		assert_eq!(store.len(), count as u64);
		assert!(hashes.iter().all(|h| store.has_statement(h)));
		let mut other = hashes[0];
		other[5] ^= 1;
		assert!(!store.has_statement(&other));
		let two_topics = store.broadcasts(&[topic(3), topic(1003)]).unwrap();
		assert_eq!(two_topics.len(), (count / 100) as usize);
		assert!(two_topics.iter().all(|data| {
			let n = u32::from_le_bytes(data[..4].try_into().unwrap());
			n % 100 == 3
		}));
	}
}

#[test]
fn bans_outlive_a_reopen() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let statement = simple(1, &[1], b"banned");
	{
		let store = open(dir.path(), &clock);
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		store.remove(&statement.hash()).unwrap();
	}
	// The store learns at open that it holds bans: a network resubmit is still refused.
	let store = open(dir.path(), &clock);
	assert_eq!(
		store.submit(statement.clone(), StatementSource::Network),
		SubmitResult::KnownExpired
	);
	assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
}

#[test]
fn a_snapshot_older_than_the_database_is_brought_up_to_date() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let first = simple(1, &[1], b"first");
	let second = simple(2, &[1], b"second");
	{
		let store = open(dir.path(), &clock);
		store.submit(first.clone(), StatementSource::Local);
	}
	let snapshot = dir.path().join(statement_store::SNAPSHOT_FILE);
	let old = std::fs::read(&snapshot).unwrap();
	{
		let store = open(dir.path(), &clock);
		assert!(store.reopened_from_snapshot());
		store.submit(second.clone(), StatementSource::Local);
		store.remove(&first.hash()).unwrap();
	}
	// Put back the snapshot of the first run, as a crash after the second run's changes would
	// have left it.
	std::fs::write(&snapshot, old).unwrap();
	let store = open(dir.path(), &clock);
	assert!(store.reopened_from_snapshot());
	assert_eq!(store.caught_up_while_opening(), (1, 1), "one admitted and one removed since");
	assert!(store.has_statement(&second.hash()));
	assert!(!store.has_statement(&first.hash()));
	assert_eq!(store.len(), 1);
}

#[test]
fn a_directory_with_files_but_no_database_is_refused_and_left_alone() {
	let dir = tempfile::tempdir().unwrap();
	let precious = dir.path().join("notes.txt");
	std::fs::write(&precious, b"keep me").unwrap();
	let err = Store::open(config(dir.path(), &TestClock::new()), allowances(1, 1)).err().unwrap();
	assert!(matches!(err, Error::Corrupt { .. }), "{err}");
	assert_eq!(std::fs::read(&precious).unwrap(), b"keep me");
	assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_database_with_missing_metadata_is_refused_without_deleting_anything() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	{
		let store = open(dir.path(), &clock);
		store.submit(simple(1, &[1], b"x"), StatementSource::Local);
	}
	std::fs::remove_file(dir.path().join("metadata")).unwrap();
	let before: Vec<_> =
		std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
	let err = Store::open(config(dir.path(), &clock), allowances(1, 1)).err().unwrap();
	assert!(err.to_string().contains("no parity-db metadata"), "{err}");
	let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect();
	assert_eq!(before, after);
}

#[test]
fn a_second_store_on_the_same_directory_is_refused_while_the_first_is_open() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let _first = open(dir.path(), &clock);
	let err = Store::open(config(dir.path(), &clock), allowances(1, 1)).err().unwrap();
	assert!(matches!(err, Error::Locked(_)), "{err:?}");
	assert!(err.to_string().contains("in use by another process"), "{err}");
}

#[test]
fn truncated_database_files_give_an_error_or_every_statement_never_a_panic_or_silent_loss() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	{
		let store = open(dir.path(), &clock);
		for n in 0..300u32 {
			store.submit(simple(n % 8, &[n % 3], &n.to_le_bytes()), StatementSource::Local);
		}
	}
	let mut files: Vec<_> = std::fs::read_dir(dir.path())
		.unwrap()
		.map(|e| e.unwrap().path())
		.filter(|p| p.file_name().is_some_and(|n| n != "metadata" && n != "lock"))
		.collect();
	files.sort();
	let mut outcomes = Vec::new();
	for file in &files {
		let original = std::fs::read(file).unwrap();
		std::fs::write(file, &original[..original.len() / 2]).unwrap();
		let outcome = std::panic::catch_unwind(|| {
			match Store::open(config(dir.path(), &clock), allowances(1000, 1 << 24)) {
				Err(err) => format!("error: {err}"),
				Ok(store) => match store.statements() {
					Err(err) => format!("opened, then error: {err}"),
					Ok(all) if all.len() == 300 => "opened with every statement".to_string(),
					Ok(all) => panic!("silently lost statements: {} of 300 left", all.len()),
				},
			}
		});
		let name = file.file_name().unwrap().to_string_lossy().to_string();
		outcomes.push((name.clone(), outcome.is_ok()));
		println!("{name}: {:?}", outcome.as_ref().map_err(|_| "panic"));
		std::fs::write(file, &original).unwrap();
	}
	let panicked: Vec<_> = outcomes.iter().filter(|(_, ok)| !ok).map(|(n, _)| n).collect();
	assert!(panicked.is_empty(), "panic or silent loss after truncating {panicked:?}");
}
