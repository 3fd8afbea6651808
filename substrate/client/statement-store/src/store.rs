//! The store's handle and its state: [`Store`], `Inner` (one value a part: the write path's,
//! the read path's, the membership set, subscriptions, snapshots), closing, and the
//! [`StatementStore`] trait. Opening is in `open`, the read path in `read`, writes in
//! `write`, snapshots in `open::snapshot`.

use crate::{
	config::Config,
	index::membership::{Membership, Snapshots},
	index::schema::Id,
	metrics::{Metrics, MetricsSnapshot},
	read::Reads,
	subscription::registry::Subscriptions,
	write::staging::Database,
	write::Writes,
};
use statement_primitives::{
	AccountId, DecryptionKey, Hash, Statement, StatementSource, StatementStore, SubmitResult,
	Topic, TopicFilter,
};
use std::sync::Arc;

/// A statement store backed by parity-db. Cheap to clone; clones share one store.
///
/// Reads (`broadcasts`, `posted`, `has_statement`, ...) run concurrently from any number of
/// threads; writers are serialised and hold readers off only while they publish a commit.
#[derive(Clone)]
pub struct Store {
	pub(crate) inner: Arc<Inner>,
}

/// The store's state: one value a part, each of which keeps its own fields to itself (the
/// compiler holds them to their folder) and is reached through its methods.
pub(crate) struct Inner {
	/// What the store was opened with; never changed while open.
	pub config: Config,
	/// parity-db with the batches not yet handed to it (see `write::staging`): written by
	/// the write path, read by every part.
	pub db: Arc<Database>,
	/// Counters every part adds to.
	pub metrics: Metrics,
	/// The in-memory set of stored hashes (see `index::membership`).
	pub membership: Membership,
	/// The write path's state (see `write`).
	pub writes: Writes,
	/// The read path's view lock, caches and quarantine (see `read`).
	pub reads: Reads,
	/// Subscribers and the matcher thread (see `subscription`).
	pub subscriptions: Subscriptions,
	/// What the newest membership snapshot covers, and what opening read (see
	/// `open::snapshot`, `index::membership`).
	pub snapshots: Snapshots,
}

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
		let settled = self.settle_now();
		self.writes.close(settled);
		// Not while removals wait: the set no longer holds them, parity-db still does.
		if settled {
			self.save_snapshot_at_close();
		}
	}
}

impl Store {
	/// Apply the index edits of every removal acknowledged so far. A removal is durable and
	/// gone from every answer when `remove` returns; its edits of the lists it was in wait
	/// and are applied together with later ones (see `write::deferred`). The store applies
	/// them itself before any other write, once 512 wait, for [`Store::metrics`], snapshots
	/// and closing; call this to have them applied now (benchmarks charge removals this).
	pub fn settle(&self) -> crate::error::Result<()> {
		self.inner.settle_waiting()
	}

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
		// The tallies below count removals only once they are applied (see `write::deferred`).
		self.inner.settle_now();
		let mut snapshot = self.inner.metrics.snapshot();
		let (hits, misses, cached) = self.inner.reads.cache_figures();
		snapshot.cache_hits = hits;
		snapshot.cache_misses = misses;
		snapshot.cache_bytes = cached as u64;
		snapshot.pending_bytes = self.inner.writes.pending_bytes();
		snapshot.subscriptions = self.inner.subscriptions.len() as u64;
		let (queued, dropped, refused) = self.inner.subscriptions.usage();
		snapshot.subscription_queued_bytes = queued as u64;
		snapshot.subscriptions_dropped_for_budget = dropped;
		snapshot.subscriptions_refused_for_budget = refused;
		(snapshot.disk_free_bytes, snapshot.disk_low) = self.inner.writes.disk_state();
		snapshot.capacity_statements = self.inner.config.max_total_statements;
		let tallies = self.inner.writes.tallies();
		(snapshot.accounts, snapshot.bans) = (tallies.accounts, tallies.bans);
		snapshot.capacity_bytes = self.inner.config.max_total_size;
		snapshot
	}

	/// How many statements admitted and removed since the membership snapshot opening read
	/// from the journal and the removal log: `(0, 0)` after a clean stop or without a
	/// snapshot (see [`Store::reopened_from_snapshot`]).
	pub fn caught_up_while_opening(&self) -> (u64, u64) {
		self.inner.snapshots.caught_up()
	}

	/// Whether opening took the membership set from its snapshot (written at the last clean
	/// close or by maintenance), rather than hashing every stored body.
	pub fn reopened_from_snapshot(&self) -> bool {
		self.inner.snapshots.reopened()
	}

	/// Drop every cached posting list and body (the next queries read from disk).
	pub fn clear_cache(&self) {
		self.inner.reads.clear();
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
		self.remove_statement(hash)
	}

	fn remove_by(&self, who: AccountId) -> statement_primitives::Result<()> {
		Ok(self.remove_account(&who)?)
	}

	fn release(&self, hashes: &[Hash]) -> statement_primitives::Result<()> {
		Ok(self.release_statements(hashes)?)
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

	fn subscribe_filters(
		&self,
		queue_bytes: usize,
	) -> statement_primitives::Result<Box<dyn statement_primitives::FilterSubscription>> {
		Ok(Box::new(Store::subscribe_filters(self, queue_bytes)?))
	}

	fn check_subscription_room(&self, starting: usize) -> statement_primitives::Result<()> {
		self.inner.subscriptions.check_room(starting)
	}
}
