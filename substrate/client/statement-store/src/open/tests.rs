//! Opening: schema checks, migration, intent redo and its gaps, damaged databases.
use super::*;
use crate::index::posting::encode_segment;
use crate::{allowance::MapAllowances, index::lists::segments};
use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult, Topic};

fn open(path: &std::path::Path) -> Result<Store> {
	Store::open(Config::new(path), Arc::new(MapAllowances::new()))
}

/// Write raw values into a closed store's database, as a newer build or a corruption would.
fn poke(path: &std::path::Path, ops: Vec<(u8, Vec<u8>, Option<Vec<u8>>)>) {
	let db = parity_db::Db::open(&schema::db_options(path, false)).unwrap();
	writeback::commit(&db, ops, false).unwrap();
}

fn signed(n: u8, key: Option<u8>) -> Statement {
	use sp_core::Pair;
	let mut statement = Statement::new();
	statement.set_expiry_from_parts(u32::MAX, u32::from(n));
	statement.set_topic(0, Topic([n % 4; 32]));
	if let Some(key) = key {
		statement.set_decryption_key([key; 32]);
	}
	statement.set_plain_data(vec![n]);
	statement.sign_ed25519_private(&sp_core::ed25519::Pair::from_seed(&[n % 8; 32]));
	statement
}

/// A store in `dir` that admits anyone (up to 1,000 statements and 1 MiB an account).
fn open_admitting(dir: &std::path::Path) -> Store {
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	Store::open(Config::new(dir), Arc::new(allowances)).unwrap()
}

/// `statements` submitted to a new store in `dir`, which is then closed: the answers it gave.
fn stored(dir: &std::path::Path, statements: &[Statement]) -> Vec<Vec<Vec<u8>>> {
	let store = open_admitting(dir);
	for statement in statements {
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
	answers(&store)
}

/// Every query answer this test looks at, sorted.
fn answers(store: &Store) -> Vec<Vec<Vec<u8>>> {
	let mut out = vec![store.broadcasts(&[]).unwrap()];
	for t in 0..4 {
		out.push(store.broadcasts(&[Topic([t; 32])]).unwrap());
		for key in 0..2 {
			out.push(store.posted(&[Topic([t; 32])], [key; 32]).unwrap());
		}
	}
	out.iter_mut().for_each(|answer| answer.sort());
	out
}

#[test]
fn a_schema_1_database_is_upgraded_and_answers_the_same() {
	let dir = tempfile::tempdir().unwrap();
	let open = || open_admitting(dir.path());
	let statements: Vec<Statement> =
		(0..120u8).map(|n| signed(n, (n % 3 == 0).then_some(n % 2))).collect();
	let expected = stored(dir.path(), &statements);
	assert_eq!(expected[0].len(), 80, "broadcasts are the 80 statements without a key");

	// Rewrite the posting lists as schema 1 had them: the statements without a key in a
	// list under prefix 0, no list of keyed statements.
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	let keyed = segments(&db, PostingKey::Keyed).unwrap();
	let mut ops = Vec::new();
	let mut iter = db.iter(schema::COL_POSTING).unwrap();
	iter.seek(&PostingKey::Keyed.prefix()).unwrap();
	while let Some((key, _)) = iter.next().unwrap() {
		if key.starts_with(&PostingKey::Keyed.prefix()) {
			ops.push((schema::COL_POSTING, key, None));
		}
	}
	drop(iter);
	let mut no_key = Vec::new();
	let mut journal = db.iter(schema::COL_JOURNAL).unwrap();
	journal.seek_to_first().unwrap();
	while let Some((key, _)) = journal.next().unwrap() {
		let id = schema::be_u64(&key, 0).unwrap();
		if keyed.binary_search(&id).is_err() {
			no_key.push(id);
		}
	}
	drop(journal);
	let mut legacy_key = vec![schema::LEGACY_NO_KEY_PREFIX];
	legacy_key.extend_from_slice(&0u64.to_be_bytes());
	ops.push((schema::COL_POSTING, legacy_key, Some(encode_segment(&no_key))));
	ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(1u32.encode())));
	writeback::commit(&db, ops, false).unwrap();
	drop(db);

	let store = open();
	assert_eq!(answers(&store), expected);
	let statement = signed(200, None);
	assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
	assert_eq!(store.broadcasts(&[]).unwrap().len(), 81);
	drop(store);
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	assert_eq!(
		db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(),
		Some(schema::SCHEMA_VERSION.encode())
	);
	assert_eq!(segments(&db, PostingKey::Keyed).unwrap(), keyed);
	let mut iter = db.iter(schema::COL_POSTING).unwrap();
	iter.seek_to_first().unwrap();
	let (first, _) = iter.next().unwrap().unwrap();
	assert_ne!(first[0], schema::LEGACY_NO_KEY_PREFIX, "the schema 1 list is gone");
}

/// The key of `statement`'s body, by the id its hash names.
fn body_key_of(db: &parity_db::Db, statement: &Statement) -> [u8; 32] {
	let stored = db.get(schema::COL_HASH, &statement.hash()).unwrap().unwrap();
	schema::body_key(schema::le_u64_prefix(&stored).unwrap())
}

/// After an upgrade: schema 5, every body in its form with its hash.
fn assert_schema_5_bodies(dir: &std::path::Path, statements: &[Statement]) {
	let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
	assert_eq!(db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(), Some(5u32.encode()));
	for statement in statements {
		let value = db.get(schema::COL_BODY, &body_key_of(&db, statement)).unwrap().unwrap();
		assert_eq!(value, schema::body_value(&statement.hash(), &statement.encode()));
	}
}

/// Schema 3 stored each body as its bare encoding: the upgrade gives every body its hash and
/// check, whether the database is as schema 3 left it or half upgraded by a crash, and
/// answers the same.
#[test]
fn a_schema_3_database_gets_a_hash_and_check_in_each_body_and_answers_the_same() {
	let dir = tempfile::tempdir().unwrap();
	let open = || open_admitting(dir.path());
	let statements: Vec<Statement> =
		(0..60u8).map(|n| signed(n, (n % 3 == 0).then_some(n % 2))).collect();
	let expected = stored(dir.path(), &statements);

	// As schema 3 wrote them: the encoding alone (the last ten as a crash midway through the
	// upgrade leaves them, already rewritten).
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	let mut ops = Vec::new();
	for statement in &statements[..50] {
		let key = body_key_of(&db, statement);
		let value = db.get(schema::COL_BODY, &key).unwrap().unwrap();
		assert_eq!(value[0], schema::BODY_HASHED, "written with its hash");
		let encoding = statement.encode();
		assert_eq!(value[schema::BODY_HASHED_LEN..], encoding[..]);
		ops.push((schema::COL_BODY, key.to_vec(), Some(encoding)));
	}
	ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(3u32.encode())));
	writeback::commit(&db, ops, false).unwrap();
	drop(db);

	let store = open();
	assert_eq!(answers(&store), expected);
	assert_eq!(store.statement(&statements[3].hash()).unwrap(), Some(statements[3].clone()));
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
	drop(store);
	assert_schema_5_bodies(dir.path(), &statements);
}

/// `statements` stored in `dir`, then written back as schema 4 left them: each body behind
/// schema 4's check (the one at `damaged` with a flipped bit under it), and the membership
/// snapshot as version 2, without ids.
fn as_schema_4(dir: &std::path::Path, statements: &[Statement], damaged: Option<usize>) {
	stored(dir, statements);
	let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
	let mut ops = Vec::new();
	for (n, statement) in statements.iter().enumerate() {
		let key = body_key_of(&db, statement);
		let mut value = schema::checked_body_value(&statement.hash(), &statement.encode());
		if damaged == Some(n) {
			let last = value.len() - 1;
			value[last] ^= 1;
		}
		ops.push((schema::COL_BODY, key.to_vec(), Some(value)));
	}
	ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(4u32.encode())));
	writeback::commit(&db, ops, false).unwrap();
	drop(db);
	let snapshot = dir.join(SNAPSHOT_FILE);
	let mut bytes = std::fs::read(&snapshot).unwrap();
	bytes[..8].copy_from_slice(b"SSMEMB02");
	std::fs::write(&snapshot, bytes).unwrap();
}

/// A database as the previous build (schema 4) left it: the upgrade rewrites every body with
/// its hash, and the store answers the same, by topic and by hash, removes, and reopens
/// from a snapshot with ids.
#[test]
fn a_schema_4_database_gets_the_hash_in_each_body_and_answers_the_same() {
	let dir = tempfile::tempdir().unwrap();
	let statements: Vec<Statement> =
		(0..60u8).map(|n| signed(n, (n % 3 == 0).then_some(n % 2))).collect();
	let expected = {
		let fresh = tempfile::tempdir().unwrap();
		stored(fresh.path(), &statements)
	};
	as_schema_4(dir.path(), &statements, None);

	let store = open_admitting(dir.path());
	assert!(!store.reopened_from_snapshot(), "a version 2 snapshot is not read");
	assert_eq!(answers(&store), expected);
	for statement in &statements {
		assert_eq!(store.statement(&statement.hash()).unwrap(), Some(statement.clone()));
	}
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
	store.remove(&statements[3].hash()).unwrap();
	assert_eq!(store.statement(&statements[3].hash()).unwrap(), None);
	drop(store);
	assert_schema_5_bodies(dir.path(), &statements[4..]);

	let store = open_admitting(dir.path());
	assert!(store.reopened_from_snapshot());
	for (n, statement) in statements.iter().enumerate() {
		let expected = (n != 3).then(|| statement.clone());
		assert_eq!(store.statement(&statement.hash()).unwrap(), expected, "statement {n}");
	}
}

/// A body damaged under schema 4's check stays damaged after the upgrade: the open that reads
/// every body (the old snapshot is not read) finds it and refuses, naming it, as it does for
/// any damaged body it samples; `check-db` on the database names it too.
#[test]
fn a_body_damaged_before_the_upgrade_to_schema_5_stays_damaged() {
	let dir = tempfile::tempdir().unwrap();
	let statements: Vec<Statement> = (0..20u8).map(|n| signed(n, None)).collect();
	as_schema_4(dir.path(), &statements, Some(7));
	match open(dir.path()) {
		Err(Error::Corrupt { detail, .. }) => {
			assert!(detail.contains("does not match its hash"), "{detail}")
		}
		Err(other) => panic!("{other:?}"),
		Ok(_) => panic!("opened with a damaged body"),
	}
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	assert_eq!(db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(), Some(5u32.encode()));
	let value = db.get(schema::COL_BODY, &body_key_of(&db, &statements[7])).unwrap().unwrap();
	let body = schema::StoredBody::of(value);
	assert!(matches!(body, schema::StoredBody::Hashed { sound: false, .. }));
	drop(db);
	let report = crate::open::check::check(Config::new(dir.path())).unwrap();
	assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
	assert!(report.problems[0].starts_with("statement 8:"), "{:?}", report.problems);
}

#[test]
fn a_schema_2_database_is_upgraded_its_whole_records_read_by_their_ids() {
	let dir = tempfile::tempdir().unwrap();
	let open = || open_admitting(dir.path());
	let statements: Vec<Statement> =
		(0..40u8).map(|n| signed(n, (n % 5 == 0).then_some(1))).collect();
	let expected = stored(dir.path(), &statements);

	// Schema 2 stored the whole record under the hash: the SCALE encoding of id, expiry,
	// account, data length, encoded length, channel, decryption key and topics.
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	let mut ops = Vec::new();
	for statement in &statements {
		let hash = statement.hash();
		let id = schema::le_u64_prefix(&db.get(schema::COL_HASH, &hash).unwrap().unwrap()).unwrap();
		assert_eq!(db.get(schema::COL_HASH, &hash).unwrap().unwrap().len(), 8, "schema 3 value");
		let record = schema::Record::of(id, statement, statement.encode().len()).unwrap();
		let topics: Vec<[u8; 32]> = record.topics.iter().map(|topic| topic.0).collect();
		let legacy = (
			record.id,
			record.expiry,
			record.account,
			record.data_len,
			record.encoded_len,
			record.channel,
			record.decryption_key,
			topics,
		)
			.encode();
		ops.push((schema::COL_HASH, hash.to_vec(), Some(legacy)));
	}
	// Schema 2's expiry index: a btree entry per statement. As a crash during the move to
	// schema 3 leaves it, the expiry lists still hold the first half of the ids as well.
	let mut ids = Vec::new();
	for statement in &statements {
		let hash = statement.hash();
		let id = schema::le_u64_prefix(&db.get(schema::COL_HASH, &hash).unwrap().unwrap()).unwrap();
		let key = schema::expiry_key(statement.expiry(), id);
		ops.push((schema::COL_EXPIRY, key.to_vec(), Some(hash.to_vec())));
		let account = statement.account_id().unwrap();
		let key = schema::account_key(&account, statement.expiry(), id);
		ops.push((schema::COL_ACCOUNT, key.to_vec(), Some(hash.to_vec())));
		ids.push(id);
	}
	ids.sort();
	let mut iter = db.iter(schema::COL_POSTING).unwrap();
	iter.seek(&PostingKey::All.prefix()).unwrap();
	while let Some((key, value)) = iter.next().unwrap() {
		if key[0] == PostingKey::All.prefix()[0] {
			// Schema 2 listed the stored ids in its journal only.
			ops.push((schema::COL_POSTING, key, None));
		} else if key[0] == schema::EXPIRY_PREFIX {
			ops.push((schema::COL_POSTING, key, Some(encode_segment(&ids[..20]))));
		} else if key[0] == schema::ACCOUNT_PREFIX {
			// Half of each account's list already moved.
			let mut pairs = Vec::new();
			crate::index::posting::decode_pairs(&value, &mut pairs).unwrap();
			pairs.truncate(pairs.len() / 2);
			ops.push((schema::COL_POSTING, key, Some(crate::index::posting::encode_pairs(&pairs))));
		}
	}
	drop(iter);
	ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(2u32.encode())));
	writeback::commit(&db, ops, false).unwrap();
	// Schema 2's journal held every statement.
	for id in &ids {
		assert!(db.get(schema::COL_JOURNAL, &schema::id_key(*id)).unwrap().is_some());
	}
	drop(db);

	let store = open();
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
	assert_eq!(
		crate::index::lists::stored_ids(store.inner.db.raw(), 0, Id::MAX, 100).unwrap(),
		ids
	);
	assert_eq!(answers(&store), expected);
	assert_eq!(store.statement(&statements[3].hash()).unwrap(), Some(statements[3].clone()));
	// Removing reads each record from the body and the id from the front of the old value.
	for statement in &statements[..20] {
		store.remove(&statement.hash()).unwrap();
	}
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
	assert_eq!(report.statements, 20);
	// Broadcasts answer the data: statement n carries [n]; every fifth one has a key.
	let left: Vec<Vec<u8>> = (20..40u8).filter(|n| n % 5 != 0).map(|n| vec![n]).collect();
	let mut broadcasts = store.broadcasts(&[]).unwrap();
	broadcasts.sort();
	assert_eq!(broadcasts, left);
	drop(store);
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	assert_eq!(
		db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(),
		Some(schema::SCHEMA_VERSION.encode())
	);
}

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
	assert!(store.inner.reopened_from_snapshot);
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
	let record = bytes.len() / 10;
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
			// Five equally long records.
			let record = bytes.len() / 5;
			let mut keep = bytes.len() - cut_records * record;
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

/// A lookup by hash goes by the membership set's ids, which know only the hash's first 8
/// bytes: a hash that shares them with a stored one is not answered with that statement, and
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
	assert!(store.has_statement(&fake), "the set answers by the first 8 bytes");
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
	store.inner.writeback.checkpoint().unwrap();
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
	assert!(store.inner.reopened_from_snapshot, "the snapshot agrees with the database");
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
	assert!(!store.inner.reopened_from_snapshot, "the set was built from the bodies instead");
	for n in 180..200u8 {
		assert!(store.has_statement(&signed(n + 20, None).hash()), "{n}");
		assert!(!store.has_statement(&signed(n, None).hash()), "{n}");
	}
}
