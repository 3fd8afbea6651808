//! Subscribing through the store: a new subscription's replay bound and match count, taken under the view lock, and waiting for the matcher.

use super::handle::Subscription;
use crate::{error::Result, index::posting::intersect, index::schema::PostingKey, store::Store};
use statement_primitives::{check_match_all, TopicFilter};

/// Live-queue bound of [`crate::store::Store::subscribe`]: the primitives' default, 1 MiB.
pub const DEFAULT_SUBSCRIBER_QUEUE_BYTES: usize =
	statement_primitives::DEFAULT_SUBSCRIBER_QUEUE_BYTES;

impl Store {
	/// Wait until every statement committed so far is queued for the subscriptions it
	/// matches: matching runs on its own thread (`stmt-match`), a little after the commit.
	pub fn wait_for_matching(&self) {
		self.inner.subscriptions.flush();
	}

	/// Every statement committed from now on, with a queue of at most `queue_bytes`, and no
	/// replay: what gossip propagates.
	pub fn watch_admissions(&self, queue_bytes: usize) -> Subscription {
		let _view = self.inner.reads.view();
		let (id, queue) = self.inner.subscriptions.add_unbudgeted(TopicFilter::Any, queue_bytes);
		Subscription::live_only(self, id, queue)
	}

	/// Subscribe with [`DEFAULT_SUBSCRIBER_QUEUE_BYTES`] of live queue; see
	/// [`Store::subscribe_with_queue`].
	pub fn subscribe(&self, filter: TopicFilter) -> Result<Subscription> {
		self.subscribe_with_queue(filter, DEFAULT_SUBSCRIBER_QUEUE_BYTES)
	}

	/// Subscribe: the stored statements matching `filter`, read page by page as the caller
	/// asks, then each new match as it commits, queued up to `queue_bytes`; a subscriber
	/// whose queue would overflow is dropped (see `subscription`).
	pub fn subscribe_with_queue(
		&self,
		filter: TopicFilter,
		queue_bytes: usize,
	) -> Result<Subscription> {
		if let TopicFilter::MatchAll(topics) = &filter {
			check_match_all(topics)?;
		}
		// The count below is taken from the posting lists, which still name removals waiting
		// for their index edits (see `write::deferred`): apply those first.
		self.inner.settle_now();
		let _view = self.inner.reads.view();
		// Every stored statement has a lower id, every later one a higher id.
		let below = crate::index::lists::last_stored_id(&*self.inner.db)?.map_or(1, |id| id + 1);
		let total = self.count_matches(&filter)?;
		Subscription::register(self, filter, queue_bytes, below, total)
	}

	/// How many stored statements match `filter` now; the caller holds the view lock.
	pub(crate) fn count_matches(&self, filter: &TopicFilter) -> Result<u64> {
		let total = match filter {
			TopicFilter::MatchAll(topics) if !topics.is_empty() => {
				let mut lists = Vec::new();
				for topic in topics {
					lists.push(self.inner.posting_list(PostingKey::Topic(topic.0))?);
				}
				intersect(&mut lists.iter().map(|list| list.ids()).collect::<Vec<_>>()).len()
			}
			TopicFilter::MatchAny(topics) => {
				let mut ids = Vec::new();
				for topic in topics {
					ids.extend_from_slice(
						self.inner.posting_list(PostingKey::Topic(topic.0))?.ids(),
					);
				}
				ids.sort_unstable();
				ids.dedup();
				ids.len()
			}
			TopicFilter::Any | TopicFilter::MatchAll(_) => self.len() as usize,
		};
		Ok(total as u64)
	}
}
