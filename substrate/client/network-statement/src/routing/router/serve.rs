//! Peers' requests, and the answers to this node's queries.

use super::{Answer, Purpose, Reply, Router, MAX_WATCHES, MAX_WATCHES_PER_PEER};
use crate::{
	core::LOG,
	rate::Bucket,
	routing::{wire, Key},
};
use codec::Decode;
use statement_primitives::{Statement, Topic};
use std::collections::HashMap;

/// Peers whose `Store` rate is tracked; past it the table starts over.
const MAX_BUCKETS: usize = 4 * 1024;

impl<P, A> Router<P, A>
where
	P: Copy + Ord + std::hash::Hash + std::fmt::Debug,
	A: Clone + PartialEq,
{
	pub(super) fn on_request(&mut self, from: P, request: u64, body: wire::Request) {
		self.failed.remove(&from);
		match body {
			wire::Request::Nearest { key } => {
				let width = self.config.width().min(wire::MAX_PEERS);
				let peers = self
					.known
					.nearest(&key, width, Some(&from))
					.into_iter()
					.filter_map(|(near, _)| {
						let (_, addresses) = self.known.get(&near)?;
						let addresses = addresses.iter().take(wire::MAX_ADDRESSES).cloned();
						Some((near, addresses.collect()))
					})
					.collect();
				self.respond(request, Reply::Nearest(peers));
			}
			wire::Request::Store { statements } => self.on_store(from, request, statements),
			wire::Request::Watch { topic, lease_secs, skip } => {
				let topic = Topic(topic);
				let lease = std::time::Duration::from_secs(u64::from(lease_secs))
					.min(self.config.refresh.saturating_mul(3));
				let by_peer = self.watchers.values().filter(|w| w.contains_key(&from)).count();
				let total: usize = self.watchers.values().map(HashMap::len).sum();
				let renewal = self.watchers.get(&topic).is_some_and(|w| w.contains_key(&from));
				if !renewal && (by_peer >= MAX_WATCHES_PER_PEER || total >= MAX_WATCHES) {
					self.respond(request, Reply::Refused("too many watches".into()));
					return;
				}
				self.watchers.entry(topic).or_default().insert(from, self.now + lease);
				self.actions.push_back(super::Action::ReadTopic { request, topic, skip });
			}
		}
	}

	fn on_store(&mut self, from: P, request: u64, statements: Vec<Vec<u8>>) {
		let now = self.now;
		let rate = self.rate_limit;
		if self.buckets.len() >= MAX_BUCKETS && !self.buckets.contains_key(&from) {
			self.buckets.clear();
		}
		let bucket = self.buckets.entry(from).or_insert_with(|| Bucket::new(rate, now));
		if !bucket.take(statements.len(), now) {
			self.metrics.flooding_detected.add(1);
			self.respond(request, Reply::Refused("over the rate limit".into()));
			return;
		}
		let mut decoded = Vec::with_capacity(statements.len());
		for bytes in statements {
			let mut input = &bytes[..];
			match Statement::decode(&mut input) {
				Ok(statement) if input.is_empty() => decoded.push(statement),
				_ => {
					self.metrics.bad_notifications.add(1);
					self.respond(request, Reply::Refused("an undecodable statement".into()));
					return;
				}
			}
		}
		for statement in &decoded {
			self.remember_arrived(statement.hash(), Some(from));
		}
		self.metrics.received.add(decoded.len() as u64);
		self.actions.push_back(super::Action::Submit {
			request: Some(request),
			statements: decoded,
			fetched: None,
		});
	}

	pub(super) fn on_answer(&mut self, query: u64, answer: Answer<P, A>) {
		let Some((peer, purpose, _)) = self.queries.remove(&query) else { return };
		if !matches!(answer, Answer::Refused(_)) {
			self.failed.remove(&peer);
		}
		match (purpose, answer) {
			(Purpose::Nearest { key }, Answer::Nearest(peers)) => {
				let mut entries = Vec::new();
				let mut unknown = Vec::new();
				for (near, near_key, addresses) in peers.into_iter().take(wire::MAX_PEERS) {
					let failed = self.failed.get(&near).is_some_and(|until| *until > self.now);
					if near == self.local || failed {
						continue;
					}
					if !self.known.contains(&near) {
						if addresses.is_empty() {
							continue;
						}
						unknown.push((near, addresses.clone()));
					}
					self.known.learn(near, near_key, addresses, self.now);
					entries.push((near, near_key));
				}
				if unknown.is_empty() {
					self.on_nearest(key, peer, entries);
				} else {
					// Asked only once the transport can dial them.
					let then = self.next_id();
					self.learning.insert(then, (key, peer, entries, self.now));
					self.actions.push_back(super::Action::Learn { peers: unknown, then });
				}
			}
			(Purpose::Store { handover, .. }, Answer::Stored) => self.store_ended(handover),
			(Purpose::Watch { topic, skip }, Answer::Statements { statements, more }) => {
				self.on_watch_page(peer, topic, skip, statements, more)
			}
			(Purpose::Fetch { topic, skip, id }, Answer::Statements { statements, more }) => {
				self.on_fetch_page(peer, (topic, id), skip, statements, more)
			}
			(Purpose::Store { handover, .. }, Answer::Refused(reason)) => {
				// Refused (its rate, or a statement it cannot take): sending the same again
				// would be refused again; the next refresh pushes to it once more.
				log::debug!(target: LOG, "{peer:?} refused a Store: {reason}");
				for held in self.held.values_mut() {
					held.holders.retain(|holder| *holder != peer);
				}
				self.store_ended(handover);
			}
			(purpose, Answer::Refused(reason)) => {
				log::debug!(target: LOG, "{peer:?} refused a route request: {reason}");
				self.on_failure(peer, purpose);
			}
			(purpose, _) => {
				log::debug!(target: LOG, "{peer:?} answered a route request with the wrong kind");
				self.on_failure(peer, purpose);
			}
		}
	}

	fn on_watch_page(
		&mut self,
		peer: P,
		topic: Topic,
		skip: u32,
		statements: Vec<Vec<u8>>,
		more: bool,
	) {
		let count = statements.len() as u32;
		let next = super::next_page(skip, count, more);
		// Not past the subscription's end.
		if let (Some(next), true) = (next, self.watching.contains_key(&topic)) {
			let body =
				wire::Request::Watch { topic: topic.0, lease_secs: self.lease_secs(), skip: next };
			self.query(peer, body, Purpose::Watch { topic, skip: next });
		}
		let decoded = self.arrived_page(statements);
		if !decoded.is_empty() {
			let submit =
				super::Action::Submit { request: None, statements: decoded, fetched: None };
			self.actions.push_back(submit);
		}
	}

	/// A page's statements that decode, remembered as arrived (not forwarded again).
	pub(super) fn arrived_page(&mut self, statements: Vec<Vec<u8>>) -> Vec<Statement> {
		let mut decoded = Vec::new();
		for bytes in statements {
			if let Ok(statement) = Statement::decode(&mut &bytes[..]) {
				self.remember_arrived(statement.hash(), None);
				decoded.push(statement);
			}
		}
		decoded
	}

	pub(super) fn on_failure(&mut self, peer: P, purpose: Purpose) {
		match purpose {
			Purpose::Nearest { key } => {
				self.known.forget(&peer);
				if self.failed.len() < super::MAX_REMEMBERED {
					self.failed.insert(peer, self.now + super::FAILED_FOR);
				}
				if let Some((lookup, _)) = self.lookups.get_mut(&key) {
					lookup.failed(&peer);
				}
				self.drive(key);
			}
			Purpose::Store { statements, retried, handover } => {
				// A push to a holder that did not arrive: the peer counts as new to every key
				// held here again, so the next refresh pushes to it once more; and the
				// statements go again shortly (a writer holds none of their keys).
				for held in self.held.values_mut() {
					held.holders.retain(|holder| *holder != peer);
				}
				self.retry_store(peer, statements, retried);
				self.store_ended(handover);
			}
			Purpose::Watch { topic, .. } => {
				// Watched again, after a fresh lookup, at the next tick.
				self.watching.remove(&topic);
				self.cache.remove(&topic.0);
			}
			Purpose::Fetch { topic, id, .. } => self.on_fetch_failed(topic, id),
		}
	}

	pub(super) fn on_nearest(&mut self, key: Key, from: P, peers: Vec<(P, Key)>) {
		if let Some((lookup, _)) = self.lookups.get_mut(&key) {
			lookup.answered(&from, peers);
		}
		self.drive(key);
	}

	/// Queries unanswered past [`super::QUERY_DEADLINE`] count as failed.
	pub(super) fn expire_queries(&mut self) {
		let now = self.now;
		let overdue: Vec<u64> = self
			.queries
			.iter()
			.filter(|(_, (_, _, sent))| now.saturating_sub(*sent) > super::QUERY_DEADLINE)
			.map(|(query, _)| *query)
			.collect();
		for query in overdue {
			log::debug!(target: LOG, "Route query {query} never ended; counted as failed");
			self.handle_failed(query);
		}
		let waited: Vec<u64> = self
			.learning
			.iter()
			.filter(|(_, (.., since))| now.saturating_sub(*since) > super::LEARN_DEADLINE)
			.map(|(then, _)| *then)
			.collect();
		for then in waited {
			if let Some((key, from, peers, _)) = self.learning.remove(&then) {
				log::debug!(target: LOG, "Addresses for a lookup answer not confirmed; asking anyway");
				self.on_nearest(key, from, peers);
			}
		}
		let stuck: Vec<Key> = self
			.lookups
			.iter()
			.filter(|(_, (_, started))| now.saturating_sub(*started) > super::LOOKUP_DEADLINE)
			.map(|(key, _)| *key)
			.collect();
		for key in stuck {
			log::debug!(target: LOG, "Lookup of {} past its deadline; ending it", hex::encode(key));
			if let Some((lookup, _)) = self.lookups.remove(&key) {
				self.finish(key, lookup);
			}
		}
	}

	fn handle_failed(&mut self, query: u64) {
		if let Some((peer, purpose, _)) = self.queries.remove(&query) {
			self.on_failure(peer, purpose);
		}
	}
}
