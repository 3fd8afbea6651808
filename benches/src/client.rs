//! A JSON-RPC client of the node over either transport, for the harnesses that load one node.

use jsonrpsee::{
	core::{client::ClientT, params::ArrayParams, ClientError, DeserializeOwned},
	http_client::HttpClientBuilder,
	rpc_params,
	ws_client::WsClientBuilder,
};
use serde_json::Value;
use std::time::Duration;

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
