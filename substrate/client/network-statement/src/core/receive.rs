//! Receiving: notifications decoded and rate-limited, known statements skipped, the rest handed
//! over for validation (held back while the queue is full), filters taken, standing kept.

use super::{Action, Core, Held, Time, LOG, MAX_SOURCES, VALIDATION_WAIT};
use crate::wire::{self, Message};
use statement_primitives::{hash_encoded, Hash, SubmitResult};
use std::sync::Arc;

/// Standing changes, as upstream's reputation changes.
pub(super) mod standing {
	/// A statement the store did not have.
	pub const NEW: i64 = 256;
	/// A statement the store had.
	pub const KNOWN: i64 = 16;
	/// A statement the store refused as invalid.
	pub const INVALID: i64 = -4096;
	/// A message that could not be decoded, or a filter out of bounds.
	pub const BAD_MESSAGE: i64 = -4096;
}

impl<P: Copy + Ord + std::hash::Hash + std::fmt::Debug + std::fmt::Display> Core<P> {
	pub(super) fn on_notification(&mut self, now: Time, id: P, notification: &[u8]) {
		self.metrics.bytes_received.add(notification.len() as u64);
		let Some(peer) = self.peers.get_mut(&id) else { return };
		let message = match wire::decode(peer.version, notification) {
			Ok(message) => message,
			Err(err) => {
				self.metrics.bad_notifications.add(1);
				log::debug!(target: LOG, "Peer {id} sent a notification that {err}");
				self.change_standing(now, id, standing::BAD_MESSAGE, "bad notifications");
				return;
			}
		};
		let statements = match message {
			Message::Statements(statements) => statements,
			Message::Affinity(filter) => {
				if !peer.filter_bucket.take(1, now) {
					self.metrics.flooding_detected.add(1);
					let limit = super::FILTER_CHANGES_PER_SECOND;
					self.ban(now, id, format!("affinity flooding (over {limit} filter changes/s)"));
					return;
				}
				let filter = Arc::new(filter);
				if peer.sync.is_some() {
					// Applied when the sync under way ends, so that what it sends and what the
					// new filter adds do not overlap.
					peer.pending_filter = Some(filter);
				} else {
					self.apply_filter(now, id, filter);
				}
				return;
			}
		};
		self.metrics.received.add(statements.len() as u64);
		if !peer.bucket.take(statements.len(), now) {
			self.metrics.flooding_detected.add(1);
			let limit = self.config.rate_limit;
			self.ban(now, id, format!("statement flooding (over {limit} statements/s)"));
			return;
		}
		for (statement, encoding) in statements {
			let hash = hash_encoded(&encoding);
			let sources = self.sources.entry(hash).or_insert_with(|| (Vec::new(), now));
			if !sources.0.contains(&id) && sources.0.len() < MAX_SOURCES {
				sources.0.push(id);
			}
			if self.store.has_statement(&hash) {
				// It may still wait in this peer's outbox: it is not sent back (see send_live).
				self.metrics.known_received.add(1);
				continue;
			}
			if self.pending.contains(&hash) {
				continue;
			}
			if self.held.is_empty() && self.pending.len() < self.config.validation_queue {
				self.validate(id, hash, statement);
			} else {
				self.held.push_back(Held { peer: id, hash, statement });
				self.held_since.get_or_insert(now);
			}
		}
	}

	fn validate(&mut self, peer: P, hash: Hash, statement: statement_primitives::Statement) {
		self.pending.insert(hash);
		self.metrics.pending_validations.set(self.pending.len() as u64);
		self.actions.push_back(Action::Validate { peer, hash, statement: Box::new(statement) });
	}

	/// Move held statements into the validation queue as it has room.
	fn release_held(&mut self, now: Time) {
		let mut moved = false;
		while self.pending.len() < self.config.validation_queue {
			let Some(held) = self.held.pop_front() else { break };
			moved = true;
			if self.pending.contains(&held.hash) || self.store.has_statement(&held.hash) {
				continue;
			}
			self.validate(held.peer, held.hash, held.statement);
		}
		if self.held.is_empty() {
			self.held_since = None;
		} else if moved {
			self.held_since = Some(now);
		}
	}

	/// Statements held for longer than [`VALIDATION_WAIT`] without progress are dropped.
	pub(super) fn expire_held(&mut self, now: Time) {
		if self.held_since.is_some_and(|since| since + VALIDATION_WAIT <= now) {
			let dropped = self.held.len();
			for held in self.held.drain(..) {
				if let Some((peers, _)) = self.sources.get_mut(&held.hash) {
					peers.retain(|peer| *peer != held.peer);
				}
			}
			self.held_since = None;
			self.metrics.ignored.add(dropped as u64);
			log::debug!(target: LOG, "Validation queue full for {}s: dropped {dropped} received statements", VALIDATION_WAIT.as_secs());
		}
	}

	pub(super) fn on_verdict(&mut self, now: Time, id: P, hash: Hash, result: SubmitResult) {
		self.pending.remove(&hash);
		self.metrics.pending_validations.set(self.pending.len() as u64);
		let change = match &result {
			SubmitResult::New => standing::NEW,
			SubmitResult::Known => standing::KNOWN,
			SubmitResult::Invalid(reason) => {
				self.metrics.invalid_received.add(1);
				log::debug!(target: LOG, "Peer {id} sent an invalid statement: {reason:?}");
				standing::INVALID
			}
			_ => 0,
		};
		if !matches!(result, SubmitResult::New | SubmitResult::Known) {
			// Only stored statements are propagated, so only they need their sources.
			self.sources.remove(&hash);
		}
		self.change_standing(now, id, change, "invalid statements");
		self.release_held(now);
	}
}
