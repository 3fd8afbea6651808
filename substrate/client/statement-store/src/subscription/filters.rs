//! A subscription of a set of filters, as the spec-v2 RPC (`statement_unstable_*`) needs:
//! filters added and removed while it lives, each with a replay of the stored matches taken
//! atomically with its addition, and one live queue in which each new statement comes once,
//! with the ids of every filter that takes it.
//!
//! Adding a filter notes, under the shared view lock, the id after the newest stored
//! statement and the number of the last commit, as opening a subscription does (see the
//! module docs): the filter's replay is its matches below that id, its live stream the
//! commits numbered after. So no statement is in both, and none falls between. A statement
//! committed before a filter was added is that filter's replay's, never its live stream's,
//! even when another filter streams it: its ids name only the filters that were there
//! when it was committed.
//!
//! The live queue is bounded, but it never drops a statement: when it overflows (a reader
//! that does not keep up, or new statements held back while a replay runs), it spills. The
//! reader then reads from the store, in admission order from the statement after the last it
//! took, and tags each with the filters that match it and were there when it was stored;
//! once it has read the newest stored statement (under the view lock, so no commit falls
//! between), the queue takes new statements again. A statement removed from the store
//! before the reader caught up is not sent: it is no longer stored, as in a replay.

use super::{
	handle::{to_primitives, Replay, Subscription},
	queue::Encoded,
	registry::matches,
};
use crate::{
	error::Error,
	error::Result,
	index::{lists::last_stored_id, schema::Id},
	read::paging::PAGE_IDS,
	store::Store,
};
use statement_primitives::{check_match_all, Fields, TopicFilter};
use std::sync::Arc;

/// A subscription whose filters come and go; see the module docs.
pub struct FilterSubscription {
	/// The subscriber, its queue and its place in the budget, without a replay of its own.
	live: Subscription,
}

/// One filter's replay: its stored matches as of its addition, page by page.
pub struct FilterReplay {
	store: Store,
	replay: Option<Replay>,
	total: u64,
}

impl Store {
	/// A subscription of no filters yet, with a live queue of at most `queue_bytes`; refused
	/// past the subscription budget as [`Store::subscribe_with_queue`] is.
	pub fn subscribe_filters(&self, queue_bytes: usize) -> Result<FilterSubscription> {
		let (id, queue) = self.inner.subscriptions.add_set(queue_bytes)?;
		Ok(FilterSubscription { live: Subscription::live_only(self, id, queue) })
	}
}

impl FilterSubscription {
	/// Add `filter` as filter `filter_id`: its replay, of every match stored now, and from
	/// now on its matches in the live queue. [`Error::Lagged`] if the subscriber was dropped.
	pub fn add_filter(&self, filter_id: u64, filter: TopicFilter) -> Result<FilterReplay> {
		if let TopicFilter::MatchAll(topics) = &filter {
			check_match_all(topics)?;
		}
		let store = &self.live.store;
		let _view = store.inner.reads.view();
		// Every stored statement has a lower id, every later one a higher id.
		let below = last_stored_id(&*store.inner.db)?.map_or(1, |id| id + 1);
		let total = store.count_matches(&filter)?;
		let subscriptions = &store.inner.subscriptions;
		if !subscriptions.add_filter(self.live.id, filter_id, filter.clone(), below) {
			return Err(Error::Lagged { queue_bytes: self.live.queue.bound });
		}
		let replay = Replay { filter, after: 0, below };
		Ok(FilterReplay { store: store.clone(), replay: Some(replay), total })
	}

	/// Stop streaming filter `filter_id` (what is queued already keeps its id).
	pub fn remove_filter(&self, filter_id: u64) {
		self.live.store.inner.subscriptions.remove_filter(self.live.id, filter_id);
	}

	/// Statements committed since their filters were added, oldest first, up to `max_bytes`
	/// (at least one), each with the ids of the filters that took it; empty if none is
	/// queued. Reads them from the store (it may block on disk) while the queue is spilled
	/// ([`FilterSubscription::catching_up`]).
	pub fn try_next_live(&self, max_bytes: usize) -> Result<Vec<(Encoded, Box<[u64]>)>> {
		while let Some(from) = self.live.queue.spilled_from() {
			let page = self.catch_up(from, max_bytes)?;
			if !page.is_empty() {
				return Ok(page);
			}
		}
		self.live.queue.take_with_tags(max_bytes)
	}

	/// Whether the queue spilled, so that the next [`FilterSubscription::try_next_live`]
	/// reads from the store.
	pub fn catching_up(&self) -> bool {
		self.live.queue.spilled_from().is_some()
	}

	/// The stored statements from id `from` on that the filters take, up to `max_bytes` (at
	/// least one, if any); once none is left, queue again.
	fn catch_up(&self, from: Id, max_bytes: usize) -> Result<Vec<(Encoded, Box<[u64]>)>> {
		let store = &self.live.store;
		let inner = &store.inner;
		{
			let _view = inner.reads.view();
			let newest = last_stored_id(&*inner.db)?.unwrap_or(0);
			if from > newest {
				inner.subscriptions.resume(self.live.id);
				return Ok(Vec::new());
			}
		}
		let filters = inner.subscriptions.filters_of(self.live.id);
		let after = from - 1;
		let ids = inner.journal_page(after, Id::MAX, PAGE_IDS)?;
		let bodies = inner.page_bodies(ids, after, max_bytes, true)?;
		let mut page = Vec::new();
		for (id, _, body) in bodies.read {
			let fields = Fields::of(&body).map_err(|err| {
				Error::Damaged(format!("stored statement {id} does not decode: {err}"))
			})?;
			let tags: Box<[u64]> = filters
				.iter()
				.filter(|(_, filter, from_id)| *from_id <= id && matches(filter, fields.topics()))
				.map(|(filter_id, _, _)| *filter_id)
				.collect();
			if !tags.is_empty() {
				page.push((Arc::from(body.as_slice()), tags));
			}
		}
		self.live.queue.caught_up_to(bodies.cursor.max(after));
		Ok(page)
	}

	/// The live queue and its place in the budget, as a plain subscription's (to wait on,
	/// hold and release bytes, check for a lag).
	pub fn live(&self) -> &Subscription {
		&self.live
	}
}

impl FilterReplay {
	/// How many stored statements matched when the filter was added.
	pub fn total(&self) -> u64 {
		self.total
	}

	/// The next page of the replay, oldest first, at most `max_bytes` (at least one
	/// statement); `None` once it is done.
	pub fn next_page(&mut self, max_bytes: usize) -> Result<Option<Vec<Vec<u8>>>> {
		let Some(replay) = &mut self.replay else { return Ok(None) };
		match replay.next_page(&self.store, max_bytes)? {
			Some((page, _)) => Ok(Some(page)),
			None => {
				self.replay = None;
				Ok(None)
			}
		}
	}
}

/// The store's filter subscription as the primitives' trait.
impl statement_primitives::FilterSubscription for FilterSubscription {
	fn add_filter(
		&self,
		filter_id: u64,
		filter: &TopicFilter,
	) -> statement_primitives::Result<Box<dyn statement_primitives::FilterReplay>> {
		let replay = FilterSubscription::add_filter(self, filter_id, filter.clone());
		Ok(Box::new(replay.map_err(to_primitives)?))
	}

	fn remove_filter(&self, filter_id: u64) {
		FilterSubscription::remove_filter(self, filter_id)
	}

	fn try_next_live(
		&self,
		max_bytes: usize,
	) -> statement_primitives::Result<Vec<(Encoded, Box<[u64]>)>> {
		FilterSubscription::try_next_live(self, max_bytes).map_err(to_primitives)
	}

	fn catching_up(&self) -> bool {
		FilterSubscription::catching_up(self)
	}

	fn live(&self) -> &dyn statement_primitives::StatementSubscription {
		&self.live
	}
}

impl statement_primitives::FilterReplay for FilterReplay {
	fn total(&self) -> u64 {
		FilterReplay::total(self)
	}

	fn next_page(
		&mut self,
		max_bytes: usize,
	) -> statement_primitives::Result<Option<Vec<Vec<u8>>>> {
		FilterReplay::next_page(self, max_bytes).map_err(to_primitives)
	}
}
