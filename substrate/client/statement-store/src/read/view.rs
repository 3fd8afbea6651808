//! The view lock: held shared by a query for its whole run, exclusively by a writer while it
//! publishes a batch, so no query sees half of one.
//!
//! A single read-write lock is one word every query on every core writes twice (to take it
//! and to let it go), which serialises short concurrent queries on that cache line. This lock
//! has a slot per thread group instead: a query takes only its thread's slot, a writer takes
//! every slot, in order.
//!
//! A writer waiting for slot after slot could be overtaken again and again by queries
//! starting on the slots it has not reached yet (with more busy threads than cores, each
//! such query may sit out a whole time slice). So a writer first raises a flag, and queries
//! that see it wait at a gate until the writer holds every slot: it waits only for the
//! queries already running.

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const SLOTS: usize = 16;

/// One slot on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Slot(RwLock<()>);

/// See the module documentation.
#[derive(Default)]
pub struct ViewLock {
	slots: [Slot; SLOTS],
	/// Raised while a writer collects the slots.
	writer_waiting: Flag,
	/// Held by a writer while it collects the slots.
	gate: Mutex<()>,
}

/// A flag on its own cache line, so readers checking it do not share one with the slots.
#[repr(align(128))]
#[derive(Default)]
struct Flag(AtomicBool);

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
	/// This thread's slot, handed out round robin on first use.
	static SLOT: usize = NEXT_SLOT.fetch_add(1, Ordering::Relaxed) % SLOTS;
}

/// Shared hold of the view; writers wait until it is dropped.
pub struct ReadGuard<'a> {
	_guard: RwLockReadGuard<'a, ()>,
}

/// Exclusive hold of the view.
pub struct WriteGuard<'a> {
	_guards: [RwLockWriteGuard<'a, ()>; SLOTS],
}

impl ViewLock {
	/// Hold the view shared.
	pub fn read(&self) -> ReadGuard<'_> {
		if self.writer_waiting.0.load(Ordering::Acquire) {
			drop(self.gate.lock());
		}
		let slot = SLOT.with(|slot| *slot);
		ReadGuard { _guard: self.slots[slot].0.read() }
	}

	/// Hold the view exclusively.
	pub fn write(&self) -> WriteGuard<'_> {
		let _gate = self.gate.lock();
		self.writer_waiting.0.store(true, Ordering::Release);
		let guards = std::array::from_fn(|slot| self.slots[slot].0.write());
		self.writer_waiting.0.store(false, Ordering::Release);
		WriteGuard { _guards: guards }
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use std::sync::{atomic::AtomicBool, Arc};

	#[test]
	fn a_writer_excludes_readers_on_every_thread() {
		let lock = Arc::new(ViewLock::default());
		let writing = Arc::new(AtomicBool::new(false));
		let readers: Vec<_> = (0..4)
			.map(|_| {
				let (lock, writing) = (lock.clone(), writing.clone());
				std::thread::spawn(move || {
					for _ in 0..2000 {
						let _read = lock.read();
						assert!(!writing.load(Ordering::SeqCst), "a reader ran during a write");
					}
				})
			})
			.collect();
		for _ in 0..500 {
			let _write = lock.write();
			writing.store(true, Ordering::SeqCst);
			std::thread::yield_now();
			writing.store(false, Ordering::SeqCst);
		}
		readers.into_iter().for_each(|reader| reader.join().unwrap());
	}
}
