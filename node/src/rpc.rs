//! The JSON-RPC server, over HTTP and WebSocket on one port: the statement methods, the
//! surface standard clients probe when they connect (`chain_*`, `state_*` in [`chain`],
//! [`runtime`] and [`storage`], `system_*` in [`system`]), the keystore's `author_*Key` ([`author`]) and
//! `rpc_methods` ([`rpc_methods`], listing only what the caller may call).
//!
//! jsonrpsee answers the requests; this module runs the accept loop itself so that every
//! connection is accounted for in [`connections`], which closes connections that keep a slot
//! without sending a request (see there for the rules), and answers oversized bodies cleanly
//! ([`oversized`]). Every request passes, in order: connection tracking, the origin check and
//! CORS headers ([`cors`], policy in [`origin`]), the transport label that keeps subscriptions
//! to WebSockets ([`transport`]), the health endpoints ([`health`]) and the size check.

mod author;
mod chain;
mod connections;
mod cors;
mod health;
mod intercept;
mod origin;
mod oversized;
mod rpc_methods;
mod runtime;
mod storage;
mod system;
mod tracking;
mod transport;

use crate::{cli::RpcMethods, error::Error};
pub use chain::ChainInfo;
use connections::{Connections, TrackedStream};
use cors::OriginGuard;
use health::HealthProbe;
use hyper_util::{
	rt::{TokioExecutor, TokioIo},
	server::conn::auto,
	service::TowerToHyperService,
};
use intercept::InterceptLayer;
use jsonrpsee::{
	core::middleware::RpcServiceBuilder,
	server::{stop_channel, Methods, PingConfig, ServerConfig, ServerHandle, StopHandle},
	RpcModule,
};
use oversized::OversizedLayer;
use statement_network::Network;
use statement_rpc::StatementRpc;
use statement_store::Store;
use std::{net::SocketAddr, sync::Arc, time::Duration};
use tokio::net::{TcpListener, TcpStream};
use tracking::{CountCallsLayer, TrackLayer};
use transport::{SubscriptionsNeedWebSocketLayer, TransportLayer};

pub use origin::Cors;

/// Largest request body, and largest WebSocket message, in bytes.
pub const MAX_REQUEST_BYTES: u32 = 16 * 1024 * 1024;

/// What a connection past the limit is told before it is closed.
const REFUSED: &str = concat!(
	"HTTP/1.1 429 Too Many Requests\r\n",
	"Content-Type: text/plain\r\nContent-Length: 45\r\nConnection: close\r\n\r\n",
	"Too many connections. Please try again later.",
);

/// What the server needs to know.
pub struct RpcConfig {
	/// Where to listen.
	pub addr: SocketAddr,
	/// Which methods to expose.
	pub methods: RpcMethods,
	/// Which browser origins may call: `--rpc-cors`, or its default.
	pub cors: Cors,
	/// `--rpc-max-connections`.
	pub max_connections: u32,
	/// `--rpc-max-subscriptions-per-connection`.
	pub max_subscriptions_per_connection: u32,
	/// `--rpc-request-timeout`: longest a connection may wait on its client for a request.
	pub request_timeout: Duration,
	/// `system_name`.
	pub name: String,
	/// Chain name, for `system_chain`.
	pub chain: String,
	/// The network, for `system_health`, `system_peers` and the local identity.
	pub network: Option<Arc<Network>>,
	/// Whether boot or reserved nodes are configured (`shouldHavePeers` of `system_health`).
	pub should_have_peers: bool,
	/// The keystore, for `author_insertKey` and `author_hasKey`.
	pub keystore: Option<Arc<crate::keystore::Keystore>>,
	/// Genesis block and properties, for the `chain_*`, `state_*` and `system_properties`
	/// methods standard clients call when they connect.
	pub chain_info: ChainInfo,
}

/// Whether unsafe methods are exposed: `auto` allows them only on localhost.
pub fn allow_unsafe(methods: RpcMethods, addr: &SocketAddr) -> bool {
	match methods {
		RpcMethods::Unsafe => true,
		RpcMethods::Safe => false,
		RpcMethods::Auto => addr.ip().is_loopback(),
	}
}

impl ChainInfo {
	/// The module with the `chain_*`, `state_*` and `system_properties` methods.
	pub fn into_module(self) -> Result<RpcModule<ChainInfo>, jsonrpsee::core::RegisterMethodError> {
		let mut module = RpcModule::new(self);
		chain::register(&mut module)?;
		runtime::register(&mut module)?;
		storage::register(&mut module)?;
		Ok(module)
	}
}

/// The full set of methods the node serves; an error if two of them share a name.
pub fn module(store: Store, config: &RpcConfig) -> Result<RpcModule<()>, Error> {
	let unsafe_allowed = allow_unsafe(config.methods, &config.addr);
	let mut module = RpcModule::new(());
	let mut statements = StatementRpc::new(std::sync::Arc::new(store), unsafe_allowed);
	if let Some(network) = &config.network {
		// A light node asks its peers for the topics of the subscriptions opened on it.
		let interest = network.interest().clone();
		statements = statements.with_subscription_hook(std::sync::Arc::new(move |filter| {
			Box::new(interest.watch(filter)) as Box<dyn std::any::Any + Send>
		}));
	}
	module.merge(statements.into_module())?;
	if let Some(keystore) = &config.keystore {
		author::register(&mut module, keystore.clone(), unsafe_allowed)?;
	}
	module.merge(config.chain_info.clone().into_module()?)?;
	system::System {
		name: config.name.clone(),
		chain: config.chain.clone(),
		network: config.network.clone(),
		should_have_peers: config.should_have_peers,
		genesis_hash: config.chain_info.genesis_hex(),
	}
	.register(&mut module, unsafe_allowed)?;
	rpc_methods::register(&mut module, unsafe_allowed)?;
	Ok(module)
}

/// Start serving; the returned handle stops the server.
pub async fn start(store: Store, config: RpcConfig) -> Result<(ServerHandle, SocketAddr), Error> {
	let rpc_error = |source| Error::Rpc { addr: config.addr, source };
	let listener = TcpListener::bind(config.addr).await.map_err(rpc_error)?;
	let addr = listener.local_addr().map_err(rpc_error)?;
	let server_config = ServerConfig::builder()
		// Connections are limited by `Connections` below. jsonrpsee's own count (of HTTP
		// requests in progress and WebSockets) then only bounds HTTP/2 streams; it is set above
		// that limit so that a connection evicted but not yet gone never makes jsonrpsee refuse
		// the newcomer that took its slot.
		.max_connections(config.max_connections.saturating_mul(2))
		.max_subscriptions_per_connection(config.max_subscriptions_per_connection)
		.max_request_body_size(MAX_REQUEST_BYTES)
		// As Substrate: a WebSocket whose peer stops answering pings (three checks 30 s apart
		// find no pong for 60 s) is closed, so dead sessions give their slots back.
		.enable_ws_ping(
			PingConfig::new()
				.ping_interval(Duration::from_secs(30))
				.inactive_limit(Duration::from_secs(60))
				.max_failures(3),
		)
		.build();
	// Built before the accept loop, so that a collision stops the node before it serves.
	let methods: Methods = module(store, &config)?.into();
	let rpc_middleware = RpcServiceBuilder::new()
		.layer(CountCallsLayer)
		.layer(SubscriptionsNeedWebSocketLayer::new(transport::subscription_methods(&methods)));
	let server = jsonrpsee::server::Server::builder()
		.set_config(server_config)
		.set_rpc_middleware(rpc_middleware)
		.to_service_builder();
	let connections = Connections::new(config.max_connections as usize, config.request_timeout);
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
						// Out of file descriptors, most likely: give connections time to close.
						log::debug!("cannot accept an RPC connection: {err}");
						tokio::time::sleep(Duration::from_millis(50)).await;
					}
				},
			}
		}
		connections.close_waiting();
	});
	Ok((handle, addr))
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
