//! One iterative lookup of the K nodes nearest a key, as Kademlia runs it: ask the nearest
//! candidates not asked yet (at most [`super::ALPHA`] at once) for the nearest they know, and
//! stop once the K nearest candidates that did not fail have all answered.

use super::key::{distance, Key};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
	Fresh,
	Asked,
	Answered,
	Failed,
}

/// A lookup under way; the caller sends the queries [`Lookup::next_queries`] names and reports
/// each answer or failure.
#[derive(Debug)]
pub struct Lookup<P> {
	target: Key,
	k: usize,
	alpha: usize,
	/// Every candidate by `(distance, peer)`, nearest first.
	candidates: BTreeMap<(Key, P), State>,
	/// Where each candidate sits in `candidates`.
	distances: BTreeMap<P, Key>,
	asked: usize,
	queries: usize,
}

impl<P: Copy + Ord> Lookup<P> {
	/// A lookup of `k` nearest to `target` by `local` (which counts as a candidate that has
	/// answered, with what it knows: `known`), asking `alpha` at once.
	pub fn new(
		target: Key,
		k: usize,
		alpha: usize,
		local: (P, Key),
		known: impl IntoIterator<Item = (P, Key)>,
	) -> Self {
		let mut lookup = Lookup {
			target,
			k: k.max(1),
			alpha: alpha.max(1),
			candidates: BTreeMap::new(),
			distances: BTreeMap::new(),
			asked: 0,
			queries: 0,
		};
		lookup.add(local.0, local.1, State::Answered);
		for (peer, key) in known {
			lookup.add(peer, key, State::Fresh);
		}
		lookup
	}

	fn add(&mut self, peer: P, key: Key, state: State) {
		if self.distances.contains_key(&peer) {
			return;
		}
		let distance = distance(&self.target, &key);
		self.distances.insert(peer, distance);
		self.candidates.insert((distance, peer), state);
	}

	fn set(&mut self, peer: &P, state: State) -> Option<State> {
		let distance = *self.distances.get(peer)?;
		let slot = self.candidates.get_mut(&(distance, *peer))?;
		let was = *slot;
		*slot = state;
		Some(was)
	}

	/// The peers to ask now; each is asked once.
	pub fn next_queries(&mut self) -> Vec<P> {
		let mut out = Vec::new();
		let mut live = 0;
		let mut picked = Vec::new();
		for ((_, peer), state) in &self.candidates {
			if live >= self.k || self.asked + picked.len() >= self.alpha {
				break;
			}
			match state {
				State::Failed => continue,
				State::Fresh => picked.push(*peer),
				State::Asked | State::Answered => {}
			}
			live += 1;
		}
		for peer in picked {
			self.set(&peer, State::Asked);
			self.asked += 1;
			self.queries += 1;
			out.push(peer);
		}
		out
	}

	/// `from` answered with the peers (and keys) it knows nearest the target.
	pub fn answered(&mut self, from: &P, peers: impl IntoIterator<Item = (P, Key)>) {
		if self.set(from, State::Answered) == Some(State::Asked) {
			self.asked -= 1;
		}
		for (peer, key) in peers {
			self.add(peer, key, State::Fresh);
		}
	}

	/// `from` could not be asked, or did not answer.
	pub fn failed(&mut self, from: &P) {
		if self.set(from, State::Failed) == Some(State::Asked) {
			self.asked -= 1;
		}
	}

	/// Whether the K nearest candidates still standing have all answered.
	pub fn is_done(&self) -> bool {
		self.candidates
			.values()
			.filter(|state| **state != State::Failed)
			.take(self.k)
			.all(|state| *state == State::Answered)
	}

	/// The K nearest that answered (the local node among them when it is near enough),
	/// nearest first: the holders, once [`Lookup::is_done`].
	pub fn nearest(&self) -> Vec<P> {
		self.candidates
			.iter()
			.filter(|(_, state)| **state == State::Answered)
			.take(self.k)
			.map(|((_, peer), _)| *peer)
			.collect()
	}

	/// Peers that did not answer, for the caller to forget.
	pub fn failures(&self) -> impl Iterator<Item = &P> {
		self.candidates.iter().filter(|(_, state)| **state == State::Failed).map(|((_, p), _)| p)
	}

	/// Queries sent so far.
	pub fn queries(&self) -> usize {
		self.queries
	}
}

#[cfg(test)]
mod tests {
	use super::super::{
		key::{key_of, nearest},
		known::Known,
	};
	use super::*;
	use std::{collections::BTreeSet, time::Duration};

	/// A network of `n` nodes, each knowing a few random others and those nearest it, as
	/// Kademlia's buckets would after its walks; returns every node's table.
	fn network(n: u32, random: usize, near: usize, seed: u64) -> Vec<Known<u32, ()>> {
		let keys: Vec<Key> = (0..n).map(|i| key_of(&i.to_le_bytes())).collect();
		let mut rng = seed | 1;
		let mut next = || {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			rng
		};
		(0..n)
			.map(|i| {
				let mut table = Known::new();
				for _ in 0..random {
					let j = (next() % u64::from(n)) as u32;
					if j != i {
						table.learn(j, keys[j as usize], [], Duration::ZERO);
					}
				}
				let all = (0..n).filter(|j| *j != i).map(|j| (j, keys[j as usize]));
				for j in nearest(&keys[i as usize], all, near) {
					table.learn(j, keys[j as usize], [], Duration::ZERO);
				}
				table
			})
			.collect()
	}

	fn run(
		tables: &[Known<u32, ()>],
		from: u32,
		target: Key,
		k: usize,
		dead: &BTreeSet<u32>,
	) -> Lookup<u32> {
		let local = (from, key_of(&from.to_le_bytes()));
		let mut lookup =
			Lookup::new(target, k, 3, local, tables[from as usize].nearest(&target, k, None));
		for _round in 0..1_000 {
			let asked = lookup.next_queries();
			if asked.is_empty() {
				break;
			}
			for peer in asked {
				if dead.contains(&peer) {
					lookup.failed(&peer);
				} else {
					lookup.answered(&peer, tables[peer as usize].nearest(&target, k, Some(&from)));
				}
			}
		}
		assert!(lookup.is_done(), "the lookup stopped before it converged");
		lookup
	}

	#[test]
	fn lookups_from_any_node_converge_on_the_true_k_nearest_live_nodes() {
		let n = 1_000;
		let tables = network(n, 12, 20, 7);
		let keys: Vec<Key> = (0..n).map(|i| key_of(&i.to_le_bytes())).collect();
		let dead: BTreeSet<u32> = (0..n).filter(|i| i % 10 == 3).collect();
		for probe in 0..50u8 {
			let target = key_of(&[probe, 0xee]);
			let live = (0..n).filter(|i| !dead.contains(i)).map(|i| (i, keys[i as usize]));
			let truth = nearest(&target, live, 20);
			let from = (u32::from(probe) * 37) % n;
			let from = if dead.contains(&from) { from + 1 } else { from };
			let lookup = run(&tables, from, target, 20, &dead);
			assert_eq!(lookup.nearest(), truth, "probe {probe} from {from}");
			assert!(lookup.queries() < 120, "probe {probe}: {} queries", lookup.queries());
		}
	}

	#[test]
	fn a_lookup_asks_at_most_alpha_at_once_and_each_peer_once() {
		let target = [0; 32];
		let key = |byte: u8| {
			let mut key = [0; 32];
			key[0] = byte;
			key
		};
		let mut lookup =
			Lookup::new(target, 2, 2, (0u32, key(200)), [(1, key(1)), (2, key(2)), (3, key(3))]);
		assert_eq!(lookup.next_queries(), vec![1, 2]);
		assert!(lookup.next_queries().is_empty(), "two in flight already");
		lookup.failed(&1);
		assert_eq!(lookup.next_queries(), vec![3], "1 failed: 3 is now among the nearest two");
		lookup.answered(&2, [(1, key(1)), (4, key(4))]);
		assert!(
			lookup.next_queries().is_empty(),
			"1 failed, 2 answered, 3 in flight: nothing new in the nearest two"
		);
		assert!(!lookup.is_done());
		lookup.answered(&3, []);
		assert!(lookup.is_done());
		assert_eq!(lookup.nearest(), vec![2, 3]);
		assert_eq!(lookup.failures().copied().collect::<Vec<_>>(), vec![1]);
	}

	#[test]
	fn with_nobody_to_ask_the_local_node_is_its_own_answer() {
		let mut lookup: Lookup<u32> = Lookup::new([0; 32], 3, 3, (7, [1; 32]), []);
		assert!(lookup.next_queries().is_empty());
		assert!(lookup.is_done());
		assert_eq!(lookup.nearest(), vec![7]);
	}
}
