//! Streams and discovery: sends over links, opening and closing streams, random walks.

use super::{time, Ev, Payload, Sim, SECOND};
use codec::{Compact, Decode};
use statement_network::{
	core::{Event, SendOutcome},
	peerset::{Direction, PeersetAction},
	wire::{self, Version},
	SEND_TIMEOUT,
};
use statement_primitives::StatementsPage;

/// Peers a random walk finds, Kademlia's bucket size.
pub(super) const WALK_FINDS: usize = 20;
/// The driver's walk schedule (`driver/discovery.rs`).
pub(super) const FIRST_WALK: u64 = SECOND;
const LONGEST_WALK: u64 = 60 * SECOND;
const LONGEST_WALK_WANTING: u64 = 10 * SECOND;
/// The driver's slot tick (`driver/mod.rs`, `SLOTS_TICK`).
const SLOTS_TICK: u64 = SECOND;

impl Sim {
	pub(super) fn send(&mut self, n: u32, peer: u32, id: u64, notification: Vec<u8>) {
		let now = self.now;
		let latency = self.latency(n, peer);
		let bandwidth = self.params.upload_mbit;
		let node = &mut self.nodes[n as usize];
		if !node.streams.contains(&peer) {
			self.schedule(now, Ev::Sent { node: n, peer, id, outcome: SendOutcome::Failed });
			return;
		}
		let transmit = if bandwidth > 0.0 {
			(notification.len() as f64 * 8.0 / bandwidth * 1e3) as u64
		} else {
			0
		};
		let start = node.uplink_free.max(now);
		let done = start + transmit;
		if done - now > SEND_TIMEOUT.as_nanos() as u64 {
			let at = now + SEND_TIMEOUT.as_nanos() as u64;
			self.schedule(at, Ev::Sent { node: n, peer, id, outcome: SendOutcome::TimedOut });
			return;
		}
		node.uplink_free = done;
		node.bytes_sent += notification.len() as u64;
		if bandwidth > 0.0 {
			let waiting = ((done - now) as f64 * bandwidth / 8e3) as u64;
			node.peak_uplink = node.peak_uplink.max(waiting);
		}
		self.schedule(done, Ev::Sent { node: n, peer, id, outcome: SendOutcome::Delivered });
		let payload = self.pack(notification);
		self.schedule(done + latency, Ev::Arrive { to: peer, from: n, payload });
	}

	pub(super) fn page(&self, n: u32, after: u64, upto: u64, max_bytes: usize) -> StatementsPage {
		let journal = self.nodes[n as usize].store.journal.lock();
		let upto = (upto as usize).min(journal.len());
		let mut statements = Vec::new();
		let mut bytes = 0;
		let mut next = None;
		for seq in (after as usize + 1)..=upto {
			let published = &self.statements[journal[seq - 1] as usize];
			if !statements.is_empty() && bytes + published.encoding.len() > max_bytes {
				next = Some(seq as u64 - 1);
				break;
			}
			bytes += published.encoding.len();
			statements.push((published.hash, published.encoding.to_vec()));
		}
		StatementsPage { statements, next }
	}

	/// Our side closes (or bans); the peer notices a latency later.
	pub(super) fn close(&mut self, n: u32, peer: u32, ban_until: Option<std::time::Duration>) {
		let now = self.now;
		let latency = self.latency(n, peer);
		let node = &mut self.nodes[n as usize];
		if node.streams.remove(&peer) {
			node.peerset.closed(time(now), peer);
			self.schedule(now + latency, Ev::CloseArrive { to: peer, from: n });
		}
		if let Some(until) = ban_until {
			self.nodes[n as usize].peerset.banned(peer, until);
		}
	}

	pub(super) fn slots(&mut self, n: u32) {
		let now = self.now;
		let out_peers = self.params.out_peers;
		let node = &mut self.nodes[n as usize];
		if !node.alive {
			return;
		}
		node.peerset.tick(time(now));
		let mut dials = Vec::new();
		while let Some(PeersetAction::Open(peer)) = node.peerset.poll_action() {
			dials.push(peer);
		}
		let walk = !node.walking && now >= node.next_walk;
		if walk {
			node.walking = true;
			let longest =
				if node.streams.len() < out_peers { LONGEST_WALK_WANTING } else { LONGEST_WALK };
			node.next_walk = now + node.walk_interval;
			node.walk_interval = (node.walk_interval * 2).min(longest);
		}
		for peer in dials {
			let at = now + 2 * self.latency(n, peer);
			self.schedule(at, Ev::Dial { from: n, to: peer });
		}
		if walk {
			let via = self.rng.below(self.nodes.len()) as u32;
			let at = now + 6 * self.latency(n, via);
			self.schedule(at, Ev::WalkDone(n));
		}
		self.schedule(now + SLOTS_TICK, Ev::Slots(n));
	}

	pub(super) fn walk_done(&mut self, n: u32) {
		if !self.nodes[n as usize].alive {
			return;
		}
		let key = self.rng.next();
		let mut found = Vec::with_capacity(WALK_FINDS);
		found.extend(self.kad.range(key..).take(WALK_FINDS / 2).map(|(_, id)| *id));
		let before = WALK_FINDS - found.len();
		found.extend(self.kad.range(..key).rev().take(before).map(|(_, id)| *id));
		let node = &mut self.nodes[n as usize];
		node.walking = false;
		for peer in found {
			if peer != n {
				node.peerset.discovered(peer);
			}
		}
		self.nodes[n as usize]
			.metrics
			.discovered_peers
			.set(self.nodes[n as usize].peerset.known() as u64);
	}

	pub(super) fn dial(&mut self, from: u32, to: u32) {
		let now = self.now;
		let latency = self.latency(from, to);
		let answer_at = now + latency;
		let from_role = self.nodes[from as usize].role;
		let node = &mut self.nodes[to as usize];
		if !node.alive {
			self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: false });
			return;
		}
		if node.streams.contains(&from) {
			self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: true });
			return;
		}
		if node.core().is_banned(&from, time(now)) || !node.peerset.accept_inbound(time(now), from)
		{
			self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: false });
			return;
		}
		node.peerset.opened(time(now), from, Direction::Inbound);
		node.streams.insert(from);
		// The answer is on its way before anything the stream carries.
		self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: true });
		self.drive(to, Event::Opened { peer: from, version: Version::V2, role: from_role });
	}

	pub(super) fn dial_answer(&mut self, from: u32, to: u32, accepted: bool) {
		let now = self.now;
		let to_role = self.nodes[to as usize].role;
		let open_there =
			self.nodes[to as usize].alive && self.nodes[to as usize].streams.contains(&from);
		let node = &mut self.nodes[from as usize];
		if !node.alive || node.streams.contains(&to) {
			return;
		}
		if accepted && open_there {
			node.peerset.opened(time(now), to, Direction::Outbound);
			node.streams.insert(to);
			self.drive(from, Event::Opened { peer: to, version: Version::V2, role: to_role });
		} else {
			node.peerset.open_failed(time(now), to);
		}
	}

	/// A statement/2 `Statements` message whose every statement is one of this run's (all of
	/// one length, their index in their data's first bytes) as the indices; else the bytes.
	pub(super) fn pack(&self, notification: Vec<u8>) -> Payload {
		let Some((len, offset)) = self.layout else { return Payload::Bytes(notification) };
		let Some((&0, mut rest)) = notification.split_first() else {
			return Payload::Bytes(notification);
		};
		let Ok(Compact(count)) = Compact::<u32>::decode(&mut rest) else {
			return Payload::Bytes(notification);
		};
		if rest.len() != count as usize * len {
			return Payload::Bytes(notification);
		}
		let mut indices = Vec::with_capacity(count as usize);
		for encoding in rest.chunks_exact(len) {
			let mut index = [0u8; 8];
			index.copy_from_slice(&encoding[offset..offset + 8]);
			let index = u64::from_le_bytes(index) as usize;
			match self.statements.get(index) {
				Some(published) if published.encoding[..] == *encoding => {
					indices.push(index as u32)
				}
				_ => return Payload::Bytes(notification),
			}
		}
		Payload::Statements(indices)
	}

	/// The notification's bytes, as they were sent.
	pub(super) fn unpack(&self, payload: Payload) -> Vec<u8> {
		match payload {
			Payload::Bytes(bytes) => bytes,
			Payload::Statements(indices) => wire::encode_statements(
				Version::V2,
				indices.iter().map(|index| &self.statements[*index as usize].encoding[..]),
			),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::gossip::Params;

	fn sim() -> Sim {
		Sim::new(Params { nodes: 12, rate: 50.0, seconds: 1.0, warmup: 8.0, ..Params::default() })
	}

	#[test]
	fn a_notification_travels_as_indices_and_arrives_byte_for_byte() {
		let sim = sim();
		let chosen = [3usize, 0, 41];
		let notification = wire::encode_statements(
			Version::V2,
			chosen.iter().map(|k| &sim.statements[*k].encoding[..]),
		);
		let packed = sim.pack(notification.clone());
		assert!(matches!(&packed, Payload::Statements(indices) if indices == &[3, 0, 41]));
		assert_eq!(sim.unpack(packed), notification);
		// Anything else goes as it is: a damaged statement, or another message.
		let mut damaged = notification.clone();
		*damaged.last_mut().unwrap() ^= 1;
		assert!(matches!(sim.pack(damaged.clone()), Payload::Bytes(bytes) if bytes == damaged));
		assert!(matches!(sim.pack(vec![1, 2, 3]), Payload::Bytes(_)));
	}

	#[test]
	fn a_run_is_the_same_whether_notifications_travel_packed_or_whole() {
		let packed = sim().run();
		let mut whole = sim();
		whole.layout = None;
		assert_eq!(whole.run(), packed);
	}
}
