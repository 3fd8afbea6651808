//! The read path end to end: dumps and large answers read on several threads, in admission
//! order, and walks that let writers commit between their pages.

use crate::{
	allowance::MapAllowances,
	config::Config,
	read::{
		paging::PAGE_IDS,
		read_ahead::{READ_AHEAD_FROM, READ_THREADS},
	},
	store::Store,
};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::StatementSource;
use statement_primitives::{Hash, Statement, StatementStore, SubmitResult};
use std::sync::Arc;

/// A store allowing 1,000 statements an account, and statement `n` of 16 accounts.
fn store_and_signer(
	dir: &std::path::Path,
) -> (Store, impl Fn(u32) -> Statement + Copy + Send + 'static) {
	let allowances = MapAllowances::new()
		.with_default(statement_primitives::StatementAllowance::new(1000, 1 << 20));
	let store = Store::open(Config::new(dir), Arc::new(allowances)).unwrap();
	let signed = |n: u32| {
		TestStatement::new()
			.expiry(u32::MAX, n)
			.data(n.to_le_bytes())
			.signed_ed25519(&ed25519_pair(n % 16))
	};
	(store, signed)
}

#[test]
fn a_dump_read_on_several_threads_keeps_admission_order_and_skips_removals() {
	let dir = tempfile::tempdir().unwrap();
	let (store, signed) = store_and_signer(dir.path());
	// Enough pages for every dump thread to read several.
	let count = (PAGE_IDS * READ_THREADS * 2 + 7) as u32;
	let mut expected = Vec::new();
	for n in 0..count {
		let statement = signed(n);
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		expected.push(statement);
	}
	for n in (0..count).step_by(7) {
		store.remove(&expected[n as usize].hash()).unwrap();
	}
	let expected: Vec<Hash> =
		(0..count).filter(|n| n % 7 != 0).map(|n| expected[n as usize].hash()).collect();
	let dumped = store.statements().unwrap();
	let hashes: Vec<Hash> = dumped.iter().map(|(hash, _)| *hash).collect();
	assert_eq!(hashes.len(), expected.len());
	assert!(hashes == expected, "the dump is out of admission order");
	assert!(dumped.iter().all(|(hash, statement)| statement.hash() == *hash));
}

#[test]
fn a_large_answer_read_ahead_keeps_admission_order_and_skips_removals() {
	let dir = tempfile::tempdir().unwrap();
	let (store, signed) = store_and_signer(dir.path());
	// Enough ids for most of the answer to be read ahead, in more chunks than helpers.
	let count = (READ_AHEAD_FROM * 4 + 300) as u32;
	for n in 0..count {
		assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
	}
	for n in (0..count).step_by(7) {
		store.remove(&signed(n).hash()).unwrap();
	}
	let expected: Vec<Vec<u8>> =
		(0..count).filter(|n| n % 7 != 0).map(|n| n.to_le_bytes().to_vec()).collect();
	// From disk, then with part of the answer in the body cache.
	store.clear_cache();
	assert!(store.broadcasts(&[]).unwrap() == expected, "the answer is out of order");
	assert!(store.inner.reads.bodies.used_bytes() > 0, "the bodies read were offered to the cache");
	assert!(store.broadcasts(&[]).unwrap() == expected, "the answer is out of order");
}

#[test]
fn a_dump_lets_a_writer_commit_between_its_pages() {
	let dir = tempfile::tempdir().unwrap();
	let (store, signed) = store_and_signer(dir.path());
	for n in 0..(PAGE_IDS as u32 * 2 + 10) {
		assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
	}
	let mut pages = 0;
	store
		.walk_id_pages(|_, _| {
			pages += 1;
			if pages == 1 {
				// Had the walk kept the view lock, this commit would wait for the whole
				// walk, which waits for it: the receive would time out.
				let (done, finished) = std::sync::mpsc::channel();
				let writer = store.clone();
				std::thread::spawn(move || {
					let _ = done.send(writer.submit(signed(100_000), StatementSource::Local));
				});
				let result = finished.recv_timeout(std::time::Duration::from_secs(60));
				assert_eq!(result, Ok(SubmitResult::New), "the writer committed mid-walk");
			}
			Ok(())
		})
		.unwrap();
	assert!(pages >= 3, "{pages} pages");
}

/// A broadcast whose candidates are few leaves the statements posted to a key out by their
/// bodies, and reads the list of them from disk only where the cache holds it: at 4.19M that
/// list is a quarter of the store, too long for the cache, and reading it for every query made
/// a broadcast of 6 statements 1,400x the baseline's (`full_store`, broadcasts_diverse_6).
#[test]
fn a_short_broadcast_does_not_read_the_keyed_list_the_cache_cannot_hold() {
	let dir = tempfile::tempdir().unwrap();
	let mut config = Config::new(dir.path());
	// 64 bytes a shard of the posting cache: no list is kept.
	config.cache_bytes = 16 * 64;
	let store = Store::open(config, Arc::new(MapAllowances::unlimited())).unwrap();
	let topic = statement_primitives::Topic([7; 32]);
	let key = [9; 32];
	let statement = |n: u32, key: Option<[u8; 32]>| {
		TestStatement::new()
			.expiry(u32::MAX, n)
			.topic(0, topic)
			.decryption_key(key)
			.data(n.to_le_bytes())
			.signed_ed25519(&ed25519_pair(n % 4))
	};
	for n in 0..50 {
		let posted = statement(n, Some(key));
		assert_eq!(store.submit(posted, StatementSource::Local), SubmitResult::New);
	}
	for n in 50..53 {
		assert_eq!(store.submit(statement(n, None), StatementSource::Local), SubmitResult::New);
	}
	let before = store.inner.reads.lists_read();
	let answer = store.broadcasts(&[topic]).unwrap();
	let read = store.inner.reads.lists_read() - before;
	let mut expected: Vec<Vec<u8>> = (50..53u32).map(|n| n.to_le_bytes().to_vec()).collect();
	let mut answer = answer;
	answer.sort();
	expected.sort();
	assert_eq!(answer, expected, "the broadcast holds exactly the statements without a key");
	assert_eq!(
		read, 1,
		"lists read from disk for one short broadcast: the topic's, and the keyed list"
	);
	assert_eq!(store.posted(&[topic], key).unwrap().len(), 50);
}
