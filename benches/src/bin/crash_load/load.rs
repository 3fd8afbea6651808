//! One client's submit loop: its pre-signed statements, one request at a time, over HTTP or a
//! WebSocket, until the harness says stop or the node goes away.

use crate::ledger::Signed;
use serde_json::json;
use statement_store_benches::client::Client;
use std::{
	collections::VecDeque,
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc,
	},
};

/// What a client's submits came to in one round.
#[derive(Default)]
pub struct Outcome {
	/// Indices answered `{"status":"new"}`.
	pub acknowledged: Vec<u32>,
	/// Indices answered anything else, with the answer.
	pub refused: Vec<(u32, String)>,
	/// The index whose submit had no answer (the node died under it).
	pub in_flight: Option<u32>,
	/// The error that ended the loop while the harness had not yet said stop.
	pub early_error: Option<String>,
	/// The statements not sent, returned for the next round.
	pub unsent: VecDeque<Signed>,
}

/// Submit `queue` in order until `stop` is set, the queue runs out, or a submit gets no answer.
pub async fn run(client: Client, mut queue: VecDeque<Signed>, stop: Arc<AtomicBool>) -> Outcome {
	let mut outcome = Outcome::default();
	let new = json!({"status": "new"});
	while !stop.load(Ordering::Acquire) {
		let Some(next) = queue.pop_front() else { break };
		match client.submit(&next.hex).await {
			Ok(answer) if answer == new => outcome.acknowledged.push(next.index),
			Ok(answer) => outcome.refused.push((next.index, answer.to_string())),
			// An error object is an answer too: the node refused the request.
			Err(jsonrpsee::core::ClientError::Call(object)) => outcome
				.refused
				.push((next.index, format!("{} {}", object.code(), object.message()))),
			Err(err) => {
				outcome.in_flight = Some(next.index);
				if !stop.load(Ordering::Acquire) {
					outcome.early_error = Some(err.to_string());
				}
				break;
			}
		}
	}
	outcome.unsent = queue;
	outcome
}
