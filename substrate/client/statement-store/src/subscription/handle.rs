//! A [`Subscription`]: its replay of stored matches, page by page, then its live queue; and the primitives' subscription trait over it.

use super::queue::{Encoded, Queue};
use crate::{error::Error, error::Result, index::schema::Id, read::paging::PAGE_IDS, store::Store};
use statement_primitives::{StatementSubscription, SubscriptionFuture, TopicFilter};
use std::sync::Arc;

/// A live subscription: the stored matches, read page by page, then what arrives.
pub struct Subscription {
	pub(super) store: Store,
	pub(super) id: u64,
	pub(super) queue: Arc<Queue>,
	pub(super) replay: Option<Replay>,
	pub(super) replay_total: u64,
	pub(super) largest_page: usize,
}

/// Where the replay stands: stored matches of `filter` in `(after, below)` are left.
pub(super) struct Replay {
	pub(super) filter: TopicFilter,
	pub(super) after: Id,
	pub(super) below: Id,
}

impl Replay {
	/// The next page of stored matches, oldest first, at most `max_bytes` (at least one
	/// statement), and its bytes; `None` once none is left. Holds the view lock only while it
	/// takes a page's ids.
	pub(super) fn next_page(
		&mut self,
		store: &Store,
		max_bytes: usize,
	) -> Result<Option<(Vec<Vec<u8>>, usize)>> {
		let inner = &store.inner;
		loop {
			let ids = inner.filter_page(&self.filter, self.after, self.below, PAGE_IDS)?;
			if ids.scanned_to.is_none() {
				return Ok(None);
			}
			let bodies = inner.page_bodies(ids, self.after, max_bytes, true)?;
			self.after = bodies.cursor;
			if !bodies.read.is_empty() {
				let page = bodies.read.into_iter().map(|(_, _, body)| body).collect();
				return Ok(Some((page, bodies.bytes)));
			}
		}
	}
}

impl Subscription {
	/// Register for `filter`'s live stream with a queue of at most `queue_bytes`; replay
	/// covers ids below `below`, `replay_total` matches. The caller holds the view lock.
	/// Refused past the budget (see the module documentation).
	pub(crate) fn register(
		store: &Store,
		filter: TopicFilter,
		queue_bytes: usize,
		below: Id,
		replay_total: u64,
	) -> Result<Subscription> {
		let (id, queue) = store.inner.subscriptions.add(filter.clone(), queue_bytes)?;
		Ok(Subscription {
			store: store.clone(),
			id,
			queue,
			replay: Some(Replay { filter, after: 0, below }),
			replay_total,
			largest_page: 0,
		})
	}

	/// A live stream from queue `id` of the registry, with no replay.
	pub(super) fn live_only(store: &Store, id: u64, queue: Arc<Queue>) -> Subscription {
		let store = store.clone();
		Subscription { store, id, queue, replay: None, replay_total: 0, largest_page: 0 }
	}

	/// How many stored statements matched when the subscription began (the replay sends
	/// fewer if some are removed before their page is read).
	pub fn replay_total(&self) -> u64 {
		self.replay_total
	}

	/// The next page of stored matches, oldest first, at most `max_bytes` (at least one
	/// statement); `None` once the replay is done. Holds the view lock only while it takes a
	/// page's ids.
	pub fn next_replay_page(&mut self, max_bytes: usize) -> Result<Option<Vec<Vec<u8>>>> {
		let Some(replay) = &mut self.replay else { return Ok(None) };
		match replay.next_page(&self.store, max_bytes)? {
			Some((page, bytes)) => {
				self.largest_page = self.largest_page.max(bytes);
				Ok(Some(page))
			}
			None => {
				self.replay = None;
				Ok(None)
			}
		}
	}

	/// Statements committed since the subscription began, oldest first, up to `max_bytes`
	/// (at least one); waits until there is one. [`Error::Lagged`] once the subscriber has
	/// been dropped for falling behind.
	pub async fn next_live(&self, max_bytes: usize) -> Result<Vec<Encoded>> {
		loop {
			let ready = self.queue.take(max_bytes)?;
			if !ready.is_empty() {
				return Ok(ready);
			}
			// `notify_one` leaves a permit when nobody waits, so a push between `take` and
			// here is not missed.
			self.queue.ready.notified().await;
		}
	}

	/// Like [`Subscription::next_live`], without waiting: empty if nothing is queued.
	pub fn try_next_live(&self, max_bytes: usize) -> Result<Vec<Encoded>> {
		self.queue.take(max_bytes)
	}

	/// Count `bytes` the reader took and holds unsent (a notification waiting for its client
	/// to read) as queued, against this subscriber's bound and the budget of all, until
	/// [`Subscription::release`]; past the bound this subscriber is dropped, past the budget
	/// those furthest behind are. [`Error::Lagged`] if this subscriber is (now) dropped.
	pub fn hold(&self, bytes: usize) -> Result<()> {
		if !self.queue.hold(bytes) {
			if self.store.inner.subscriptions.shared.index.lock().remove(self.id).is_some() {
				log::debug!(
					target: "statement-store",
					"subscription {} lagged past {} queued bytes; dropped",
					self.id,
					self.queue.bound
				);
			}
			return self.check();
		}
		if self.queue.total.is_some() {
			self.store.inner.subscriptions.keep_within_budget();
		}
		self.check()
	}

	/// `bytes` counted by [`Subscription::hold`] were sent (or thrown away).
	pub fn release(&self, bytes: usize) {
		self.queue.unhold(bytes);
	}

	/// Whether the subscriber was dropped for falling behind.
	pub fn is_lagged(&self) -> bool {
		self.queue.state.lock().lagged
	}

	/// [`Error::Lagged`] if the subscriber was dropped for falling behind.
	pub fn check(&self) -> Result<()> {
		match self.is_lagged() {
			true => Err(Error::Lagged { queue_bytes: self.queue.bound }),
			false => Ok(()),
		}
	}

	/// The most encoded bytes this subscription held at once: its fullest live queue, or its
	/// largest replay page.
	pub fn peak_buffered_bytes(&self) -> usize {
		self.queue.state.lock().peak.max(self.largest_page)
	}
}

/// The store's subscription as the primitives' trait, for users that hold an
/// `Arc<dyn StatementStore>`.
impl StatementSubscription for Subscription {
	fn replay_total(&self) -> u64 {
		Subscription::replay_total(self)
	}

	fn next_replay_page(
		&mut self,
		max_bytes: usize,
	) -> statement_primitives::Result<Option<Vec<Vec<u8>>>> {
		Subscription::next_replay_page(self, max_bytes).map_err(to_primitives)
	}

	fn try_next_live(&self, max_bytes: usize) -> statement_primitives::Result<Vec<Encoded>> {
		Subscription::try_next_live(self, max_bytes).map_err(to_primitives)
	}

	fn wait_live(&self) -> SubscriptionFuture<'_, ()> {
		// `notify_one` leaves a permit when nobody waits, so a push between `try_next_live`
		// and this wait is not missed.
		Box::pin(self.queue.ready.notified())
	}

	fn check(&self) -> statement_primitives::Result<()> {
		Subscription::check(self).map_err(to_primitives)
	}

	fn set_waker(&self, waker: std::task::Waker) {
		self.queue.state.lock().waker = Some(waker);
	}

	fn hold(&self, bytes: usize) -> statement_primitives::Result<()> {
		Subscription::hold(self, bytes).map_err(to_primitives)
	}

	fn release(&self, bytes: usize) {
		Subscription::release(self, bytes)
	}
}

/// The store's error as the primitives', keeping a lag a lag (the general conversion folds
/// every store failure it does not know into a database error).
pub(super) fn to_primitives(err: Error) -> statement_primitives::Error {
	match err {
		Error::Lagged { queue_bytes } => statement_primitives::Error::Lagged { queue_bytes },
		other => other.into(),
	}
}

impl Drop for Subscription {
	fn drop(&mut self) {
		self.store.inner.subscriptions.remove(self.id);
	}
}
