//! Opening: schema checks, intent redo and its gaps, damaged databases.

use super::*;
use crate::allowance::MapAllowances;
use crate::index::posting::encode_segment;
use crate::index::schema::Id;
use crate::open::fixtures::*;
use crate::write::intent::IntentLog;
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{
	Statement, StatementAllowance, StatementSource, StatementStore, SubmitResult, Topic,
};

/// The store at `path`, every account allowed far more than a test submits.
fn open_roomy(path: &std::path::Path) -> Store {
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	Store::open(Config::new(path), Arc::new(allowances)).unwrap()
}

#[test]
fn a_snapshot_prunes_the_journal_it_covers() {
	let dir = tempfile::tempdir().unwrap();
	let open = || open_roomy(dir.path());
	let journal = |store: &Store| {
		// Removals wait for their index edits (see `write::deferred`); the journal is one.
		assert!(store.inner.settle_now());
		store.inner.db.hand_over().unwrap();
		let mut iter = store.inner.db.raw().iter(schema::COL_JOURNAL).unwrap();
		iter.seek_to_first().unwrap();
		let mut ids = Vec::new();
		while let Some((key, _)) = iter.next().unwrap() {
			ids.push(schema::be_u64(&key, 0).unwrap());
		}
		ids
	};
	let store = open();
	for n in 0..30u8 {
		assert_eq!(store.submit(signed(n, None), StatementSource::Local), SubmitResult::New);
	}
	assert_eq!(journal(&store).len(), 30);
	store.write_snapshot().unwrap();
	assert_eq!(journal(&store), Vec::<Id>::new(), "the snapshot holds their hashes");
	for n in 30..40u8 {
		assert_eq!(store.submit(signed(n, None), StatementSource::Local), SubmitResult::New);
	}
	store.remove(&signed(35, None).hash()).unwrap();
	store.remove(&signed(3, None).hash()).unwrap();
	assert_eq!(journal(&store), vec![31, 32, 33, 34, 35, 37, 38, 39, 40]);
	let expected = answers(&store);
	// (tests/crash.rs crashes after a snapshot and catches up from the rest of the journal.)
	drop(store);
	let store = open();
	assert!(store.reopened_from_snapshot());
	assert_eq!(answers(&store), expected);
	assert_eq!(journal(&store).len(), 9, "a clean close prunes nothing");
	for n in 0..40u8 {
		assert_eq!(store.has_statement(&signed(n, None).hash()), n != 3 && n != 35, "{n}");
	}
}

/// A store closed cleanly with `n` statements, and intent records for `extra` more that
/// the database lacks, as a crash would leave them: `(first_seq, statements)`.
fn with_pending_intents(
	dir: &std::path::Path,
	n: u8,
	extra: std::ops::Range<u8>,
	skip_at: Option<usize>,
) -> (u64, Vec<Statement>) {
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	let store = Store::open(Config::new(dir), Arc::new(allowances)).unwrap();
	for k in 0..n {
		assert_eq!(store.submit(signed(k, None), StatementSource::Local), SubmitResult::New);
	}
	drop(store);
	let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
	let held = meta_position(&db, schema::KEY_INTENT).unwrap();
	drop(db);
	let mut log = IntentLog::create(dir, false, held + 1).unwrap();
	let mut statements = Vec::new();
	for (index, k) in extra.enumerate() {
		let statement = signed(k, None);
		if Some(index) == skip_at {
			// A second file from here on, one batch further: as if a file holding that
			// batch had been removed.
			log = IntentLog::create(dir, false, log.next_seq() + 1).unwrap();
		}
		let seq = log.next_seq();
		let account = match statement.verify_signature() {
			statement_primitives::SignatureVerificationResult::Valid(account) => account,
			_ => panic!("signed"),
		};
		log.append(seq, &[intent::Step::Add { account, encoding: statement.encode() }]).unwrap();
		statements.push(statement);
	}
	(held + 1, statements)
}

fn open_with(dir: &std::path::Path, skip_intent_gaps: bool) -> Result<Store> {
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	let mut config = Config::new(dir);
	config.skip_intent_gaps = skip_intent_gaps;
	Store::open(config, Arc::new(allowances))
}

#[test]
fn pending_intents_are_redone_and_their_files_removed() {
	let dir = tempfile::tempdir().unwrap();
	let (_, pending) = with_pending_intents(dir.path(), 3, 10..20, None);
	let store = open_with(dir.path(), false).unwrap();
	assert_eq!(store.len(), 13);
	assert!(pending.iter().all(|statement| store.has_statement(&statement.hash())));
	let names: Vec<_> = std::fs::read_dir(dir.path())
		.unwrap()
		.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
		.filter(|name| name.starts_with("intent-"))
		.collect();
	assert_eq!(names.len(), 1, "only the new, empty intent file: {names:?}");
}

#[test]
fn a_damaged_intent_record_refuses_open_and_skipping_keeps_every_intact_one() {
	let dir = tempfile::tempdir().unwrap();
	let (first, pending) = with_pending_intents(dir.path(), 3, 10..20, None);
	let file = dir.path().join(format!("intent-{first:020}.log"));
	let mut bytes = std::fs::read(&file).unwrap();
	// A flipped byte in the fourth of ten equally long records.
	let record = intent::records_end(&bytes) / 10;
	bytes[3 * record + record / 2] ^= 0x10;
	std::fs::write(&file, &bytes).unwrap();
	match open_with(dir.path(), false) {
		Err(Error::IntentGap { first: gap_first, last, detail, .. }) => {
			assert_eq!((gap_first, last), (first + 3, first + 3));
			assert!(detail.contains("damaged records"), "{detail}");
		}
		other => panic!("expected IntentGap, got {:?}", other.err()),
	}
	assert_eq!(std::fs::read(&file).unwrap(), bytes, "a refused open changes nothing");
	let store = open_with(dir.path(), true).unwrap();
	assert_eq!(store.len(), 3 + 9);
	for (k, statement) in pending.iter().enumerate() {
		assert_eq!(store.has_statement(&statement.hash()), k != 3, "statement {k}");
	}
	assert!(dir.path().join(format!("intent-{first:020}.log.damaged")).is_file());
}

#[test]
fn a_missing_intent_file_is_an_error_that_names_the_batches() {
	let dir = tempfile::tempdir().unwrap();
	let (first, _) = with_pending_intents(dir.path(), 2, 10..16, Some(2));
	let err = open_with(dir.path(), false).err().expect("refused");
	let Error::IntentGap { first: missing, last, ref detail, .. } = err else {
		panic!("expected IntentGap, got {err}")
	};
	assert_eq!((missing, last), (first + 2, first + 2));
	assert!(detail.contains("missing"), "{detail}");
	assert!(err.to_string().contains(&format!("lacks batches {missing} to {missing}")), "{err}");
}

fn intent_file_names(dir: &std::path::Path) -> Vec<String> {
	let mut names: Vec<String> = std::fs::read_dir(dir)
		.unwrap()
		.map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
		.filter(|name| name.starts_with("intent-") && name.ends_with(".log"))
		.collect();
	names.sort();
	names
}

/// Pending batches `first..first + 5` in one intent file, `first + 5..first + 10` in a newer
/// one, numbered without a gap, the mark at the newest: as a kill under load leaves them.
fn with_two_pending_files(dir: &std::path::Path) -> (u64, std::path::PathBuf, Vec<Statement>) {
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	let store = Store::open(Config::new(dir), Arc::new(allowances)).unwrap();
	for k in 0..3 {
		assert_eq!(store.submit(signed(k, None), StatementSource::Local), SubmitResult::New);
	}
	drop(store);
	let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
	let held = meta_position(&db, schema::KEY_INTENT).unwrap();
	drop(db);
	let mut statements = Vec::new();
	let mut log = IntentLog::create(dir, false, held + 1).unwrap();
	for k in 10..20u8 {
		if k == 15 {
			log = IntentLog::create(dir, false, log.next_seq()).unwrap();
		}
		let statement = signed(k, None);
		let account = match statement.verify_signature() {
			statement_primitives::SignatureVerificationResult::Valid(account) => account,
			_ => panic!("signed"),
		};
		let seq = log.next_seq();
		log.append(seq, &[intent::Step::Add { account, encoding: statement.encode() }]).unwrap();
		statements.push(statement);
	}
	let newest = dir.join(format!("intent-{:020}.log", held + 6));
	assert!(newest.is_file(), "{:?}", intent_file_names(dir));
	(held + 1, newest, statements)
}

fn assert_tail_refused(dir: &std::path::Path, missing: (u64, u64)) {
	let err = open_with(dir, false).err().expect("a missing end of the intent log is refused");
	let Error::IntentGap { first, last, ref detail, .. } = err else {
		panic!("expected IntentGap, got {err}")
	};
	assert_eq!((first, last), missing, "{err}");
	assert!(detail.contains("end of the intent log is missing"), "{detail}");
	assert!(err.to_string().contains("--statement-store-skip-intent-gaps"), "{err}");
}

#[test]
fn deleting_the_newest_intent_file_is_refused_at_open() {
	let dir = tempfile::tempdir().unwrap();
	let (first, newest, pending) = with_two_pending_files(dir.path());
	std::fs::remove_file(&newest).unwrap();
	assert_tail_refused(dir.path(), (first + 5, first + 9));
	// Refused again: the refusal changed nothing, the mark included.
	assert_tail_refused(dir.path(), (first + 5, first + 9));
	// The way out redoes what is left, and the next open is clean.
	let store = open_with(dir.path(), true).unwrap();
	assert_eq!(store.len(), 3 + 5);
	for (k, statement) in pending.iter().enumerate() {
		assert_eq!(store.has_statement(&statement.hash()), k < 5, "statement {k}");
	}
	drop(store);
	assert_eq!(open_with(dir.path(), false).unwrap().len(), 8);
}

#[test]
fn an_intent_file_cut_at_a_record_boundary_or_mid_record_is_refused_at_open() {
	for cut_records in [1usize, 3] {
		for mid_record in [false, true] {
			let dir = tempfile::tempdir().unwrap();
			let (first, newest, _) = with_two_pending_files(dir.path());
			let bytes = std::fs::read(&newest).unwrap();
			// Five equally long records (a mapped file has zeros after them).
			let end = intent::records_end(&bytes);
			let record = end / 5;
			let mut keep = end - cut_records * record;
			if mid_record {
				keep += record / 2;
			}
			std::fs::write(&newest, &bytes[..keep]).unwrap();
			// The cut records (a half record is not an intact one) are the missing end.
			assert_tail_refused(dir.path(), (first + 10 - cut_records as u64, first + 9));
		}
	}
}

#[test]
fn a_clean_stop_and_a_crash_with_every_intent_file_leave_no_false_alarm() {
	let dir = tempfile::tempdir().unwrap();
	let (_, _, pending) = with_two_pending_files(dir.path());
	let store = open_with(dir.path(), false).expect("nothing is missing");
	assert_eq!(store.len(), 13);
	assert!(pending.iter().all(|statement| store.has_statement(&statement.hash())));
	drop(store);
	assert_eq!(open_with(dir.path(), false).unwrap().len(), 13);
	assert!(intent::read_mark(dir.path()).is_some());
}

#[test]
fn a_damaged_posting_list_never_answers_with_a_statement_of_another_topic_or_a_missing_one() {
	let dir = tempfile::tempdir().unwrap();
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	let store = Store::open(Config::new(dir.path()), Arc::new(allowances.clone())).unwrap();
	for n in 0..8u8 {
		assert_eq!(store.submit(signed(n, None), StatementSource::Local), SubmitResult::New);
	}
	drop(store);
	// Topic 0 holds statements 0 and 4 (ids 1 and 5); the damaged list adds id 2 (topic
	// 1) and id 99 (not stored).
	let key = PostingKey::Topic([0; 32]).segment_key(0);
	poke(dir.path(), vec![(schema::COL_POSTING, key, Some(encode_segment(&[1, 2, 5, 99])))]);
	let store = Store::open(Config::new(dir.path()), Arc::new(allowances)).unwrap();
	let mut answer = store.broadcasts(&[Topic([0; 32])]).unwrap();
	answer.sort();
	assert_eq!(answer, vec![vec![0], vec![4]]);
	assert_eq!(store.metrics().corrupt, 1, "the missing one is counted");
}

/// A lookup by hash goes by the membership set's ids, which know only 58 bits of the hash's
/// first 8 bytes: a hash that shares them with a stored one is not answered with that statement, and
/// removing it removes nothing; with two candidates under one fingerprint each is tried.
#[test]
fn a_hash_that_shares_a_stored_ones_first_bytes_is_not_that_statement() {
	let dir = tempfile::tempdir().unwrap();
	let statements: Vec<Statement> = (0..5u8).map(|n| signed(n, None)).collect();
	stored(dir.path(), &statements);
	let store = open_admitting(dir.path());
	let real = statements[2].hash();
	let mut fake = real;
	fake[31] ^= 1;
	assert!(store.has_statement(&fake), "the set answers by the hash's first bits");
	assert_eq!(store.statement(&fake).unwrap(), None);
	store.remove(&fake).unwrap();
	assert_eq!(store.statement(&real).unwrap(), Some(statements[2].clone()), "not removed");
	// Another id under the same fingerprint, ahead of the real one: its body is missing, so
	// it is quarantined, and the real one is still found.
	let id = store.inner.record_id(&real).unwrap().unwrap();
	store.inner.membership.remove(&real, id);
	store.inner.membership.insert(&fake, 999);
	store.inner.membership.insert(&real, id);
	assert_eq!(store.inner.membership.ids(&real).iter().collect::<Vec<_>>(), vec![999, id]);
	assert_eq!(store.statement(&real).unwrap(), Some(statements[2].clone()));
	store.remove(&real).unwrap();
	assert_eq!(store.statement(&real).unwrap(), None);
	assert_eq!(store.statement(&statements[1].hash()).unwrap(), Some(statements[1].clone()));
}

/// An intact body under the wrong id (a damaged index, a stale slot) is not served in its
/// place: the hash the body holds must be stored under that id. The statement is left out
/// of answers and counted; the rest answer.
#[test]
fn an_intact_body_under_another_id_is_not_served_in_its_place() {
	let dir = tempfile::tempdir().unwrap();
	let statements: Vec<Statement> = (0..6u8).map(|n| signed(n, None)).collect();
	stored(dir.path(), &statements);
	let store = open_admitting(dir.path());
	store.inner.writes.checkpoint().unwrap();
	let db = store.inner.db.raw();
	let (a, b) = (body_key_of(db, &statements[1]), body_key_of(db, &statements[2]));
	let value = db.get(schema::COL_BODY, &a).unwrap().unwrap();
	writeback::commit(db, vec![(schema::COL_BODY, b.to_vec(), Some(value))], false).unwrap();
	store.clear_cache();
	let mut all = store.broadcasts(&[]).unwrap();
	all.sort();
	let mut expected: Vec<Vec<u8>> = statements
		.iter()
		.enumerate()
		.filter(|(n, _)| *n != 2)
		.map(|(_, s)| s.data().unwrap().to_vec())
		.collect();
	expected.sort();
	assert_eq!(all, expected, "statement 1 once, statement 2 left out");
	assert_eq!(store.statement(&statements[2].hash()).unwrap(), None);
	assert_eq!(store.statement(&statements[1].hash()).unwrap(), Some(statements[1].clone()));
}

#[test]
fn a_newer_schema_is_refused_and_left_as_it_is() {
	let dir = tempfile::tempdir().unwrap();
	drop(open(dir.path()).unwrap());
	poke(dir.path(), vec![(schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(7u32.encode()))]);
	match open(dir.path()) {
		Err(Error::NewerSchema { found: 7, supported: schema::SCHEMA_VERSION, .. }) => {}
		other => panic!("expected NewerSchema, got {:?}", other.err()),
	}
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	assert_eq!(db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(), Some(7u32.encode()));
}

#[test]
fn counters_that_contradict_the_journal_are_refused() {
	let dir = tempfile::tempdir().unwrap();
	drop(open(dir.path()).unwrap());
	let wrong = Counters { count: 5, total_size: 0, next_id: 1 };
	poke(dir.path(), vec![(schema::COL_META, schema::KEY_COUNTERS.to_vec(), Some(wrong.encode()))]);
	let err = open(dir.path()).err().expect("refused");
	assert!(matches!(err, Error::Corrupt { .. }), "{err}");
	assert!(err.to_string().contains("counters say 5 statements"), "{err}");
}

#[test]
fn a_body_that_does_not_match_its_hash_is_caught_at_open() {
	let dir = tempfile::tempdir().unwrap();
	drop(open(dir.path()).unwrap());
	poke(
		dir.path(),
		vec![
			(schema::COL_JOURNAL, schema::id_key(1).to_vec(), Some([7u8; 32].to_vec())),
			(schema::COL_POSTING, PostingKey::All.segment_key(0), Some(encode_segment(&[1]))),
			(schema::COL_BODY, schema::body_key(1).to_vec(), Some(vec![0])),
			(
				schema::COL_META,
				schema::KEY_COUNTERS.to_vec(),
				Some(Counters { count: 1, total_size: 1, next_id: 2 }.encode()),
			),
		],
	);
	let err = open(dir.path()).err().expect("refused");
	assert!(err.to_string().contains("does not match its hash"), "{err}");
}

#[test]
fn a_garbled_journal_entry_is_a_typed_error_not_a_panic() {
	let dir = tempfile::tempdir().unwrap();
	drop(open(dir.path()).unwrap());
	// Read when opening catches a snapshot up with what was admitted since.
	poke(
		dir.path(),
		vec![
			(schema::COL_JOURNAL, schema::id_key(1).to_vec(), Some(vec![1, 2, 3])),
			(
				schema::COL_META,
				schema::KEY_COUNTERS.to_vec(),
				Some(Counters { count: 1, total_size: 1, next_id: 2 }.encode()),
			),
		],
	);
	let err = open(dir.path()).err().expect("refused");
	assert!(matches!(err, Error::BadValue { column: schema::COL_JOURNAL, .. }), "{err}");
}

#[test]
fn a_snapshot_is_checked_against_statements_past_a_long_removed_run() {
	let dir = tempfile::tempdir().unwrap();
	let open = || open_roomy(dir.path());
	// Ids 1-200; the first 180 removed, so most sample ranges (every third id) hold nothing
	// and are left to the range that holds the next stored id.
	let store = open();
	for n in 0..200u8 {
		assert_eq!(store.submit(signed(n, None), StatementSource::Local), SubmitResult::New);
	}
	for n in 0..180u8 {
		store.remove(&signed(n, None).hash()).unwrap();
	}
	drop(store);
	let store = open();
	assert!(store.reopened_from_snapshot(), "the snapshot agrees with the database");
	drop(store);
	// Every remaining id now holds another statement (its hash stored under the id), which
	// the snapshot does not have: whichever of them is sampled shows the disagreement.
	let mut ops = Vec::new();
	for n in 180..200u8 {
		let (id, old, new) = (Id::from(n) + 1, signed(n, None), signed(n + 20, None));
		ops.push((schema::COL_BODY, schema::body_key(id).to_vec(), Some(new.encode())));
		ops.push((schema::COL_HASH, new.hash().to_vec(), Some(id.to_le_bytes().to_vec())));
		ops.push((schema::COL_HASH, old.hash().to_vec(), None));
	}
	poke(dir.path(), ops);
	let store = open();
	assert!(!store.reopened_from_snapshot(), "the set was built from the bodies instead");
	for n in 180..200u8 {
		assert!(store.has_statement(&signed(n + 20, None).hash()), "{n}");
		assert!(!store.has_statement(&signed(n, None).hash()), "{n}");
	}
}

/// Accounts holding statements and bans held, as the metrics show them.
fn tallies(store: &Store) -> (u64, u64) {
	let metrics = store.metrics();
	(metrics.accounts, metrics.bans)
}

#[test]
fn the_accounts_and_bans_counted_follow_every_change_and_survive_reopening() {
	let dir = tempfile::tempdir().unwrap();
	let store = open_roomy(dir.path());
	assert_eq!(tallies(&store), (0, 0));
	// Statements 0..12 by accounts 0..8: 0-3 hold two each, 4-7 one.
	for n in 0..12u8 {
		assert_eq!(store.submit(signed(n, None), StatementSource::Local), SubmitResult::New);
	}
	assert_eq!(tallies(&store), (8, 0));
	// Account 1 keeps statement 9; account 5 holds only statement 5, and then nothing.
	store.remove(&signed(1, None).hash()).unwrap();
	store.remove(&signed(5, None).hash()).unwrap();
	assert_eq!(tallies(&store), (7, 2));
	drop(store);
	let store = open_roomy(dir.path());
	assert_eq!(tallies(&store), (7, 2), "as they were when the store closed");
	store.remove_by(signed(2, None).account_id().unwrap()).unwrap();
	assert_eq!(tallies(&store), (6, 4), "account 2's two statements removed and banned");
}

#[test]
fn a_database_from_before_the_tallies_has_them_counted_once_when_opened() {
	let dir = tempfile::tempdir().unwrap();
	let store = open_roomy(dir.path());
	for n in 0..12u8 {
		store.submit(signed(n, None), StatementSource::Local);
	}
	store.remove(&signed(5, None).hash()).unwrap();
	let kept = tallies(&store);
	assert_eq!(kept, (7, 1));
	drop(store);
	poke(dir.path(), vec![(schema::COL_META, schema::KEY_TALLIES.to_vec(), None)]);
	let store = open_roomy(dir.path());
	assert_eq!(tallies(&store), kept, "counted from the accounts and the ban order");
	// Account 1 keeps statement 1.
	store.remove(&signed(9, None).hash()).unwrap();
	assert_eq!(tallies(&store), (7, 2), "and kept from there");
}

// Removals acknowledged before their index edits (`write::deferred`): what readers, submits,
// reopening and the check see while they wait.
fn open_for_removals(path: &std::path::Path) -> Store {
	let allowances = MapAllowances::new().with_default(StatementAllowance::new(10_000, 10 << 20));
	Store::open(Config::new(path), Arc::new(allowances)).unwrap()
}

/// Statement `n`, on topic 7, by one of four accounts.
fn on_topic_7(n: u32) -> Statement {
	TestStatement::new()
		.expiry(u32::MAX, n)
		.topic(0, Topic([7; 32]))
		.data(n.to_le_bytes().to_vec())
		.signed_ed25519(&ed25519_pair(n % 4))
}

fn waiting(store: &Store) -> usize {
	store.inner.writes.removals_waiting()
}

#[test]
fn a_removal_waiting_for_its_index_edits_is_gone_from_every_answer_and_not_damage() {
	let dir = tempfile::tempdir().unwrap();
	let store = open_for_removals(dir.path());
	for n in 0..20 {
		assert_eq!(store.submit(on_topic_7(n), StatementSource::Local), SubmitResult::New);
	}
	// The topic's list and bodies cached, so that the answers below start from lists
	// that still name the removed ids.
	assert_eq!(store.broadcasts(&[Topic([7; 32])]).unwrap().len(), 20);
	for n in 0..3 {
		store.remove(&on_topic_7(n).hash()).unwrap();
	}
	assert_eq!(waiting(&store), 3, "the removals were applied at once");

	let mut data = store.broadcasts(&[Topic([7; 32])]).unwrap();
	data.sort();
	let mut left: Vec<Vec<u8>> = (3..20u32).map(|n| n.to_le_bytes().to_vec()).collect();
	left.sort();
	assert_eq!(data, left);
	assert_eq!(store.statements().unwrap().len(), 17);
	assert_eq!(store.len(), 17);
	for n in 0..3 {
		let hash = on_topic_7(n).hash();
		assert!(!store.has_statement(&hash));
		assert_eq!(store.statement(&hash).unwrap(), None);
		assert_eq!(
			store.submit(on_topic_7(n), StatementSource::Network),
			SubmitResult::KnownExpired,
			"statement {n} is banned from the network as soon as it is removed"
		);
	}
	assert_eq!(waiting(&store), 3, "nothing above settled them");
	// A subscription counts its replay from the lists, with the removals applied first.
	let topic = statement_primitives::TopicFilter::MatchAll(vec![Topic([7; 32])]);
	assert_eq!(store.subscribe(topic).unwrap().replay_total(), 17);
	assert_eq!(waiting(&store), 0, "subscribing applied them");
	// Taken for damage, they would have been counted.
	assert_eq!(store.metrics().corrupt, 0, "a waiting removal was quarantined");

	// A later write starts from the state with them applied, and so does reopening.
	store.remove(&on_topic_7(3).hash()).unwrap();
	assert_eq!(store.submit(on_topic_7(100), StatementSource::Local), SubmitResult::New);
	assert_eq!(waiting(&store), 0, "the submit did not apply the waiting removal first");
	drop(store);
	let store = open_for_removals(dir.path());
	assert_eq!(store.len(), 17);
	assert_eq!(store.broadcasts(&[Topic([7; 32])]).unwrap().len(), 17);
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn removals_are_applied_once_the_limit_waits_and_a_local_submit_lifts_the_ban() {
	let dir = tempfile::tempdir().unwrap();
	let store = open_for_removals(dir.path());
	let count = crate::write::deferred::DEFERRED_LIMIT as u32 + 10;
	for n in 0..count {
		assert_eq!(store.submit(on_topic_7(n), StatementSource::Local), SubmitResult::New);
	}
	for n in 0..crate::write::deferred::DEFERRED_LIMIT as u32 - 1 {
		store.remove(&on_topic_7(n).hash()).unwrap();
	}
	assert_eq!(waiting(&store), crate::write::deferred::DEFERRED_LIMIT - 1);
	store.remove(&on_topic_7(crate::write::deferred::DEFERRED_LIMIT as u32 - 1).hash()).unwrap();
	assert_eq!(waiting(&store), 0, "the removal that reached the limit applied them all");
	assert_eq!(store.broadcasts(&[Topic([7; 32])]).unwrap().len(), 10);
	// Waiting, then submitted again by its own client: admitted, ban lifted.
	store.remove(&on_topic_7(count - 1).hash()).unwrap();
	assert_eq!(store.submit(on_topic_7(count - 1), StatementSource::Local), SubmitResult::New);
	assert!(store.has_statement(&on_topic_7(count - 1).hash()));
	assert_eq!(store.len(), 10);
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
}
