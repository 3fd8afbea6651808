//! Live subscriptions driven from one task.
//!
//! Once its replay is sent, a subscription is handed to the [`Pump`]: its sink, its store
//! subscription and whatever must live as long as it, kept in one map. The store wakes the
//! pump through a [`std::task::Waker`] when it queues a statement for the subscription (or
//! drops it for lagging); the pump then sends what is queued, at most
//! [`IN_FLIGHT_NOTIFICATIONS`] notifications in the connection's outgoing buffer at a time,
//! as the task of each subscription did before. An idle subscription so costs its entry, not
//! a task with the whole serving state machine.
//!
//! A subscription ends when its client unsubscribes or disconnects (found by a sweep every
//! [`SWEEP_PERIOD`], or at its next send) or when the store drops it for lagging; the pump
//! then forgets it, after sending the error notification for a lag (from a short task of its
//! own when the connection has no room for it).

use crate::{encode, IN_FLIGHT_NOTIFICATIONS, LIVE_BATCH_BYTES};
use jsonrpsee::SubscriptionSink;
use parking_lot::Mutex;
use serde_json::value::RawValue;
use sp_core::Bytes;
use statement_primitives::{StatementEvent, StatementSubscription};
use std::{
	collections::HashMap,
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
	/// A notification waiting for room in the connection's buffer (the replay's last).
	pending: Option<Box<RawValue>>,
	/// Kept for as long as the subscription lives (the light node's interest).
	_held: Option<Box<dyn std::any::Any + Send>>,
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
		let live = Live { sink, subscription, pending: Some(first), _held: held };
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
	// and doubles while none of them gets room, as each subscription's task used to poll.
	let mut waiting: Vec<u64> = Vec::new();
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
			serve(&mut live, woken.key, &mut waiting);
		}
		if swept {
			live.retain(|_, entry| !entry.sink.is_closed());
		}
		if retried {
			let before = waiting.len();
			for key in std::mem::take(&mut waiting) {
				serve(&mut live, key, &mut waiting);
			}
			pause = if waiting.len() < before { FIRST_RETRY } else { (pause * 2).min(LAST_RETRY) };
		}
	}
}

/// The first pause before serving subscriptions that found their connection's buffer full.
const FIRST_RETRY: Duration = Duration::from_millis(1);

/// The longest such pause.
const LAST_RETRY: Duration = Duration::from_millis(100);

/// Send what is queued for subscription `key` while its connection has room; note it in
/// `waiting` when the connection's buffer is full; end it if it lagged or its client left.
fn serve(live: &mut HashMap<u64, Live>, key: u64, waiting: &mut Vec<u64>) {
	loop {
		let Some(entry) = live.get_mut(&key) else { return };
		let stop = if entry.sink.is_closed() {
			Some(Stop::Closed)
		} else if entry.sink.max_capacity().saturating_sub(entry.sink.capacity())
			>= IN_FLIGHT_NOTIFICATIONS
		{
			match entry.subscription.check() {
				Ok(()) => {
					if !waiting.contains(&key) {
						waiting.push(key);
					}
					return;
				}
				Err(err) => Some(Stop::Failed(err.to_string())),
			}
		} else {
			let next = match entry.pending.take() {
				Some(pending) => Ok(pending),
				None => match entry.subscription.try_next_live(LIVE_BATCH_BYTES) {
					Ok(statements) if statements.is_empty() => return,
					Ok(statements) => encode(&StatementEvent::NewStatements {
						statements: statements.iter().map(|item| Bytes(item.to_vec())).collect(),
						remaining: None,
					}),
					Err(err) => Err(Stop::Failed(err.to_string())),
				},
			};
			match next {
				// Room was checked above, and only this task sends for a live subscription.
				Ok(raw) => match entry.sink.try_send(raw) {
					Ok(()) => None,
					Err(jsonrpsee::core::server::TrySendError::Closed(_)) => Some(Stop::Closed),
					Err(jsonrpsee::core::server::TrySendError::Full(_)) => {
						Some(Stop::Failed("the connection's buffer filled unexpectedly".into()))
					}
				},
				Err(stop) => Some(stop),
			}
		};
		if let Some(stop) = stop {
			if let (Some(entry), Stop::Failed(reason)) = (live.remove(&key), stop) {
				fail(entry.sink, reason);
			}
			return;
		}
	}
}

/// End a subscription with the error notification saying `reason`: sent now if the
/// connection has room, else from a task that waits for room (or for the client to leave).
fn fail(mut sink: SubscriptionSink, reason: String) {
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
