//! Sending: admitted statements queued for the peers they did not come from, initial syncs
//! walked from the journal, and one notification in flight per peer within the global caps.

use super::{Worker, LOG};
use crate::{
	metrics::Metrics, wire, wire::MAX_NOTIFICATION_SIZE, PeerId, Propagation,
	INITIAL_SYNC_RESERVED_BYTES, MAX_IN_FLIGHT_BYTES, MAX_OUTBOX, SEND_TIMEOUT,
};
use codec::Decode;
use litep2p::protocol::notification::NotificationSink;
use statement_primitives::{hash_encoded, Encoded, Statement, StatementStore};
use std::{
	collections::VecDeque,
	sync::Arc,
	time::{Instant, SystemTime, UNIX_EPOCH},
};

/// A statement to propagate, shared by every outbox it waits in.
pub(super) struct Item {
	pub(super) encoding: Encoded,
	pub(super) expires: u64,
}

/// What a send task reports when done.
pub(super) enum Sent {
	Live { peer: PeerId, bytes: usize, ok: Result<(), SendFailure> },
	Sync { peer: PeerId, reserved: usize, outcome: Result<SyncStep, SendFailure> },
}

pub(super) enum SendFailure {
	Network,
	Timeout,
	Store(String),
}

/// How far an initial-sync send got.
pub(super) struct SyncStep {
	/// The cursor to go on from; `None` when the range is done.
	pub(super) next: Option<u64>,
}

/// The initial sync of one peer: journal ranges `(after, upto]` left to send.
pub(super) struct Sync {
	pub(super) ranges: VecDeque<(u64, u64)>,
	pub(super) started: Instant,
}

pub(super) fn now_secs() -> u64 {
	SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
}

impl Worker {
	/// Statements the store admitted: queue them for every peer they did not come from.
	/// False if the watch had fallen behind and was renewed.
	pub(super) fn on_admitted(&mut self) -> bool {
		loop {
			let admitted = match self.watch.try_next_live(MAX_NOTIFICATION_SIZE) {
				Ok(admitted) => admitted,
				Err(err) => {
					self.renew_watch(err);
					return false;
				}
			};
			if admitted.is_empty() {
				break;
			}
			for encoding in admitted {
				let expires = Statement::decode(&mut &encoding[..])
					.map_or(0, |statement| u64::from(statement.expiration_timestamp_secs()));
				let hash = hash_encoded(&encoding);
				let item = Arc::new(Item { encoding, expires });
				let sources =
					self.sources.remove(&hash).map(|(peers, _)| peers).unwrap_or_default();
				match self.config.propagation {
					Propagation::Immediate(_) => self.queue(item, &sources),
					Propagation::Reference => self.recent.push((item, sources)),
				}
			}
		}
		if let Propagation::Immediate(window) = self.config.propagation {
			if self.flush_at.is_none() {
				self.flush_at = Some(tokio::time::Instant::now() + window);
			}
		}
		true
	}

	/// Queue a statement for every peer but its sources.
	pub(super) fn queue(&mut self, item: Arc<Item>, sources: &[PeerId]) {
		for (peer, state) in self.peers.iter_mut() {
			if sources.contains(peer) {
				continue;
			}
			if state.outbox.len() >= MAX_OUTBOX {
				state.outbox.pop_front();
				self.shared.metrics.outbox_full.add(1);
			}
			state.outbox.push_back(item.clone());
		}
	}

	/// Reference propagation: queue what was admitted since the last tick, and send.
	pub(super) fn tick(&mut self) {
		for (item, sources) in std::mem::take(&mut self.recent) {
			self.queue(item, &sources);
		}
		self.pump();
	}

	/// The store dropped gossip's watch for falling behind: watch again, and send every peer
	/// what was admitted since the old watch began, from the journal.
	pub(super) fn renew_watch(&mut self, err: statement_primitives::Error) {
		log::warn!(target: LOG, "Propagation fell behind the store ({err}); catching peers up from the journal");
		match self.store.watch_admissions(self.config.watch_queue_bytes) {
			Ok(watch) => self.watch = watch,
			Err(err) => {
				log::error!(target: LOG, "Cannot watch the store for new statements: {err}");
				return;
			}
		}
		let upto = self.store.admission_watermark();
		let from = std::mem::replace(&mut self.live_since, upto);
		for state in self.peers.values_mut() {
			state.outbox.clear();
			let sync = state
				.sync
				.get_or_insert_with(|| Sync { ranges: VecDeque::new(), started: Instant::now() });
			sync.ranges.push_back((from, upto));
		}
		self.update_peer_gauges();
		self.pump();
	}

	pub(super) fn on_sent(&mut self, sent: Sent) {
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		let (peer, result) = match sent {
			Sent::Live { peer, bytes, ok } => {
				self.in_flight_live -= bytes;
				metrics.propagation_in_flight.set(self.in_flight_live as u64);
				(peer, ok)
			}
			Sent::Sync { peer, reserved, outcome } => {
				self.in_flight_sync -= reserved;
				metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
				match outcome {
					Ok(step) => {
						self.sync_advanced(peer, step);
						(peer, Ok(()))
					}
					Err(failure) => (peer, Err(failure)),
				}
			}
		};
		if let Some(state) = self.peers.get_mut(&peer) {
			state.busy = false;
		}
		match result {
			Ok(()) => {}
			Err(SendFailure::Network) => metrics.failed_network.add(1),
			Err(SendFailure::Timeout) => {
				metrics.failed_timeout.add(1);
				log::warn!(target: LOG, "Peer {peer} took over {}s to take a notification; dropping it", SEND_TIMEOUT.as_secs());
				self.forget(peer);
				let _ = self.handle.try_close_substream_batch(std::iter::once(peer));
			}
			Err(SendFailure::Store(err)) => {
				// The cursor stays: the sync resumes from it on the next turn.
				log::warn!(target: LOG, "Cannot read statements for the initial sync of {peer}: {err}");
			}
		}
		self.pump();
	}

	pub(super) fn sync_advanced(&mut self, peer: PeerId, step: SyncStep) {
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let Some(sync) = state.sync.as_mut() else { return };
		match step.next {
			Some(next) => {
				if let Some(range) = sync.ranges.front_mut() {
					range.0 = next;
				}
			}
			None => {
				sync.ranges.pop_front();
			}
		}
		if sync.ranges.is_empty() {
			let elapsed = sync.started.elapsed();
			state.sync = None;
			self.shared.metrics.initial_sync_completed.observe(elapsed.as_secs_f64());
			log::info!(target: LOG, "Initial sync of {peer} done in {:.1}s", elapsed.as_secs_f64());
			self.update_peer_gauges();
		}
	}

	/// Start a send to every idle peer with something to send, within the in-flight caps.
	pub(super) fn pump(&mut self) {
		let peers: Vec<PeerId> = self.peers.keys().copied().collect();
		for peer in peers {
			let Some(state) = self.peers.get(&peer) else { continue };
			if state.busy {
				continue;
			}
			let has_live = !state.outbox.is_empty() && self.flush_at.is_none();
			let has_sync = state.sync.is_some();
			let sync_turn = has_sync && (!has_live || !state.last_was_sync);
			if sync_turn
				&& self.in_flight_live + self.in_flight_sync + MAX_NOTIFICATION_SIZE
					<= MAX_IN_FLIGHT_BYTES
			{
				self.send_sync(peer);
			} else if has_live {
				self.send_live(peer);
			}
		}
	}

	pub(super) fn send_live(&mut self, peer: PeerId) {
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let now = now_secs();
		let mut chunk: Vec<Arc<Item>> = Vec::new();
		let mut bytes = 5;
		while let Some(item) = state.outbox.front() {
			if item.expires <= now {
				state.outbox.pop_front();
				continue;
			}
			if !wire::fits_alone(item.encoding.len()) {
				metrics.skipped_oversized.add(1);
				state.outbox.pop_front();
				continue;
			}
			if bytes + item.encoding.len() > MAX_NOTIFICATION_SIZE {
				break;
			}
			bytes += item.encoding.len();
			chunk.extend(state.outbox.pop_front());
		}
		if chunk.is_empty() {
			return;
		}
		let live_cap = MAX_IN_FLIGHT_BYTES - INITIAL_SYNC_RESERVED_BYTES;
		if self.in_flight_live + bytes > live_cap {
			// Over the cap: put the chunk back and wait for a send to finish.
			for item in chunk.into_iter().rev() {
				state.outbox.push_front(item);
			}
			return;
		}
		let notification = wire::encode(chunk.iter().map(|item| &item.encoding[..]));
		state.busy = true;
		state.last_was_sync = false;
		self.in_flight_live += bytes;
		metrics.propagation_in_flight.set(self.in_flight_live as u64);
		metrics.propagated.add(chunk.len() as u64);
		metrics.chunks.observe(chunk.len() as f64);
		let sink = state.sink.clone();
		let report = self.sent_tx.clone();
		let shared = self.shared.clone();
		tokio::spawn(async move {
			let ok = send(&sink, notification, &shared.metrics).await;
			let _ = report.send(Sent::Live { peer, bytes, ok });
		});
	}

	pub(super) fn send_sync(&mut self, peer: PeerId) {
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let Some(sync) = state.sync.as_ref() else { return };
		let Some(&(after, upto)) = sync.ranges.front() else { return };
		state.busy = true;
		state.last_was_sync = true;
		let reserved = MAX_NOTIFICATION_SIZE;
		self.in_flight_sync += reserved;
		self.shared.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
		let sink = state.sink.clone();
		let store = self.store.clone();
		let report = self.sent_tx.clone();
		let shared = self.shared.clone();
		tokio::spawn(async move {
			let outcome = sync_step(store, sink, after, upto, &shared.metrics).await;
			let _ = report.send(Sent::Sync { peer, reserved, outcome });
		});
	}
}

/// Hand one notification to a peer's connection, within [`SEND_TIMEOUT`].
async fn send(
	sink: &NotificationSink,
	notification: Vec<u8>,
	metrics: &Metrics,
) -> Result<(), SendFailure> {
	let len = notification.len();
	let started = Instant::now();
	match tokio::time::timeout(SEND_TIMEOUT, sink.send_async_notification(notification)).await {
		Ok(Ok(())) => {
			metrics.bytes_sent.add(len as u64);
			metrics.send_latency.observe(started.elapsed().as_secs_f64());
			Ok(())
		}
		Ok(Err(_)) => Err(SendFailure::Network),
		Err(_) => Err(SendFailure::Timeout),
	}
}

/// Read the next initial-sync page of `(after, upto]` and send it.
async fn sync_step(
	store: Arc<dyn StatementStore>,
	sink: NotificationSink,
	after: u64,
	upto: u64,
	metrics: &Metrics,
) -> Result<SyncStep, SendFailure> {
	let page = tokio::task::spawn_blocking(move || {
		store.admitted_page(after, upto, MAX_NOTIFICATION_SIZE - 5)
	})
	.await
	.map_err(|err| SendFailure::Store(err.to_string()))?
	.map_err(|err| SendFailure::Store(err.to_string()))?;
	let now = now_secs();
	let mut chunk = Vec::with_capacity(page.statements.len());
	for (_, encoding) in &page.statements {
		if !wire::fits_alone(encoding.len()) {
			metrics.skipped_oversized.add(1);
			continue;
		}
		let expired = Statement::decode(&mut &encoding[..])
			.map_or(true, |statement| u64::from(statement.expiration_timestamp_secs()) <= now);
		if !expired {
			chunk.push(encoding.as_slice());
		}
	}
	if !chunk.is_empty() {
		let count = chunk.len();
		send(&sink, wire::encode(chunk.into_iter()), metrics).await?;
		metrics.initial_sync_sent.add(count as u64);
		metrics.initial_sync_bursts.add(1);
		metrics.chunks.observe(count as f64);
	}
	// An empty page with a cursor skipped statements removed since their ids were taken.
	Ok(SyncStep { next: page.next })
}
