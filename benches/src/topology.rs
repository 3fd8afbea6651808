//! The topologies of `statement-node` processes on localhost the network harnesses run
//! (`propagation`, `soak`): one node, a line of them each bootnoding the one before, and a mesh
//! of them that find each other from one boot node; each started by the benches' launcher with
//! a fixed node key, and restartable on the same port, key and database.

use statement_test_support::{
	metrics::names::PEERS,
	node::{self, Launch},
};
use std::{
	net::TcpListener,
	ops::Deref,
	path::{Path, PathBuf},
	time::{Duration, Instant},
};

/// How long nodes may take to see their neighbours as peers.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a mesh may take to fill every node's slots through discovery.
const MESH_TIMEOUT: Duration = Duration::from_secs(120);

/// Outbound slots a node fills (the node's default `--out-peers`).
const OUT_PEERS: usize = 8;

/// How a node sends on the statements it admits (`--statement-propagation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
	/// Ours: sent within a short coalescing window.
	Immediate,
	/// Upstream's: everything admitted since the last tick, once a second.
	Reference,
}

impl Propagation {
	/// The flag's value.
	pub fn flag(self) -> &'static str {
		match self {
			Propagation::Immediate => "immediate",
			Propagation::Reference => "reference",
		}
	}
}

/// How every node of a run is started.
#[derive(Clone, Debug)]
pub struct NodeSettings {
	/// The `statement-node` executable.
	pub binary: PathBuf,
	/// `--statement-propagation`.
	pub propagation: Propagation,
	/// `--statement-rate-limit`: statements a second each peer may send.
	pub rate_limit: u32,
}

/// How a restarted node stopped: its exit status and what it logged meanwhile, or `None`
/// after a SIGKILL.
pub type Stopped = Option<(std::process::ExitStatus, Vec<String>)>;

/// A running node of a topology, killed when dropped; the process's own figures (ports,
/// pid, metrics, log) are the launcher's [`node::Node`].
pub struct Node {
	process: node::Node,
	/// Position in its topology, for messages.
	pub index: usize,
	p2p_port: u16,
	peer_id: String,
	/// How it was started, so that [`Node::restart`] starts it the same way.
	dir: PathBuf,
	bootnode: Option<String>,
	extra: Vec<String>,
}

impl Deref for Node {
	type Target = node::Node;

	fn deref(&self) -> &node::Node {
		&self.process
	}
}

/// A free port for the node's libp2p listener.
fn free_port() -> Result<u16, String> {
	TcpListener::bind("127.0.0.1:0")
		.and_then(|listener| listener.local_addr())
		.map(|addr| addr.port())
		.map_err(|err| format!("no free port: {err}"))
}

/// A fixed node key per position, so a run's PeerIds repeat (64 hex digits).
fn node_key(index: usize) -> String {
	format!("{:02x}", index as u8 + 1).repeat(32)
}

impl Node {
	/// Start node `index` with its database in `dir`, dialling `bootnode` if given, with
	/// `extra` arguments; returns once it has printed its PeerId and serves JSON-RPC and
	/// metrics.
	pub fn start(
		settings: &NodeSettings,
		index: usize,
		dir: &Path,
		bootnode: Option<&str>,
		extra: &[String],
	) -> Result<Node, String> {
		Node::start_on(settings, index, dir, bootnode, extra, free_port()?)
	}

	fn start_on(
		settings: &NodeSettings,
		index: usize,
		dir: &Path,
		bootnode: Option<&str>,
		extra: &[String],
		p2p_port: u16,
	) -> Result<Node, String> {
		let mut args: Vec<String> = [
			"--port",
			&p2p_port.to_string(),
			"--node-key",
			&node_key(index),
			"--statement-propagation",
			settings.propagation.flag(),
			"--statement-rate-limit",
			&settings.rate_limit.to_string(),
		]
		.map(String::from)
		.to_vec();
		if let Some(bootnode) = bootnode {
			args.extend(["--bootnodes".to_string(), bootnode.to_string()]);
		}
		args.extend_from_slice(extra);
		let launch = Launch::new(&settings.binary).dev().base_path(dir).args(args);
		let process = launch.start().map_err(|err| format!("node {index}: {err}"))?;
		let peer_id = process.peer_id().to_string();
		Ok(Node {
			process,
			index,
			p2p_port,
			peer_id,
			dir: dir.to_path_buf(),
			bootnode: bootnode.map(String::from),
			extra: extra.to_vec(),
		})
	}

	/// Stop the node (SIGTERM, or SIGKILL if `kill`) and start it again on the same port,
	/// key, database and arguments; returns once it is ready, with the stop's exit status and
	/// the lines the node logged while it shut down (`None` after a SIGKILL). Its PeerId and
	/// address stay the same, so peers that knew it can dial it again.
	pub fn restart(self, settings: &NodeSettings, kill: bool) -> Result<(Node, Stopped), String> {
		let Node { process, index, p2p_port, dir, bootnode, extra, .. } = self;
		let stopped = if kill {
			process.kill().map_err(|err| format!("node {index}: {err}"))?;
			None
		} else {
			Some(process.stop_logged().map_err(|err| format!("node {index}: {err}"))?)
		};
		let node = Node::start_on(settings, index, &dir, bootnode.as_deref(), &extra, p2p_port)?;
		Ok((node, stopped))
	}

	/// Its base path: the database and the node key under it.
	pub fn dir(&self) -> &Path {
		&self.dir
	}

	/// The address other nodes dial: `/ip4/127.0.0.1/tcp/<port>/p2p/<PeerId>`.
	pub fn address(&self) -> String {
		format!("/ip4/127.0.0.1/tcp/{}/p2p/{}", self.p2p_port, self.peer_id)
	}
}

/// Nodes in one temporary directory (removed after the nodes are gone): a line, node k
/// bootnoding node k-1 with discovery off, or a mesh, every node bootnoding the first and
/// finding the rest.
pub struct Nodes {
	/// The nodes, first to last.
	pub nodes: Vec<Node>,
	/// Peers each node must see before the load starts.
	expected: Vec<u64>,
	timeout: Duration,
	dir: tempfile::TempDir,
}

impl Nodes {
	fn empty(count: usize, timeout: Duration) -> Result<Nodes, String> {
		let dir = tempfile::Builder::new()
			.prefix("nodes")
			.tempdir()
			.map_err(|err| format!("cannot create a temporary directory: {err}"))?;
		Ok(Nodes { nodes: Vec::with_capacity(count), expected: Vec::new(), timeout, dir })
	}

	/// Start `count` nodes in a line, each after the one before has printed its PeerId, with
	/// discovery off so that the line stays one, and wait until each sees its neighbours.
	pub fn line(settings: &NodeSettings, count: usize) -> Result<Nodes, String> {
		let mut nodes = Nodes::empty(count, PEER_TIMEOUT)?;
		for _ in 0..count {
			let bootnode = nodes.nodes.last().map(Node::address);
			nodes.start(settings, bootnode, &["--no-discovery".to_string()])?;
		}
		nodes.expected = (0..count).map(|k| u64::from(k > 0) + u64::from(k + 1 < count)).collect();
		nodes.await_peers()?;
		Ok(nodes)
	}

	/// Start `count` nodes that know only the first, and wait until each has found
	/// `min(8, count - 1)` peers.
	pub fn mesh(settings: &NodeSettings, count: usize) -> Result<Nodes, String> {
		Nodes::mesh_with(settings, count, &[])
	}

	/// [`Nodes::mesh`], every node started with `extra` arguments.
	pub fn mesh_with(
		settings: &NodeSettings,
		count: usize,
		extra: &[String],
	) -> Result<Nodes, String> {
		let mut nodes = Nodes::empty(count, MESH_TIMEOUT)?;
		for _ in 0..count {
			let bootnode = nodes.nodes.first().map(Node::address);
			nodes.start(settings, bootnode, extra)?;
		}
		nodes.expected = vec![OUT_PEERS.min(count.saturating_sub(1)) as u64; count];
		nodes.await_peers()?;
		Ok(nodes)
	}

	/// Start one more node in the same directory, bootnoding node `to`, with `extra`
	/// arguments; it is not waited for.
	pub fn join(
		&mut self,
		settings: &NodeSettings,
		to: usize,
		extra: &[String],
	) -> Result<&Node, String> {
		let bootnode = self.nodes[to].address();
		self.start(settings, Some(bootnode), extra)
	}

	fn start(
		&mut self,
		settings: &NodeSettings,
		bootnode: Option<String>,
		extra: &[String],
	) -> Result<&Node, String> {
		let index = self.nodes.len();
		let base = self.dir.path().join(format!("node-{index}"));
		self.nodes.push(Node::start(settings, index, &base, bootnode.as_deref(), extra)?);
		Ok(&self.nodes[index])
	}

	/// Peers each node sees now (`None` where the metric is missing).
	pub fn peers(&self) -> Result<Vec<Option<u64>>, String> {
		let peers = |node: &Node| Ok(node.metrics()?.value(PEERS).ok().map(|n| n as u64));
		self.nodes.iter().map(peers).collect()
	}

	/// Wait until every node sees at least the peers expected of it, or fail after its
	/// timeout saying which did not and what their logs end with.
	fn await_peers(&self) -> Result<(), String> {
		let expected = &self.expected;
		let deadline = Instant::now() + self.timeout;
		loop {
			let seen = self.peers()?;
			let short: Vec<usize> = (0..seen.len())
				.filter(|&k| expected[k] > 0 && seen[k].is_none_or(|peers| peers < expected[k]))
				.collect();
			if short.is_empty() {
				return Ok(());
			}
			if Instant::now() > deadline {
				return Err(self.peer_failure(&seen, expected, &short));
			}
			std::thread::sleep(Duration::from_millis(100));
		}
	}

	fn peer_failure(&self, seen: &[Option<u64>], expected: &[u64], short: &[usize]) -> String {
		let shown: Vec<String> =
			seen.iter().map(|peers| peers.map_or("-".into(), |n| n.to_string())).collect();
		let mut message = format!(
			"the nodes did not connect within {:?}: {PEERS} per node is [{}], \
			 expected at least [{}] ('-': not exported)",
			self.timeout,
			shown.join(", "),
			expected.iter().map(u64::to_string).collect::<Vec<_>>().join(", "),
		);
		if seen.iter().all(Option::is_none) {
			message.push_str(
				"; no node exports the peer count: is networking built into this statement-node?",
			);
		}
		for &k in short {
			let node = &self.nodes[k];
			message.push_str(&format!(
				"\n--- node {k} ({}), last log lines:\n{}",
				node.address(),
				node.log_tail()
			));
		}
		message
	}

	/// Restart node `k` as [`Node::restart`] does, in place.
	pub fn restart(
		&mut self,
		settings: &NodeSettings,
		k: usize,
		kill: bool,
	) -> Result<Stopped, String> {
		let node = self.nodes.remove(k);
		let (node, stopped) = node.restart(settings, kill)?;
		self.nodes.insert(k, node);
		Ok(stopped)
	}

	/// The first node.
	pub fn first(&self) -> &Node {
		&self.nodes[0]
	}

	/// The last node.
	pub fn last(&self) -> &Node {
		&self.nodes[self.nodes.len() - 1]
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn node_keys_are_64_hex_digits_and_differ() {
		assert_eq!(node_key(0).len(), 64);
		assert_ne!(node_key(0), node_key(1));
	}
}
