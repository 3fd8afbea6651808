//! Sending: admitted statements queued for the peers that want them and did not send them,
//! initial syncs walked from the journal, our filter, and one notification in flight per peer
//! within the global caps.

use super::{
	peer::{Busy, InitialSync, Item, Range, Wants},
	Action, Core, SendOutcome, Time, FILTER_INTERVAL, LOG, READ_RETRY,
};
use crate::{
	affinity::AffinityFilter,
	wire::{self, v2, Version, MAX_NOTIFICATION_SIZE},
	Propagation, INITIAL_SYNC_RESERVED_BYTES, MAX_IN_FLIGHT_BYTES, SEND_TIMEOUT,
};
use codec::Decode;
use statement_primitives::{hash_encoded, Encoded, Hash, Statement, StatementsPage};
use std::{collections::VecDeque, sync::Arc};

/// Peers remembered as keeping everything; past it, those without a stream are forgotten.
const MAX_ASKED_FOR_EVERYTHING: usize = 4_096;

/// What a statement needs for propagation, from its encoding.
pub(super) fn item(hash: Hash, encoding: Encoded) -> Item {
	let (expires, topics) = match Statement::decode(&mut &encoding[..]) {
		Ok(statement) => {
			(u64::from(statement.expiration_timestamp_secs()), statement.topics().to_vec())
		}
		Err(_) => (0, Vec::new()),
	};
	Item { hash, encoding, expires, topics }
}

impl<P: Copy + Ord + std::hash::Hash + std::fmt::Debug + std::fmt::Display> Core<P> {
	pub(super) fn on_admitted(&mut self, now: Time, admitted: Vec<Encoded>) {
		for encoding in admitted {
			let hash = hash_encoded(&encoding);
			let item = Arc::new(item(hash, encoding));
			// Kept after admission: a peer that sends it again meanwhile joins them.
			let sources =
				self.sources.get(&hash).map(|(peers, _)| peers.clone()).unwrap_or_default();
			match self.config.propagation {
				Propagation::Immediate(_) => self.queue(item, &sources),
				Propagation::Reference => self.recent.push((item, sources)),
			}
		}
		if let Propagation::Immediate(window) = self.config.propagation {
			if self.flush_at.is_none() {
				self.flush_at = Some(now + window);
			}
		}
	}

	/// Queue a statement for every peer that wants it but its sources.
	pub(super) fn queue(&mut self, item: Arc<Item>, sources: &[P]) {
		for (id, peer) in self.peers.iter_mut() {
			if sources.contains(id) || !peer.wants.accepts(&item.topics) {
				continue;
			}
			if peer.outbox.len() >= self.config.max_outbox {
				peer.outbox.pop_front();
				self.metrics.outbox_full.add(1);
				self.metrics.undelivered_outbox_full.add(1);
			}
			peer.outbox.push_back(item.clone());
		}
	}

	/// The store dropped the admission watch for falling behind and it was renewed at `upto`:
	/// send every peer what was admitted since the old watch's last catch-up, from the journal.
	pub(super) fn on_watch_renewed(&mut self, now: Time, upto: u64) {
		log::warn!(target: LOG, "Propagation fell behind the store; catching peers up from the journal");
		let from = std::mem::replace(&mut self.live_since, upto);
		for peer in self.peers.values_mut() {
			peer.outbox.clear();
			if matches!(peer.wants, Wants::Nothing) {
				continue;
			}
			let sync = peer.sync.get_or_insert_with(|| InitialSync {
				ranges: VecDeque::new(),
				started: now,
				retry_at: None,
			});
			sync.ranges.push_back(Range { after: from, upto, had: Wants::Nothing });
		}
		self.update_peer_gauges();
	}

	/// A peer's new filter: from now on it is sent what matches, and from the journal what
	/// matches that it has not had.
	pub(super) fn apply_filter(&mut self, now: Time, id: P, filter: Arc<AffinityFilter>) {
		let upto = self.store.admission_watermark();
		let Some(peer) = self.peers.get_mut(&id) else { return };
		let had = std::mem::replace(&mut peer.wants, Wants::Matching(filter));
		log::debug!(target: LOG, "Peer {id} set its topic affinity; syncing what it lacks up to #{upto}");
		if matches!(had, Wants::All) {
			// It had everything already.
			return;
		}
		peer.sync = Some(InitialSync {
			ranges: VecDeque::from([Range { after: 0, upto, had }]),
			started: now,
			retry_at: None,
		});
		self.update_peer_gauges();
	}

	/// This node's own filter changed: every statement/2 peer is sent it.
	pub(super) fn on_interest(&mut self, filter: AffinityFilter) {
		self.interest = Some(Arc::new(filter));
		for peer in self.peers.values_mut() {
			if peer.version == Version::V2 {
				peer.filter_due = true;
			}
		}
	}

	/// A peer that keeps everything is asked for everything from now on.
	pub(super) fn on_keeps_everything(&mut self, id: P) {
		if self.asked_for_everything.len() >= MAX_ASKED_FOR_EVERYTHING {
			self.asked_for_everything.retain(|known| self.peers.contains_key(known));
		}
		if !self.asked_for_everything.insert(id) {
			return;
		}
		if let Some(peer) = self.peers.get_mut(&id) {
			if peer.version == Version::V2 && self.interest.is_some() {
				peer.filter_due = true;
			}
		}
	}

	pub(super) fn on_sent(&mut self, now: Time, id: P, send: u64, outcome: SendOutcome) {
		let Some(peer) = self.peers.get_mut(&id) else { return };
		if peer.busy.as_ref().map(Busy::id) != Some(send) {
			return;
		}
		// Statements the notification carried, lost if it was not delivered.
		let mut carried = 0;
		match peer.busy.take() {
			Some(Busy::Live { bytes, count, .. }) => {
				carried = count;
				self.in_flight_live -= bytes;
				self.metrics.propagation_in_flight.set(self.in_flight_live as u64);
			}
			Some(Busy::Syncing { reserved, next, count, .. }) => {
				carried = count;
				self.in_flight_sync -= reserved;
				self.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
				if outcome == SendOutcome::Delivered {
					self.metrics.initial_sync_sent.add(count as u64);
					self.metrics.initial_sync_bursts.add(1);
					self.sync_advanced(now, id, next);
				}
			}
			Some(Busy::Filter { .. } | Busy::Reading { .. }) | None => {}
		}
		match outcome {
			SendOutcome::Delivered => {}
			SendOutcome::Failed => {
				self.metrics.failed_network.add(1);
				self.metrics.undelivered_network.add(carried as u64);
			}
			SendOutcome::TimedOut => {
				self.metrics.failed_timeout.add(1);
				self.metrics.undelivered_timeout.add(carried as u64);
				log::warn!(target: LOG, "Peer {id} took over {}s to take a notification; dropping it", SEND_TIMEOUT.as_secs());
				self.forget(now, id);
				self.actions.push_back(Action::Close { peer: id });
			}
		}
	}

	pub(super) fn on_page(
		&mut self,
		now: Time,
		id: P,
		read: u64,
		page: Result<StatementsPage, String>,
	) {
		let Some(peer) = self.peers.get_mut(&id) else { return };
		let Some(Busy::Reading { reserved, .. }) = peer.busy else { return };
		if peer.busy.as_ref().map(Busy::id) != Some(read) {
			return;
		}
		let page = match page {
			Ok(page) => page,
			Err(err) => {
				// The cursor stays: the sync resumes from it after a pause.
				log::warn!(target: LOG, "Cannot read statements for the initial sync of {id}: {err}");
				peer.busy = None;
				if let Some(sync) = peer.sync.as_mut() {
					sync.retry_at = Some(now + READ_RETRY);
				}
				self.in_flight_sync -= reserved;
				self.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
				return;
			}
		};
		let had =
			peer.sync.as_ref().and_then(|sync| sync.ranges.front()).map(|range| range.had.clone());
		let had = had.unwrap_or(Wants::Nothing);
		// Expiry is in unix seconds: the driver's clock at the core's start, plus the time since.
		let unix = self.config.unix_at_start.saturating_add(now.as_secs());
		let mut chunk: Vec<&[u8]> = Vec::with_capacity(page.statements.len());
		for (_, encoding) in &page.statements {
			if !wire::fits_alone(peer.version, encoding.len()) {
				self.metrics.skipped_oversized.add(1);
				continue;
			}
			let Ok(statement) = Statement::decode(&mut &encoding[..]) else { continue };
			let topics = statement.topics();
			if u64::from(statement.expiration_timestamp_secs()) <= unix
				|| !peer.wants.accepts(topics)
				|| had.accepts(topics)
			{
				continue;
			}
			chunk.push(encoding.as_slice());
		}
		if chunk.is_empty() {
			// An empty page with a cursor skipped statements removed, expired or unwanted.
			peer.busy = None;
			self.in_flight_sync -= reserved;
			self.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
			self.sync_advanced(now, id, page.next);
			return;
		}
		let count = chunk.len();
		let notification = wire::encode_statements(peer.version, chunk.into_iter());
		let send = self.next_id();
		let Some(peer) = self.peers.get_mut(&id) else { return };
		peer.busy = Some(Busy::Syncing { id: send, reserved, next: page.next, count });
		self.metrics.initial_sync_chunks.observe(count as f64);
		self.actions.push_back(Action::Send { peer: id, id: send, notification });
	}

	fn sync_advanced(&mut self, now: Time, id: P, next: Option<u64>) {
		let Some(peer) = self.peers.get_mut(&id) else { return };
		let Some(sync) = peer.sync.as_mut() else { return };
		match next {
			Some(next) => {
				if let Some(range) = sync.ranges.front_mut() {
					range.after = next;
				}
			}
			None => {
				sync.ranges.pop_front();
			}
		}
		if !sync.ranges.is_empty() {
			return;
		}
		let elapsed = now.saturating_sub(sync.started);
		peer.sync = None;
		self.metrics.initial_sync_completed.observe(elapsed.as_secs_f64());
		log::info!(target: LOG, "Initial sync of {id} done in {:.1}s", elapsed.as_secs_f64());
		if let Some(filter) = peer.pending_filter.take() {
			self.apply_filter(now, id, filter);
		}
		self.update_peer_gauges();
	}

	/// Start a send (or a read) for every idle peer with something to send, within the caps.
	pub(super) fn pump(&mut self, now: Time) {
		let ids: Vec<P> = self.peers.keys().copied().collect();
		for id in ids {
			let Some(peer) = self.peers.get(&id) else { continue };
			if peer.busy.is_some() {
				continue;
			}
			let filter_ready =
				peer.filter_due && peer.filter_sent_at.is_none_or(|at| at + FILTER_INTERVAL <= now);
			if filter_ready {
				self.send_filter(now, id);
				continue;
			}
			let has_live = !peer.outbox.is_empty() && self.flush_at.is_none();
			let has_sync =
				peer.sync.as_ref().is_some_and(|sync| sync.retry_at.is_none_or(|at| at <= now));
			let sync_turn = has_sync && (!has_live || !peer.last_was_sync);
			if sync_turn
				&& self.in_flight_live + self.in_flight_sync + MAX_NOTIFICATION_SIZE
					<= MAX_IN_FLIGHT_BYTES
			{
				self.read_sync(id);
			} else if has_live {
				self.send_live(now, id);
			}
		}
	}

	fn send_filter(&mut self, now: Time, id: P) {
		let Some(filter) = self.interest.clone() else { return };
		let filter = if self.asked_for_everything.contains(&id) {
			Arc::new(AffinityFilter::everything())
		} else {
			filter
		};
		let send = self.next_id();
		let Some(peer) = self.peers.get_mut(&id) else { return };
		peer.filter_due = false;
		peer.filter_sent_at = Some(now);
		peer.busy = Some(Busy::Filter { id: send });
		let notification = v2::encode_affinity(&filter);
		self.actions.push_back(Action::Send { peer: id, id: send, notification });
	}

	fn read_sync(&mut self, id: P) {
		let read = self.next_id();
		let Some(peer) = self.peers.get_mut(&id) else { return };
		let Some(sync) = peer.sync.as_mut() else { return };
		let Some(range) = sync.ranges.front() else { return };
		sync.retry_at = None;
		let (after, upto) = (range.after, range.upto);
		let reserved = MAX_NOTIFICATION_SIZE;
		peer.busy = Some(Busy::Reading { id: read, reserved });
		peer.last_was_sync = true;
		let max_bytes = MAX_NOTIFICATION_SIZE - peer.version.envelope();
		self.in_flight_sync += reserved;
		self.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
		self.actions.push_back(Action::Read { peer: id, id: read, after, upto, max_bytes });
	}

	fn send_live(&mut self, now: Time, id: P) {
		let send = self.next_id();
		let Some(peer) = self.peers.get_mut(&id) else { return };
		// Expiry is in unix seconds: the driver's clock at the core's start, plus the time since.
		let unix = self.config.unix_at_start.saturating_add(now.as_secs());
		let envelope = peer.version.envelope();
		let mut chunk: Vec<Arc<Item>> = Vec::new();
		let mut bytes = envelope;
		while let Some(item) = peer.outbox.front() {
			// A filter set after it was queued may no longer want it, and the peer may have
			// sent it to us since.
			let sent_us =
				self.sources.get(&item.hash).is_some_and(|(peers, _)| peers.contains(&id));
			if item.expires <= unix || !peer.wants.accepts(&item.topics) || sent_us {
				peer.outbox.pop_front();
				continue;
			}
			if !wire::fits_alone(peer.version, item.encoding.len()) {
				self.metrics.skipped_oversized.add(1);
				peer.outbox.pop_front();
				continue;
			}
			if bytes + item.encoding.len() > MAX_NOTIFICATION_SIZE {
				break;
			}
			bytes += item.encoding.len();
			chunk.extend(peer.outbox.pop_front());
		}
		if chunk.is_empty() {
			return;
		}
		let live_cap = MAX_IN_FLIGHT_BYTES - INITIAL_SYNC_RESERVED_BYTES;
		if self.in_flight_live + bytes > live_cap {
			// Over the cap: put the chunk back and wait for a send to finish.
			for item in chunk.into_iter().rev() {
				peer.outbox.push_front(item);
			}
			return;
		}
		let notification =
			wire::encode_statements(peer.version, chunk.iter().map(|item| &item.encoding[..]));
		peer.busy = Some(Busy::Live { id: send, bytes, count: chunk.len() });
		peer.last_was_sync = false;
		self.in_flight_live += bytes;
		self.metrics.propagation_in_flight.set(self.in_flight_live as u64);
		self.metrics.propagated.add(chunk.len() as u64);
		self.metrics.propagation_chunks.observe(chunk.len() as f64);
		self.actions.push_back(Action::Send { peer: id, id: send, notification });
	}
}
