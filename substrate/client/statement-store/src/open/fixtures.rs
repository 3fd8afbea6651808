//! What the opening and upgrade tests share: stores opened on a directory, raw writes into a
//! closed database, statements, and the answers compared before and after.

use crate::allowance::MapAllowances;
use crate::{config::Config, error::Result, index::schema, store::Store, write::writeback};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult, Topic};
use std::sync::Arc;

pub(super) fn open(path: &std::path::Path) -> Result<Store> {
	Store::open(Config::new(path), Arc::new(MapAllowances::new()))
}

/// Write raw values into a closed store's database, as a newer build or a corruption would.
pub(super) fn poke(path: &std::path::Path, ops: Vec<(u8, Vec<u8>, Option<Vec<u8>>)>) {
	let db = parity_db::Db::open(&schema::db_options(path, false)).unwrap();
	writeback::commit(&db, ops, false).unwrap();
}

/// Statement `n`: on one of four topics, by one of eight accounts, posted to `key` if given.
pub(super) fn signed(n: u8, key: Option<u8>) -> Statement {
	TestStatement::new()
		.expiry(u32::MAX, u32::from(n))
		.topic(0, Topic([n % 4; 32]))
		.decryption_key(key.map(|key| [key; 32]))
		.data(vec![n])
		.signed_ed25519(&ed25519_pair(u32::from(n % 8)))
}

pub(super) use crate::testing::open_admitting;

/// `statements` submitted to a new store in `dir`, which is then closed: the answers it gave.
pub(super) fn stored(dir: &std::path::Path, statements: &[Statement]) -> Vec<Vec<Vec<u8>>> {
	let store = open_admitting(dir);
	for statement in statements {
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
	answers(&store)
}

/// Every query answer this test looks at, sorted.
pub(super) fn answers(store: &Store) -> Vec<Vec<Vec<u8>>> {
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

/// The key of `statement`'s body, by the id its hash names.
pub(super) fn body_key_of(db: &parity_db::Db, statement: &Statement) -> [u8; 32] {
	let stored = db.get(schema::COL_HASH, &statement.hash()).unwrap().unwrap();
	schema::body_key(schema::le_u64_prefix(&stored).unwrap())
}
