//! `statement-rpc-server`: a JSON-RPC server over HTTP and WebSocket on one port, with the
//! protections a Substrate node's RPC port has, for any set of jsonrpsee methods.
//!
//! ```no_run
//! use jsonrpsee::RpcModule;
//! use statement_rpc_server::{Config, Cors, Server};
//! use std::time::Duration;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut methods = RpcModule::new(());
//! methods.register_method("hello", |_, _, _| "world")?;
//! let config = Config {
//!     cors: Cors::parse("http://localhost:*")?,
//!     max_connections: 100,
//!     max_subscriptions_per_connection: 1024,
//!     request_timeout: Duration::from_secs(60),
//!     max_calls_in_flight_per_connection: 512,
//!     max_answer_bytes_per_connection: 4 << 20,
//! };
//! let server = Server::bind("127.0.0.1:9944".parse()?, config).await?;
//! println!("listening on {}", server.local_addr()?);
//! let handle = server.start(methods);
//! handle.stop()?;
//! handle.stopped().await;
//! # Ok(())
//! # }
//! ```
//!
//! jsonrpsee answers the requests; this crate runs the accept loop itself ([`Server`]) so that
//! every connection is accounted for. Every request passes, in order:
//! - `connections`: each connection holds one of `max_connections` slots; one that keeps its
//!   client waiting past `request_timeout` is closed, and when every slot is taken a newcomer
//!   takes the slot of the longest-waiting one, or gets HTTP 429 if all are busy (`tracking`
//!   tells the table what each connection is doing);
//! - `cors` and `origin`: a request or WebSocket upgrade from a browser origin the [`Cors`]
//!   policy does not allow gets 403 before anything runs; allowed ones get CORS headers;
//! - `transport`: each request is labelled HTTP or WebSocket, and a subscription method called
//!   over plain HTTP gets an error naming the WebSocket address
//!   ([`SUBSCRIPTION_OVER_HTTP_CODE`]);
//! - `health`: `GET /health` and `GET /health/readiness`, answered from the `system_health`
//!   method the caller registers, as a Substrate node answers them;
//! - `oversized`: a body declared over [`MAX_REQUEST_BYTES`] gets 413 after it is read through
//!   (up to [`MOST_DRAINED`] bytes), so the client sees the answer, not a reset.
//!
//! `metrics` counts and times every call (each call of a batch too) by method and protocol,
//! and WebSocket sessions, under a Substrate node's `substrate_rpc_*` names
//! ([`Server::metrics`]).
//!
//! `intercept` is the one shape of the layers that answer some requests themselves (origin
//! refusals, health). WebSockets are pinged every 30 s and closed after 60 s without a pong.
//!
//! A WebSocket connection's calls are bounded from when each request is read until its answer
//! is written to the socket, in count (`max_calls_in_flight_per_connection`) and in answer
//! bytes (`max_answer_bytes_per_connection`); past either the connection is not read until an
//! answer is written. A client that sends without ever reading so holds a bounded amount of
//! the node's memory (the bound is enforced in the vendored jsonrpsee-server, `vendor/README.md`).

#![forbid(unsafe_code)]

mod connections;
mod cors;
mod health;
mod intercept;
pub mod metrics;
mod origin;
mod oversized;
mod server;
mod tracking;
mod transport;

pub use metrics::{ServerMetrics, ServerMetricsSnapshot};
pub use origin::{AllowedOrigin, Cors, InvalidOrigin};
pub use oversized::MOST_DRAINED;
pub use server::{
	Config, Server, DEFAULT_MAX_ANSWER_BYTES_PER_CONNECTION,
	DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CONNECTION, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES,
	SUBSCRIPTION_ID_CHARS,
};
pub use transport::SUBSCRIPTION_OVER_HTTP_CODE;
