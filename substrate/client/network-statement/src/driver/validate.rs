//! Validation threads: they take received statements off a queue, submit them to the store
//! (which checks their proofs) and report the store's verdicts. The core bounds how many wait.

use crate::{Error, PeerId};
use statement_primitives::{Hash, Statement, StatementSource, StatementStore, SubmitResult};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Threads checking signatures and submitting received statements.
const VALIDATION_THREADS: usize = 2;

/// A received statement waiting for its check.
pub(super) struct Pending {
	pub peer: PeerId,
	pub hash: Hash,
	pub statement: Box<Statement>,
}

/// What the store said of a received statement.
pub(super) struct Verdict {
	pub peer: PeerId,
	pub hash: Hash,
	pub result: SubmitResult,
}

/// The validation threads and their queues; the threads end once the queue's sender (the
/// driver) is gone.
pub(super) struct Validation {
	pub queue: mpsc::UnboundedSender<Pending>,
	pub verdicts: mpsc::UnboundedReceiver<Verdict>,
	pub threads: Vec<std::thread::JoinHandle<()>>,
}

/// Start the validation threads over `store`.
pub(super) fn start(
	store: &Arc<dyn StatementStore>,
	source: StatementSource,
) -> Result<Validation, Error> {
	let (validate_tx, validate_rx) = mpsc::unbounded_channel();
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
				let result = store.submit(*statement, source);
				if verdict_tx.send(Verdict { peer, hash, result }).is_err() {
					return;
				}
			})
			.map_err(|err| Error::Start(format!("cannot start a validation thread: {err}")))?;
		threads.push(thread);
	}
	Ok(Validation { queue: validate_tx, verdicts: verdict_rx, threads })
}
