//! The JSON-RPC server: statement methods plus Substrate's `rpc_methods` and `system_*`.

use crate::cli::RpcMethods;
use jsonrpsee::{
	server::{Server, ServerHandle},
	RpcModule,
};
use statement_rpc::StatementRpc;
use statement_store::Store;
use std::net::SocketAddr;
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

/// What the server needs to know.
pub struct RpcConfig {
	/// Where to listen.
	pub addr: SocketAddr,
	/// Which methods to expose.
	pub methods: RpcMethods,
	/// `--rpc-cors`.
	pub cors: Option<String>,
	/// `--rpc-max-connections`.
	pub max_connections: u32,
	/// `system_name`.
	pub name: String,
	/// Chain name, for `system_chain`.
	pub chain: String,
}

/// Whether unsafe methods are exposed: `auto` allows them only on localhost.
pub fn allow_unsafe(methods: RpcMethods, addr: &SocketAddr) -> bool {
	match methods {
		RpcMethods::Unsafe => true,
		RpcMethods::Safe => false,
		RpcMethods::Auto => addr.ip().is_loopback(),
	}
}

fn cors_layer(cors: Option<&str>) -> CorsLayer {
	let base = CorsLayer::new().allow_methods(Any).allow_headers(Any);
	match cors {
		Some("all") => base.allow_origin(Any),
		Some(list) => {
			let origins = list
				.split(',')
				.filter_map(|origin| origin.trim().parse().ok())
				.collect::<Vec<http::HeaderValue>>();
			base.allow_origin(AllowOrigin::list(origins))
		}
		None => base.allow_origin(AllowOrigin::predicate(|origin, _| {
			let origin = origin.as_bytes();
			[
				&b"http://localhost"[..],
				b"https://localhost",
				b"http://127.0.0.1",
				b"https://127.0.0.1",
			]
			.iter()
			.any(|prefix| origin.starts_with(prefix))
				|| origin == b"https://polkadot.js.org"
		})),
	}
}

/// The full set of methods the node serves.
pub fn module(store: Store, config: &RpcConfig) -> RpcModule<()> {
	let unsafe_allowed = allow_unsafe(config.methods, &config.addr);
	let mut module = RpcModule::new(());
	module
		.merge(StatementRpc::new(store, unsafe_allowed).into_module())
		.expect("statement methods do not collide with system methods; qed");
	let name = config.name.clone();
	let chain = config.chain.clone();
	let _ = module.register_method("system_name", move |_, _, _| name.clone());
	let _ = module.register_method("system_version", |_, _, _| env!("CARGO_PKG_VERSION"));
	let _ = module.register_method("system_chain", move |_, _, _| chain.clone());
	let _ = module.register_method(
		"system_health",
		|_, _, _| serde_json::json!({ "peers": 0, "isSyncing": false, "shouldHavePeers": false }),
	);
	let mut names: Vec<&'static str> = module.method_names().collect();
	names.push("rpc_methods");
	names.sort_unstable();
	let _ = module.register_method(
		"rpc_methods",
		move |_, _, _| serde_json::json!({ "version": 1, "methods": names }),
	);
	module
}

/// Start serving; the returned handle stops the server.
pub async fn start(store: Store, config: RpcConfig) -> Result<(ServerHandle, SocketAddr), String> {
	let middleware = tower::ServiceBuilder::new().layer(cors_layer(config.cors.as_deref()));
	let server_config = jsonrpsee::server::ServerConfig::builder()
		.max_connections(config.max_connections)
		.max_request_body_size(16 * 1024 * 1024)
		.build();
	let server = Server::builder()
		.set_config(server_config)
		.set_http_middleware(middleware)
		.build(config.addr)
		.await
		.map_err(|err| format!("cannot serve JSON-RPC on {}: {err}", config.addr))?;
	let addr = server.local_addr().map_err(|err| err.to_string())?;
	let handle = server.start(module(store, &config));
	Ok((handle, addr))
}
