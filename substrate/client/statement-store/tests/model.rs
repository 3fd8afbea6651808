//! The store against a plain in-memory model: thousands of seeded random submits, removals,
//! expiries and queries, with caches from tiny (constant eviction) to large. Every answer must
//! agree, including after a reopen.

mod common;

use common::*;
use rand::{rngs::StdRng, Rng, SeedableRng};
use statement_primitives::{
	Hash, RejectionReason, Statement, StatementSource, StatementStore, SubmitResult, Topic,
};
use statement_store::{Config, Store};
use std::collections::{BTreeMap, HashMap};

const ACCOUNTS: u32 = 4;
const TOPICS: u32 = 5;
const MAX_COUNT: u32 = 6;
const MAX_SIZE: u32 = 60;
const MAX_TOTAL: u64 = 18;
const BAN_SECS: u64 = 500;

#[derive(Clone)]
struct Entry {
	id: u64,
	statement: Statement,
	account: [u8; 32],
}

/// The store's rules (`docs/DESIGN.md`, "The store"), written as plainly as possible.
#[derive(Default)]
struct Model {
	entries: BTreeMap<Hash, Entry>,
	bans: HashMap<Hash, u64>,
	next_id: u64,
}

impl Model {
	fn account_entries(&self, account: &[u8; 32]) -> Vec<(Hash, Entry)> {
		let mut list: Vec<_> = self
			.entries
			.iter()
			.filter(|(_, e)| &e.account == account)
			.map(|(h, e)| (*h, e.clone()))
			.collect();
		// Eviction order: expiry, then hash among statements of one expiry (the reference's).
		list.sort_by_key(|(h, e)| (e.statement.expiry(), *h));
		list
	}

	fn submit(&mut self, statement: Statement, source: StatementSource, now: u64) -> SubmitResult {
		let hash = statement.hash();
		if u64::from(statement.expiration_timestamp_secs()) < now {
			return SubmitResult::Invalid(statement_primitives::InvalidReason::AlreadyExpired);
		}
		if self.entries.contains_key(&hash) {
			return SubmitResult::Known;
		}
		if self.bans.contains_key(&hash) && !source.can_be_resubmitted() {
			return SubmitResult::KnownExpired;
		}
		let account = statement.account_id().unwrap();
		let data_len = statement.data_len();
		if data_len > MAX_SIZE as usize {
			return SubmitResult::Rejected(RejectionReason::DataTooLarge {
				submitted_size: data_len,
				available_size: MAX_SIZE as usize,
			});
		}
		let mut evict: Vec<Hash> = Vec::new();
		if let Some(channel) = statement.channel() {
			if let Some((h, e)) = self
				.account_entries(&account)
				.into_iter()
				.find(|(_, e)| e.statement.channel() == Some(channel))
			{
				if e.statement.expiry() >= statement.expiry() {
					return SubmitResult::Rejected(RejectionReason::ChannelPriorityTooLow {
						submitted_expiry: statement.expiry(),
						min_expiry: e.statement.expiry(),
					});
				}
				evict.push(h);
			}
		}
		let held = self.account_entries(&account);
		let mut count = held.len() + 1 - evict.len();
		let mut size: usize = held
			.iter()
			.filter(|(h, _)| !evict.contains(h))
			.map(|(_, e)| e.statement.data_len())
			.sum::<usize>()
			+ data_len;
		for (h, e) in &held {
			if count <= MAX_COUNT as usize && size <= MAX_SIZE as usize {
				break;
			}
			if evict.contains(h) {
				continue;
			}
			if e.statement.expiry() >= statement.expiry() {
				return SubmitResult::Rejected(RejectionReason::AccountFull {
					submitted_expiry: statement.expiry(),
					min_expiry: e.statement.expiry(),
				});
			}
			evict.push(*h);
			count -= 1;
			size -= e.statement.data_len();
		}
		if self.entries.len() + 1 - evict.len() > MAX_TOTAL as usize {
			return SubmitResult::Rejected(RejectionReason::StoreFull);
		}
		for h in evict {
			self.entries.remove(&h);
			self.bans.insert(h, now + BAN_SECS);
		}
		self.bans.remove(&hash);
		self.entries.insert(hash, Entry { id: self.next_id, statement, account });
		self.next_id += 1;
		SubmitResult::New
	}

	fn remove(&mut self, hash: &Hash, now: u64) {
		if self.entries.remove(hash).is_some() {
			self.bans.insert(*hash, now + BAN_SECS);
		}
	}

	fn maintain(&mut self, now: u64) {
		let expired: Vec<Hash> = self
			.entries
			.iter()
			.filter(|(_, e)| u64::from(e.statement.expiration_timestamp_secs()) < now)
			.map(|(h, _)| *h)
			.collect();
		for h in expired {
			self.remove(&h, now);
		}
		self.bans.retain(|_, until| *until > now);
	}

	fn matching(&self, key: Option<[u8; 32]>, topics: &[Topic]) -> Vec<Vec<u8>> {
		let mut found: Vec<(u64, Vec<u8>)> = self
			.entries
			.values()
			.filter(|e| e.statement.decryption_key() == key)
			.filter(|e| topics.iter().all(|t| e.statement.topics().contains(t)))
			.map(|e| (e.id, e.statement.data().unwrap_or_default().to_vec()))
			.collect();
		found.sort();
		found.into_iter().map(|(_, data)| data).collect()
	}
}

fn random_statement(rng: &mut StdRng, now: u64) -> Statement {
	let topics: Vec<u32> = (0..rng.gen_range(0..=4)).map(|_| rng.gen_range(0..TOPICS)).collect();
	let mut unique = topics.clone();
	unique.dedup();
	// The draws in the order the seeds' runs were first recorded with.
	let signer = rng.gen_range(0..ACCOUNTS);
	let expires_in = (now - NOW) as u32 + rng.gen_range(1..400);
	let sequence = rng.gen_range(0..4);
	let channel = rng.gen_bool(0.3).then(|| [rng.gen_range(0..2u8); 32]);
	let key = rng.gen_bool(0.3).then(|| [rng.gen_range(0..2u8); 32]);
	let data: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
	expiring(expires_in, sequence, &unique)
		.channel(channel)
		.decryption_key(key)
		.data(data)
		.signed_ed25519(&ed25519_pair(signer))
}

fn run(seed: u64, cache_bytes: usize, steps: usize) {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let make_config = || {
		let mut config: Config = config(dir.path(), &clock);
		config.cache_bytes = cache_bytes;
		config.max_total_statements = MAX_TOTAL;
		config.ban_period = std::time::Duration::from_secs(BAN_SECS);
		config
	};
	let mut store = Store::open(make_config(), allowances(MAX_COUNT, MAX_SIZE)).unwrap();
	let mut model = Model::default();
	let mut rng = StdRng::seed_from_u64(seed);
	let mut known: Vec<Statement> = Vec::new();
	let mut now = NOW;

	for step in 0..steps {
		let roll = rng.gen_range(0..100);
		if roll < 45 {
			let statement = if !known.is_empty() && rng.gen_bool(0.2) {
				// Mostly recent ones: they may still be stored, evicted or banned.
				known[known.len() - 1 - rng.gen_range(0..known.len().min(30))].clone()
			} else {
				random_statement(&mut rng, now)
			};
			let source =
				if rng.gen_bool(0.5) { StatementSource::Network } else { StatementSource::Local };
			let expected = model.submit(statement.clone(), source, now);
			let got = store.submit(statement.clone(), source);
			assert_eq!(got, expected, "seed {seed} step {step}: submit");
			known.push(statement);
		} else if roll < 52 && !known.is_empty() {
			let hash = known[rng.gen_range(0..known.len())].hash();
			model.remove(&hash, now);
			store.remove(&hash).unwrap();
		} else if roll < 58 {
			now += rng.gen_range(1..120);
			clock.set(now);
			model.maintain(now);
			let report = store.maintain_for(std::time::Duration::from_secs(10)).unwrap();
			assert!(!report.incomplete);
		} else if roll < 60 {
			drop(store);
			store = Store::open(make_config(), allowances(MAX_COUNT, MAX_SIZE)).unwrap();
		} else {
			let topics: Vec<Topic> =
				(0..rng.gen_range(0..=3)).map(|_| topic(rng.gen_range(0..TOPICS))).collect();
			let key = rng.gen_bool(0.5).then(|| [rng.gen_range(0..2u8); 32]);
			let got = match key {
				None => store.broadcasts(&topics).unwrap(),
				Some(key) => store.posted(&topics, key).unwrap(),
			};
			assert_eq!(got, model.matching(key, &topics), "seed {seed} step {step}: query");
		}
		if step % 50 == 0 {
			for statement in known.iter().rev().take(20) {
				let hash = statement.hash();
				assert_eq!(store.has_statement(&hash), model.entries.contains_key(&hash));
			}
			assert_eq!(store.len(), model.entries.len() as u64, "seed {seed} step {step}: len");
		}
	}
	let mut stored: Vec<Hash> = store.statements().unwrap().into_iter().map(|(h, _)| h).collect();
	stored.sort();
	assert_eq!(stored, model.entries.keys().copied().collect::<Vec<_>>());
}

#[test]
fn store_agrees_with_model_with_a_tiny_cache() {
	for seed in 0..3 {
		run(seed, 512, 1500);
	}
}

#[test]
fn store_agrees_with_model_with_a_large_cache() {
	for seed in 10..13 {
		run(seed, 64 << 20, 1500);
	}
}

#[test]
fn store_agrees_with_model_without_a_cache() {
	run(20, 0, 1500);
}
