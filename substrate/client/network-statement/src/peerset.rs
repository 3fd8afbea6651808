//! Peer slots, as a Substrate node keeps them for a notification protocol: which peers to open
//! statement streams to, and which inbound ones to accept. A state machine like the gossip
//! core: no sockets or clock of its own, so a simulator can form the same topology.
//!
//! - At most `out_peers` streams we open and `in_peers` streams peers open to us; reserved
//!   peers are kept open on top of both, and with `reserved_only` nobody else is taken.
//! - Outbound slots fill from the peers discovery has found, picked at random among those not
//!   backed off. A peer whose stream could not be opened (dead address, refused) or was closed
//!   is backed off, 2 s doubling up to [`MAX_BACKOFF`], and the backoff clears once a stream
//!   opens.
//! - A banned peer is neither dialled nor accepted until its ban ends.

use std::{
	collections::{BTreeMap, BTreeSet, VecDeque},
	time::Duration,
};

/// First backoff after a failure; each further failure doubles it.
const FIRST_BACKOFF: Duration = Duration::from_secs(2);

/// Longest backoff.
pub const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Longest a stream may stay half-open (asked for or accepted, not yet open) before its slot is
/// given back.
const OPENING_TIMEOUT: Duration = Duration::from_secs(30);

/// Default inbound slots, Substrate's `--in-peers`.
pub const DEFAULT_IN_PEERS: usize = 32;

/// Default outbound slots, Substrate's `--out-peers`.
pub const DEFAULT_OUT_PEERS: usize = 8;

/// Who opened a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
	/// The peer did.
	Inbound,
	/// We did.
	Outbound,
}

/// How many slots of each kind.
#[derive(Clone, Debug)]
pub struct PeersetConfig {
	/// Streams peers may open to us.
	pub in_peers: usize,
	/// Streams we open.
	pub out_peers: usize,
	/// Take no peer but the reserved ones.
	pub reserved_only: bool,
}

impl Default for PeersetConfig {
	fn default() -> Self {
		PeersetConfig {
			in_peers: DEFAULT_IN_PEERS,
			out_peers: DEFAULT_OUT_PEERS,
			reserved_only: false,
		}
	}
}

/// What the peerset asks its driver to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeersetAction<P> {
	/// Open a statement stream (dialling the peer if it is not connected); answer with
	/// [`Peerset::opened`] or [`Peerset::open_failed`].
	Open(P),
}

#[derive(Debug)]
struct Slot {
	direction: Direction,
	open: bool,
	since: Duration,
}

#[derive(Debug, Default)]
struct Candidate {
	failures: u32,
	retry_at: Duration,
}

/// The slots of one node.
pub struct Peerset<P> {
	config: PeersetConfig,
	reserved: BTreeSet<P>,
	candidates: BTreeMap<P, Candidate>,
	slots: BTreeMap<P, Slot>,
	bans: BTreeMap<P, Duration>,
	rng: u64,
	actions: VecDeque<PeersetAction<P>>,
}

impl<P: Copy + Ord + std::fmt::Debug> Peerset<P> {
	/// A peerset with these slots and reserved peers; `seed` makes its random picks repeatable.
	pub fn new(config: PeersetConfig, reserved: impl IntoIterator<Item = P>, seed: u64) -> Self {
		Peerset {
			config,
			reserved: reserved.into_iter().collect(),
			candidates: BTreeMap::new(),
			slots: BTreeMap::new(),
			bans: BTreeMap::new(),
			rng: seed | 1,
			actions: VecDeque::new(),
		}
	}

	/// A peer discovery found (or a boot node): a candidate for an outbound slot.
	pub fn discovered(&mut self, peer: P) {
		self.candidates.entry(peer).or_default();
	}

	/// Whether to accept a stream the peer opens; taking it holds an inbound slot.
	pub fn accept_inbound(&mut self, now: Duration, peer: P) -> bool {
		if self.is_banned(&peer, now) {
			return false;
		}
		if self.slots.contains_key(&peer) {
			// We are opening to it, or it already has a stream: litep2p settles on one.
			return true;
		}
		let reserved = self.reserved.contains(&peer);
		if !reserved
			&& (self.config.reserved_only || self.count(Direction::Inbound) >= self.config.in_peers)
		{
			return false;
		}
		self.slots.insert(peer, Slot { direction: Direction::Inbound, open: false, since: now });
		true
	}

	/// A stream opened. A peer we were opening to that opened to us first keeps our outbound
	/// slot, whatever the direction litep2p reports.
	pub fn opened(&mut self, now: Duration, peer: P, direction: Direction) {
		let slot = self.slots.entry(peer).or_insert(Slot { direction, open: false, since: now });
		slot.open = true;
		slot.since = now;
		if let Some(candidate) = self.candidates.get_mut(&peer) {
			candidate.failures = 0;
		}
	}

	/// A stream closed: its slot is free, and the peer is backed off before it is tried again.
	pub fn closed(&mut self, now: Duration, peer: P) {
		if self.slots.remove(&peer).is_some() {
			self.back_off(now, peer);
		}
	}

	/// A stream we asked for could not be opened (the dial failed, or the peer refused).
	pub fn open_failed(&mut self, now: Duration, peer: P) {
		self.slots.remove(&peer);
		self.back_off(now, peer);
	}

	/// The peer is banned until `until`.
	pub fn banned(&mut self, peer: P, until: Duration) {
		self.slots.remove(&peer);
		self.bans.insert(peer, until);
	}

	/// Whether the peer is banned now.
	pub fn is_banned(&self, peer: &P, now: Duration) -> bool {
		self.bans.get(peer).is_some_and(|until| *until > now)
	}

	/// Give back stale slots, and fill free outbound slots (and reserved peers).
	pub fn tick(&mut self, now: Duration) {
		self.bans.retain(|_, until| *until > now);
		let stale: Vec<P> = self
			.slots
			.iter()
			.filter(|(_, slot)| !slot.open && now.saturating_sub(slot.since) >= OPENING_TIMEOUT)
			.map(|(peer, _)| *peer)
			.collect();
		for peer in stale {
			self.open_failed(now, peer);
		}
		let due = |candidates: &BTreeMap<P, Candidate>, peer: &P| {
			candidates.get(peer).is_none_or(|candidate| candidate.retry_at <= now)
		};
		let reserved: Vec<P> = self
			.reserved
			.iter()
			.filter(|peer| !self.slots.contains_key(*peer) && !self.is_banned(peer, now))
			.filter(|peer| due(&self.candidates, peer))
			.copied()
			.collect();
		for peer in reserved {
			self.open(now, peer);
		}
		if self.config.reserved_only {
			return;
		}
		let free = self.config.out_peers.saturating_sub(self.count(Direction::Outbound));
		if free == 0 {
			return;
		}
		let mut eligible: Vec<P> = self
			.candidates
			.iter()
			.filter(|(peer, candidate)| {
				candidate.retry_at <= now
					&& !self.slots.contains_key(*peer)
					&& !self.reserved.contains(*peer)
					&& !self.is_banned(peer, now)
			})
			.map(|(peer, _)| *peer)
			.collect();
		for taken in 0..free.min(eligible.len()) {
			let pick = taken + (self.next_random() % (eligible.len() - taken) as u64) as usize;
			eligible.swap(taken, pick);
			self.open(now, eligible[taken]);
		}
	}

	/// The next thing for the driver to do.
	pub fn poll_action(&mut self) -> Option<PeersetAction<P>> {
		self.actions.pop_front()
	}

	/// Open streams in each direction.
	pub fn open_streams(&self) -> (usize, usize) {
		let open = |direction| {
			self.slots.values().filter(|slot| slot.open && slot.direction == direction).count()
		};
		(open(Direction::Inbound), open(Direction::Outbound))
	}

	/// Peers discovery has found.
	pub fn known(&self) -> usize {
		self.candidates.len()
	}

	fn open(&mut self, now: Duration, peer: P) {
		self.slots.insert(peer, Slot { direction: Direction::Outbound, open: false, since: now });
		self.actions.push_back(PeersetAction::Open(peer));
	}

	/// Slots taken in a direction, open or opening; reserved peers take none.
	fn count(&self, direction: Direction) -> usize {
		self.slots
			.iter()
			.filter(|(peer, slot)| slot.direction == direction && !self.reserved.contains(*peer))
			.count()
	}

	fn back_off(&mut self, now: Duration, peer: P) {
		let candidate = self.candidates.entry(peer).or_default();
		candidate.failures = candidate.failures.saturating_add(1);
		let doublings = candidate.failures.saturating_sub(1).min(16);
		let backoff = FIRST_BACKOFF.saturating_mul(1 << doublings).min(MAX_BACKOFF);
		candidate.retry_at = now + backoff;
	}

	/// xorshift64: repeatable for a seed, which a simulator needs.
	fn next_random(&mut self) -> u64 {
		let mut x = self.rng;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		self.rng = x;
		x
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	const S: Duration = Duration::from_secs(1);

	fn opens(peerset: &mut Peerset<u32>) -> Vec<u32> {
		let mut out = Vec::new();
		while let Some(PeersetAction::Open(peer)) = peerset.poll_action() {
			out.push(peer);
		}
		out.sort();
		out
	}

	#[test]
	fn outbound_slots_fill_from_discovered_peers_and_no_further() {
		let config = PeersetConfig { in_peers: 2, out_peers: 3, reserved_only: false };
		let mut peerset = Peerset::new(config, [], 7);
		for peer in 0..10 {
			peerset.discovered(peer);
		}
		peerset.tick(Duration::ZERO);
		let first = opens(&mut peerset);
		assert_eq!(first.len(), 3);
		peerset.tick(S);
		assert!(opens(&mut peerset).is_empty(), "no free slot, nothing more opened");
		// One fails: its slot goes to someone else, not to it.
		peerset.open_failed(S, first[0]);
		peerset.tick(S);
		let next = opens(&mut peerset);
		assert_eq!(next.len(), 1);
		assert_ne!(next[0], first[0]);
	}

	#[test]
	fn a_dead_peer_is_backed_off_doubling_and_forgiven_once_it_opens() {
		let config = PeersetConfig { in_peers: 0, out_peers: 1, reserved_only: false };
		let mut peerset = Peerset::new(config, [], 1);
		peerset.discovered(5);
		let mut now = Duration::ZERO;
		let mut tried_at = Vec::new();
		while now < 40 * S {
			peerset.tick(now);
			if !opens(&mut peerset).is_empty() {
				tried_at.push(now.as_secs());
				peerset.open_failed(now, 5);
			}
			now += S;
		}
		assert_eq!(tried_at, [0, 2, 6, 14, 30]);
		peerset.tick(now + 100 * S);
		assert_eq!(opens(&mut peerset), [5]);
		peerset.opened(now + 100 * S, 5, Direction::Outbound);
		peerset.closed(now + 101 * S, 5);
		peerset.tick(now + 102 * S);
		assert!(opens(&mut peerset).is_empty(), "2 s backoff after a close");
		peerset.tick(now + 103 * S);
		assert_eq!(opens(&mut peerset), [5]);
	}

	#[test]
	fn inbound_slots_bound_what_peers_open_to_us_but_not_reserved_peers() {
		let config = PeersetConfig { in_peers: 2, out_peers: 0, reserved_only: false };
		let mut peerset = Peerset::new(config, [100], 1);
		assert!(peerset.accept_inbound(Duration::ZERO, 1));
		peerset.opened(Duration::ZERO, 1, Direction::Inbound);
		assert!(peerset.accept_inbound(Duration::ZERO, 2));
		assert!(!peerset.accept_inbound(Duration::ZERO, 3));
		assert!(peerset.accept_inbound(Duration::ZERO, 100));
		peerset.closed(S, 1);
		assert!(peerset.accept_inbound(S, 3));
		assert_eq!(peerset.open_streams(), (0, 0));
	}

	#[test]
	fn reserved_only_takes_reserved_peers_and_keeps_them_open() {
		let config = PeersetConfig { in_peers: 5, out_peers: 5, reserved_only: true };
		let mut peerset = Peerset::new(config, [9], 1);
		peerset.discovered(1);
		peerset.tick(Duration::ZERO);
		assert_eq!(opens(&mut peerset), [9]);
		assert!(!peerset.accept_inbound(Duration::ZERO, 1));
		peerset.open_failed(Duration::ZERO, 9);
		peerset.tick(3 * S);
		assert_eq!(opens(&mut peerset), [9]);
	}

	#[test]
	fn a_banned_peer_is_neither_dialled_nor_accepted_until_its_ban_ends() {
		let mut peerset = Peerset::new(PeersetConfig::default(), [], 1);
		peerset.discovered(4);
		peerset.banned(4, 60 * S);
		peerset.tick(S);
		assert!(opens(&mut peerset).is_empty());
		assert!(!peerset.accept_inbound(S, 4));
		peerset.tick(61 * S);
		assert_eq!(opens(&mut peerset), [4]);
	}

	#[test]
	fn a_half_open_slot_is_given_back() {
		let config = PeersetConfig { in_peers: 1, out_peers: 1, reserved_only: false };
		let mut peerset = Peerset::new(config, [], 1);
		peerset.discovered(1);
		peerset.discovered(2);
		peerset.tick(Duration::ZERO);
		let first = opens(&mut peerset);
		peerset.tick(31 * S);
		let second = opens(&mut peerset);
		assert_eq!(second.len(), 1);
		assert_ne!(first, second);
	}
}
