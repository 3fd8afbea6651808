//! Many readers and a writer at once: every answer is a whole state, never half a change.

mod common;

use common::*;
use statement_primitives::{StatementSource, StatementStore, SubmitResult};
use std::sync::{
	atomic::{AtomicBool, AtomicUsize, Ordering},
	Arc,
};

#[test]
fn readers_never_see_a_channel_replacement_half_done() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let replace = |n: u32| {
		expiring(3600, n, &[1, 2])
			.channel([5; 32])
			.data(n.to_le_bytes())
			.signed_ed25519(&ed25519_pair(1))
	};
	assert_eq!(store.submit(replace(0), StatementSource::Local), SubmitResult::New);
	let done = Arc::new(AtomicBool::new(false));
	let reads = Arc::new(AtomicUsize::new(0));
	let readers: Vec<_> = (0..6)
		.map(|reader| {
			let (store, done, reads) = (store.clone(), done.clone(), reads.clone());
			std::thread::spawn(move || {
				let mut last = 0u32;
				while !done.load(Ordering::Relaxed) {
					if reader % 2 == 0 {
						store.clear_cache();
					}
					let found = store.broadcasts(&[topic(1), topic(2)]).unwrap();
					assert_eq!(found.len(), 1, "a replacement was seen half done: {found:?}");
					let n = u32::from_le_bytes(found[0][..4].try_into().unwrap());
					assert!(n >= last, "went back in time: {n} after {last}");
					last = n;
					reads.fetch_add(1, Ordering::Relaxed);
				}
			})
		})
		.collect();
	for n in 1..300 {
		assert_eq!(store.submit(replace(n), StatementSource::Local), SubmitResult::New);
		// Unrelated traffic from other accounts on the same topics.
		store.submit(simple(2 + n % 5, &[1], &n.to_le_bytes()), StatementSource::Local);
	}
	done.store(true, Ordering::Relaxed);
	for reader in readers {
		reader.join().expect("reader saw an inconsistent answer");
	}
	assert!(reads.load(Ordering::Relaxed) > 0);
}

#[test]
fn has_statement_and_queries_run_from_many_threads_at_once() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let statements: Vec<_> =
		(0..200u32).map(|n| simple(n % 8, &[n % 4, 10], &n.to_le_bytes())).collect();
	for s in &statements {
		store.submit(s.clone(), StatementSource::Local);
	}
	let statements = Arc::new(statements);
	let threads: Vec<_> = (0..8)
		.map(|t| {
			let (store, statements) = (store.clone(), statements.clone());
			std::thread::spawn(move || {
				for round in 0..50 {
					let s = &statements[(t * 50 + round) % statements.len()];
					assert!(store.has_statement(&s.hash()));
					assert!(!store.has_statement(&[round as u8; 32]));
					assert_eq!(
						store.broadcasts(&[topic(t as u32 % 4), topic(10)]).unwrap().len(),
						50
					);
				}
			})
		})
		.collect();
	for thread in threads {
		thread.join().unwrap();
	}
}

#[test]
fn removals_from_many_threads_at_once_each_take_effect_and_survive_a_reopen() {
	// 32 threads remove 20 statements each while 2 threads submit: removals that meet at
	// the writer lock share batches (group commit), and each caller must still find its
	// own removal done, banned and durable, and the submits untouched.
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	let statement = |n: u32| simple(n % 8, &[n % 5, 10 + n % 3], &n.to_le_bytes());
	let (removed, kept) = (0..640u32, 640..1000u32);
	for n in removed.clone() {
		assert_eq!(store.submit(statement(n), StatementSource::Local), SubmitResult::New);
	}
	let removed: Vec<u32> = removed.collect();
	std::thread::scope(|scope| {
		for part in removed.chunks(20) {
			let store = &store;
			scope.spawn(move || {
				for n in part {
					let hash = statement(*n).hash();
					store.remove(&hash).expect("remove");
					// Done by the time the call returns, whichever caller's batch carried it.
					assert!(!store.has_statement(&hash), "statement {n} still held after remove");
				}
			});
		}
		for half in [(640..1000u32).step_by(2), (641..1000u32).step_by(2)] {
			let store = &store;
			scope.spawn(move || {
				for n in half {
					assert_eq!(
						store.submit(statement(n), StatementSource::Local),
						SubmitResult::New
					);
				}
			});
		}
	});
	let check = |store: &statement_store::Store, when: &str| {
		assert_eq!(store.len(), 360, "{when}: statements held");
		for n in &removed {
			assert!(!store.has_statement(&statement(*n).hash()), "{when}: {n} is back");
			// Removal bans the hash: the same statement from the network is refused.
			assert!(
				store.submit(statement(*n), StatementSource::Network) == SubmitResult::KnownExpired,
				"{when}: removed {n} admitted again from the network"
			);
		}
		for n in kept.clone() {
			assert!(store.has_statement(&statement(n).hash()), "{when}: {n} was lost");
		}
		for topic in 0..5 {
			let found = store.broadcasts(&[common::topic(topic)]).expect("query").len();
			assert_eq!(
				found,
				kept.clone().filter(|n| n % 5 == topic).count(),
				"{when}: topic {topic}"
			);
		}
	};
	check(&store, "before reopening");
	drop(store);
	let store = open(dir.path(), &clock);
	check(&store, "after reopening");
}
