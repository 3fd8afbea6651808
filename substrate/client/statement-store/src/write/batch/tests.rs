//! A failed intent append leaves no trace.

use crate::{allowance::MapAllowances, config::Config, store::Store};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{
	Statement, StatementAllowance, StatementSource, StatementStore, SubmitResult, Topic,
};
use std::sync::{atomic::Ordering, Arc};

fn open(path: &std::path::Path) -> Store {
	let allowances = MapAllowances::new().with_default(StatementAllowance::new(100, 1 << 20));
	Store::open(Config::new(path), Arc::new(allowances)).unwrap()
}

fn signed(n: u8) -> Statement {
	TestStatement::new()
		.expiry(u32::MAX, u32::from(n))
		.topic(0, Topic([n; 32]))
		.data(vec![n; 3])
		.signed_ed25519(&ed25519_pair(u32::from(n)))
}

fn found(store: &Store, n: u8) -> Vec<Vec<u8>> {
	store.broadcasts(&[Topic([n; 32])]).unwrap()
}

#[test]
fn a_failed_intent_append_leaves_no_trace_and_gives_no_id_twice() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path());
	assert_eq!(store.submit(signed(0), StatementSource::Local), SubmitResult::New);
	store.inner.writes.intent.fail_appends.store(5, Ordering::Release);
	for n in 1..=5 {
		match store.submit(signed(n), StatementSource::Local) {
			SubmitResult::InternalError(err) => {
				assert!(err.to_string().contains("cannot append to the intent log"), "{err}")
			}
			other => panic!("expected an internal error, got {other:?}"),
		}
		assert!(!store.has_statement(&signed(n).hash()));
		assert!(found(&store, n).is_empty());
	}
	assert_eq!(store.submit(signed(6), StatementSource::Local), SubmitResult::New);
	assert_eq!(found(&store, 6), vec![vec![6; 3]]);
	for n in 1..=5 {
		assert!(found(&store, n).is_empty(), "statement {n} must not answer with 6's data");
	}
	// Nothing of the failed ones reached parity-db either, so no crash can bring them back.
	store.inner.writes.checkpoint().unwrap();
	for n in 1..=5 {
		let hash = signed(n).hash();
		assert_eq!(store.inner.db.raw().get(crate::index::schema::COL_HASH, &hash).unwrap(), None);
	}
	assert_eq!(store.submit(signed(1), StatementSource::Local), SubmitResult::New);
	assert_eq!(store.len(), 3);
	drop(store);
	let store = open(dir.path());
	assert_eq!(store.len(), 3);
	for (n, expected) in [(0, 1), (1, 1), (2, 0), (5, 0), (6, 1)] {
		assert_eq!(found(&store, n).len(), expected, "statement {n}");
	}
}

/// A commit leaves the account-list segments it staged decoded for the next batch, exactly as
/// it staged them, and a batch that edits one again starts from that.
#[test]
fn a_commit_leaves_its_account_lists_decoded_as_staged() {
	use crate::index::{posting::decode_pairs, schema};
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path());
	let pair = ed25519_pair(7);
	let of = |sequence: u32| {
		TestStatement::new().expiry(u32::MAX, sequence).data(vec![7; 3]).signed_ed25519(&pair)
	};
	let (first, second) = (of(1), of(2));
	assert_eq!(store.submit(first.clone(), StatementSource::Local), SubmitResult::New);
	assert_eq!(store.submit(second.clone(), StatementSource::Local), SubmitResult::New);
	let records: Vec<_> = [&first, &second]
		.iter()
		.map(|statement| store.inner.record(&statement.hash()).unwrap().unwrap())
		.collect();
	let key = schema::account_list_key(&records[0].account, records[0].expiry, records[0].id);
	assert_eq!(
		key,
		schema::account_list_key(&records[1].account, records[1].expiry, records[1].id),
		"one segment holds both"
	);
	let held = store.inner.writes.account_lists.take(&key).expect("held after the commit");
	let staged = store.inner.db.get(schema::COL_POSTING, &key).unwrap().unwrap();
	let mut pairs = Vec::new();
	decode_pairs(&staged, &mut pairs).unwrap();
	assert_eq!(held, pairs, "held as staged");
	let expected: Vec<_> = records.iter().map(|r| (r.id, r.expiry as u32)).collect();
	assert_eq!(held, expected);
}
