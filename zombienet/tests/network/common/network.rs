//! Spawning a network of `statement-node`s with zombienet's native provider, one network at
//! a time, each in its own directory that is kept when a test fails.

use super::{node_binary, ChainSpec, Client};
use anyhow::{anyhow, bail, Context, Result};
use std::path::PathBuf;
use tokio::sync::{Mutex, MutexGuard};
use zombienet_configuration::shared::node::{Buildable, Initial, NodeConfigBuilder};
use zombienet_sdk::{
	Arg, LocalFileSystem, Network, NetworkConfigBuilder, NetworkConfigExt, NetworkNode,
};

/// Networks fight over ports and the cores, so tests run them one after another, even
/// when the test harness runs tests in parallel.
static ONE_NETWORK_AT_A_TIME: Mutex<()> = Mutex::const_new(());

/// Seconds a node may take to serve its metrics after it is spawned.
const NODE_SPAWN_TIMEOUT_SECS: u32 = 30;
/// Seconds the whole network may take to come up.
const NETWORK_SPAWN_TIMEOUT_SECS: u32 = 120;
/// zombienet names the relay chain's spec file after this.
const CHAIN: &str = "local";

/// One node to spawn: its name, its extra arguments, and whether it is a bootnode or a
/// validator (zombienet then adds `--validator`, which this node accepts and ignores).
///
/// zombienet spawns bootnodes first (the first node, if none is marked), gives every other
/// node `--bootnodes` with their addresses and writes them into the spec's `bootNodes`.
/// An argument may name another node's address as `{{ZOMBIE:<name>:multiaddr}}`; that node
/// is then spawned first.
#[derive(Debug)]
pub struct NodePlan {
	name: String,
	args: Vec<Arg>,
	bootnode: bool,
	validator: bool,
}

impl NodePlan {
	/// A full node named `name`.
	pub fn new(name: impl Into<String>) -> Self {
		NodePlan { name: name.into(), args: Vec::new(), bootnode: false, validator: false }
	}

	/// Add a command-line argument, e.g. `"--statement-rate-limit=50"` or
	/// `("--bootnodes", "{{ZOMBIE:alice:multiaddr}}")`.
	pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
		self.args.push(arg.into());
		self
	}

	/// Mark the node a bootnode: it gets no one else's address unless its arguments say so.
	pub fn bootnode(mut self) -> Self {
		self.bootnode = true;
		self
	}

	/// Spawn the node as a validator.
	pub fn validator(mut self) -> Self {
		self.validator = true;
		self
	}

	/// What zombienet's node builder needs from this plan.
	fn configure(self) -> impl FnOnce(NodeConfigBuilder<Initial>) -> NodeConfigBuilder<Buildable> {
		move |node| node.with_name(self.name.as_str()).with_args(self.args).bootnode(self.bootnode)
	}
}

/// A running network and the directory it lives in.
pub struct TestNetwork {
	network: Network<LocalFileSystem>,
	dir: PathBuf,
	_one_at_a_time: MutexGuard<'static, ()>,
}

impl TestNetwork {
	/// Spawn `nodes`, all running the node binary on `spec`, in a fresh directory named for
	/// `scenario`, and wait until each serves its metrics.
	pub async fn spawn(scenario: &str, spec: &ChainSpec, nodes: Vec<NodePlan>) -> Result<Self> {
		let one_at_a_time = ONE_NETWORK_AT_A_TIME.lock().await;
		let binary = node_binary()?.to_str().context("the node binary's path is not UTF-8")?;
		let dir = std::env::temp_dir().join("statement-node-zombienet").join(scenario);
		if dir.exists() {
			std::fs::remove_dir_all(&dir)
				.with_context(|| format!("cannot clear {}", dir.display()))?;
		}
		std::fs::create_dir_all(&dir)
			.with_context(|| format!("cannot create {}", dir.display()))?;
		let spec_path = dir.join("chain-spec.json");
		spec.write(&spec_path)?;
		let mut plans = nodes.into_iter();
		let Some(first) = plans.next() else { bail!("a network needs a node") };
		let config = NetworkConfigBuilder::new()
			.with_relaychain(|chain| {
				let chain = chain
					.with_chain(CHAIN)
					.with_default_command(binary)
					.with_chain_spec_path(spec_path.clone());
				// The first node moves the builder to another state, so it is added apart.
				let chain = if first.validator {
					chain.with_validator(first.configure())
				} else {
					chain.with_fullnode(first.configure())
				};
				plans.fold(chain, |chain, plan| {
					if plan.validator {
						chain.with_validator(plan.configure())
					} else {
						chain.with_fullnode(plan.configure())
					}
				})
			})
			.with_global_settings(|settings| {
				settings
					.with_base_dir(dir.join("network"))
					// On a crash the watcher would exit the whole test binary; a test
					// that needs its nodes fails on its own.
					.with_tear_down_on_failure(false)
					.with_node_spawn_timeout(NODE_SPAWN_TIMEOUT_SECS)
					.with_network_spawn_timeout(NETWORK_SPAWN_TIMEOUT_SECS)
			})
			.build()
			.map_err(|errors| anyhow!("bad network config: {errors:?}"))?;
		let network = config
			.spawn_native()
			.await
			.with_context(|| format!("cannot spawn the network; see {}", dir.display()))?;
		Ok(TestNetwork { network, dir, _one_at_a_time: one_at_a_time })
	}

	/// The node named `name`.
	pub fn node(&self, name: &str) -> Result<&NetworkNode> {
		self.network.get_node(name)
	}

	/// A new RPC connection to the node named `name`.
	pub async fn client(&self, name: &str) -> Result<Client> {
		Client::connect(self.node(name)?).await
	}

	/// A new RPC connection to each node named in `names`, in order.
	pub async fn clients(&self, names: &[impl AsRef<str>]) -> Result<Vec<Client>> {
		let mut clients = Vec::with_capacity(names.len());
		for name in names {
			clients.push(self.client(name.as_ref()).await?);
		}
		Ok(clients)
	}

	/// The zombienet network, e.g. to add a node.
	pub fn network_mut(&mut self) -> &mut Network<LocalFileSystem> {
		&mut self.network
	}

	/// Stop every node and remove the network's directory. A test that fails before this
	/// leaves the directory (logs under `network/<node>/`) and its nodes die with it.
	pub async fn finish(self) -> Result<()> {
		self.network.destroy().await.map_err(|err| anyhow!("cannot stop the network: {err}"))?;
		std::fs::remove_dir_all(&self.dir)
			.with_context(|| format!("cannot remove {}", self.dir.display()))
	}
}
