//! The accept loop: every connection gets a slot in [`Connections`] (or a 429), then the HTTP
//! layers in order, then jsonrpsee.

use crate::{
	connections::{Connections, TrackedStream},
	cors::{self, OriginGuard},
	health::HealthProbe,
	intercept::InterceptLayer,
	metrics::{MeasureLayer, ServerMetrics},
	origin::Cors,
	oversized::OversizedLayer,
	tracking::{CountCallsLayer, TrackLayer},
	transport::{self, SubscriptionsNeedWebSocketLayer, TransportLayer},
};
use hyper_util::{
	rt::{TokioExecutor, TokioIo},
	server::conn::auto,
	service::TowerToHyperService,
};
use jsonrpsee::{
	core::middleware::RpcServiceBuilder,
	server::{stop_channel, Methods, PingConfig, ServerConfig, ServerHandle, StopHandle},
};
use std::{io, net::SocketAddr, sync::Arc, time::Duration};
use tokio::net::{TcpListener, TcpStream};

/// Largest request body, and largest WebSocket message, in bytes.
pub const MAX_REQUEST_BYTES: u32 = 16 * 1024 * 1024;

/// Largest answer, a batch's included, in bytes (jsonrpsee's default, set here so that the
/// batches [`MeasureLayer`] gathers have the same limit).
pub const MAX_RESPONSE_BYTES: u32 = 10 * 1024 * 1024;

/// Calls a WebSocket connection may have in flight unless configured otherwise: from when
/// the request is read until its answer is written. Past it the connection is not read until
/// an answer is written (see [`Config::max_calls_in_flight_per_connection`]).
pub const DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CONNECTION: u32 = 512;

/// Bytes of answers a WebSocket connection may hold unless configured otherwise (see
/// [`Config::max_answer_bytes_per_connection`]).
pub const DEFAULT_MAX_ANSWER_BYTES_PER_CONNECTION: u32 = 4 * 1024 * 1024;

/// Characters of a subscription id: random alphanumerics, as Substrate's
/// `RandomStringIdProvider::new(16)` hands out.
pub const SUBSCRIPTION_ID_CHARS: usize = 16;

/// What a connection past the limit is told before it is closed.
const REFUSED: &str = concat!(
	"HTTP/1.1 429 Too Many Requests\r\n",
	"Content-Type: text/plain\r\nContent-Length: 45\r\nConnection: close\r\n\r\n",
	"Too many connections. Please try again later.",
);

/// How the server treats its connections (the `--rpc-*` flags of a Substrate node).
#[derive(Clone, Debug)]
pub struct Config {
	/// Which browser origins may call: `--rpc-cors`, or its default.
	pub cors: Cors,
	/// `--rpc-max-connections`.
	pub max_connections: u32,
	/// `--rpc-max-subscriptions-per-connection`.
	pub max_subscriptions_per_connection: u32,
	/// `--rpc-request-timeout`: longest a connection may wait on its client for a request.
	pub request_timeout: Duration,
	/// `--rpc-max-calls-in-flight-per-connection`: calls a WebSocket connection may have in
	/// flight, from when the request is read until its answer is written to the socket. Past
	/// it the server reads no more of that connection until an answer is written, so a client
	/// that sends without reading holds this many calls at most.
	pub max_calls_in_flight_per_connection: u32,
	/// `--rpc-max-answer-bytes-per-connection`: bytes of answers a WebSocket connection may
	/// hold until they are written; a call whose answer does not fit waits for room (one
	/// answer larger than this goes alone).
	pub max_answer_bytes_per_connection: u32,
}

/// A bound listener, not yet serving: [`Server::start`] serves a set of methods on it.
pub struct Server {
	listener: TcpListener,
	config: Config,
	metrics: ServerMetrics,
}

impl Server {
	/// Listen on `addr`.
	pub async fn bind(addr: SocketAddr, config: Config) -> io::Result<Server> {
		let listener = TcpListener::bind(addr).await?;
		Ok(Server { listener, config, metrics: ServerMetrics::default() })
	}

	/// What the server counts: calls by method and protocol, WebSocket sessions (see
	/// [`crate::metrics`]); the handle stays live after [`Server::start`].
	pub fn metrics(&self) -> ServerMetrics {
		self.metrics.clone()
	}

	/// The address listened on (the port chosen, if `0` was asked for).
	pub fn local_addr(&self) -> io::Result<SocketAddr> {
		self.listener.local_addr()
	}

	/// Serve `methods` until the returned handle stops the server.
	pub fn start(self, methods: impl Into<Methods>) -> ServerHandle {
		let Server { listener, config, metrics } = self;
		let methods: Methods = methods.into();
		metrics.serve(methods.method_names());
		let server_config = ServerConfig::builder()
			// Connections are limited by `Connections` below. jsonrpsee's own count (of HTTP
			// requests in progress and WebSockets) then only bounds HTTP/2 streams; it is set
			// above that limit so that a connection evicted but not yet gone never makes
			// jsonrpsee refuse the newcomer that took its slot.
			.max_connections(config.max_connections.saturating_mul(2))
			.max_subscriptions_per_connection(config.max_subscriptions_per_connection)
			.max_request_body_size(MAX_REQUEST_BYTES)
			.max_response_body_size(MAX_RESPONSE_BYTES)
			// A client that sends without reading is not read either once it has this many
			// calls, or this many bytes of answers, waiting (vendored jsonrpsee-server).
			.max_calls_in_flight_per_connection(config.max_calls_in_flight_per_connection)
			.max_answer_bytes_in_flight_per_connection(config.max_answer_bytes_per_connection)
			// As Substrate: a WebSocket whose peer stops answering pings (three checks 30 s
			// apart find no pong for 60 s) is closed, so dead sessions give their slots back.
			.enable_ws_ping(
				PingConfig::new()
					.ping_interval(Duration::from_secs(30))
					.inactive_limit(Duration::from_secs(60))
					.max_failures(3),
			)
			// As a Substrate node: subscription ids are 16 random alphanumeric characters.
			.set_id_provider(jsonrpsee::server::RandomStringIdProvider::new(SUBSCRIPTION_ID_CHARS))
			.build();
		let rpc_middleware = RpcServiceBuilder::new()
			.layer(CountCallsLayer)
			.layer(SubscriptionsNeedWebSocketLayer::new(transport::subscription_methods(&methods)))
			// Innermost, so that it sees each call of a batch (and the calls refused above).
			.layer(MeasureLayer::new(metrics.clone(), MAX_RESPONSE_BYTES));
		let server = jsonrpsee::server::Server::builder()
			.set_config(server_config)
			.set_rpc_middleware(rpc_middleware)
			.to_service_builder();
		let connections = Connections::new(
			config.max_connections as usize,
			config.request_timeout,
			metrics.clone(),
		);
		let cors = Arc::new(config.cors);
		let cors_headers = cors::headers_layer(&cors);
		let (stop, handle) = stop_channel();
		tokio::spawn(async move {
			let stopped = stop.clone().shutdown();
			tokio::pin!(stopped);
			let mut check = tokio::time::interval(connections.check_period());
			check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
			loop {
				tokio::select! {
					_ = &mut stopped => break,
					_ = check.tick() => connections.close_overdue(),
					accepted = listener.accept() => match accepted {
						Ok((socket, _)) => {
							let Some(slot) = connections.admit() else {
								refuse(socket);
								continue;
							};
							let http_middleware = tower::ServiceBuilder::new()
								.layer(TrackLayer::new(slot.conn().clone()))
								.layer(InterceptLayer(OriginGuard::new(cors.clone())))
								.layer(cors_headers.clone())
								.layer(TransportLayer)
								.layer(InterceptLayer(HealthProbe::new(methods.clone())))
								.layer(OversizedLayer::new(MAX_REQUEST_BYTES));
							let service = server
								.clone()
								.set_http_middleware(http_middleware)
								.build(methods.clone(), stop.clone());
							// Without it replies wait on Nagle's timer; slower, not wrong.
							if let Err(err) = socket.set_nodelay(true) {
								log::debug!("cannot set TCP_NODELAY on an RPC connection: {err}");
							}
							let stream = TrackedStream::new(socket, slot);
							tokio::spawn(serve_connection(stream, service, stop.clone()));
						}
						Err(err) => {
							// Out of file descriptors, most likely: give connections time to
							// close.
							log::debug!("cannot accept an RPC connection: {err}");
							tokio::time::sleep(Duration::from_millis(50)).await;
						}
					},
				}
			}
			connections.close_waiting();
		});
		handle
	}
}

/// Serve one connection until it closes, or the server stops and its last call is answered.
async fn serve_connection<S>(stream: TrackedStream, service: S, stop: StopHandle)
where
	S: tower::Service<
			http::Request<hyper::body::Incoming>,
			Response = jsonrpsee::server::HttpResponse,
			Error = jsonrpsee::core::BoxError,
		> + Clone
		+ Send
		+ 'static,
	S::Future: Send + 'static,
{
	let builder = auto::Builder::new(TokioExecutor::new());
	let connection = builder
		.serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service));
	tokio::pin!(connection);
	let result = tokio::select! {
		result = connection.as_mut() => result,
		_ = stop.shutdown() => {
			connection.as_mut().graceful_shutdown();
			connection.await
		}
	};
	if let Err(err) = result {
		log::debug!("RPC connection ended: {err}");
	}
}

/// Tell a connection past the limit why, without waiting on it, and close it.
fn refuse(socket: TcpStream) {
	log::debug!("RPC connections full, every one busy: refusing a new connection");
	// Best effort by design: a client too slow to take 150 bytes at once is not waited for,
	// and the connection closes either way.
	if let Err(err) = socket.try_write(REFUSED.as_bytes()) {
		log::debug!("cannot tell a refused RPC connection why: {err}");
	}
}
