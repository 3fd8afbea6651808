//! Group commit for removals: concurrent `remove` calls share one batch, so one intent
//! record, one commit and one edit of each posting segment serve all of them.
//!
//! A caller queues its hash under a ticket. If no caller is leading, it leads: it takes every
//! queued hash, removes them in one batch under the writer lock (waiting for it like any
//! writer), then records the outcome under each ticket and wakes the callers. Callers that
//! queued meanwhile wait; when the leader is done, one of those still waiting leads the next
//! batch. So a caller's removal is in the first batch that starts after it queued, and it
//! returns once that batch is durable, as a removal alone would. A leader removes one batch
//! only, so no caller serves others for longer than that.

use parking_lot::{Condvar, Mutex};
use statement_primitives::{Hash, Result};
use std::collections::HashMap;

#[derive(Default)]
struct State {
	/// Hashes queued for the next batch, with their tickets.
	waiting: Vec<(u64, Hash)>,
	/// Outcomes of batches done, by ticket, until their callers take them.
	done: HashMap<u64, Result<()>>,
	/// The ticket the next caller takes.
	next_ticket: u64,
	/// Whether a caller is removing a batch now.
	leading: bool,
}

/// Removals waiting to be carried in one batch (see the module documentation).
#[derive(Default)]
pub(crate) struct Removals {
	state: Mutex<State>,
	/// Signalled when a batch is done.
	settled: Condvar,
}

impl Removals {
	/// Remove `hash` in a batch shared with concurrent callers; `remove_all` removes one
	/// batch's hashes (under the writer lock) and returns its outcome.
	pub fn remove(&self, hash: Hash, remove_all: impl FnOnce(&[Hash]) -> Result<()>) -> Result<()> {
		let mut state = self.state.lock();
		let ticket = state.next_ticket;
		state.next_ticket += 1;
		state.waiting.push((ticket, hash));
		loop {
			if let Some(outcome) = state.done.remove(&ticket) {
				return outcome;
			}
			if !state.leading {
				break;
			}
			self.settled.wait(&mut state);
		}
		state.leading = true;
		let batch = std::mem::take(&mut state.waiting);
		drop(state);
		let hashes: Vec<Hash> = batch.iter().map(|(_, hash)| *hash).collect();
		let outcome =
			std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| remove_all(&hashes)));
		// The others hear how their batch went even if it panicked, and the next batch can
		// still be led: a leader that never stepped down would hang every later removal.
		let told = match &outcome {
			Ok(outcome) => outcome.clone(),
			Err(_) => Err(statement_primitives::Error::Db("the removal panicked".into())),
		};
		let mut state = self.state.lock();
		for (other, _) in batch.iter().filter(|(other, _)| *other != ticket) {
			state.done.insert(*other, told.clone());
		}
		state.leading = false;
		drop(state);
		self.settled.notify_all();
		outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use std::sync::{
		atomic::{AtomicUsize, Ordering},
		Arc, Barrier,
	};

	#[test]
	fn callers_that_arrive_together_share_batches_and_each_gets_its_outcome() {
		let removals = Arc::new(Removals::default());
		let batches = Arc::new(Mutex::new(Vec::<Vec<Hash>>::new()));
		let threads = 16;
		let start = Arc::new(Barrier::new(threads));
		let handles: Vec<_> = (0..threads)
			.map(|n| {
				let (removals, batches, start) = (removals.clone(), batches.clone(), start.clone());
				std::thread::spawn(move || {
					start.wait();
					removals.remove([n as u8; 32], |hashes| {
						// Long enough for the others to queue behind this batch.
						std::thread::sleep(std::time::Duration::from_millis(20));
						batches.lock().push(hashes.to_vec());
						// Hash 3's batch fails: every caller in it must hear so.
						if hashes.contains(&[3; 32]) {
							Err(statement_primitives::Error::Db("planted".into()))
						} else {
							Ok(())
						}
					})
				})
			})
			.collect();
		let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
		let batches = batches.lock();
		let mut seen: Vec<Hash> = batches.iter().flatten().copied().collect();
		seen.sort();
		let expected: Vec<Hash> = (0..threads).map(|n| [n as u8; 32]).collect();
		assert_eq!(seen, expected, "each hash is removed exactly once: {batches:?}");
		assert!(batches.len() < threads, "no batch carried two callers: {batches:?}");
		for (n, outcome) in outcomes.iter().enumerate() {
			let failed =
				batches.iter().find(|b| b.contains(&[n as u8; 32])).unwrap().contains(&[3; 32]);
			assert_eq!(outcome.is_err(), failed, "caller {n}: {outcome:?} ({batches:?})");
		}
		assert!(removals.state.lock().done.is_empty(), "every outcome was taken");
	}

	#[test]
	fn a_leader_that_panics_fails_its_batch_and_the_next_caller_still_leads() {
		let removals = Removals::default();
		let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
			removals.remove([1; 32], |_| panic!("planted"))
		}));
		assert!(panicked.is_err(), "the leader's own call goes on panicking");
		assert!(!removals.state.lock().leading, "the panicking leader did not step down");
		assert_eq!(removals.remove([2; 32], |_| Ok(())), Ok(()));
	}

	#[test]
	fn a_lone_caller_removes_its_own_hash_at_once() {
		let removals = Removals::default();
		let calls = AtomicUsize::new(0);
		for n in 0..3u8 {
			let outcome = removals.remove([n; 32], |hashes| {
				assert_eq!(hashes, [[n; 32]]);
				calls.fetch_add(1, Ordering::Relaxed);
				Ok(())
			});
			assert_eq!(outcome, Ok(()));
		}
		assert_eq!(calls.load(Ordering::Relaxed), 3);
	}
}
