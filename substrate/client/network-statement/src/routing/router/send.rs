//! What the router sends peers in `Store`s: statements to their holders and watchers, batched
//! per peer; failed `Store`s sent again; and hand-overs, a page of a key at a time.
//!
//! Memory stays bounded whatever the size of a topic: a hand-over reads one page (at most
//! [`wire::MAX_ANSWER`] bytes) and reads the next once every `Store` of the page has ended,
//! [`HANDOVERS_AT_ONCE`] keys at a time; retries hold at most [`MAX_RETRY_BYTES`].

use super::{Action, Handover, Purpose, Router};
use crate::{
	core::LOG,
	routing::{wire, Key},
};
use codec::Decode;
use statement_primitives::{Encoded, Statement};
use std::{sync::Arc, time::Duration};

/// Bytes of statements one `Store` request carries: one notification's worth.
const STORE_BYTES: usize = crate::MAX_NOTIFICATION_SIZE;

/// A `Store` that failed is sent again after this, at most [`STORE_RETRIES`] times: the other
/// holders never push to a holder that is not new to them, so a write lost on its way would
/// stay lost.
const STORE_RETRY_AFTER: Duration = Duration::from_secs(2);
const STORE_RETRIES: u8 = 3;

/// Bytes of failed `Store`s waiting to be sent again; past it, the oldest are given up.
pub const MAX_RETRY_BYTES: usize = 32 * 1024 * 1024;

/// Keys handed over at once; others wait their turn.
pub const HANDOVERS_AT_ONCE: usize = 4;

/// A hand-over that made no progress (no page read, no `Store` ended) for this long is given
/// up, so that a lost read cannot hold its turn for ever.
const HANDOVER_STALLED: Duration = Duration::from_secs(120);

impl<P, A> Router<P, A>
where
	P: Copy + Ord + std::hash::Hash + std::fmt::Debug,
	A: Clone + PartialEq,
{
	/// Send what waits for each peer, a `Store` of at most [`STORE_BYTES`] at a time.
	pub(super) fn flush(&mut self) {
		if self.outgoing.is_empty() {
			return;
		}
		for (peer, statements) in std::mem::take(&mut self.outgoing) {
			self.send_batched(peer, statements, None);
		}
	}

	/// `Store`s of `statements` to `peer`, [`STORE_BYTES`] at most each; how many.
	fn send_batched(&mut self, peer: P, statements: Vec<Encoded>, handover: Option<Key>) -> usize {
		let mut sent = 0;
		let mut batch = Vec::new();
		let mut bytes = 0;
		for encoding in statements {
			if bytes + encoding.len() > STORE_BYTES && !batch.is_empty() {
				self.send_store(peer, std::mem::take(&mut batch), 0, handover);
				sent += 1;
				bytes = 0;
			}
			bytes += encoding.len();
			batch.push(encoding);
		}
		if !batch.is_empty() {
			self.send_store(peer, batch, 0, handover);
			sent += 1;
		}
		sent
	}

	fn send_store(
		&mut self,
		peer: P,
		statements: Vec<Encoded>,
		retried: u8,
		handover: Option<Key>,
	) {
		self.metrics.routing_forwarded.add(statements.len() as u64);
		let body =
			wire::Request::Store { statements: statements.iter().map(|s| s.to_vec()).collect() };
		self.query(peer, body, Purpose::Store { statements, retried, handover });
	}

	/// A `Store` to `peer` ended, taken or not: a hand-over's next page may follow.
	pub(super) fn store_ended(&mut self, handover: Option<Key>) {
		let Some(key) = handover else { return };
		let now = self.now;
		let Some(current) = self.handovers.get_mut(&key) else { return };
		current.progress = now;
		current.outstanding = current.outstanding.saturating_sub(1);
		if current.outstanding == 0 {
			self.next_page(key);
		}
	}

	/// A `Store` to `peer` failed: send it again later, unless it was sent often enough.
	pub(super) fn retry_store(&mut self, peer: P, statements: Vec<Encoded>, retried: u8) {
		if retried >= STORE_RETRIES {
			log::debug!(target: LOG, "{} statement(s) not taken by {peer:?} after {STORE_RETRIES} retries", statements.len());
			return;
		}
		self.retry_bytes += bytes_of(&statements);
		let due = self.now + STORE_RETRY_AFTER;
		self.store_retries.push_back((due, peer, statements, retried + 1));
		while self.retry_bytes > MAX_RETRY_BYTES {
			let Some((_, _, dropped, _)) = self.store_retries.pop_front() else { break };
			log::debug!(target: LOG, "{} failed statement(s) not retried: retries are full", dropped.len());
			self.retry_bytes -= bytes_of(&dropped);
		}
	}

	/// Send the failed `Store`s that are due again.
	pub(super) fn resend_stores(&mut self) {
		while self.store_retries.front().is_some_and(|(due, ..)| *due <= self.now) {
			let Some((_, peer, statements, retried)) = self.store_retries.pop_front() else {
				break;
			};
			self.retry_bytes -= bytes_of(&statements);
			self.send_store(peer, statements, retried, None);
		}
	}

	pub(super) fn queue_for(&mut self, peer: P, encoding: &Encoded) {
		let queue = self.outgoing.entry(peer).or_default();
		if !queue.iter().any(|queued| Arc::ptr_eq(queued, encoding)) {
			queue.push(encoding.clone());
		}
	}

	/// Push a key's statements to its new `peers`, a page at a time; with `release`, this
	/// node lets the key go and decides on each statement again after `drop_after`.
	///
	/// A key already waiting gets the new peers added (and lets go if either asks), so the
	/// waiting keys are at most the keys held.
	pub(super) fn hand_over(&mut self, key: Key, peers: Vec<P>, release: bool) {
		if self.handovers.contains_key(&key) || self.handovers.len() >= HANDOVERS_AT_ONCE {
			match self.waiting_for.get_mut(&key) {
				Some((waiting, lets_go)) => {
					for peer in peers {
						if !waiting.contains(&peer) {
							waiting.push(peer);
						}
					}
					*lets_go |= release;
				}
				None => {
					self.waiting_for.insert(key, (peers, release));
					self.waiting_handovers.push_back(key);
				}
			}
			return;
		}
		let handover = Handover { peers, release, outstanding: 0, next: None, progress: self.now };
		self.handovers.insert(key, handover);
		self.actions.push_back(Action::ReadKey { key, skip: 0 });
	}

	/// A page of a key being handed over was read.
	pub(super) fn on_key_read(&mut self, key: Key, statements: Vec<Encoded>, next: Option<u32>) {
		let now = self.now;
		let Some(current) = self.handovers.get_mut(&key) else { return };
		current.next = next;
		current.progress = now;
		let (peers, release) = (current.peers.clone(), current.release);
		self.metrics.routing_handed_over.add((statements.len() * peers.len()) as u64);
		if release {
			let due = self.now + self.config.drop_after;
			for encoding in &statements {
				let Ok(statement) = Statement::decode(&mut &encoding[..]) else { continue };
				self.decide_later(due, statement.hash(), statement.topics().to_vec());
			}
		}
		let mut sent = 0;
		for peer in peers {
			sent += self.send_batched(peer, statements.clone(), Some(key));
		}
		if let Some(current) = self.handovers.get_mut(&key) {
			current.outstanding += sent;
		}
		if sent == 0 {
			self.next_page(key);
		}
	}

	/// Read the next page of a hand-over, or end it and start a waiting one.
	fn next_page(&mut self, key: Key) {
		let Some(current) = self.handovers.get(&key) else { return };
		if let Some(skip) = current.next {
			self.actions.push_back(Action::ReadKey { key, skip });
			return;
		}
		self.handovers.remove(&key);
		self.start_waiting_handovers();
	}

	/// Start waiting hand-overs while there is room; each waiting key is looked at once (one
	/// still being handed over waits on).
	fn start_waiting_handovers(&mut self) {
		for _ in 0..self.waiting_handovers.len() {
			if self.handovers.len() >= HANDOVERS_AT_ONCE {
				break;
			}
			let Some(key) = self.waiting_handovers.pop_front() else { break };
			if self.handovers.contains_key(&key) {
				self.waiting_handovers.push_back(key);
				continue;
			}
			if let Some((peers, release)) = self.waiting_for.remove(&key) {
				self.hand_over(key, peers, release);
			}
		}
	}

	/// Give up hand-overs stalled past [`HANDOVER_STALLED`] (a read whose answer was lost).
	pub(super) fn expire_handovers(&mut self) {
		let now = self.now;
		let before = self.handovers.len();
		self.handovers.retain(|key, current| {
			let stalled = now.saturating_sub(current.progress) > HANDOVER_STALLED;
			if stalled {
				log::debug!(target: LOG, "Hand-over of key {} stalled; given up", hex::encode(key));
			}
			!stalled
		});
		if self.handovers.len() < before {
			self.start_waiting_handovers();
		}
	}
}

/// The bytes of `statements`' encodings.
fn bytes_of(statements: &[Encoded]) -> usize {
	statements.iter().map(|s| s.len()).sum()
}
