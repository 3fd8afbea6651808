//! Queries: broadcasts, posted, the `_stmt` forms, filters, the journal cursor, subscriptions.

mod common;

use common::*;
use statement_primitives::{
	Error as PrimitivesError, StatementSource, StatementStore, SubmitResult, TopicFilter,
};
use statement_store::Decryptor;
use std::sync::Arc;

const LOCAL: StatementSource = StatementSource::Local;

fn with_key(
	signer: u32,
	topics: &[u32],
	key: Option<u8>,
	data: &[u8],
) -> statement_primitives::Statement {
	expiring(3600, 0, topics)
		.decryption_key(key.map(|key| [key; 32]))
		.data(data)
		.signed_ed25519(&ed25519_pair(signer))
}

#[test]
fn broadcasts_match_all_topics_and_skip_posted_statements() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	for (signer, topics, key, data) in [
		(1, vec![1, 2], None, b"a".as_slice()),
		(2, vec![1], None, b"b"),
		(3, vec![2, 1, 3], None, b"c"),
		(4, vec![1, 2], Some(9), b"secret"),
	] {
		assert_eq!(store.submit(with_key(signer, &topics, key, data), LOCAL), SubmitResult::New);
	}
	assert_eq!(
		store.broadcasts(&[topic(1), topic(2)]).unwrap(),
		vec![b"a".to_vec(), b"c".to_vec()]
	);
	assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), 3);
	assert_eq!(store.broadcasts(&[]).unwrap().len(), 3, "no topics matches every broadcast");
	assert!(store.broadcasts(&[topic(1), topic(4)]).unwrap().is_empty());
	assert_eq!(store.posted(&[topic(2)], [9; 32]).unwrap(), vec![b"secret".to_vec()]);
	assert!(store.posted(&[topic(2)], [8; 32]).unwrap().is_empty());

	let encoded = store.broadcasts_stmt(&[topic(3)]).unwrap();
	assert_eq!(encoded, vec![with_key(3, &[2, 1, 3], None, b"c").encode()]);
	assert_eq!(
		store.posted_stmt(&[], [9; 32]).unwrap(),
		vec![with_key(4, &[1, 2], Some(9), b"secret").encode()]
	);
}

#[test]
fn more_than_four_topics_is_an_error_not_a_panic() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let five: Vec<_> = (0..5).map(topic).collect();
	assert_eq!(store.broadcasts(&five), Err(PrimitivesError::TooManyTopics { given: 5, max: 4 }));
	assert!(store.posted(&five, [0; 32]).is_err());
	assert!(store.subscribe(TopicFilter::MatchAll(five)).is_err());
}

struct Reverse;

impl Decryptor for Reverse {
	fn decrypt(&self, key: &[u8; 32], data: &[u8]) -> Option<Vec<u8>> {
		(key == &[9; 32]).then(|| data.iter().rev().copied().collect())
	}
}

#[test]
fn posted_clear_decrypts_with_the_keystore_and_skips_unknown_keys() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let mut config = config(dir.path(), &clock);
	config.decryptor = Some(Arc::new(Reverse));
	let store = statement_store::Store::open(config, allowances(10, 1000)).unwrap();
	let posted = with_key(1, &[1], Some(9), b"abc");
	store.submit(posted.clone(), LOCAL);
	store.submit(with_key(2, &[1], Some(8), b"xyz"), LOCAL);
	assert_eq!(store.posted_clear(&[topic(1)], [9; 32]).unwrap(), vec![b"cba".to_vec()]);
	assert!(store.posted_clear(&[topic(1)], [8; 32]).unwrap().is_empty());
	let mut expected = posted.encode();
	expected.extend_from_slice(b"cba");
	assert_eq!(store.posted_clear_stmt(&[], [9; 32]).unwrap(), vec![expected]);
}

#[test]
fn the_journal_cursor_returns_statements_in_admission_order_in_pages() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let statements: Vec<_> = (0..5u8).map(|n| simple(1, &[1], &[n])).collect();
	for s in &statements {
		store.submit(s.clone(), LOCAL);
	}
	store.remove(&statements[1].hash()).unwrap();
	let first = store.statements_since(0, 2).unwrap();
	let hashes: Vec<_> = first.iter().map(|(_, h, _)| *h).collect();
	assert_eq!(hashes, vec![statements[0].hash(), statements[2].hash()]);
	let rest = store.statements_since(first[1].0, 10).unwrap();
	let hashes: Vec<_> = rest.iter().map(|(_, h, _)| *h).collect();
	assert_eq!(hashes, vec![statements[3].hash(), statements[4].hash()]);
	assert_eq!(rest[0].2, statements[3].encode());
}

#[test]
fn a_subscription_replays_stored_matches_then_streams_new_ones_once_in_order() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	store.submit(simple(1, &[1, 2], b"old"), LOCAL);
	store.submit(simple(2, &[3], b"other"), LOCAL);
	let mut all = store.subscribe(TopicFilter::MatchAll(vec![topic(1)])).unwrap();
	let mut any = store.subscribe(TopicFilter::MatchAny(vec![topic(3), topic(4)])).unwrap();
	assert_eq!(replay(&mut all), vec![simple(1, &[1, 2], b"old").encode()]);
	assert_eq!(replay(&mut any), vec![simple(2, &[3], b"other").encode()]);

	let new: Vec<_> = (0..3u8).map(|n| simple(3, &[1, 4], &[n])).collect();
	for s in &new {
		store.submit(s.clone(), LOCAL);
	}
	store.submit(simple(4, &[2], b"unrelated"), LOCAL);
	store.wait_for_matching();
	for s in &new {
		assert_eq!(&*all.try_next_live(1).unwrap()[0], &s.encode()[..]);
		assert_eq!(&*any.try_next_live(1).unwrap()[0], &s.encode()[..]);
	}
	assert!(all.try_next_live(usize::MAX).unwrap().is_empty(), "nothing else, nothing twice");
	assert!(any.try_next_live(usize::MAX).unwrap().is_empty());
}

/// Every replay page of `subscription`, flattened.
fn replay(subscription: &mut statement_store::Subscription) -> Vec<Vec<u8>> {
	let mut out = Vec::new();
	while let Some(page) = subscription.next_replay_page(usize::MAX).unwrap() {
		out.extend(page);
	}
	out
}

#[test]
fn one_answer_larger_than_the_body_cache_keeps_at_most_half_of_it() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let mut config = config(dir.path(), &clock);
	let budget = 256 * 1024;
	config.body_cache_bytes = budget;
	let store = statement_store::Store::open(config, allowances(1000, 1 << 24)).unwrap();
	// 1,200 bodies of ~440 bytes: about twice the cache.
	for i in 0..1200u32 {
		let mut data = vec![7u8; 300];
		data[..4].copy_from_slice(&i.to_le_bytes());
		assert_eq!(store.submit(simple(i % 8, &[1], &data), LOCAL), SubmitResult::New);
	}
	store.clear_cache();
	assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), 1200);
	// Bodies, plus the posting list of 1,200 ids.
	let cached = store.metrics().cache_bytes as usize;
	assert!(cached <= budget / 2 + 32 * 1024, "one answer filled {cached} of {budget} bytes");
	assert!(cached >= budget / 4, "the answer's first bodies are kept: {cached} bytes cached");
	// Asked again, the kept half is served from memory and the rest still read from disk.
	assert_eq!(store.broadcasts(&[topic(1)]).unwrap().len(), 1200);
	assert!(store.metrics().cache_bytes as usize <= budget + 32 * 1024, "within the budget");
}
