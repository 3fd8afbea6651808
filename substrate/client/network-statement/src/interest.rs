//! A light node's interest: the topics it asks its peers for, as one affinity filter.
//!
//! The filter covers the topics the node was started with (`--statement-topics`) and those of
//! every subscription open on it, so that an app subscribing on a light node gets what it asked
//! for. A `matchAll` subscription adds each of its topics (a bloom filter can only say "any of
//! these"; the store's subscription narrows it again), an `any` subscription or an empty
//! `matchAll` asks for everything. When a subscription ends its topics leave the filter again.
//! Every change reaches the gossip worker, which sends the new filter to each statement/2 peer
//! (at most one every [`crate::core::FILTER_INTERVAL`] per peer).

use crate::affinity::AffinityFilter;
use parking_lot::Mutex;
use statement_primitives::{Topic, TopicFilter};
use std::{collections::BTreeMap, sync::Arc};
use tokio::sync::mpsc;

/// The topics wanted and who wants them.
#[derive(Debug, Default)]
struct Wanted {
	/// Topics the node was started with.
	base: Vec<Topic>,
	/// Topics of open subscriptions, with how many subscriptions name each.
	counted: BTreeMap<Topic, usize>,
	/// Open subscriptions that want everything.
	everything: usize,
	/// A routed node's: subscriptions that want everything do not widen the filter (they
	/// are served what the node holds, never everything the network holds).
	routed: bool,
}

impl Wanted {
	fn filter(&self, seed: u128) -> AffinityFilter {
		if self.everything > 0 && !self.routed {
			return AffinityFilter::everything();
		}
		AffinityFilter::of_topics(seed, self.topics().iter())
	}

	fn topics(&self) -> Vec<Topic> {
		let mut topics: Vec<Topic> = self.base.clone();
		topics.extend(self.counted.keys().copied());
		topics.sort();
		topics.dedup();
		topics
	}

	/// The topics a subscription adds, or `None` for everything.
	fn of(filter: &TopicFilter) -> Option<Vec<Topic>> {
		match filter {
			TopicFilter::Any => None,
			TopicFilter::MatchAll(topics) if topics.is_empty() => None,
			TopicFilter::MatchAll(topics) | TopicFilter::MatchAny(topics) => Some(topics.clone()),
		}
	}
}

struct Shared {
	wanted: Mutex<Wanted>,
	seed: u128,
	changed: mpsc::UnboundedSender<AffinityFilter>,
}

impl Shared {
	fn publish(&self, wanted: &Wanted) {
		// The worker gone means networking stopped: nobody to tell.
		let _ = self.changed.send(wanted.filter(self.seed));
	}
}

/// The interest of a light node; cloning shares it. For a full node it does nothing.
#[derive(Clone)]
pub struct Interest {
	shared: Option<Arc<Shared>>,
}

impl Interest {
	/// The interest of a light node started with `base` topics, and where its changes go.
	pub(crate) fn light(
		base: Vec<Topic>,
		seed: u128,
	) -> (Self, AffinityFilter, mpsc::UnboundedReceiver<AffinityFilter>) {
		Self::new(base, seed, false)
	}

	/// The interest of a routed node: as a light node's, but a subscription to everything
	/// asks peers for nothing more.
	pub(crate) fn routed(
		base: Vec<Topic>,
		seed: u128,
	) -> (Self, AffinityFilter, mpsc::UnboundedReceiver<AffinityFilter>) {
		Self::new(base, seed, true)
	}

	fn new(
		base: Vec<Topic>,
		seed: u128,
		routed: bool,
	) -> (Self, AffinityFilter, mpsc::UnboundedReceiver<AffinityFilter>) {
		let (changed, receiver) = mpsc::unbounded_channel();
		let wanted = Wanted { base, routed, ..Wanted::default() };
		let first = wanted.filter(seed);
		let shared = Arc::new(Shared { wanted: Mutex::new(wanted), seed, changed });
		(Interest { shared: Some(shared) }, first, receiver)
	}

	/// A full node's: it wants everything already.
	pub(crate) fn full() -> Self {
		Interest { shared: None }
	}

	/// The topics named now: those the node was started with and those of open
	/// subscriptions (empty for a full node).
	pub fn topics(&self) -> Vec<Topic> {
		self.shared.as_ref().map_or_else(Vec::new, |shared| shared.wanted.lock().topics())
	}

	/// Ask peers for what `filter` selects for as long as the guard lives.
	pub fn watch(&self, filter: &TopicFilter) -> InterestGuard {
		let Some(shared) = &self.shared else { return InterestGuard { held: None } };
		let topics = Wanted::of(filter);
		let mut wanted = shared.wanted.lock();
		let before: Vec<Topic> = wanted.counted.keys().copied().collect();
		let everything_before = wanted.everything;
		match &topics {
			None => wanted.everything += 1,
			Some(topics) => {
				for topic in topics {
					*wanted.counted.entry(*topic).or_default() += 1;
				}
			}
		}
		let everything = wanted.everything > 0 && !wanted.routed;
		let widened = (everything_before == 0 && everything)
			|| (!everything && wanted.counted.len() != before.len());
		if widened {
			shared.publish(&wanted);
		}
		InterestGuard { held: Some((shared.clone(), topics)) }
	}
}

/// Keeps a subscription's topics in the filter; dropping it takes them out.
pub struct InterestGuard {
	held: Option<(Arc<Shared>, Option<Vec<Topic>>)>,
}

impl Drop for InterestGuard {
	fn drop(&mut self) {
		let Some((shared, topics)) = self.held.take() else { return };
		let mut wanted = shared.wanted.lock();
		let mut narrowed = false;
		match topics {
			None => {
				wanted.everything -= 1;
				narrowed = wanted.everything == 0 && !wanted.routed;
			}
			Some(topics) => {
				for topic in topics {
					if let Some(count) = wanted.counted.get_mut(&topic) {
						*count -= 1;
						if *count == 0 {
							wanted.counted.remove(&topic);
							narrowed |= wanted.everything == 0 || wanted.routed;
						}
					}
				}
			}
		}
		if narrowed {
			shared.publish(&wanted);
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn on_a_routed_node_a_subscription_to_everything_asks_peers_for_no_more() {
		let (interest, first, mut changes) = Interest::routed(vec![], 3);
		assert!(!first.contains(&[9; 32]));
		let all = interest.watch(&TopicFilter::Any);
		assert!(changes.try_recv().is_err(), "nothing more asked of peers");
		let two = interest.watch(&TopicFilter::MatchAll(vec![Topic([2; 32])]));
		let widened = changes.try_recv().unwrap();
		assert!(widened.contains(&[2; 32]) && !widened.contains(&[9; 32]));
		assert_eq!(interest.topics(), vec![Topic([2; 32])]);
		drop(two);
		assert!(!changes.try_recv().unwrap().contains(&[2; 32]), "narrowed again");
		drop(all);
		assert!(interest.topics().is_empty());
		assert!(Interest::full().topics().is_empty());
	}

	#[test]
	fn subscriptions_widen_the_filter_and_narrow_it_again_when_they_end() {
		let (interest, first, mut changes) = Interest::light(vec![Topic([1; 32])], 3);
		assert!(first.contains(&[1; 32]) && !first.contains(&[2; 32]));
		let two = interest.watch(&TopicFilter::MatchAll(vec![Topic([2; 32]), Topic([3; 32])]));
		let widened = changes.try_recv().unwrap();
		assert!([[1; 32], [2; 32], [3; 32]].iter().all(|topic| widened.contains(topic)));
		// The same topics again change nothing.
		let again = interest.watch(&TopicFilter::MatchAny(vec![Topic([2; 32])]));
		assert!(changes.try_recv().is_err());
		let all = interest.watch(&TopicFilter::Any);
		assert!(changes.try_recv().unwrap().contains(&[9; 32]));
		drop(all);
		let back = changes.try_recv().unwrap();
		assert!(back.contains(&[2; 32]) && !back.contains(&[9; 32]));
		drop(again);
		assert!(changes.try_recv().is_err(), "topic 2 is still wanted by the first");
		drop(two);
		let last = changes.try_recv().unwrap();
		assert!(last.contains(&[1; 32]) && !last.contains(&[2; 32]));
	}

	#[test]
	fn a_full_node_ignores_subscriptions() {
		let full = Interest::full();
		assert!(full.shared.is_none(), "a full node keeps no filter to widen");
		let topics = vec![Topic([1; 32]), Topic([2; 32])];
		for filter in [
			TopicFilter::Any,
			TopicFilter::MatchAll(Vec::new()),
			TopicFilter::MatchAll(topics.clone()),
			TopicFilter::MatchAny(topics.clone()),
		] {
			let guard = full.watch(&filter);
			assert!(guard.held.is_none(), "{filter:?} was tracked on a full node");
		}
	}
}
