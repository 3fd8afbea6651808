//! One subscriber's live queue: bounded in bytes, shared encodings, a lag once it overflows.

use crate::{error::Error, error::Result};
use parking_lot::Mutex;
use std::{
	collections::VecDeque,
	sync::{
		atomic::{AtomicUsize, Ordering},
		Arc,
	},
};
use tokio::sync::Notify;

/// An encoded statement, shared by every subscriber it is queued for.
pub type Encoded = statement_primitives::Encoded;

pub(super) struct Queue {
	pub(super) state: Mutex<QueueState>,
	pub(super) ready: Notify,
	pub(super) bound: usize,
	/// Bytes queued for every budgeted subscriber together (see the module documentation);
	/// `None` for a queue outside the budget.
	pub(super) total: Option<Arc<AtomicUsize>>,
}

#[derive(Default)]
pub(super) struct QueueState {
	pub(super) items: VecDeque<Encoded>,
	/// Bytes of `items`, plus `held`.
	pub(super) bytes: usize,
	/// Bytes the reader took and holds unsent ([`Subscription::hold`]).
	pub(super) held: usize,
	pub(super) peak: usize,
	pub(super) lagged: bool,
	/// Woken with `ready`, for a reader that drives many queues from one task.
	pub(super) waker: Option<std::task::Waker>,
}

impl Queue {
	/// Queue `item`, or, if it would take the queue past its bound, empty the queue and mark
	/// the subscriber lagging. Returns whether the subscriber is still served.
	pub(super) fn push(&self, item: &Encoded) -> bool {
		let mut state = self.state.lock();
		if state.bytes > 0 && state.bytes + item.len() > self.bound {
			self.lag(state);
			return false;
		}
		state.bytes += item.len();
		state.peak = state.peak.max(state.bytes);
		state.items.push_back(item.clone());
		self.counted(item.len() as isize);
		let waker = state.waker.clone();
		drop(state);
		self.ready.notify_one();
		if let Some(waker) = waker {
			waker.wake();
		}
		true
	}

	/// Count `bytes` the reader holds unsent as queued, or, if that would take a queue that
	/// holds anything past its bound, empty it and mark the subscriber lagging. Returns
	/// whether the subscriber is still served.
	pub(super) fn hold(&self, bytes: usize) -> bool {
		let mut state = self.state.lock();
		if state.lagged {
			return false;
		}
		if state.bytes > 0 && state.bytes + bytes > self.bound {
			self.lag(state);
			return false;
		}
		state.bytes += bytes;
		state.held += bytes;
		state.peak = state.peak.max(state.bytes);
		self.counted(bytes as isize);
		true
	}

	/// Held bytes were sent: no longer queued.
	pub(super) fn unhold(&self, bytes: usize) {
		let mut state = self.state.lock();
		// Nothing is held any more once the subscriber lagged.
		let bytes = bytes.min(state.held);
		state.held -= bytes;
		state.bytes -= bytes;
		self.counted(-(bytes as isize));
	}

	/// Empty the queue and mark the subscriber lagging (its next read fails).
	pub(super) fn lag(&self, mut state: parking_lot::MutexGuard<'_, QueueState>) {
		self.counted(-(state.bytes as isize));
		state.items = VecDeque::new();
		state.bytes = 0;
		state.held = 0;
		state.lagged = true;
		let waker = state.waker.clone();
		drop(state);
		self.ready.notify_one();
		if let Some(waker) = waker {
			waker.wake();
		}
	}

	/// Bytes queued now.
	pub(super) fn bytes(&self) -> usize {
		self.state.lock().bytes
	}

	/// The queue is going away: its bytes leave the budget.
	pub(super) fn release(&self) {
		let mut state = self.state.lock();
		self.counted(-(state.bytes as isize));
		state.items = VecDeque::new();
		state.bytes = 0;
		state.held = 0;
	}

	pub(super) fn counted(&self, delta: isize) {
		if let Some(total) = &self.total {
			if delta >= 0 {
				total.fetch_add(delta as usize, Ordering::Relaxed);
			} else {
				total.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
			}
		}
	}

	/// Queued statements up to `max_bytes` (at least one), or the lag error.
	pub(super) fn take(&self, max_bytes: usize) -> Result<Vec<Encoded>> {
		let mut state = self.state.lock();
		if state.lagged {
			return Err(Error::Lagged { queue_bytes: self.bound });
		}
		let mut out = Vec::new();
		let mut bytes = 0;
		while let Some(item) = state.items.front() {
			if !out.is_empty() && bytes + item.len() > max_bytes {
				break;
			}
			bytes += item.len();
			out.extend(state.items.pop_front());
		}
		state.bytes -= bytes;
		self.counted(-(bytes as isize));
		Ok(out)
	}
}
