//! One client's submit loop: its pre-signed statements, one request at a time, over HTTP or a
//! WebSocket, until the harness says stop or the node goes away.

use crate::ledger::Signed;
use jsonrpsee::{
	core::client::ClientT, http_client::HttpClientBuilder, rpc_params, ws_client::WsClientBuilder,
};
use serde_json::{json, Value};
use std::{
	collections::VecDeque,
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc,
	},
	time::Duration,
};

/// How long one submit may take; far above any normal answer, so only a dead node hits it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Which JSON-RPC transport a client uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
	/// A request per HTTP POST (kept-alive connection).
	Http,
	/// One WebSocket connection.
	Ws,
}

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

/// A connected client of either transport.
pub enum Client {
	/// HTTP.
	Http(jsonrpsee::http_client::HttpClient),
	/// WebSocket.
	Ws(jsonrpsee::ws_client::WsClient),
}

impl Client {
	/// Connect to the node at `port` over `transport`.
	pub async fn connect(transport: Transport, port: u16) -> Result<Client, String> {
		match transport {
			Transport::Http => HttpClientBuilder::default()
				.request_timeout(REQUEST_TIMEOUT)
				.build(format!("http://127.0.0.1:{port}"))
				.map(Client::Http)
				.map_err(|err| format!("cannot build an HTTP client: {err}")),
			Transport::Ws => WsClientBuilder::default()
				.request_timeout(REQUEST_TIMEOUT)
				.build(format!("ws://127.0.0.1:{port}"))
				.await
				.map(Client::Ws)
				.map_err(|err| format!("cannot open a WebSocket to the node: {err}")),
		}
	}

	async fn submit(&self, hex: &str) -> Result<Value, jsonrpsee::core::ClientError> {
		match self {
			Client::Http(client) => client.request("statement_submit", rpc_params![hex]).await,
			Client::Ws(client) => client.request("statement_submit", rpc_params![hex]).await,
		}
	}
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
