//! Counters the node exports: statements, bytes, submit outcomes, cache hits and misses, and
//! the time submits and expiry passes take.

use parking_lot::Mutex;
use statement_primitives::metrics::{Histogram, Reading};
use std::{
	collections::BTreeMap,
	sync::atomic::{AtomicU64, Ordering},
	time::Duration,
};

/// Upper bounds, in seconds, of the submit and expiry-pass histograms: upstream's, 1 us to 1 s.
pub const DURATION_BOUNDS: [f64; 7] = [0.000_001, 0.000_01, 0.000_1, 0.001, 0.01, 0.1, 1.0];

/// Live counters, updated by the store as it works.
pub struct Metrics {
	statements: AtomicU64,
	bytes: AtomicU64,
	expired: AtomicU64,
	evicted: AtomicU64,
	corrupt: AtomicU64,
	pruned: AtomicU64,
	submits: Mutex<BTreeMap<&'static str, u64>>,
	internal_errors: Mutex<BTreeMap<&'static str, u64>>,
	submit_duration: Histogram,
	expiry_duration: Histogram,
}

impl Default for Metrics {
	fn default() -> Self {
		Metrics {
			statements: AtomicU64::new(0),
			bytes: AtomicU64::new(0),
			expired: AtomicU64::new(0),
			evicted: AtomicU64::new(0),
			corrupt: AtomicU64::new(0),
			pruned: AtomicU64::new(0),
			submits: Mutex::default(),
			internal_errors: Mutex::default(),
			submit_duration: Histogram::new(&DURATION_BOUNDS),
			expiry_duration: Histogram::new(&DURATION_BOUNDS),
		}
	}
}

/// A copy of the counters at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
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
	/// Submissions the store failed, by where: `read_allowance`, `db_read`, `db_commit`.
	pub internal_errors: BTreeMap<&'static str, u64>,
	/// Bans lifted once their period ended (the hash may be admitted again).
	pub bans_purged: u64,
	/// Accounts holding at least one statement.
	pub accounts: u64,
	/// Hashes of removed statements refused until their ban ends (expired ones among them).
	pub bans: u64,
	/// Most statements the store keeps (`Config::max_total_statements`).
	pub capacity_statements: u64,
	/// Most encoded bytes the store keeps (`Config::max_total_size`).
	pub capacity_bytes: u64,
	/// Seconds each submission took in the store (checks, proof, allowance, commit), over
	/// [`DURATION_BOUNDS`].
	pub submit_duration: Option<Reading>,
	/// Seconds each maintenance expiry pass took, over [`DURATION_BOUNDS`].
	pub expiry_duration: Option<Reading>,
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

	pub(crate) fn add_pruned(&self, count: u64) {
		self.pruned.fetch_add(count, Ordering::Relaxed);
	}

	/// A submission failed inside the store, at `source`.
	pub(crate) fn internal_error(&self, source: &'static str) {
		*self.internal_errors.lock().entry(source).or_default() += 1;
	}

	pub(crate) fn submit_took(&self, took: Duration) {
		self.submit_duration.observe(took.as_secs_f64());
	}

	pub(crate) fn expiry_took(&self, took: Duration) {
		self.expiry_duration.observe(took.as_secs_f64());
	}

	pub(crate) fn snapshot(&self) -> MetricsSnapshot {
		MetricsSnapshot {
			statements: self.statements.load(Ordering::Relaxed),
			bytes: self.bytes.load(Ordering::Relaxed),
			expired: self.expired.load(Ordering::Relaxed),
			evicted: self.evicted.load(Ordering::Relaxed),
			corrupt: self.corrupt.load(Ordering::Relaxed),
			submits: self.submits.lock().clone(),
			internal_errors: self.internal_errors.lock().clone(),
			bans_purged: self.pruned.load(Ordering::Relaxed),
			submit_duration: Some(self.submit_duration.sample(&[]).reading),
			expiry_duration: Some(self.expiry_duration.sample(&[]).reading),
			..MetricsSnapshot::default()
		}
	}
}
