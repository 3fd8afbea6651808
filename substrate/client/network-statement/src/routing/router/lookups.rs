//! Lookups, the holders they find, hand-over of held keys, and watches on the holders of the
//! topics this node's subscriptions name.

use super::{Purpose, Router};
use crate::{
	core::LOG,
	routing::{wire, Key, Lookup, ALPHA, LOOKUPS_AT_ONCE},
};
use statement_primitives::Topic;

impl<P, A> Router<P, A>
where
	P: Copy + Ord + std::hash::Hash + std::fmt::Debug,
	A: Clone + PartialEq,
{
	/// The holders of `key`, if a lookup found them within `refresh`; otherwise one starts.
	pub(super) fn holders(&mut self, key: Key) -> Option<Vec<P>> {
		if let Some((holders, until)) = self.cache.get(&key) {
			if *until > self.now {
				return Some(holders.clone());
			}
		}
		self.start_lookup(key);
		// A lookup with nobody to ask ends at once.
		self.cache
			.get(&key)
			.filter(|(_, until)| *until > self.now)
			.map(|(holders, _)| holders.clone())
	}

	/// The holders the last lookup of `key` found, however old.
	pub(super) fn cached(&self, key: &Key) -> Option<&Vec<P>> {
		self.cache.get(key).map(|(holders, _)| holders)
	}

	pub(super) fn start_lookup(&mut self, key: Key) {
		if self.lookups.contains_key(&key) || self.queued_lookups.contains(&key) {
			return;
		}
		if self.lookups.len() >= LOOKUPS_AT_ONCE {
			self.queued_lookups.push_back(key);
			return;
		}
		let width = self.config.width();
		let seeds = self.known.nearest(&key, width, None);
		let lookup = Lookup::new(key, width, ALPHA, (self.local, self.local_key), seeds);
		log::trace!(target: LOG, "Looking up {}", hex::encode(key));
		self.lookups.insert(key, (lookup, self.now));
		self.metrics.routing_lookups.add(1);
		self.drive(key);
	}

	/// Ask what the lookup of `key` asks for, and finish it once it has converged.
	pub(super) fn drive(&mut self, key: Key) {
		let Some((lookup, _)) = self.lookups.get_mut(&key) else { return };
		let asked = lookup.next_queries();
		let done = asked.is_empty() && lookup.is_done();
		for peer in asked {
			self.query(peer, wire::Request::Nearest { key }, Purpose::Nearest { key });
		}
		if !done {
			return;
		}
		let Some((lookup, _)) = self.lookups.remove(&key) else { return };
		self.finish(key, lookup);
	}

	/// A lookup ended: its nearest answered are the key's holders.
	pub(super) fn finish(&mut self, key: Key, lookup: Lookup<P>) {
		log::trace!(target: LOG, "Lookup of {} done after {} queries", hex::encode(key), lookup.queries());
		let mut holders = lookup.nearest();
		holders.truncate(self.config.replication_factor);
		let valid = if lookup.queries() == 0 { super::LONELY_FOR } else { self.config.refresh };
		self.cache.insert(key, (holders.clone(), self.now + valid));
		self.on_holders(key, holders, self.now + valid);
		while self.lookups.len() < LOOKUPS_AT_ONCE {
			let Some(next) = self.queued_lookups.pop_front() else { break };
			self.start_lookup(next);
		}
	}

	/// A lookup of `key` found these holders, to be looked up again at `again`.
	fn on_holders(&mut self, key: Key, holders: Vec<P>, again: super::Time) {
		let local = self.local;
		if let Some(held) = self.held.get_mut(&key) {
			let before = std::mem::replace(&mut held.holders, holders.clone());
			held.refresh_at = again;
			let still = holders.contains(&local);
			let new: Vec<P> = holders
				.iter()
				.filter(|peer| **peer != local && !before.contains(peer))
				.copied()
				.collect();
			if !still {
				self.held.remove(&key);
				self.metrics.routing_held_keys.set(self.held.len() as u64);
			}
			if !new.is_empty() || !still {
				log::debug!(
					target: LOG,
					"Key {} has {} new holder(s){}",
					hex::encode(key),
					new.len(),
					if still { "" } else { "; no longer held here" }
				);
				self.hand_over(key, new, !still);
			}
		}
		self.renew_watch(Topic(key), &holders);
		self.fetch_from(Topic(key), &holders);
		self.unpark(key);
	}

	/// Watch a topic this node's subscriptions name on its holders, when the watch is due and
	/// the node is not a holder itself.
	pub(super) fn renew_watch(&mut self, topic: Topic, holders: &[P]) {
		let (now, refresh) = (self.now, self.config.refresh);
		let Some(renew_at) = self.watching.get_mut(&topic) else { return };
		if *renew_at > now || holders.contains(&self.local) {
			return;
		}
		*renew_at = now + refresh;
		let lease_secs = self.lease_secs();
		for peer in holders.iter().copied() {
			let body = wire::Request::Watch { topic: topic.0, lease_secs, skip: 0 };
			self.query(peer, body, Purpose::Watch { topic, skip: 0 });
		}
	}

	/// Every `refresh`: look this node's own key up (every node it asks learns of it, as
	/// identify runs on each connection, so its neighbourhood finds it when it joins), look
	/// held keys up again (hand-over), and renew the watches.
	pub(super) fn refresh(&mut self) {
		let now = self.now;
		if self.next_announce <= now {
			self.next_announce = now + self.config.refresh;
			self.cache.remove(&self.local_key);
			self.start_lookup(self.local_key);
		}
		let due: Vec<Key> = self
			.held
			.iter()
			.filter(|(_, held)| held.refresh_at <= now)
			.map(|(key, _)| *key)
			.take(LOOKUPS_AT_ONCE * 4)
			.collect();
		for key in due {
			if let Some(held) = self.held.get_mut(&key) {
				held.refresh_at = now + self.config.refresh;
			}
			// Forced: the cache would answer with the holders it is checking.
			self.cache.remove(&key);
			self.start_lookup(key);
		}
		let wanted = self.wanted.clone();
		self.watching.retain(|topic, _| wanted.contains(topic));
		for topic in wanted {
			let due = self.watching.get(&topic).is_none_or(|renew_at| *renew_at <= now);
			if !due {
				continue;
			}
			self.watching.entry(topic).or_insert(now);
			if let Some(holders) = self.holders(topic.0) {
				self.renew_watch(topic, &holders);
			}
		}
	}
}
