//! Wires the node together: chain spec, store, maintenance, JSON-RPC, metrics, shutdown.

use crate::{
	chain_spec::ChainSpec,
	cli::{RunCmd, MIB},
	database,
	error::Error,
	keystore::{self, Keystore},
	network, prometheus, rpc,
};
use statement_store::{Config, Store};
use std::{
	net::{IpAddr, Ipv4Addr, SocketAddr},
	sync::Arc,
	time::{Duration, SystemTime},
};

/// How often maintenance (expiry, ban purge, allowance re-check) runs.
const MAINTENANCE_PERIOD: Duration = Duration::from_secs(30);

/// Run the node until SIGINT or SIGTERM.
pub fn run(cmd: RunCmd) -> Result<(), Error> {
	let fd_limit = raise_fd_limit();
	// A temporary base path (`--tmp`, or `--dev` without `-d`) is removed only after the
	// runtime, and with it the store's last handle, is gone: the store writes its last
	// checkpoint and membership snapshot into it while it closes.
	let tmp = match &cmd.base_path {
		None if cmd.tmp || cmd.dev => {
			Some(tempfile::Builder::new().prefix("statement-node").tempdir().map_err(|source| {
				Error::Io {
					operation: "create a temporary base path in",
					path: std::env::temp_dir(),
					source,
				}
			})?)
		}
		_ => None,
	};
	let runtime = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.thread_name("statement-node")
		.build()
		.map_err(Error::Runtime)?;
	let result = runtime.block_on(run_async(
		cmd,
		tmp.as_ref().map(|dir| dir.path().to_path_buf()),
		fd_limit,
	));
	// The store closes when its last handle goes, and tasks on the runtime hold handles.
	drop(runtime);
	if result.is_ok() {
		log::info!("Statement store closed");
	}
	drop(tmp);
	result
}

async fn run_async(
	cmd: RunCmd,
	tmp_base: Option<std::path::PathBuf>,
	fd_limit: Option<u64>,
) -> Result<(), Error> {
	let started = SystemTime::now();
	// Installed before anything else, so a signal during startup is not the default "die".
	let shutdown = Shutdown::install()?;
	let chain = cmd.chain.clone().unwrap_or_else(|| if cmd.dev { "dev" } else { "local" }.into());
	let spec = ChainSpec::load(&chain)?;
	let allowances = spec.allowances()?;
	let base_path = match (&cmd.base_path, tmp_base) {
		(Some(path), _) => path.clone(),
		(None, Some(tmp)) => tmp,
		(None, None) => database::default_base_path(),
	};
	let db_path = database::path(&base_path, &spec);
	let name = cmd.name.clone().unwrap_or_else(|| "statement-node".into());
	log::info!("Statement store node {}", env!("CARGO_PKG_VERSION"));
	log::info!("Node name: {name}");
	log::info!("Chain specification: {} ({})", spec.name, spec.id);
	log::info!("Database: {}", db_path.display());
	let keystore_path =
		cmd.keystore_path.clone().unwrap_or_else(|| keystore::default_path(&base_path, &spec.id));
	let keystore = Arc::new(Keystore::open(keystore_path, cmd.dev)?);
	log::info!(
		"Keystore: {} ({} statement keys)",
		keystore.path().display(),
		keystore.statement_keys()
	);
	// Read before anything opens, so that a bad `--rpc-cors` stops the node at once.
	let rpc_addr = SocketAddr::new(
		if cmd.rpc_external {
			IpAddr::V4(Ipv4Addr::UNSPECIFIED)
		} else {
			IpAddr::V4(Ipv4Addr::LOCALHOST)
		},
		cmd.rpc_port,
	);
	let cors = cors_policy(&cmd, rpc_addr)?;

	let mut config = Config::new(&db_path);
	config.max_total_statements = cmd.statement_store_max_total_statements;
	config.max_total_size = cmd.statement_store_max_total_size;
	config.cache_bytes = cmd.statement_store_cache_mib.saturating_mul(MIB);
	config.body_cache_bytes = cmd.statement_store_body_cache_mib.saturating_mul(MIB);
	config.sync_wal = cmd.statement_store_sync_wal;
	config.min_free_bytes = cmd.statement_store_min_free_mib.saturating_mul(MIB as u64);
	config.subscription_budget_bytes = cmd.statement_subscription_memory_mib.saturating_mul(MIB);
	config.skip_intent_gaps = cmd.statement_store_skip_intent_gaps;
	config.decryptor = Some(keystore.clone());
	let store = Store::open(config, Arc::new(allowances))
		.map_err(|err| Error::opening(err, db_path.clone()))?;
	log::info!("Statement store opened with {} statements", store.len());
	if cmd.statement_store_sync_wal {
		log::info!(
			"Every change is fsynced before it is acknowledged (--statement-store-sync-wal)"
		);
	}
	let maintenance =
		store.spawn_maintenance(&tokio::runtime::Handle::current(), MAINTENANCE_PERIOD);

	let network_config = network::config(&cmd, &spec, &base_path, fd_limit)?;
	let boot_nodes = network_config.boot_nodes.len();
	let should_have_peers = boot_nodes > 0 || !network_config.reserved_nodes.is_empty();
	let network =
		Arc::new(statement_network::start(network_config, Arc::new(store.clone())).await?);
	log::info!("Local node identity is: {}", network.local_peer_id());
	let version = if cmd.statement_protocol_version == 1 {
		statement_network::Version::V1
	} else {
		statement_network::Version::V2
	};
	log::info!(
		"Statement gossip on {} with {boot_nodes} boot node(s){}",
		statement_network::protocol_name(&spec.genesis_hash()?, spec.fork_id.as_deref(), version),
		if cmd.no_discovery { "" } else { "; discovering peers with Kademlia" },
	);

	let rpc_config = rpc::RpcConfig {
		addr: rpc_addr,
		methods: cmd.rpc_methods,
		server: statement_rpc_server::Config {
			cors,
			max_connections: cmd.rpc_max_connections,
			max_subscriptions_per_connection: cmd.rpc_max_subscriptions_per_connection,
			request_timeout: Duration::from_secs(cmd.rpc_request_timeout),
			max_calls_in_flight_per_connection: cmd.rpc_max_calls_in_flight_per_connection,
			max_answer_bytes_per_connection: cmd.rpc_max_answer_bytes_per_connection,
		},
		name,
		chain: spec.name.clone(),
		network: Some(network.clone()),
		should_have_peers,
		keystore: Some(keystore),
		chain_info: rpc::ChainInfo::from_spec(&spec)?,
		v2_subscriptions_per_connection: cmd.statement_rpc_subscriptions_per_connection,
		statement_metrics: statement_rpc::metrics::RpcMetrics::default(),
	};
	let served = serve(&cmd, rpc_config, &store, &network, (&spec.id, started), shutdown).await;
	maintenance.abort();
	// Gossip's threads hold the store: stop them, and wait, before the store closes; on every
	// path, or a temporary base path would be deleted under a store still writing into it.
	network.stop().await;
	drop(store);
	served
}

/// `--rpc-cors`, or its default: every origin under `--dev`, else Substrate's local list.
fn cors_policy(cmd: &RunCmd, rpc_addr: SocketAddr) -> Result<rpc::Cors, Error> {
	match &cmd.rpc_cors {
		Some(flag) => rpc::Cors::parse(flag).map_err(|err| Error::Rpc {
			addr: rpc_addr,
			source: std::io::Error::new(std::io::ErrorKind::InvalidInput, err),
		}),
		None if cmd.dev => {
			log::info!(
				"--dev: RPC accepts requests from any browser origin (--rpc-cors all); pass \
				 --rpc-cors to restrict"
			);
			Ok(rpc::Cors::All)
		}
		None => Ok(rpc::Cors::substrate_default()),
	}
}

/// Serve JSON-RPC and metrics until SIGINT or SIGTERM, then stop them; an error if either
/// cannot start.
async fn serve(
	cmd: &RunCmd,
	rpc_config: rpc::RpcConfig,
	store: &Store,
	network: &Arc<statement_network::Network>,
	(chain, started): (&str, SystemTime),
	shutdown: Shutdown,
) -> Result<(), Error> {
	let unsafe_allowed = rpc::allow_unsafe(rpc_config.methods, &rpc_config.addr);
	let origins = rpc_config.server.cors.to_string();
	let rpc_metrics = rpc_config.statement_metrics.clone();
	let (server, rpc_addr, server_metrics) = rpc::start(store.clone(), rpc_config).await?;
	log::info!(
		"Running JSON-RPC server: addr={rpc_addr}, unsafe methods {}, allowed origins={origins}",
		if unsafe_allowed { "allowed" } else { "refused" }
	);

	let sources = prometheus::Sources {
		store: store.clone(),
		network: network.clone(),
		rpc: rpc_metrics,
		server: server_metrics,
		chain: chain.to_string(),
		started,
	};
	let (metrics_task, metrics_addr) = match start_metrics(cmd, sources).await {
		Ok(started) => started.unzip(),
		Err(err) => {
			stop_rpc(server).await;
			return Err(err);
		}
	};
	let ready = Ready { rpc: rpc_addr, prometheus: metrics_addr, store, network: network.as_ref() };
	if let Some(path) = &cmd.ready_file {
		if let Err(err) = ready.write(path) {
			stop_rpc(server).await;
			if let Some(task) = metrics_task {
				task.abort();
			}
			return Err(err);
		}
	}

	shutdown.wait().await;
	log::info!("Shutting down");
	if let Some(path) = &cmd.ready_file {
		// Not ready any more; a file already gone is what is asked for.
		let _ = std::fs::remove_file(path);
	}
	stop_rpc(server).await;
	if let Some(task) = metrics_task {
		task.abort();
	}
	Ok(())
}

/// What a started node serves, for `--ready-file`.
struct Ready<'a> {
	rpc: SocketAddr,
	prometheus: Option<SocketAddr>,
	store: &'a Store,
	network: &'a statement_network::Network,
}

impl Ready<'_> {
	/// Write the readiness file at `path` whole: a reader sees the old file, none, or this.
	fn write(&self, path: &std::path::Path) -> Result<(), Error> {
		let peer_id = self.network.local_peer_id().to_string();
		let listen: Vec<String> =
			self.network.listen_addresses().iter().map(ToString::to_string).collect();
		let ready = serde_json::json!({
			"pid": std::process::id(),
			"rpc": self.rpc.to_string(),
			"prometheus": self.prometheus.map(|addr| addr.to_string()),
			"peer_id": peer_id,
			"listen": listen,
			"statements": self.store.len(),
		});
		let mut staged = path.as_os_str().to_owned();
		staged.push(".tmp");
		let staged = std::path::PathBuf::from(staged);
		let io =
			|source| Error::Io { operation: "write the readiness file", path: path.into(), source };
		std::fs::write(&staged, format!("{ready:#}\n")).map_err(io)?;
		std::fs::rename(&staged, path).map_err(io)?;
		log::info!("Ready: wrote {}", path.display());
		Ok(())
	}
}

/// The Prometheus endpoint's task and address, unless `--no-prometheus`.
async fn start_metrics(
	cmd: &RunCmd,
	sources: prometheus::Sources,
) -> Result<Option<(tokio::task::JoinHandle<()>, SocketAddr)>, Error> {
	if cmd.no_prometheus {
		return Ok(None);
	}
	let ip = if cmd.prometheus_external {
		IpAddr::V4(Ipv4Addr::UNSPECIFIED)
	} else {
		IpAddr::V4(Ipv4Addr::LOCALHOST)
	};
	let asked = SocketAddr::new(ip, cmd.prometheus_port);
	let listener = prometheus::bind(asked).await?;
	let addr = listener.local_addr().map_err(|source| Error::Metrics { addr: asked, source })?;
	log::info!("Prometheus exporter started at {addr}/metrics");
	let task = tokio::spawn(prometheus::serve(listener, sources));
	Ok(Some((task, addr)))
}

/// Stop the JSON-RPC server and wait until its last call is answered.
async fn stop_rpc(server: jsonrpsee::server::ServerHandle) {
	// Fails only if the server already stopped, which is what is asked for.
	if server.stop().is_err() {
		log::debug!("the JSON-RPC server had already stopped");
	}
	server.stopped().await;
}

/// SIGINT and SIGTERM, caught from the moment the node starts.
struct Shutdown {
	#[cfg(unix)]
	interrupt: tokio::signal::unix::Signal,
	#[cfg(unix)]
	terminate: tokio::signal::unix::Signal,
}

impl Shutdown {
	fn install() -> Result<Self, Error> {
		#[cfg(unix)]
		{
			use tokio::signal::unix::{signal, SignalKind};
			let catch = |kind: SignalKind| signal(kind).map_err(Error::Signal);
			Ok(Shutdown {
				interrupt: catch(SignalKind::interrupt())?,
				terminate: catch(SignalKind::terminate())?,
			})
		}
		#[cfg(not(unix))]
		Ok(Shutdown {})
	}

	async fn wait(mut self) {
		#[cfg(unix)]
		tokio::select! {
			_ = self.interrupt.recv() => {},
			_ = self.terminate.recv() => {},
		}
		// If Ctrl-C cannot be listened for, stopping at once is the only safe answer: the
		// alternative is a node that cannot be stopped cleanly.
		#[cfg(not(unix))]
		if let Err(err) = tokio::signal::ctrl_c().await {
			log::error!("cannot listen for Ctrl-C, shutting down: {err}");
		}
	}
}

/// Below this many file descriptors a node is easy to starve (each peer, RPC client and
/// database file takes some): Substrate warns under the same figure.
const RECOMMENDED_FD_LIMIT: u64 = 10_000;

/// Raise the soft limit on open file descriptors to the hard limit, as a Substrate node does
/// at start: the common default soft limit (1,024) is used up by about a thousand idle
/// connections. Logs the figure it runs with, and returns it where there is one.
fn raise_fd_limit() -> Option<u64> {
	#[cfg(unix)]
	{
		let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
		if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
			log::warn!(
				"cannot read the file descriptor limit: {}",
				std::io::Error::last_os_error()
			);
			return None;
		}
		let before = limit.rlim_cur;
		// macOS refuses a soft limit above OPEN_MAX whatever the hard limit says.
		#[cfg(target_os = "macos")]
		let wanted = limit.rlim_max.min(libc::OPEN_MAX as libc::rlim_t);
		#[cfg(not(target_os = "macos"))]
		let wanted = limit.rlim_max;
		if before < wanted {
			limit.rlim_cur = wanted;
			if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
				log::warn!(
					"cannot raise the file descriptor limit from {before} to {wanted}: {}",
					std::io::Error::last_os_error()
				);
				limit.rlim_cur = before;
			}
		}
		let now = limit.rlim_cur;
		if now != before {
			log::info!("File descriptor limit raised from {before} to {now}");
		} else {
			log::info!("File descriptor limit: {now}");
		}
		if now < RECOMMENDED_FD_LIMIT {
			log::warn!(
				"The file descriptor limit ({now}, the hard limit) is low: a few hundred idle \
				 connections can exhaust it. Raise it to at least {RECOMMENDED_FD_LIMIT} \
				 (`ulimit -Hn`, or LimitNOFILE= in a systemd unit)."
			);
		}
		Some(now)
	}
	#[cfg(not(unix))]
	None
}
