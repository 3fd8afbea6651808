//! Upgrades from every older schema: answers, bodies and checks after each.

use super::*;
use crate::index::lists::segments;
use crate::index::posting::encode_segment;
use crate::open::fixtures::*;
use crate::{config::Config, error::Error, open::snapshot::SNAPSHOT_FILE};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult};

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
	let mut legacy_key = vec![schema::legacy::NO_KEY_PREFIX];
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
	assert_ne!(first[0], schema::legacy::NO_KEY_PREFIX, "the schema 1 list is gone");
}

/// After an upgrade: the current schema, every body in schema 5's form with its hash.
fn assert_schema_5_bodies(dir: &std::path::Path, statements: &[Statement]) {
	let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
	assert_eq!(
		db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(),
		Some(schema::SCHEMA_VERSION.encode())
	);
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
		let mut value = schema::legacy::checked_body_value(&statement.hash(), &statement.encode());
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
	assert_eq!(
		db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(),
		Some(schema::SCHEMA_VERSION.encode())
	);
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
		let key = schema::legacy::expiry_key(statement.expiry(), id);
		ops.push((schema::COL_EXPIRY, key.to_vec(), Some(hash.to_vec())));
		let account = statement.account_id().unwrap();
		let key = schema::legacy::account_key(&account, statement.expiry(), id);
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

/// An account list: its key and its (id, low 32 bits of the expiry) pairs.
type AccountList = (Vec<u8>, Vec<(Id, u32)>);

/// Every account list of a closed database.
fn account_lists(dir: &std::path::Path) -> Vec<AccountList> {
	let db = parity_db::Db::open(&schema::db_options(dir, false)).unwrap();
	let mut iter = db.iter(schema::COL_POSTING).unwrap();
	iter.seek(&[schema::ACCOUNT_PREFIX]).unwrap();
	let mut lists = Vec::new();
	while let Some((key, value)) = iter.next().unwrap() {
		if key[0] != schema::ACCOUNT_PREFIX {
			break;
		}
		let mut pairs = Vec::new();
		decode_pairs(&value, &mut pairs).unwrap();
		lists.push((key, pairs));
	}
	lists
}

/// Schema 5 kept an account's statements of one second in segments of 4,096 ids: a dense
/// account's segment is split into segments of [`schema::ACCOUNT_LIST_SPAN`], whether the
/// database is as schema 5 left it or part split by a crash, and the store goes on: the
/// same pairs, a clean check, removals and evictions by the new keys.
#[test]
fn a_schema_5_database_gets_its_account_lists_split() {
	let dir = tempfile::tempdir().unwrap();
	let statement = |n: u32, signer: u32| {
		TestStatement::new()
			.expiry(u32::MAX - 10, n)
			.data(n.to_le_bytes().to_vec())
			.signed_ed25519(&ed25519_pair(signer))
	};
	// Ids 0..2,600 of account 1 (dense: three spans of the first old segment), then 300
	// alternating between accounts 2 and 3.
	let statements: Vec<Statement> = (0..2600)
		.map(|n| statement(n, 1))
		.chain((2600..2900).map(|n| statement(n, 2 + n % 2)))
		.collect();
	stored(dir.path(), &statements);
	let split = account_lists(dir.path());
	assert!(split.len() > 3, "{} lists", split.len());

	// Accounts 1 and 2 as schema 5 wrote them; account 3 as a crash midway through the
	// upgrade leaves it, already split.
	let account_3 = statements[2601].account_id().unwrap();
	let mut ops = Vec::new();
	let mut old: BTreeMap<Vec<u8>, Vec<(Id, u32)>> = BTreeMap::new();
	for (key, pairs) in &split {
		if key[1..33] == account_3 {
			continue;
		}
		ops.push((schema::COL_POSTING, key.clone(), None));
		for &(id, low) in pairs {
			let mut old_key = key[..schema::ACCOUNT_LIST_KEY - 8].to_vec();
			old_key.extend_from_slice(&segment_base(id).to_be_bytes());
			old.entry(old_key).or_default().push((id, low));
		}
	}
	assert!(old.len() < split.len(), "schema 5 held fewer, longer segments");
	for (key, pairs) in old {
		ops.push((schema::COL_POSTING, key, Some(encode_pairs(&pairs))));
	}
	ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(5u32.encode())));
	poke(dir.path(), ops);

	let store = open_admitting(dir.path());
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
	drop(store);
	assert_eq!(account_lists(dir.path()), split, "the same pairs, under the same keys");

	// Removing statements of account 1 past its first span edits the split lists.
	let store = open_admitting(dir.path());
	for statement in &statements[1300..1310] {
		store.remove(&statement.hash()).unwrap();
	}
	store.remove_by(account_3).unwrap();
	let report = crate::open::check::check_open(&store).unwrap();
	assert!(report.problems.is_empty(), "{:?}", report.problems);
	assert_eq!(store.len(), 2900 - 10 - 150);
	drop(store);
	let db = parity_db::Db::open(&schema::db_options(dir.path(), false)).unwrap();
	assert_eq!(
		db.get(schema::COL_META, schema::KEY_SCHEMA).unwrap(),
		Some(schema::SCHEMA_VERSION.encode())
	);
}
