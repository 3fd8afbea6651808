//! A JSON-RPC client of the node over either transport, for the harnesses that load one node.

use jsonrpsee::{
	core::{client::ClientT, params::ArrayParams, ClientError, DeserializeOwned},
	http_client::HttpClientBuilder,
	rpc_params,
	ws_client::WsClientBuilder,
};
use serde_json::Value;
use statement_test_support::http::exchange_on;
use std::{net::TcpStream, time::Duration};

/// How long one request may take; far above any normal answer, so only a dead node hits it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Which JSON-RPC transport a client uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
	/// A request per HTTP POST (kept-alive connection).
	Http,
	/// One WebSocket connection.
	Ws,
}

impl Transport {
	/// How tables name it.
	pub fn label(self) -> &'static str {
		match self {
			Transport::Http => "HTTP",
			Transport::Ws => "WS",
		}
	}
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

	/// `method` with positional `params`, its result read as `R`.
	pub async fn request<R: DeserializeOwned>(
		&self,
		method: &str,
		params: ArrayParams,
	) -> Result<R, ClientError> {
		match self {
			Client::Http(client) => client.request(method, params).await,
			Client::Ws(client) => client.request(method, params).await,
		}
	}

	/// `statement_submit` of a `0x`-hex encoded statement; the node's answer.
	pub async fn submit(&self, hex: &str) -> Result<Value, ClientError> {
		self.request("statement_submit", rpc_params![hex]).await
	}
}

/// How many `"0x` strings a JSON-RPC message holds: statements, in an answer or a
/// notification (read without parsing, as the harnesses' readers run beside the node).
pub fn statements_in(message: &[u8]) -> usize {
	message.windows(3).filter(|window| window == br#""0x"#).count()
}

/// Whether `needle` occurs in `message` (no copy, no parse).
pub fn contains(message: &[u8], needle: &[u8]) -> bool {
	message.windows(needle.len()).any(|window| window == needle)
}

/// Submits per HTTP request (one JSON-RPC batch).
pub const BATCH: usize = 250;

/// Connections [`submit_all`] submits from at once.
pub const SUBMITTERS: usize = 2;

/// `statements` (`0x`-hex) as JSON-RPC batch bodies of [`BATCH`] calls of `method`
/// (`statement_submit` or `statement_unstable_submit`).
pub fn batches(method: &str, statements: &[String]) -> Vec<String> {
	statements
		.chunks(BATCH)
		.map(|chunk| {
			let calls: Vec<String> = chunk
				.iter()
				.enumerate()
				.map(|(id, s)| {
					format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":["{s}"]}}"#)
				})
				.collect();
			format!("[{}]", calls.join(","))
		})
		.collect()
}

/// Post `batches` from [`SUBMITTERS`] kept-alive HTTP connections to the node at `port`;
/// how many statements were new (`"status":"new"` in either API's answer).
pub fn submit_all(port: u16, batches: &[String]) -> Result<usize, String> {
	std::thread::scope(|scope| {
		let workers: Vec<_> = (0..SUBMITTERS)
			.map(|worker| {
				scope.spawn(move || -> Result<usize, String> {
					let mut stream =
						TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
					let mut accepted = 0;
					for body in batches.iter().skip(worker).step_by(SUBMITTERS) {
						let answer = exchange_on(&mut stream, "POST", "/", body, false)?;
						accepted += answer.matches(r#""status":"new""#).count();
					}
					Ok(accepted)
				})
			})
			.collect();
		workers.into_iter().map(|worker| worker.join().unwrap_or(Ok(0))).sum()
	})
}
