//! Maintenance: expiry through the expiry index, ban purging, allowance re-checks; by an
//! explicit call and by the tokio task.

mod common;

use common::*;
use statement_primitives::{StatementAllowance, StatementSource, StatementStore, SubmitResult};
use statement_store::{AllowanceProvider, Store};
use std::{
	sync::{Arc, Mutex},
	time::Duration,
};

#[test]
fn expired_statements_go_and_their_bans_lapse_after_the_period() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	let short = expiring(10, 0, &[1]).data(Vec::new()).signed_ed25519(&ed25519_pair(1));
	let long = expiring(1000, 0, &[1]).data(Vec::new()).signed_ed25519(&ed25519_pair(1));
	store.submit(short.clone(), StatementSource::Local);
	store.submit(long.clone(), StatementSource::Local);

	clock.set(NOW + 11);
	let report = store.maintain().unwrap();
	assert_eq!(report.expired, 1);
	assert!(!store.has_statement(&short.hash()) && store.has_statement(&long.hash()));
	assert_eq!(store.metrics().expired, 1);

	clock.set(NOW + 12 + 48 * 3600);
	let report = store.maintain().unwrap();
	assert_eq!(report.bans_purged, 1);
	assert_eq!(report.expired, 1, "the long one expired by now too");
}

#[test]
fn a_large_expiry_backlog_is_worked_off_in_bounded_slices() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = Store::open(config(dir.path(), &clock), allowances(u32::MAX, u32::MAX)).unwrap();
	let total = statement_store::MAINTENANCE_SLICE * 3 + 7;
	for n in 0..total as u32 {
		let s = expiring(5, n, &[1]).data(Vec::new()).signed_ed25519(&ed25519_pair(n % 16));
		assert_eq!(store.submit(s, StatementSource::Local), SubmitResult::New);
	}
	clock.set(NOW + 6);
	let first = store.maintain_for(Duration::ZERO).unwrap();
	assert!(first.incomplete);
	assert_eq!(first.expired, statement_store::MAINTENANCE_SLICE);
	assert_eq!(store.metrics().expired, first.expired as u64, "an unfinished run still counts");
	let rest = store.maintain_for(Duration::from_secs(60)).unwrap();
	assert_eq!(first.expired + rest.expired, total);
	assert!(store.is_empty());
}

struct Adjustable(Mutex<StatementAllowance>);

impl AllowanceProvider for Adjustable {
	fn allowance(&self, _: &[u8; 32]) -> statement_store::Result<Option<StatementAllowance>> {
		let allowance = *self.0.lock().unwrap();
		Ok((!allowance.is_depleted()).then_some(allowance))
	}
}

#[test]
fn a_lowered_allowance_evicts_the_lowest_expiry_statements() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let allowance = Arc::new(Adjustable(Mutex::new(StatementAllowance::new(10, 1000))));
	let store = Store::open(config(dir.path(), &clock), allowance.clone()).unwrap();
	let statements: Vec<_> = (0..4u32)
		.map(|n| expiring(100 + n, 0, &[1]).data(Vec::new()).signed_ed25519(&ed25519_pair(1)))
		.collect();
	for s in &statements {
		store.submit(s.clone(), StatementSource::Local);
	}
	*allowance.0.lock().unwrap() = StatementAllowance::new(2, 1000);
	let report = store.maintain().unwrap();
	assert_eq!(report.evicted, 2);
	let kept: Vec<bool> = statements.iter().map(|s| store.has_statement(&s.hash())).collect();
	assert_eq!(kept, vec![false, false, true, true]);

	*allowance.0.lock().unwrap() = StatementAllowance::new(0, 0);
	assert_eq!(store.maintain().unwrap().evicted, 2);
	assert!(store.is_empty());
}

#[test]
fn the_tokio_task_runs_maintenance_on_its_own() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	let s = expiring(10, 0, &[1]).data(Vec::new()).signed_ed25519(&ed25519_pair(1));
	store.submit(s.clone(), StatementSource::Local);
	clock.set(NOW + 20);
	let runtime = tokio::runtime::Runtime::new().unwrap();
	let task = store.spawn_maintenance(runtime.handle(), Duration::from_millis(20));
	let deadline = std::time::Instant::now() + Duration::from_secs(20);
	while store.has_statement(&s.hash()) && std::time::Instant::now() < deadline {
		std::thread::sleep(Duration::from_millis(10));
	}
	task.abort();
	assert!(!store.has_statement(&s.hash()), "the task never removed the expired statement");
}
