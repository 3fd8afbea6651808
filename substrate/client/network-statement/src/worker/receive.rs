//! Receiving: notifications decoded and rate-limited, known statements skipped, the rest
//! checked and submitted on validation threads, and each peer's standing kept.

use super::{Worker, LOG};
use crate::{wire, Error, PeerId, BANNED_STANDING, BAN_DURATION};
use statement_primitives::{
	hash_encoded, Hash, Statement, StatementSource, StatementStore, SubmitResult,
};
use std::{
	sync::Arc,
	time::{Duration, Instant},
};
use tokio::sync::mpsc;

/// Standing changes, as upstream's reputation changes.
mod standing {
	pub const NEW: i64 = 256;
	pub const KNOWN: i64 = 16;
	pub const INVALID: i64 = -4096;
	pub const BAD_MESSAGE: i64 = -4096;
}

/// Threads checking signatures and submitting received statements.
const VALIDATION_THREADS: usize = 2;

/// Longest a full validation queue holds back received notifications before dropping.
const VALIDATION_WAIT: Duration = Duration::from_secs(2);

/// A received statement waiting for its check.
pub(super) struct Pending {
	pub(super) peer: PeerId,
	pub(super) hash: Hash,
	pub(super) statement: Statement,
}

/// What the store said of a received statement.
pub(super) struct Verdict {
	pub(super) peer: PeerId,
	pub(super) hash: Hash,
	pub(super) result: SubmitResult,
}

impl Worker {
	pub(super) async fn on_statements(&mut self, peer: PeerId, notification: &[u8]) {
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		metrics.bytes_received.add(notification.len() as u64);
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let statements = match wire::decode(notification) {
			Ok(statements) => statements,
			Err(err) => {
				metrics.bad_notifications.add(1);
				log::debug!(target: LOG, "Peer {peer} sent a notification that {err}");
				state.standing += standing::BAD_MESSAGE;
				if state.standing < BANNED_STANDING {
					self.ban(peer, "too many bad notifications").await;
				}
				return;
			}
		};
		metrics.received.add(statements.len() as u64);
		if !state.bucket.take(statements.len(), Instant::now()) {
			metrics.flooding_detected.add(1);
			let limit = self.config.rate_limit;
			self.ban(peer, &format!("statement flooding (over {limit} statements/s)")).await;
			return;
		}
		for (statement, encoding) in statements {
			let hash = hash_encoded(&encoding);
			if self.store.has_statement(&hash) {
				metrics.known_received.add(1);
				continue;
			}
			let sources = self.sources.entry(hash).or_insert_with(|| (Vec::new(), Instant::now()));
			if !sources.0.contains(&peer) {
				sources.0.push(peer);
			}
			if !self.pending.insert(hash) {
				continue;
			}
			let queued = match self.validate_tx.try_send(Pending { peer, hash, statement }) {
				Ok(()) => true,
				// Waiting holds back every peer's notifications, which slows honest senders
				// down through the transport's backpressure instead of losing statements.
				Err(mpsc::error::TrySendError::Full(job)) => {
					let room = tokio::time::timeout(VALIDATION_WAIT, self.validate_tx.send(job));
					matches!(room.await, Ok(Ok(())))
				}
				Err(mpsc::error::TrySendError::Closed(_)) => false,
			};
			if queued {
				metrics.pending_validations.set(self.pending.len() as u64);
			} else {
				self.pending.remove(&hash);
				metrics.ignored.add(1);
			}
		}
	}

	pub(super) fn on_verdict(&mut self, verdict: Verdict) {
		let Verdict { peer, hash, result } = verdict;
		self.pending.remove(&hash);
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		metrics.pending_validations.set(self.pending.len() as u64);
		let change = match &result {
			SubmitResult::New => standing::NEW,
			SubmitResult::Known => standing::KNOWN,
			SubmitResult::Invalid(reason) => {
				metrics.invalid_received.add(1);
				log::debug!(target: LOG, "Peer {peer} sent an invalid statement: {reason:?}");
				standing::INVALID
			}
			_ => 0,
		};
		if !matches!(result, SubmitResult::New) {
			// Only admitted statements are propagated, so only they need their sources.
			self.sources.remove(&hash);
		}
		let Some(state) = self.peers.get_mut(&peer) else { return };
		state.standing = state.standing.saturating_add(change);
		if state.standing < BANNED_STANDING {
			// Dropped on the next housekeeping pass, which may wait on the handle.
			self.bans.insert(peer, Instant::now() + BAN_DURATION);
		}
	}
}

/// The validation threads and their queues: each thread takes received statements off the
/// queue, submits them and reports the store's verdict; they end once the queue's sender (the
/// worker) is gone.
pub(super) struct Validation {
	pub queue: mpsc::Sender<Pending>,
	pub verdicts: mpsc::UnboundedReceiver<Verdict>,
	pub threads: Vec<std::thread::JoinHandle<()>>,
}

/// Start the validation threads over `store`, with a queue of `queue` statements.
pub(super) fn start_validation(
	store: &Arc<dyn StatementStore>,
	queue: usize,
	source: StatementSource,
) -> Result<Validation, Error> {
	let (validate_tx, validate_rx) = mpsc::channel(queue.max(1));
	let (verdict_tx, verdict_rx) = mpsc::unbounded_channel();
	let validate_rx = Arc::new(std::sync::Mutex::new(validate_rx));
	let mut threads = Vec::with_capacity(VALIDATION_THREADS);
	for n in 0..VALIDATION_THREADS {
		let validate_rx = validate_rx.clone();
		let verdict_tx = verdict_tx.clone();
		let store = store.clone();
		let thread = std::thread::Builder::new()
			.name(format!("statement-validate-{n}"))
			.spawn(move || loop {
				let job = match validate_rx.lock() {
					Ok(mut rx) => rx.blocking_recv(),
					Err(_) => return,
				};
				let Some(Pending { peer, hash, statement }) = job else { return };
				let result = store.submit(statement, source);
				if verdict_tx.send(Verdict { peer, hash, result }).is_err() {
					return;
				}
			})
			.map_err(|err| Error::Start(format!("cannot start a validation thread: {err}")))?;
		threads.push(thread);
	}
	Ok(Validation { queue: validate_tx, verdicts: verdict_rx, threads })
}
