//! What the node does with each admitted statement: send it to its holders, hold it, keep it
//! for a subscription here, or drop it after a while; and the timers behind those.

use super::{Action, Due, Held, Parked, Router, MAX_HELD_KEYS, MAX_PARKED};
use crate::routing::{keys_of, Key};
use codec::Decode;
use statement_primitives::{Encoded, Hash, Statement, Topic};
use std::time::Duration;

/// How soon a statement whose keys have no lookup answer yet is looked at again.
const RETRY: Duration = Duration::from_secs(1);

impl<P, A> Router<P, A>
where
	P: Copy + Ord + std::hash::Hash + std::fmt::Debug,
	A: Clone + PartialEq,
{
	/// Route and decide on one admitted statement.
	pub(super) fn admit(&mut self, encoding: Encoded, forward: bool) {
		let Ok(statement) = Statement::decode(&mut &encoding[..]) else { return };
		let hash = statement.hash();
		let arrived = self.arrived.get(&hash).copied();
		let (forward, sent_by) = (forward && arrived.is_none(), arrived.flatten());
		for topic in statement.topics() {
			self.send_to_watchers(*topic, &encoding);
		}
		let topics = statement.topics().to_vec();
		let keys = keys_of(&topics, &hash);
		let mut parked =
			Parked { hash, encoding, topics, keys: keys.clone(), forward, sent_by, waiting: 0 };
		let id = self.next_id();
		for key in keys {
			if self.holders(key).is_none() {
				parked.waiting += 1;
				self.parked_on.entry(key).or_default().push(id);
			}
		}
		if parked.waiting == 0 {
			self.decide(parked);
			return;
		}
		self.parked.insert(id, parked);
		if self.parked.len() > MAX_PARKED {
			if let Some((_, oldest)) = self.parked.pop_first() {
				let due = self.now + self.config.drop_after;
				self.decide_later(due, oldest.hash, oldest.topics);
			}
		}
	}

	/// Decide on the statements that waited for the lookup of `key`, once it was their last.
	pub(super) fn unpark(&mut self, key: Key) {
		let Some(ids) = self.parked_on.remove(&key) else { return };
		for id in ids {
			let ready = self.parked.get_mut(&id).is_some_and(|parked| {
				parked.waiting -= 1;
				parked.waiting == 0
			});
			if ready {
				if let Some(parked) = self.parked.remove(&id) {
					self.decide(parked);
				}
			}
		}
	}

	/// Forward to the holders, then hold, or look again after `drop_after`.
	fn decide(&mut self, parked: Parked<P>) {
		let Parked { hash, encoding, topics, keys, forward, sent_by, .. } = parked;
		let mut holder = false;
		for key in &keys {
			let Some(holders) = self.cached(key).cloned() else { continue };
			if forward {
				let local = self.local;
				for peer in holders.iter().filter(|peer| **peer != local) {
					self.queue_for(*peer, &encoding);
				}
			}
			if holders.contains(&self.local) {
				holder = true;
				self.hold(*key, holders);
			}
		}
		// Sent here by a node that is not a holder either, and not for a watch of this node's:
		// the sender's lookup missed a holder this node finds (the holders only push to peers
		// new to them, so a missed one would stay without it). A holder's push (hand-over,
		// or to a watcher) is not sent on.
		let by_holder = |router: &Self, sender: &P| {
			keys.iter()
				.any(|key| router.cached(key).is_some_and(|holders| holders.contains(sender)))
		};
		let misrouted = sent_by.is_some_and(|sender| !by_holder(self, &sender));
		if !holder && misrouted && !self.wanted_here(&topics) {
			log::debug!(target: crate::core::LOG, "Statement {} sent here by a node that took this one for a holder; sent on", hex::encode(hash));
			let local = self.local;
			for key in &keys {
				let Some(holders) = self.cached(key).cloned() else { continue };
				for peer in holders.iter().filter(|peer| **peer != local) {
					self.queue_for(*peer, &encoding);
				}
			}
		}
		let track = if holder {
			"holder"
		} else if self.wanted_here(&topics) {
			"interest"
		} else {
			"transient"
		};
		self.metrics.routing_decision(track);
		if !holder {
			let due = self.now + self.config.drop_after;
			self.retention.push_back(Due { due, hash, topics, keys });
		}
	}

	pub(super) fn decide_later(&mut self, due: super::Time, hash: Hash, topics: Vec<Topic>) {
		let keys = keys_of(&topics, &hash);
		self.retention.push_back(Due { due, hash, topics, keys });
	}

	fn hold(&mut self, key: Key, holders: Vec<P>) {
		if self.held.contains_key(&key) || self.held.len() >= MAX_HELD_KEYS {
			return;
		}
		// Looked up again when its answer is no longer used: soon, if it had nobody to ask.
		let refresh_at =
			self.cache.get(&key).map_or(self.now + self.config.refresh, |(_, until)| *until);
		self.held.insert(key, Held { holders, refresh_at });
		self.metrics.routing_held_keys.set(self.held.len() as u64);
	}

	fn wanted_here(&self, topics: &[Topic]) -> bool {
		topics.iter().any(|topic| self.wanted.contains(topic) || self.fetched_here(topic))
	}

	/// Release what is due and neither held nor wanted here.
	fn sweep(&mut self) {
		let now = self.now;
		let mut released = Vec::new();
		let mut again = Vec::new();
		while self.retention.front().is_some_and(|due| due.due <= now) {
			let Some(due) = self.retention.pop_front() else { break };
			let mut holder = false;
			let mut unknown = false;
			for key in &due.keys {
				match self.holders(*key) {
					Some(holders) => {
						if holders.contains(&self.local) {
							holder = true;
							self.hold(*key, holders);
						}
					}
					None => unknown = true,
				}
			}
			if holder {
				continue;
			}
			if unknown {
				again.push(Due { due: now + RETRY, ..due });
			} else if self.wanted_here(&due.topics) {
				again.push(Due { due: now + self.config.drop_after, ..due });
			} else {
				released.push(due.hash);
			}
		}
		self.retention.extend(again);
		if !released.is_empty() {
			self.metrics.routing_released.add(released.len() as u64);
			self.actions.push_back(Action::Release { hashes: released });
		}
	}

	fn send_to_watchers(&mut self, topic: Topic, encoding: &Encoded) {
		let Some(watchers) = self.watchers.get(&topic) else { return };
		let now = self.now;
		let peers: Vec<P> =
			watchers.iter().filter(|(_, until)| **until > now).map(|(peer, _)| *peer).collect();
		for peer in peers {
			self.queue_for(peer, encoding);
		}
	}

	pub(super) fn tick(&mut self) {
		let now = self.now;
		self.expire_queries();
		self.expire_fetches();
		self.resend_stores();
		self.expire_handovers();
		self.refresh();
		for watchers in self.watchers.values_mut() {
			watchers.retain(|_, until| *until > now);
		}
		self.watchers.retain(|_, watchers| !watchers.is_empty());
		self.failed.retain(|_, until| *until > now);
		self.sweep();
		let known = self.known.len() as u64;
		self.metrics.routing_known_peers.set(known);
		self.metrics.routing_eligible_peers.set(known);
		// Past their use, answers stay a while for `cached`, which decides on what waited.
		let keep = self.config.refresh;
		self.cache.retain(|_, (_, until)| *until + keep > now);
	}
}
