//! Live subscriptions driven from one task.
//!
//! Once its replay is sent, a subscription is handed to the [`Pump`]: its sink, its store
//! subscription and whatever must live as long as it, kept in one map. The store wakes the
//! pump through a [`std::task::Waker`] when it queues a statement for the subscription (or
//! drops it for lagging); the pump then sends what is queued, at most
//! [`CONNECTION_IN_FLIGHT_BYTES`] of notifications in a connection's outgoing buffer at a
//! time (counted per connection, not per subscription: one statement that matches every
//! subscription of a connection reaches them all at once). An idle subscription so costs
//! its entry, not a task with the whole serving state machine.
//!
//! A subscription ends when its client unsubscribes or disconnects (found by a sweep every
//! [`SWEEP_PERIOD`], or at its next send) or when the store drops it for lagging; the pump
//! then forgets it, after sending the error notification for a lag (from a short task of its
//! own when the connection has no room for it).

use crate::{
	limits::{CONNECTION_IN_FLIGHT_BYTES, LIVE_BATCH_BYTES},
	notification::encode,
};
use jsonrpsee::{ConnectionId, SubscriptionSink};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use statement_primitives::StatementSubscription;
use std::{
	collections::{HashMap, HashSet, VecDeque},
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc, Weak,
	},
	task::Wake,
	time::Duration,
};
use tokio::sync::Notify;

/// How often the pump looks for subscriptions whose client has gone, and retries sends that
/// found the connection's buffer full.
pub const SWEEP_PERIOD: Duration = Duration::from_millis(250);

/// Why a live subscription ended.
pub enum Stop {
	/// The client went away or unsubscribed.
	Closed,
	/// The store dropped the subscriber, or sending failed: tell the client.
	Failed(String),
}

/// What the pump keeps of one live subscription.
struct Live {
	sink: SubscriptionSink,
	subscription: Box<dyn StatementSubscription>,
	/// A notification waiting for room in the connection's buffer (the replay's last, or live
	/// statements taken from the queue), counted in the store as held while it waits.
	pending: Option<Box<RawValue>>,
	/// Kept for as long as the subscription lives (the light node's interest).
	_held: Option<Box<dyn std::any::Any + Send>>,
	/// Listed among those waiting for buffer room.
	waiting: bool,
}

/// The pump's wake-up for one subscription.
struct Woken {
	key: u64,
	/// Set when woken, cleared when the pump serves it: one queue entry per wake-up burst.
	scheduled: AtomicBool,
	pump: Weak<Shared>,
}

impl Wake for Woken {
	fn wake(self: Arc<Self>) {
		self.wake_by_ref();
	}

	fn wake_by_ref(self: &Arc<Self>) {
		if self.scheduled.swap(true, Ordering::AcqRel) {
			return;
		}
		if let Some(pump) = self.pump.upgrade() {
			pump.ready.lock().push(self.clone());
			pump.wake.notify_one();
		}
	}
}

struct Shared {
	live: Mutex<HashMap<u64, Live>>,
	ready: Mutex<Vec<Arc<Woken>>>,
	wake: Notify,
	next_key: AtomicU64,
}

/// Drives the live part of every subscription of an RPC module from one task.
#[derive(Clone)]
pub struct Pump {
	shared: Arc<Shared>,
	started: Arc<std::sync::Once>,
}

impl Default for Pump {
	fn default() -> Self {
		Pump {
			shared: Arc::new(Shared {
				live: Mutex::default(),
				ready: Mutex::default(),
				wake: Notify::new(),
				next_key: AtomicU64::default(),
			}),
			started: Arc::new(std::sync::Once::new()),
		}
	}
}

impl Pump {
	/// Serve `subscription` on `sink` from now on, `first` before anything else, until it
	/// ends. Starts the pump's task on the current runtime the first time.
	pub fn adopt(
		&self,
		sink: SubscriptionSink,
		subscription: Box<dyn StatementSubscription>,
		held: Option<Box<dyn std::any::Any + Send>>,
		first: Box<RawValue>,
	) {
		self.started.call_once(|| {
			tokio::spawn(run(self.shared.clone()));
		});
		let shared = &self.shared;
		let key = shared.next_key.fetch_add(1, Ordering::Relaxed);
		let woken = Arc::new(Woken {
			key,
			scheduled: AtomicBool::new(false),
			pump: Arc::downgrade(shared),
		});
		subscription.set_waker(woken.clone().into());
		let live = Live { sink, subscription, pending: Some(first), _held: held, waiting: false };
		shared.live.lock().insert(key, live);
		// What was queued before the waker was set.
		woken.wake_by_ref();
	}
}

/// The pump's task: serve what is woken; every [`SWEEP_PERIOD`] drop subscriptions whose
/// client has gone and serve those that were waiting for buffer room. Ends once the module
/// (every [`Pump`]) is gone.
async fn run(pump: Arc<Shared>) {
	let mut sweep = tokio::time::interval(SWEEP_PERIOD);
	sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
	// Subscriptions whose connection had no room: retried after a pause that starts at 1 ms
	// and doubles while none of them gets room.
	let mut waiting: Vec<u64> = Vec::new();
	let mut connections: HashMap<ConnectionId, InFlight> = HashMap::new();
	let mut pause = FIRST_RETRY;
	loop {
		let retry = tokio::time::sleep(if waiting.is_empty() { SWEEP_PERIOD } else { pause });
		let (swept, retried) = tokio::select! {
			_ = pump.wake.notified() => (false, false),
			_ = sweep.tick() => (true, true),
			_ = retry => (false, true),
		};
		if swept && Arc::strong_count(&pump) == 1 {
			return;
		}
		let woken = std::mem::take(&mut *pump.ready.lock());
		let mut live = pump.live.lock();
		for woken in woken {
			woken.scheduled.store(false, Ordering::Release);
			serve(&mut live, &mut connections, woken.key, &mut waiting);
		}
		if swept {
			live.retain(|_, entry| !entry.sink.is_closed());
			// A connection with nothing in flight is as a new one; one whose subscriptions
			// have all ended is forgotten with what it had in flight.
			connections.retain(|_, in_flight| !in_flight.sent.is_empty());
			if !connections.is_empty() {
				let mut open = HashSet::new();
				for entry in live.values() {
					let connection = entry.sink.connection_id();
					if connections.contains_key(&connection) {
						open.insert(connection);
					}
				}
				connections.retain(|connection, _| open.contains(connection));
			}
		}
		if retried {
			let before = waiting.len();
			for key in std::mem::take(&mut waiting) {
				if let Some(entry) = live.get_mut(&key) {
					entry.waiting = false;
				}
				serve(&mut live, &mut connections, key, &mut waiting);
			}
			pause = if waiting.len() < before { FIRST_RETRY } else { (pause * 2).min(LAST_RETRY) };
		}
	}
}

/// The first pause before serving subscriptions that found their connection's buffer full.
const FIRST_RETRY: Duration = Duration::from_millis(1);

/// The longest such pause.
const LAST_RETRY: Duration = Duration::from_millis(100);

/// What the pump has put in one connection's outgoing buffer and not yet seen leave it.
#[derive(Default)]
struct InFlight {
	/// Sizes of the notifications sent, oldest first.
	sent: VecDeque<usize>,
	bytes: usize,
}

impl InFlight {
	/// Forget what has left the buffer: with `pending` messages in it (ours and any others),
	/// at most that many of ours are still there, and the buffer is first in, first out.
	fn drain(&mut self, pending: usize) {
		while self.sent.len() > pending {
			if let Some(size) = self.sent.pop_front() {
				self.bytes -= size;
			}
		}
	}

	/// Whether a notification of `size` bytes may go now.
	fn has_room_for(&self, size: usize) -> bool {
		self.sent.is_empty() || self.bytes + size <= CONNECTION_IN_FLIGHT_BYTES
	}

	fn push(&mut self, size: usize) {
		self.sent.push_back(size);
		self.bytes += size;
	}
}

/// Send what is queued for subscription `key` while its connection has room; note it in
/// `waiting` when the connection's buffer is full; end it if it lagged or its client left.
fn serve(
	live: &mut HashMap<u64, Live>,
	connections: &mut HashMap<ConnectionId, InFlight>,
	key: u64,
	waiting: &mut Vec<u64>,
) {
	loop {
		let Some(entry) = live.get_mut(&key) else { return };
		if entry.sink.is_closed() {
			live.remove(&key);
			return;
		}
		let next = match entry.pending.take() {
			Some(pending) => {
				entry.subscription.release(pending.get().len());
				Ok(pending)
			}
			None => match entry.subscription.try_next_live(LIVE_BATCH_BYTES) {
				Ok(statements) if statements.is_empty() => return,
				Ok(statements) => encode(statements, None).map_err(Stop::Failed),
				Err(err) => Err(Stop::Failed(err.to_string())),
			},
		};
		let raw = match next {
			Ok(raw) => raw,
			Err(stop) => return end(live, key, stop),
		};
		let in_flight = connections.entry(entry.sink.connection_id()).or_default();
		in_flight.drain(entry.sink.max_capacity().saturating_sub(entry.sink.capacity()));
		let size = raw.get().len();
		if entry.sink.capacity() == 0 || !in_flight.has_room_for(size) {
			// Kept for when there is room, and counted as queued meanwhile: the store drops
			// a subscriber that falls too far behind, and those furthest behind once all
			// together pass the budget.
			if let Err(err) = entry.subscription.hold(size) {
				return end(live, key, Stop::Failed(err.to_string()));
			}
			entry.pending = Some(raw);
			// Listed once, without a scan: thousands may wait after a fan-out.
			if !entry.waiting {
				entry.waiting = true;
				waiting.push(key);
			}
			return;
		}
		// Room was checked above, and only this task sends for a live subscription.
		match entry.sink.try_send(raw) {
			Ok(()) => in_flight.push(size),
			Err(jsonrpsee::core::server::TrySendError::Closed(_)) => {
				return end(live, key, Stop::Closed)
			}
			Err(jsonrpsee::core::server::TrySendError::Full(_)) => {
				let reason = "the connection's buffer filled unexpectedly".into();
				return end(live, key, Stop::Failed(reason));
			}
		}
	}
}

/// Forget subscription `key`, telling its client why if it failed.
fn end(live: &mut HashMap<u64, Live>, key: u64, stop: Stop) {
	if let (Some(entry), Stop::Failed(reason)) = (live.remove(&key), stop) {
		fail(entry.sink, reason);
	}
}

/// End a subscription with the error notification saying `reason`: sent now if the
/// connection has room, else from a task that waits for room (or for the client to leave).
pub(crate) fn fail(mut sink: SubscriptionSink, reason: String) {
	use jsonrpsee::core::server::TrySendError;
	match sink.try_send_error(reason.clone()) {
		Ok(()) | Err(TrySendError::Closed(_)) => {}
		Err(TrySendError::Full(_)) => {
			tokio::spawn(async move {
				let _ = sink.send_error(reason).await;
			});
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn in_flight_lets_one_notification_through_and_then_counts_bytes() {
		let mut in_flight = InFlight::default();
		// However large, the first goes.
		assert!(in_flight.has_room_for(CONNECTION_IN_FLIGHT_BYTES * 2));
		in_flight.push(CONNECTION_IN_FLIGHT_BYTES - 100);
		assert!(in_flight.has_room_for(100));
		assert!(!in_flight.has_room_for(101));
		in_flight.push(100);
		// Three messages in the buffer: both of ours may still be there.
		in_flight.drain(3);
		assert_eq!(in_flight.bytes, CONNECTION_IN_FLIGHT_BYTES);
		// One left: the older of ours is gone.
		in_flight.drain(1);
		assert_eq!((in_flight.sent.len(), in_flight.bytes), (1, 100));
		assert!(in_flight.has_room_for(CONNECTION_IN_FLIGHT_BYTES - 100));
		in_flight.drain(0);
		assert_eq!((in_flight.sent.len(), in_flight.bytes), (0, 0));
	}
}
