//! The store's handle and its shared state: [`Store`], `Inner` (what every room works on),
//! closing, and the [`StatementStore`] trait. Opening is in `open`, the read path in `read`,
//! writes in `batch` and `submit`, snapshots in `snapshot`.

use crate::{
	allowance::AllowanceProvider,
	config::Config,
	index::membership::{Membership, SnapshotMark},
	index::schema::{Counters, Id},
	metrics::{Metrics, MetricsSnapshot},
	read::bodies::BodyCache,
	read::cache::PostingCache,
	read::view::ViewLock,
	subscription::registry::Subscriptions,
	write::disk::DiskGuard,
	write::intent::IntentLog,
	write::staging::Database,
	write::writeback::{Writeback, WritebackThreads},
};
use parking_lot::Mutex;
use statement_primitives::{
	AccountId, DecryptionKey, Hash, Statement, StatementSource, StatementStore, SubmitResult,
	Topic, TopicFilter,
};
use std::sync::{
	atomic::{AtomicBool, AtomicU64},
	Arc,
};

/// How often the writeback drains staged batches into parity-db's log (checkpoints, which
/// apply that log to the tables, run at their own pace: see `writeback`).
pub(crate) const DRAIN_PERIOD: std::time::Duration = std::time::Duration::from_millis(50);

/// A statement store backed by parity-db. Cheap to clone; clones share one store.
///
/// Reads (`broadcasts`, `posted`, `has_statement`, ...) run concurrently from any number of
/// threads; writers are serialised and hold readers off only while they publish a commit.
#[derive(Clone)]
pub struct Store {
	pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
	/// Stopped first when the store closes, so that the last checkpoint runs alone.
	pub threads: WritebackThreads,
	/// parity-db with the batches not yet handed to it (see `staging`).
	pub db: Arc<Database>,
	/// The redo log every acknowledged batch is appended to (see `intent`).
	pub intent: Arc<IntentLog>,
	/// Moves staged batches into parity-db (see `writeback`).
	pub writeback: Arc<Writeback>,
	/// Free disk space, measured by the drain thread; submits are refused while it is low.
	pub disk: Arc<DiskGuard>,
	pub config: Config,
	/// Shared by queries for their whole run; taken exclusively only to publish a commit.
	pub view: ViewLock,
	/// Serialises writers and holds the counters they start from.
	pub writer: Arc<Mutex<Counters>>,
	pub membership: Membership,
	pub cache: PostingCache,
	/// Recently read statement bodies.
	pub bodies: BodyCache,
	pub allowances: Arc<dyn AllowanceProvider>,
	pub subscriptions: Subscriptions,
	pub metrics: Metrics,
	/// Whether the keyed list may be non-empty; when not, broadcasts skip subtracting it.
	/// Set when the store holds (or admits) a statement with a key; never cleared while open.
	pub keyed: AtomicBool,
	/// Whether the store may hold a ban; when not, submits skip looking one up. Set at open
	/// if the ban order is not empty and by every ban; never cleared while open.
	pub banned: AtomicBool,
	/// Where the next allowance re-check slice starts.
	pub allowance_cursor: Mutex<Option<AccountId>>,
	/// Whether opening read the membership set from its snapshot instead of hashing every body.
	pub reopened_from_snapshot: bool,
	/// Statements admitted and removed since that snapshot, which opening caught up on.
	pub caught_up: (u64, u64),
	/// Position of the removal log (see [`schema::removal_segment_key`]). Changed by batches,
	/// under the writer lock.
	pub removals: AtomicU64,
	/// What the newest membership snapshot covers.
	pub snapshot_mark: Mutex<SnapshotMark>,
	/// Statements found damaged on disk, left out of answers (see [`Inner::find`]).
	pub quarantined: Mutex<std::collections::HashSet<Id>>,
}

/// Quarantined ids remembered (so each is logged once); past this, damage is only counted.
pub(crate) const MAX_QUARANTINED: usize = 100_000;

/// One page of [`Store::statements_page`].
#[derive(Debug, Default)]
pub struct StatementsPage {
	/// `(id, hash, encoding)`, in admission order.
	pub statements: Vec<(Id, Hash, Vec<u8>)>,
	/// Where the next page starts (pass it as `after`); `None` when the walk is done.
	pub next: Option<Id>,
}

impl Drop for Inner {
	fn drop(&mut self) {
		self.threads.stop();
		if let Err(err) = self.writeback.checkpoint() {
			log::warn!(target: "statement-store", "writing the last commits failed: {err}");
		} else {
			// parity-db now holds everything appended: the intent files are not needed.
			self.intent.release_all();
		}
		self.save_snapshot_at_close();
	}
}

impl Store {
	/// Number of statements stored.
	pub fn len(&self) -> u64 {
		self.inner.metrics.statements()
	}

	/// Whether the store is empty.
	pub fn is_empty(&self) -> bool {
		self.len() == 0
	}

	/// Counters, submit outcomes and cache figures.
	pub fn metrics(&self) -> MetricsSnapshot {
		let mut snapshot = self.inner.metrics.snapshot();
		let (hits, misses) = self.inner.cache.hit_counts();
		snapshot.cache_hits = hits;
		snapshot.cache_misses = misses;
		snapshot.cache_bytes =
			(self.inner.cache.used_bytes() + self.inner.bodies.used_bytes()) as u64;
		snapshot.pending_bytes = self.inner.writeback.pending_bytes();
		snapshot.subscriptions = self.inner.subscriptions.len() as u64;
		let (queued, dropped, refused) = self.inner.subscriptions.usage();
		snapshot.subscription_queued_bytes = queued as u64;
		snapshot.subscriptions_dropped_for_budget = dropped;
		snapshot.subscriptions_refused_for_budget = refused;
		(snapshot.disk_free_bytes, snapshot.disk_low) = self.inner.disk.state();
		snapshot
	}

	/// How many statements admitted and removed since the membership snapshot opening read
	/// from the journal and the removal log: `(0, 0)` after a clean stop or without a
	/// snapshot (see [`Store::reopened_from_snapshot`]).
	pub fn caught_up_while_opening(&self) -> (u64, u64) {
		self.inner.caught_up
	}

	/// Whether opening took the membership set from its snapshot (written at the last clean
	/// close or by maintenance), rather than hashing every stored body.
	pub fn reopened_from_snapshot(&self) -> bool {
		self.inner.reopened_from_snapshot
	}

	/// Drop every cached posting list and body (the next queries read from disk).
	pub fn clear_cache(&self) {
		self.inner.cache.clear();
		self.inner.bodies.clear();
	}
}

impl StatementStore for Store {
	fn statements(&self) -> statement_primitives::Result<Vec<(Hash, Statement)>> {
		Ok(self.all_statements()?)
	}

	fn statement(&self, hash: &Hash) -> statement_primitives::Result<Option<Statement>> {
		Ok(crate::error::catch_db_panic(|| self.stored_statement(hash))?)
	}

	fn has_statement(&self, hash: &Hash) -> bool {
		self.inner.membership.contains(hash)
	}

	fn broadcasts(&self, topics: &[Topic]) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(None, topics, |_, fields| fields.data().map(<[u8]>::to_vec))?)
	}

	fn posted(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |_, fields| fields.data().map(<[u8]>::to_vec))?)
	}

	fn posted_clear(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |_, fields| self.decrypt(&dest, fields.data()?))?)
	}

	fn broadcasts_stmt(&self, topics: &[Topic]) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(None, topics, |body, _| Some(body.to_vec()))?)
	}

	fn posted_stmt(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |body, _| Some(body.to_vec()))?)
	}

	fn posted_clear_stmt(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(self.query(Some(dest), topics, |body, fields| {
			let clear = self.decrypt(&dest, fields.data()?)?;
			let mut out = Vec::with_capacity(body.len() + clear.len());
			out.extend_from_slice(body);
			out.extend_from_slice(&clear);
			Some(out)
		})?)
	}

	fn submit(&self, statement: Statement, source: StatementSource) -> SubmitResult {
		self.submit_statement(statement, source)
	}

	fn remove(&self, hash: &Hash) -> statement_primitives::Result<()> {
		Ok(self.remove_statement(hash)?)
	}

	fn remove_by(&self, who: AccountId) -> statement_primitives::Result<()> {
		Ok(self.remove_account(&who)?)
	}

	fn statements_page(
		&self,
		after: Option<u64>,
		max_count: usize,
		max_bytes: usize,
	) -> statement_primitives::Result<statement_primitives::StatementsPage> {
		// Ids start at 1, so 0 asks for the first page.
		let page = Store::statements_page(self, after.unwrap_or(0), max_count, max_bytes)?;
		let statements = page.statements.into_iter().map(|(_, hash, body)| (hash, body)).collect();
		Ok(statement_primitives::StatementsPage { statements, next: page.next })
	}

	fn admission_watermark(&self) -> u64 {
		Store::admission_watermark(self)
	}

	fn admitted_page(
		&self,
		after: u64,
		upto: u64,
		max_bytes: usize,
	) -> statement_primitives::Result<statement_primitives::StatementsPage> {
		let page = Store::admitted_page(self, after, upto, max_bytes)?;
		let statements = page.statements.into_iter().map(|(_, hash, body)| (hash, body)).collect();
		Ok(statement_primitives::StatementsPage { statements, next: page.next })
	}

	fn watch_admissions(
		&self,
		queue_bytes: usize,
	) -> statement_primitives::Result<Box<dyn statement_primitives::StatementSubscription>> {
		Ok(Box::new(Store::watch_admissions(self, queue_bytes)))
	}

	fn subscribe_with_queue(
		&self,
		filter: TopicFilter,
		queue_bytes: usize,
	) -> statement_primitives::Result<Box<dyn statement_primitives::StatementSubscription>> {
		Ok(Box::new(Store::subscribe_with_queue(self, filter, queue_bytes)?))
	}

	fn check_subscription_room(&self, starting: usize) -> statement_primitives::Result<()> {
		self.inner.subscriptions.check_room(starting)
	}
}
