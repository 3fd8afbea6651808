use super::*;
use statement_primitives::testing::{ed25519_pair, TestStatement};

#[test]
fn expiry_segments_sort_by_second_then_base_after_every_other_list() {
	let a = PostingKey::Expiry(7).segment_key(8192);
	let b = PostingKey::Expiry(8).segment_key(0);
	assert!(a < b && a.len() == EXPIRY_SEGMENT_KEY);
	assert_eq!(PostingKey::Expiry(7).segment_base(8192 + 300), 8192 + 256);
	assert_eq!(PostingKey::Topic([1; 32]).segment_base(8192 + 300), 8192);
	assert!(PostingKey::Expiry(0).segment_key(0) > PostingKey::All.segment_key(u64::MAX));
	let mut record = Record::new(1, [0; 32], &Statement::new(), 10);
	record.expiry = (9 << 32) | 5;
	assert_eq!(record.posting_keys().last(), Some(PostingKey::Expiry(9)));
}

#[test]
fn a_new_database_has_a_btree_meta_column_and_an_old_one_keeps_its_hash_column() {
	let dir = tempfile::tempdir().unwrap();
	assert!(db_options(dir.path(), false).columns[COL_META as usize].btree_index);
	let mut old = db_options(dir.path(), false);
	old.columns[COL_META as usize].btree_index = false;
	let db = parity_db::Db::open_or_create(&old).unwrap();
	db.commit(vec![(COL_META, KEY_SCHEMA.to_vec(), Some(2u32.encode()))]).unwrap();
	drop(db);
	let options = db_options(dir.path(), false);
	assert!(!options.columns[COL_META as usize].btree_index);
	let db = parity_db::Db::open(&options).unwrap();
	assert_eq!(db.get(COL_META, KEY_SCHEMA).unwrap(), Some(2u32.encode()));
}

#[test]
fn posting_prefixes_do_not_overlap_between_kinds() {
	let topic = PostingKey::Topic([1; 32]).prefix();
	let key = PostingKey::DecryptionKey([1; 32]).prefix();
	assert_ne!(topic, key);
	assert_eq!(PostingKey::Keyed.prefix(), vec![3]);
	assert_ne!(PostingKey::Keyed.prefix()[0], legacy::NO_KEY_PREFIX);
	assert!(PostingKey::Topic([1; 32]).segment_key(5).starts_with(&topic));
}

#[test]
fn a_body_holds_its_hash_under_its_check_and_any_flipped_bit_shows() {
	let encoding: Vec<u8> = (0..300u32).map(|n| n as u8).collect();
	let hash = statement_primitives::hash_encoded(&encoding);
	let other = statement_primitives::hash_encoded(b"another statement");
	let value = body_value(&hash, &encoding);
	assert_eq!(value.len(), encoding.len() + BODY_HASHED_LEN);
	assert_eq!(StoredBody::of(value.clone()).of_hash(&hash), Some(encoding.clone()));
	assert_eq!(StoredBody::of(value.clone()).of_hash(&other), None, "another hash's");
	assert_eq!(StoredBody::of(value.clone()).stored_hash(), Some(hash));
	assert_eq!(StoredBody::of(value.clone()).hashed(), (encoding.clone(), hash));
	for at in 0..value.len() {
		for bit in 0..8 {
			let mut damaged = value.clone();
			damaged[at] ^= 1 << bit;
			assert_eq!(StoredBody::of(damaged.clone()).of_hash(&hash), None, "{at}.{bit}");
			assert_eq!(StoredBody::of(damaged.clone()).stored_hash(), None, "{at}.{bit}");
			// What it is now: the hash of an intact encoding, else not the stored hash.
			let (now, now_hash) = StoredBody::of(damaged).hashed();
			assert!(now_hash != hash || now == encoding, "{at}.{bit}");
		}
	}
}

#[test]
fn a_schema_4_body_is_the_body_of_its_hash_alone_and_any_flipped_bit_shows() {
	let encoding: Vec<u8> = (0..300u32).map(|n| n as u8).collect();
	let hash = statement_primitives::hash_encoded(&encoding);
	let other = statement_primitives::hash_encoded(b"another statement");
	let value = legacy::checked_body_value(&hash, &encoding);
	assert_eq!(value.len(), encoding.len() + BODY_CHECK_LEN);
	assert_eq!(StoredBody::of(value.clone()).of_hash(&hash), Some(encoding.clone()));
	assert_eq!(StoredBody::of(value.clone()).of_hash(&other), None, "another hash's");
	assert_eq!(StoredBody::of(value.clone()).stored_hash(), None, "no hash held");
	assert_eq!(StoredBody::of(value.clone()).hashed(), (encoding.clone(), hash));
	match StoredBody::of(value.clone()) {
		StoredBody::Checked { check, encoding } => {
			assert_eq!(legacy::claimed(check, &encoding), fingerprint(&hash))
		}
		_ => panic!("not read as schema 4's"),
	}
	for at in 0..value.len() {
		for bit in 0..8 {
			let mut damaged = value.clone();
			damaged[at] ^= 1 << bit;
			assert_eq!(StoredBody::of(damaged.clone()).of_hash(&hash), None, "{at}.{bit}");
			if let StoredBody::Checked { check, encoding } = StoredBody::of(damaged) {
				assert_ne!(legacy::claimed(check, &encoding), fingerprint(&hash), "{at}.{bit}");
			}
		}
	}
	// A body as schema 3 wrote it is checked by its blake2.
	assert_eq!(StoredBody::of(encoding.clone()).of_hash(&hash), Some(encoding.clone()));
	assert_eq!(StoredBody::of(encoding).of_hash(&other), None);
}

#[test]
fn body_keys_of_distinct_ids_differ_in_their_first_bytes() {
	let firsts: std::collections::HashSet<[u8; 8]> =
		(0..10_000u64).map(|id| body_key(id)[..8].try_into().unwrap()).collect();
	assert_eq!(firsts.len(), 10_000);
}

#[test]
fn a_hash_value_is_the_id_as_schema_2_records_began() {
	let statement = TestStatement::new().topic(0, Topic([4; 32])).data(vec![1, 2, 3]).unsigned();
	let record = Record::new(0x0102_0304_0506_0708, [9; 32], &statement, 40);
	assert_eq!(record.hash_value().len(), 8);
	assert_eq!(le_u64_prefix(&record.hash_value()), Some(0x0102_0304_0506_0708));
	// Schema 2's value: the SCALE encoding of the whole record, id first.
	let legacy = (record.id, record.expiry, record.account, record.data_len).encode();
	assert_eq!(le_u64_prefix(&legacy), Some(record.id));
}

#[test]
fn a_record_read_from_a_body_charges_the_signer() {
	let statement = TestStatement::new()
		.topic(0, Topic([4; 32]))
		.channel([6; 32])
		.data(vec![1, 2, 3])
		.signed_ed25519(&ed25519_pair(3));
	let account = match statement.verify_signature() {
		statement_primitives::SignatureVerificationResult::Valid(account) => account,
		other => panic!("{other:?}"),
	};
	let encoded_len = statement.encode().len();
	let record = Record::of(7, &statement, encoded_len).unwrap();
	assert_eq!(record, Record::new(7, account, &statement, encoded_len));
	assert_eq!(record.channel, Some([6; 32]));
	assert_eq!(Record::of(7, &Statement::new(), 10), None);
}

#[test]
fn account_lists_sort_by_account_then_second_then_base() {
	let account = [9u8; 32];
	let key = account_list_key(&account, (1 << 32) | 7, 99);
	assert_eq!(key.len(), ACCOUNT_LIST_KEY);
	assert!(key.starts_with(&account_lists(&account)));
	assert_eq!(key, account_list_key(&account, (1 << 32) | 9, 100), "same second and span");
	assert!(key < account_list_key(&account, 2 << 32, 0));
	assert!(key < account_list_key(&account, 1 << 32, 5000));
	assert!(account_list_key(&[8; 32], u64::MAX, 0) < key);
	assert!(key > PostingKey::Expiry(u64::MAX).segment_key(u64::MAX));
}
