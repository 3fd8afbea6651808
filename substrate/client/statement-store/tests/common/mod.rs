//! Shared fixtures for the store's behaviour tests.
#![allow(dead_code)]

use sp_core::{ed25519, Pair};
use statement_primitives::{Statement, StatementAllowance, Topic};
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

/// An ed25519 key derived from a small number (deterministic and fast).
pub fn key(n: u32) -> ed25519::Pair {
	let mut seed = [0u8; 32];
	seed[..4].copy_from_slice(&n.to_le_bytes());
	seed[31] = 0x5a;
	ed25519::Pair::from_seed(&seed)
}

pub fn account(n: u32) -> [u8; 32] {
	key(n).public().0
}

pub fn topic(n: u32) -> Topic {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0x70;
	Topic(bytes)
}

/// What a test statement should carry.
#[derive(Clone, Debug, Default)]
pub struct Spec {
	/// Unix seconds the expiry counts from; 0 means [`NOW`].
	pub from: u64,
	pub signer: u32,
	pub expires_in: u32,
	pub sequence: u32,
	pub topics: Vec<u32>,
	pub channel: Option<u8>,
	pub key: Option<u8>,
	pub data: Vec<u8>,
}

/// A signed statement built from `spec`, expiring `expires_in` seconds after `spec.from`.
pub fn statement(spec: &Spec) -> Statement {
	let mut statement = Statement::new();
	let from = if spec.from == 0 { NOW } else { spec.from };
	statement.set_expiry_from_parts(from as u32 + spec.expires_in.max(1), spec.sequence);
	for (index, t) in spec.topics.iter().enumerate() {
		statement.set_topic(index, topic(*t));
	}
	if let Some(channel) = spec.channel {
		statement.set_channel([channel; 32]);
	}
	if let Some(k) = spec.key {
		statement.set_decryption_key([k; 32]);
	}
	statement.set_plain_data(spec.data.clone());
	statement.sign_ed25519_private(&key(spec.signer));
	statement
}

/// Quick builder: signer, topics, data.
pub fn simple(signer: u32, topics: &[u32], data: &[u8]) -> Statement {
	statement(&Spec {
		signer,
		expires_in: 3600,
		topics: topics.to_vec(),
		data: data.to_vec(),
		..Spec::default()
	})
}

/// Every account may keep `count` statements and `size` data bytes.
pub fn allowances(count: u32, size: u32) -> Arc<MapAllowances> {
	Arc::new(MapAllowances::new().with_default(StatementAllowance::new(count, size)))
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
