//! Crash safety: a child process submits and removes in a loop (some removals from several
//! threads at once) and is killed with SIGKILL at random moments. Every reopen must find
//! every statement the child saw acknowledged as `New`, none it saw removed, and indexes
//! that agree with the bodies exactly.

mod common;

use statement_test_support::hex;

use common::*;
use rand::{rngs::StdRng, Rng, SeedableRng};
use statement_primitives::{Hash, StatementSource, StatementStore, SubmitResult, Topic};
use statement_store::Store;
use std::{
	collections::{HashMap, HashSet},
	io::{BufRead, BufReader, Write},
	process::{Command, Stdio},
	time::Duration,
};

const DIR_VAR: &str = "STATEMENT_STORE_CRASH_DIR";
const SEED_VAR: &str = "STATEMENT_STORE_CRASH_SEED";

/// The child's loop; only does something when the parent starts it with the variables set.
#[test]
#[ignore = "entry point of the child process that crash_safety kills"]
fn crash_child() {
	let (Some(dir), Some(seed)) = (std::env::var_os(DIR_VAR), std::env::var_os(SEED_VAR)) else {
		return;
	};
	let seed: u64 = seed.to_string_lossy().parse().expect("seed");
	let mut config = config(dir.as_ref(), &TestClock::new());
	if seed % 2 == 1 {
		// Checkpoint all the time, so that kills land inside checkpoints too.
		config.checkpoint_period = Duration::from_millis(5);
		config.checkpoint_bytes = 16 * 1024;
	}
	if seed % 4 == 3 {
		// With fsync, intent files are kept until a checkpoint instead of the next drain.
		config.sync_wal = true;
	}
	// Membership snapshots every few dozen changes, so kills land between and inside them.
	config.snapshot_changes = 40;
	let store = Store::open(config, allowances(u32::MAX, u32::MAX)).expect("child opens the store");
	let mut rng = StdRng::seed_from_u64(seed);
	let mut mine: Vec<Hash> = Vec::new();
	let stdout = std::io::stdout();
	for n in 0u32.. {
		if n % 16 == 15 {
			store.maintain().expect("maintenance");
		}
		if mine.len() >= 8 && n % 64 == 63 {
			// A burst of removals from four threads at once, which share batches (group
			// commit): each is announced before its call and reported after it returns.
			let burst: Vec<Hash> =
				(0..8).map(|_| mine.swap_remove(rng.gen_range(0..mine.len()))).collect();
			std::thread::scope(|scope| {
				for pair in burst.chunks(2) {
					let (store, stdout) = (&store, &stdout);
					scope.spawn(move || {
						for hash in pair {
							writeln!(stdout.lock(), "REMOVING {}", hex::encode(hash))
								.expect("stdout");
							store.remove(hash).expect("remove");
							writeln!(stdout.lock(), "REMOVED {}", hex::encode(hash))
								.expect("stdout");
						}
					});
				}
			});
		} else if !mine.is_empty() && rng.gen_bool(0.2) {
			let hash = mine.swap_remove(rng.gen_range(0..mine.len()));
			// Announced first: a kill between the removal and its report leaves it undecided.
			writeln!(stdout.lock(), "REMOVING {}", hex::encode(&hash)).expect("stdout");
			store.remove(&hash).expect("remove");
			writeln!(stdout.lock(), "REMOVED {}", hex::encode(&hash)).expect("stdout");
		} else {
			// The draws in the order the run's seed was first recorded with.
			let signer = rng.gen_range(0..8);
			let topics: Vec<u32> =
				(0..rng.gen_range(0..=3)).map(|t| t * 3 + rng.gen_range(0..3)).collect();
			let key = rng.gen_bool(0.25).then(|| [rng.gen_range(0..3u8); 32]);
			let statement = expiring(100_000, n, &topics)
				.decryption_key(key)
				.data([&seed.to_le_bytes()[..], &n.to_le_bytes()].concat())
				.signed_ed25519(&ed25519_pair(signer));
			let hash = statement.hash();
			writeln!(stdout.lock(), "SUBMITTING {}", hex::encode(&hash)).expect("stdout");
			if store.submit(statement, StatementSource::Local) == SubmitResult::New {
				mine.push(hash);
				writeln!(stdout.lock(), "NEW {}", hex::encode(&hash)).expect("stdout");
			}
		}
	}
}

const ABORT_VAR: &str = "STATEMENT_STORE_ABORT_DIR";

/// Submit a few statements and remove five of them, then abort the process the moment the
/// last removal is acknowledged: no destructor runs, nothing buffered in the process
/// survives, and the removals' index edits were never applied (they wait for the next
/// write, see `write::deferred`).
#[test]
#[ignore = "entry point of the child process that acknowledged_changes_survive_an_abort starts"]
fn abort_child() {
	let Some(dir) = std::env::var_os(ABORT_VAR) else { return };
	let store =
		Store::open(config(dir.as_ref(), &TestClock::new()), allowances(u32::MAX, u32::MAX))
			.expect("child opens the store");
	for n in 0..20u8 {
		let statement = simple(u32::from(n % 4), &[1], &[n]);
		assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
	}
	for n in 0..5u8 {
		store.remove(&simple(u32::from(n % 4), &[1], &[n]).hash()).expect("remove");
	}
	std::process::abort();
}

/// Run the ignored test `child` in a child process with `var` set to `dir`, require that it
/// aborted, and open the store it left behind.
fn reopen_after_child(child: &str, var: &str, dir: &std::path::Path) -> Store {
	let status = Command::new(std::env::current_exe().unwrap())
		.args(["--exact", child, "--ignored", "--nocapture", "--test-threads", "1"])
		.env(var, dir)
		.stdout(Stdio::null())
		.stderr(Stdio::null())
		.status()
		.unwrap();
	assert!(!status.success(), "{child} was meant to abort");
	Store::open(config(dir, &TestClock::new()), allowances(u32::MAX, u32::MAX))
		.expect("reopens after abort")
}

#[test]
fn acknowledged_changes_survive_an_abort_right_after_the_acknowledgement() {
	let dir = tempfile::tempdir().unwrap();
	let store = reopen_after_child("abort_child", ABORT_VAR, dir.path());
	for n in 0..20u8 {
		let statement = simple(u32::from(n % 4), &[1], &[n]);
		let hash = statement.hash();
		if n < 5 {
			assert!(!store.has_statement(&hash), "statement {n}'s removal was lost");
			// Removed means banned too: the network cannot bring it back.
			let again = store.submit(statement, StatementSource::Network);
			assert_eq!(again, SubmitResult::KnownExpired, "statement {n} came back");
		} else {
			assert!(
				store.has_statement(&hash),
				"statement {n}, acknowledged before the abort, was lost"
			);
		}
	}
	assert_eq!(store.len(), 15);
	assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), 15, "the topic's list");
	assert_indexes_match_bodies(&store);
}

const SNAPSHOT_VAR: &str = "STATEMENT_STORE_SNAPSHOT_DIR";

/// Statement `n` of the snapshot test.
fn numbered(n: u8) -> statement_primitives::Statement {
	simple(u32::from(n % 4), &[u32::from(n % 3)], &[n])
}

/// Admit 0..40, write a snapshot, remove 0..10, admit 40..60, remove 50..55, abort.
#[test]
#[ignore = "entry point of the child process that a_crash_after_a_snapshot_catches_up starts"]
fn snapshot_child() {
	let Some(dir) = std::env::var_os(SNAPSHOT_VAR) else { return };
	let store =
		Store::open(config(dir.as_ref(), &TestClock::new()), allowances(u32::MAX, u32::MAX))
			.expect("child opens the store");
	for n in 0..40 {
		assert_eq!(store.submit(numbered(n), StatementSource::Local), SubmitResult::New);
	}
	store.write_snapshot().expect("snapshot");
	for n in 0..10 {
		store.remove(&numbered(n).hash()).expect("remove");
	}
	for n in 40..60 {
		assert_eq!(store.submit(numbered(n), StatementSource::Local), SubmitResult::New);
	}
	for n in 50..55 {
		store.remove(&numbered(n).hash()).expect("remove");
	}
	// Let the background thread write the changes to parity-db's log (every 50 ms), so that
	// opening finds them in the database, not only in the intent log.
	std::thread::sleep(Duration::from_secs(1));
	std::process::abort();
}

#[test]
fn a_crash_after_a_snapshot_catches_up_from_the_journal_and_the_removal_log() {
	let dir = tempfile::tempdir().unwrap();
	let store = reopen_after_child("snapshot_child", SNAPSHOT_VAR, dir.path());
	assert!(store.reopened_from_snapshot(), "the snapshot written before the crash was not used");
	// 40..60 admitted since the snapshot; 0..10 of its statements removed since (applied when
	// 40 was admitted). The removals of 50..55 were acknowledged and waiting for their index
	// edits at the crash (see `write::deferred`): the intent log redoes them.
	assert_eq!(store.caught_up_while_opening(), (20, 10));
	for n in 0..60u8 {
		let expected = !((0..10).contains(&n) || (50..55).contains(&n));
		assert_eq!(store.has_statement(&numbered(n).hash()), expected, "statement {n}");
	}
	assert_eq!(store.len(), 45);
	assert_indexes_match_bodies(&store);
}

fn unhex(text: &str) -> Option<Hash> {
	hex::decode(text).ok()?.try_into().ok()
}

/// A MatchAll query: decryption key (or none) and topics.
type Query = (Option<[u8; 32]>, Vec<Topic>);

/// Every stored statement is found through its indexes, and the indexes find nothing else.
fn assert_indexes_match_bodies(store: &Store) {
	let all = store.statements().expect("statements");
	assert_eq!(all.len() as u64, store.len(), "counters disagree with the journal");
	let mut via_indexes = store.broadcasts_stmt(&[]).expect("broadcasts").len();
	for key in 0..3u8 {
		via_indexes += store.posted_stmt(&[], [key; 32]).expect("posted").len();
	}
	assert_eq!(via_indexes, all.len(), "key index and bodies disagree");
	// One query per distinct (key, topics) combination, each must return all its members.
	let mut groups: HashMap<Query, Vec<Vec<u8>>> = HashMap::new();
	for (hash, statement) in &all {
		assert!(store.has_statement(hash));
		groups
			.entry((statement.decryption_key(), statement.topics().to_vec()))
			.or_default()
			.push(statement.encode());
	}
	for ((key, topics), members) in groups {
		let found: HashSet<Vec<u8>> = match key {
			None => store.broadcasts_stmt(&topics),
			Some(key) => store.posted_stmt(&topics, key),
		}
		.expect("query")
		.into_iter()
		.collect();
		assert!(
			members.iter().all(|m| found.contains(m)),
			"a statement is missing from its topic index"
		);
	}
}

#[test]
fn killed_at_random_points_the_store_keeps_every_acknowledged_change() {
	let dir = tempfile::tempdir().unwrap();
	let exe = std::env::current_exe().unwrap();
	let mut rng = StdRng::seed_from_u64(7);
	let mut acknowledged: HashSet<Hash> = HashSet::new();
	let mut removed: HashSet<Hash> = HashSet::new();
	// Submits and removals under way when a child was killed: they may or may not have landed.
	let mut undecided: HashSet<Hash> = HashSet::new();
	let mut total_lines = 0;
	let (mut tails_refused, mut tails_harmless) = (0, 0);
	for round in 0..8u64 {
		let mut child = Command::new(&exe)
			.args(["--exact", "crash_child", "--ignored", "--nocapture", "--test-threads", "1"])
			.env(DIR_VAR, dir.path())
			.env(SEED_VAR, round.to_string())
			.stdout(Stdio::piped())
			.stderr(Stdio::null())
			.spawn()
			.unwrap();
		let stdout = child.stdout.take().unwrap();
		let reader = std::thread::spawn(move || {
			BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<String>>()
		});
		std::thread::sleep(Duration::from_millis(rng.gen_range(150..900)));
		child.kill().unwrap();
		child.wait().unwrap();
		let lines = reader.join().unwrap();
		for line in &lines {
			let Some((what, hash)) = line.split_once(' ') else { continue };
			let Some(hash) = unhex(hash.trim()) else { continue };
			match what {
				"SUBMITTING" | "REMOVING" => {
					undecided.insert(hash);
				}
				"NEW" => {
					undecided.remove(&hash);
					acknowledged.insert(hash);
				}
				"REMOVED" => {
					undecided.remove(&hash);
					acknowledged.remove(&hash);
					removed.insert(hash);
				}
				_ => {}
			}
		}
		total_lines += lines.len();

		let sure: HashSet<Hash> = acknowledged.difference(&undecided).copied().collect();
		for cut in [TailCut::DeleteNewest, TailCut::HalveNewest] {
			match lose_the_tail(dir.path(), cut, &sure) {
				TailOutcome::Refused => tails_refused += 1,
				TailOutcome::NothingLost => tails_harmless += 1,
			}
		}
		let store =
			Store::open(config(dir.path(), &TestClock::new()), allowances(u32::MAX, u32::MAX))
				.expect("the store reopens after SIGKILL");
		// From round 1 on there is always a snapshot (the last reopen closed cleanly, and
		// children write newer ones); the journal and the removal log bring it up to date.
		assert!(
			round == 0 || store.reopened_from_snapshot(),
			"round {round}: the snapshot was not used"
		);
		for hash in acknowledged.difference(&undecided) {
			assert!(
				store.statement(hash).unwrap().is_some(),
				"round {round}: lost {}",
				hex::encode(hash)
			);
		}
		// Settle the undecided ones by what the store holds, for the rounds to come.
		for hash in std::mem::take(&mut undecided) {
			if store.has_statement(&hash) {
				acknowledged.insert(hash);
			} else {
				acknowledged.remove(&hash);
				removed.insert(hash);
			}
		}
		for hash in &removed {
			assert!(
				!store.has_statement(hash),
				"round {round}: removed {} is back",
				hex::encode(hash)
			);
		}
		assert_eq!(
			store.len() as usize,
			acknowledged.len(),
			"round {round}: unexpected statements"
		);
		assert_indexes_match_bodies(&store);
	}
	assert!(total_lines > 100, "the child did too little work to test anything: {total_lines}");
	eprintln!(
		"losing the newest intent file or its second half after a kill: {tails_refused} opens \
		 refused, {tails_harmless} lost nothing"
	);
	assert!(tails_refused > 0, "no kill left acknowledged batches in the newest intent file");
}

#[derive(Clone, Copy, Debug)]
enum TailCut {
	DeleteNewest,
	HalveNewest,
}

enum TailOutcome {
	Refused,
	NothingLost,
}

/// In a copy of the store a kill left at `dir`, lose the end of the intent log (`cut`), and
/// open it: either the open is refused for the missing end, or every statement in `sure`
/// (acknowledged, not undecided) is there. Never an open that silently lost one.
fn lose_the_tail(dir: &std::path::Path, cut: TailCut, sure: &HashSet<Hash>) -> TailOutcome {
	let copy = tempfile::tempdir().unwrap();
	let mut intents = Vec::new();
	for entry in std::fs::read_dir(dir).unwrap() {
		let path = entry.unwrap().path();
		let name = path.file_name().unwrap().to_string_lossy().into_owned();
		let to = copy.path().join(&name);
		if path.is_file() {
			std::fs::copy(&path, &to).unwrap();
		}
		if name.starts_with("intent-") && name.ends_with(".log") {
			intents.push(to);
		}
	}
	intents.sort();
	let newest = intents.last().expect("a killed store leaves an intent file");
	match cut {
		TailCut::DeleteNewest => std::fs::remove_file(newest).unwrap(),
		TailCut::HalveNewest => {
			let bytes = std::fs::read(newest).unwrap();
			// Half of what was written: a mapped intent file has zeros after its records.
			let written = bytes.iter().rposition(|byte| *byte != 0).map_or(0, |at| at + 1);
			std::fs::write(newest, &bytes[..written / 2]).unwrap();
		}
	}
	match Store::open(config(copy.path(), &TestClock::new()), allowances(u32::MAX, u32::MAX)) {
		Err(statement_store::Error::IntentGap { detail, .. }) => {
			assert!(detail.contains("end of the intent log is missing"), "{cut:?}: {detail}");
			TailOutcome::Refused
		}
		Err(err) => panic!("{cut:?}: refused for another reason: {err}"),
		Ok(store) => {
			for hash in sure {
				assert!(
					store.has_statement(hash),
					"{cut:?}: the open went on and lost {}",
					hex::encode(hash)
				);
			}
			TailOutcome::NothingLost
		}
	}
}
