//! One subscriber's live queue: bounded in bytes, shared encodings, a lag once it overflows.
//!
//! A subscriber of a set of filters does not lag: its queue *spills*. It is emptied, and the
//! reader catches up from the store, where every statement it lost is stored, from the one
//! after the last it took (ids grow in commit order, which is the queue's order); new
//! statements are not queued until it has (see `filters`).

use crate::{error::Error, error::Result, index::schema::Id};
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
	/// Whether the queue spills rather than lags when it overflows (see the module docs).
	pub(super) spills: bool,
}

#[derive(Default)]
pub(super) struct QueueState {
	pub(super) items: VecDeque<Encoded>,
	/// For a subscriber of a set of filters, each item's id in the store and the ids of the
	/// filters it matched, one entry an item; empty for a subscriber of one filter.
	pub(super) tags: VecDeque<(Id, Box<[u64]>)>,
	/// The id of the last item the reader took (of a queue that spills).
	pub(super) taken_through: Id,
	/// Set once the queue spilled: the reader reads from the store, from this id on, and
	/// nothing is queued until it has caught up.
	pub(super) spilled_from: Option<Id>,
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
		self.push_with(item, None)
	}

	/// [`Queue::push`] for a subscriber of a set of filters: `item`, stored as `id`, matched
	/// filters `tags`. Past the bound the queue spills, and the subscriber is still served.
	pub(super) fn push_tagged(&self, item: &Encoded, id: Id, tags: Box<[u64]>) -> bool {
		self.push_with(item, Some((id, tags)))
	}

	fn push_with(&self, item: &Encoded, tags: Option<(Id, Box<[u64]>)>) -> bool {
		let mut state = self.state.lock();
		if state.spilled_from.is_some() {
			// The reader will read it from the store.
			return true;
		}
		if state.bytes > 0 && state.bytes + item.len() > self.bound {
			if self.spills {
				self.spill(state);
				return true;
			}
			self.lag(state);
			return false;
		}
		state.bytes += item.len();
		state.peak = state.peak.max(state.bytes);
		state.items.push_back(item.clone());
		if let Some(tags) = tags {
			state.tags.push_back(tags);
		}
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
			if !self.spills {
				self.lag(state);
				return false;
			}
			// What is queued goes (the reader will read it from the store), so that what
			// the reader holds fits.
			self.empty_into_store(&mut state);
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
		state.tags = VecDeque::new();
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

	/// Empty the queue of a subscriber of a set of filters, which from now on reads from the
	/// store, from the statement after the last it took, until it has caught up.
	pub(super) fn spill(&self, mut state: parking_lot::MutexGuard<'_, QueueState>) {
		self.empty_into_store(&mut state);
		let waker = state.waker.clone();
		drop(state);
		self.ready.notify_one();
		if let Some(waker) = waker {
			waker.wake();
		}
	}

	/// Drop what is queued (not what the reader holds) and read from the store instead.
	fn empty_into_store(&self, state: &mut QueueState) {
		let queued = state.bytes - state.held;
		self.counted(-(queued as isize));
		state.bytes = state.held;
		state.items = VecDeque::new();
		state.tags = VecDeque::new();
		let from = state.taken_through + 1;
		state.spilled_from.get_or_insert(from);
	}

	/// Where the reader of a spilled queue reads from next; `None` unless it spilled.
	pub(super) fn spilled_from(&self) -> Option<Id> {
		self.state.lock().spilled_from
	}

	/// The reader of a spilled queue read the store through `through`.
	pub(super) fn caught_up_to(&self, through: Id) {
		let mut state = self.state.lock();
		state.taken_through = state.taken_through.max(through);
		if state.spilled_from.is_some() {
			state.spilled_from = Some(state.taken_through + 1);
		}
	}

	/// The reader of a spilled queue has read every stored statement: queue again.
	pub(super) fn resume(&self) {
		self.state.lock().spilled_from = None;
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
		state.tags = VecDeque::new();
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
		Ok(self.take_with_tags(max_bytes)?.into_iter().map(|(item, _)| item).collect())
	}

	/// [`Queue::take`] with each item's filter ids (empty for a subscriber of one filter).
	/// Empty while the queue is spilled.
	pub(super) fn take_with_tags(&self, max_bytes: usize) -> Result<Vec<(Encoded, Box<[u64]>)>> {
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
			let item = state.items.pop_front().expect("front exists");
			let tags = match state.tags.pop_front() {
				Some((id, tags)) => {
					state.taken_through = id;
					tags
				}
				None => Box::default(),
			};
			out.push((item, tags));
		}
		state.bytes -= bytes;
		self.counted(-(bytes as isize));
		Ok(out)
	}
}
