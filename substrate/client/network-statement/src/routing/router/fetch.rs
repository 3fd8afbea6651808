//! One-shot queries (`statement_broadcasts`, `statement_posted` ...) on a node that does not
//! hold their topic: the topic's statements are fetched from its holders into the store before
//! the query is answered from it, so the answer is the store's answer, as on a holder.
//!
//! - A query's statements carry all its topics, so one topic's holders have all of them: the
//!   router fetches one (a held one, or one being fetched, if any).
//! - The fetch is a `Watch` on each holder, paged as a subscription's is. The query is
//!   answered once a holder that had statements on the topic has sent its last page and the
//!   pages are stored, or once every holder has ended (all empty, or failed), or after
//!   [`FETCH_DEADLINE`]: then from what the node has. A holder answering empty (one that
//!   joined a moment ago) does not end it. Once a fetch has ended, its holders are asked for
//!   no more pages.
//! - The watches last the window ([`Router::fetch_window`]): queries on the topic within it
//!   are answered from the store at once, which the holders keep current meanwhile. Fetched
//!   statements are kept for the window, then released as any the node does not hold.

use super::{Action, Fetching, Purpose, Router, FETCH_DEADLINE};
use crate::{core::LOG, routing::wire};
use statement_primitives::Topic;
use std::time::Duration;

/// Topics fetched at once; past it, queries on others are answered from what the node has.
const MAX_FETCHING: usize = 256;

impl<P, A> Router<P, A>
where
	P: Copy + Ord + std::hash::Hash + std::fmt::Debug,
	A: Clone + PartialEq,
{
	/// How long a fetched topic is watched, and queries on it answered from the store.
	pub(super) fn fetch_window(&self) -> Duration {
		self.config.drop_after.min(self.config.refresh)
	}

	/// Whether statements on `topic` are kept for a fetch's window.
	/// The lease a fetch's `Watch` asks for: the window, and a little for the last answer.
	fn fetch_lease_secs(&self) -> u32 {
		(self.fetch_window() + Duration::from_secs(2)).as_secs() as u32
	}

	pub(super) fn fetched_here(&self, topic: &Topic) -> bool {
		self.fetched.get(topic).is_some_and(|until| *until > self.now)
	}

	pub(super) fn on_fetch(&mut self, fetch: u64, topics: Vec<Topic>) {
		let Some(first) = topics.first().copied() else {
			// Everything: answered from what the node holds, never fetched.
			return self.actions.push_back(Action::Fetched { fetch });
		};
		let here = |router: &Self, topic: &Topic| {
			router.held.contains_key(&topic.0) || router.fetched_here(topic)
		};
		if topics.iter().any(|topic| here(self, topic)) {
			return self.actions.push_back(Action::Fetched { fetch });
		}
		if let Some(topic) = topics.iter().find(|topic| self.fetching.contains_key(topic)) {
			if let Some(fetching) = self.fetching.get_mut(topic) {
				fetching.waiters.push(fetch);
			}
			return;
		}
		if self.fetching.len() >= MAX_FETCHING {
			log::debug!(target: LOG, "{MAX_FETCHING} topics being fetched; a query is answered from what this node has");
			return self.actions.push_back(Action::Fetched { fetch });
		}
		let fetching = Fetching {
			id: fetch,
			started: self.now,
			asked: false,
			chains: 0,
			complete: false,
			answered: false,
			storing: 0,
			waiters: vec![fetch],
		};
		self.fetching.insert(first, fetching);
		self.metrics.routing_fetches.add(1);
		if let Some(holders) = self.holders(first.0) {
			self.fetch_from(first, &holders);
		}
	}

	/// Ask the holders of a topic being fetched, once its lookup has found them.
	pub(super) fn fetch_from(&mut self, topic: Topic, holders: &[P]) {
		let local = self.local;
		let lease_secs = self.fetch_lease_secs();
		let Some(fetching) = self.fetching.get_mut(&topic) else { return };
		if fetching.asked {
			return;
		}
		fetching.asked = true;
		if holders.contains(&local) || holders.is_empty() {
			// A holder has what there is (a lone node, all it has).
			return self.end_fetch(topic, true);
		}
		fetching.chains = holders.len();
		let id = fetching.id;
		for peer in holders.iter().copied() {
			let body = wire::Request::Watch { topic: topic.0, lease_secs, skip: 0 };
			self.query(peer, body, Purpose::Fetch { topic, skip: 0, id });
		}
	}

	pub(super) fn on_fetch_page(
		&mut self,
		peer: P,
		(topic, id): (Topic, u64),
		skip: u32,
		statements: Vec<Vec<u8>>,
		more: bool,
	) {
		let count = statements.len() as u32;
		let next = super::next_page(skip, count, more);
		let current = self.fetching.get(&topic).is_some_and(|fetching| fetching.id == id);
		// Only while the fetch lasts: after it, the watch's lease brings what is new.
		if let (Some(next), true) = (next, current) {
			let lease_secs = self.fetch_lease_secs();
			let body = wire::Request::Watch { topic: topic.0, lease_secs, skip: next };
			self.query(peer, body, Purpose::Fetch { topic, skip: next, id });
		}
		let last = next.is_none();
		let decoded = self.arrived_page(statements);
		let current = self.fetching.get_mut(&topic).filter(|fetching| fetching.id == id);
		let fetched = match current {
			Some(fetching) => {
				if last {
					fetching.chains = fetching.chains.saturating_sub(1);
					fetching.answered = true;
					fetching.complete |= skip.saturating_add(count) > 0;
				}
				if !decoded.is_empty() {
					fetching.storing += 1;
				}
				Some((topic, id))
			}
			// The fetch ended (another holder was faster, or the deadline): kept all the same.
			None => None,
		};
		if !decoded.is_empty() {
			self.actions.push_back(Action::Submit { request: None, statements: decoded, fetched });
		}
		self.check_fetch(topic, id);
	}

	pub(super) fn on_fetch_failed(&mut self, topic: Topic, id: u64) {
		let Some(fetching) = self.fetching.get_mut(&topic) else { return };
		if fetching.id == id {
			fetching.chains = fetching.chains.saturating_sub(1);
			self.check_fetch(topic, id);
		}
	}

	pub(super) fn on_fetch_stored(&mut self, (topic, id): (Topic, u64)) {
		let Some(fetching) = self.fetching.get_mut(&topic) else { return };
		if fetching.id == id {
			fetching.storing = fetching.storing.saturating_sub(1);
			self.check_fetch(topic, id);
		}
	}

	fn check_fetch(&mut self, topic: Topic, id: u64) {
		let Some(fetching) = self.fetching.get(&topic).filter(|fetching| fetching.id == id) else {
			return;
		};
		if fetching.storing > 0 {
			return;
		}
		if fetching.complete {
			self.end_fetch(topic, true);
		} else if fetching.asked && fetching.chains == 0 {
			let answered = fetching.answered;
			if !answered {
				log::debug!(target: LOG, "No holder of topic {} answered a fetch", hex::encode(topic.0));
			}
			self.end_fetch(topic, answered);
		}
	}

	/// The fetch of `topic` ended: its queries are answered; if it got what a holder had,
	/// queries within the window are answered at once.
	fn end_fetch(&mut self, topic: Topic, got: bool) {
		let Some(fetching) = self.fetching.remove(&topic) else { return };
		if got {
			self.fetched.insert(topic, self.now + self.fetch_window());
		}
		for fetch in fetching.waiters {
			self.actions.push_back(Action::Fetched { fetch });
		}
	}

	/// Fetches past [`FETCH_DEADLINE`] end with what came; windows past their end close.
	pub(super) fn expire_fetches(&mut self) {
		let now = self.now;
		let overdue: Vec<Topic> = self
			.fetching
			.iter()
			.filter(|(_, fetching)| now.saturating_sub(fetching.started) > FETCH_DEADLINE)
			.map(|(topic, _)| *topic)
			.collect();
		for topic in overdue {
			log::debug!(target: LOG, "Fetch of topic {} past its deadline", hex::encode(topic.0));
			self.end_fetch(topic, false);
		}
		self.fetched.retain(|_, until| *until > now);
	}
}
