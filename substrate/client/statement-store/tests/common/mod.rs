//! Shared fixtures for the store's behaviour tests.
#![allow(dead_code)]

use sp_core::Pair;
use statement_primitives::{Statement, Topic};
use statement_store::{Clock, Config, MapAllowances, Store};
use std::{
	path::Path,
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
};

/// A fixed start time, so expiries in tests read naturally.
pub const NOW: u64 = 1_800_000_000;

/// A clock tests move by hand.
#[derive(Clone)]
pub struct TestClock(pub Arc<AtomicU64>);

impl TestClock {
	pub fn new() -> Self {
		TestClock(Arc::new(AtomicU64::new(NOW)))
	}
	pub fn set(&self, now: u64) {
		self.0.store(now, Ordering::SeqCst);
	}
	pub fn clock(&self) -> Clock {
		let now = self.0.clone();
		Clock::from_fn(move || now.load(Ordering::SeqCst))
	}
}

pub use statement_primitives::testing::{ed25519_pair, TestStatement};

/// The account of test key `n`.
pub fn account(n: u32) -> [u8; 32] {
	ed25519_pair(n).public().0
}

pub fn topic(n: u32) -> Topic {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0x70;
	Topic(bytes)
}

/// A statement expiring `expires_in` seconds after [`NOW`], on the topics numbered `topics`.
pub fn expiring(expires_in: u32, sequence: u32, topics: &[u32]) -> TestStatement {
	TestStatement::new()
		.expiry(NOW as u32 + expires_in, sequence)
		.topics(&topics.iter().copied().map(topic).collect::<Vec<_>>())
}

/// Quick builder: signed by key `signer`, expiring in an hour, on `topics`, carrying `data`.
pub fn simple(signer: u32, topics: &[u32], data: &[u8]) -> Statement {
	expiring(3600, 0, topics).data(data).signed_ed25519(&ed25519_pair(signer))
}

/// Every account may keep `count` statements and `size` data bytes.
pub fn allowances(count: u32, size: u32) -> Arc<MapAllowances> {
	statement_test_support::store::admitting(count, size)
}

pub fn config(path: &Path, clock: &TestClock) -> Config {
	let mut config = Config::new(path);
	config.clock = clock.clock();
	config.sync_wal = false;
	config
}

pub fn open(path: &Path, clock: &TestClock) -> Store {
	Store::open(config(path, clock), allowances(1000, 1 << 24)).expect("store opens")
}
