//! Counters the node exports: statements, bytes, submit outcomes, cache hits and misses.

use parking_lot::Mutex;
use std::{
	collections::BTreeMap,
	sync::atomic::{AtomicU64, Ordering},
};

/// Live counters, updated by the store as it works.
#[derive(Default)]
pub struct Metrics {
	statements: AtomicU64,
	bytes: AtomicU64,
	expired: AtomicU64,
	evicted: AtomicU64,
	corrupt: AtomicU64,
	submits: Mutex<BTreeMap<&'static str, u64>>,
}

/// A copy of the counters at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
	/// Statements stored.
	pub statements: u64,
	/// Encoded bytes stored.
	pub bytes: u64,
	/// Statements removed by maintenance because they expired.
	pub expired: u64,
	/// Statements evicted to make room for others or after an allowance dropped.
	pub evicted: u64,
	/// Statements found damaged on disk when read, and left out of answers.
	pub corrupt: u64,
	/// Submissions by outcome label (`new`, `known`, `account_full`, ...).
	pub submits: BTreeMap<&'static str, u64>,
	/// MatchAll cache hits.
	pub cache_hits: u64,
	/// MatchAll cache misses (lists read from disk).
	pub cache_misses: u64,
	/// Bytes held by the caches: posting lists and statement bodies.
	pub cache_bytes: u64,
	/// Bytes of acknowledged changes not yet applied to parity-db's tables, held in memory
	/// (staged batches and parity-db's unapplied log; bounded, see `Config::checkpoint_bytes`).
	pub pending_bytes: u64,
	/// Open subscriptions.
	pub subscriptions: u64,
	/// Bytes queued for subscribers, all together (bounded by
	/// `Config::subscription_budget_bytes`).
	pub subscription_queued_bytes: u64,
	/// Subscribers dropped since the store opened because all queues together were past
	/// their budget.
	pub subscriptions_dropped_for_budget: u64,
	/// Subscriptions refused since the store opened because the open ones took their share
	/// of the budget.
	pub subscriptions_refused_for_budget: u64,
	/// Bytes free on the database's disk at the last measurement.
	pub disk_free_bytes: u64,
	/// Whether that is below the reserve, so new statements are refused.
	pub disk_low: bool,
}

impl Metrics {
	pub(crate) fn set_totals(&self, statements: u64, bytes: u64) {
		self.statements.store(statements, Ordering::Relaxed);
		self.bytes.store(bytes, Ordering::Relaxed);
	}

	pub(crate) fn statements(&self) -> u64 {
		self.statements.load(Ordering::Relaxed)
	}

	pub(crate) fn submitted(&self, label: &'static str) {
		*self.submits.lock().entry(label).or_default() += 1;
	}

	pub(crate) fn add_expired(&self, count: u64) {
		self.expired.fetch_add(count, Ordering::Relaxed);
	}

	pub(crate) fn add_evicted(&self, count: u64) {
		self.evicted.fetch_add(count, Ordering::Relaxed);
	}

	pub(crate) fn add_corrupt(&self) {
		self.corrupt.fetch_add(1, Ordering::Relaxed);
	}

	pub(crate) fn snapshot(&self) -> MetricsSnapshot {
		MetricsSnapshot {
			statements: self.statements.load(Ordering::Relaxed),
			bytes: self.bytes.load(Ordering::Relaxed),
			expired: self.expired.load(Ordering::Relaxed),
			evicted: self.evicted.load(Ordering::Relaxed),
			corrupt: self.corrupt.load(Ordering::Relaxed),
			submits: self.submits.lock().clone(),
			..MetricsSnapshot::default()
		}
	}
}
