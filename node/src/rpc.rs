//! The node's JSON-RPC: the statement methods, the surface standard clients probe when they
//! connect (`chain_*`, `state_*` in [`chain`], [`runtime`] and [`storage`], `system_*` in
//! [`system`]), the keystore's `author_*Key` ([`author`]) and `rpc_methods` ([`rpc_methods`],
//! listing only what the caller may call), served by `statement-rpc-server` over HTTP and
//! WebSocket on one port (connection limits and timeouts, origin checks and CORS, `/health`,
//! oversized bodies and subscriptions kept to WebSockets live there).

mod author;
mod chain;
mod rpc_methods;
mod runtime;
mod storage;
mod system;

use crate::{cli::RpcMethods, error::Error};
pub use chain::ChainInfo;
use jsonrpsee::{server::ServerHandle, RpcModule};
use statement_network::Network;
use statement_rpc::StatementRpc;
use statement_rpc_server::Server;
use statement_store::Store;
use std::{net::SocketAddr, sync::Arc};

pub use statement_rpc_server::Cors;

/// What the server needs to know.
pub struct RpcConfig {
	/// Where to listen.
	pub addr: SocketAddr,
	/// Which methods to expose.
	pub methods: RpcMethods,
	/// Origins, connection limits and timeouts, for the server.
	pub server: statement_rpc_server::Config,
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
	/// Spec-v2 statement subscriptions one connection may hold.
	pub v2_subscriptions_per_connection: usize,
	/// What the statement methods count, shared with the metrics endpoint.
	pub statement_metrics: statement_rpc::metrics::RpcMetrics,
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
	let mut statements = StatementRpc::new(std::sync::Arc::new(store), unsafe_allowed)
		.with_v2_subscriptions_per_connection(config.v2_subscriptions_per_connection)
		.with_metrics(config.statement_metrics.clone());
	if let Some(network) = &config.network {
		// A light node asks its peers for the topics of the subscriptions opened on it.
		let interest = network.interest().clone();
		statements = statements.with_subscription_hook(std::sync::Arc::new(move |filter| {
			Box::new(interest.watch(filter)) as Box<dyn std::any::Any + Send>
		}));
		// A routed node fetches a query's topics from their holders first (at once otherwise).
		let network = network.clone();
		statements = statements.with_query_hook(std::sync::Arc::new(move |topics| {
			Box::pin(network.fetch(topics))
				as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
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

/// Start serving; the returned handle stops the server. Also the address served and what the
/// server counts (for the metrics endpoint).
pub async fn start(
	store: Store,
	config: RpcConfig,
) -> Result<(ServerHandle, SocketAddr, statement_rpc_server::ServerMetrics), Error> {
	let rpc_error = |source| Error::Rpc { addr: config.addr, source };
	let server = Server::bind(config.addr, config.server.clone()).await.map_err(rpc_error)?;
	let addr = server.local_addr().map_err(rpc_error)?;
	// Built before the server serves, so that a collision stops the node before it serves.
	let methods = module(store, &config)?;
	let metrics = server.metrics();
	Ok((server.start(methods), addr, metrics))
}
