//! `statement-node` child processes on localhost: one node, a line of them each bootnoding the
//! one before, a mesh of them that find each other from one boot node, their metrics, and
//! their resident memory.

use std::{
	collections::VecDeque,
	io::{BufRead, BufReader, Read, Write},
	net::{TcpListener, TcpStream},
	path::{Path, PathBuf},
	process::{Child, Command, Stdio},
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		mpsc::{channel, Receiver, RecvTimeoutError},
		Arc, Mutex,
	},
	thread::JoinHandle,
	time::{Duration, Instant},
};

/// How long a node may take to print its identity and open its RPC port.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long nodes may take to see their neighbours as peers.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a mesh may take to fill every node's slots through discovery.
const MESH_TIMEOUT: Duration = Duration::from_secs(120);

/// Outbound slots a node fills (the node's default `--out-peers`).
const OUT_PEERS: usize = 8;

/// Log lines kept per node to explain a failure.
const LOG_TAIL: usize = 40;

/// The log line (stderr) that names the node's PeerId.
const IDENTITY_MARKER: &str = "Local node identity is: ";

/// Connected peers, as Substrate names the gauge.
pub const PEERS_METRIC: &str = "substrate_sub_libp2p_peers_count";

/// Statements in the store.
pub const STATEMENTS_METRIC: &str = "substrate_statement_store_statements";

/// How often the RSS sampler reads `/proc/<pid>/status`.
const RSS_PERIOD: Duration = Duration::from_millis(50);

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

/// A running node, killed when dropped.
pub struct Node {
	child: Child,
	/// Position in its topology, for messages.
	pub index: usize,
	/// JSON-RPC port (HTTP and WebSocket).
	pub rpc_port: u16,
	metrics_port: u16,
	p2p_port: u16,
	peer_id: String,
	log: Arc<Mutex<VecDeque<String>>>,
}

/// Three distinct free ports: all are held until all are chosen, so they differ.
fn free_ports() -> Result<[u16; 3], String> {
	let bind = || TcpListener::bind("127.0.0.1:0").map_err(|err| format!("no free port: {err}"));
	let held = [bind()?, bind()?, bind()?];
	let port = |listener: &TcpListener| {
		listener.local_addr().map(|addr| addr.port()).map_err(|err| err.to_string())
	};
	Ok([port(&held[0])?, port(&held[1])?, port(&held[2])?])
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
		let [rpc_port, metrics_port, p2p_port] = free_ports()?;
		let mut command = Command::new(&settings.binary);
		command
			.arg("--dev")
			.arg("-d")
			.arg(dir)
			.args(["--rpc-port", &rpc_port.to_string()])
			.args(["--prometheus-port", &metrics_port.to_string()])
			.args(["--port", &p2p_port.to_string()])
			.args(["--node-key", &node_key(index)])
			.args(["--statement-propagation", settings.propagation.flag()])
			.args(["--statement-rate-limit", &settings.rate_limit.to_string()]);
		if let Some(bootnode) = bootnode {
			command.args(["--bootnodes", bootnode]);
		}
		command.args(extra);
		let mut child = command
			.stdout(Stdio::null())
			.stderr(Stdio::piped())
			.spawn()
			.map_err(|err| format!("cannot start {}: {err}", settings.binary.display()))?;
		let log = Arc::new(Mutex::new(VecDeque::new()));
		let identities = drain(&mut child, log.clone())?;
		let mut node =
			Node { child, index, rpc_port, metrics_port, p2p_port, peer_id: String::new(), log };
		node.peer_id = node.await_start(&identities)?;
		Ok(node)
	}

	/// Wait for the identity line and the RPC port; the PeerId.
	fn await_start(&mut self, identities: &Receiver<String>) -> Result<String, String> {
		let deadline = Instant::now() + START_TIMEOUT;
		let mut peer_id = None;
		loop {
			if peer_id.is_none() {
				match identities.recv_timeout(Duration::from_millis(50)) {
					Ok(id) => peer_id = Some(id),
					Err(RecvTimeoutError::Timeout) => {}
					// The log closed: the process is gone or going; the exit check says so.
					Err(RecvTimeoutError::Disconnected) => {
						std::thread::sleep(Duration::from_millis(50))
					}
				}
			}
			if let Ok(Some(status)) = self.child.try_wait() {
				return Err(format!(
					"node {} exited ({status}) while starting; its log:\n{}",
					self.index,
					self.log_tail()
				));
			}
			// Ready when both answer: the metrics exporter starts after the RPC server.
			if let Some(id) = &peer_id {
				if TcpStream::connect(("127.0.0.1", self.rpc_port)).is_ok()
					&& TcpStream::connect(("127.0.0.1", self.metrics_port)).is_ok()
				{
					return Ok(id.clone());
				}
				std::thread::sleep(Duration::from_millis(20));
			}
			if Instant::now() > deadline {
				let missing = if peer_id.is_none() {
					format!("print `{IDENTITY_MARKER}<PeerId>`")
				} else {
					format!(
						"open its RPC port {} and metrics port {}",
						self.rpc_port, self.metrics_port
					)
				};
				return Err(format!(
					"node {} did not {missing} within {START_TIMEOUT:?}; its log:\n{}",
					self.index,
					self.log_tail()
				));
			}
		}
	}

	/// The address other nodes dial: `/ip4/127.0.0.1/tcp/<port>/p2p/<PeerId>`.
	pub fn address(&self) -> String {
		format!("/ip4/127.0.0.1/tcp/{}/p2p/{}", self.p2p_port, self.peer_id)
	}

	/// The process id, for `/proc`.
	pub fn pid(&self) -> u32 {
		self.child.id()
	}

	/// The last lines the node logged.
	pub fn log_tail(&self) -> String {
		let lines = self.log.lock().map(|lines| Vec::from(lines.clone())).unwrap_or_default();
		lines.join("\n")
	}

	/// The metrics text, or why it could not be read.
	pub fn metrics(&self) -> Result<String, String> {
		let fail = |err: std::io::Error| format!("node {} metrics: {err}", self.index);
		let mut stream = TcpStream::connect(("127.0.0.1", self.metrics_port)).map_err(fail)?;
		stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(fail)?;
		// HTTP/1.0: the answer is the body up to the close, never chunked.
		stream.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").map_err(fail)?;
		let mut answer = String::new();
		stream.read_to_string(&mut answer).map_err(fail)?;
		Ok(answer.split_once("\r\n\r\n").map_or(answer.clone(), |(_, body)| body.to_string()))
	}

	/// One metric's value, `None` if the node does not export it.
	pub fn metric(&self, name: &str) -> Result<Option<f64>, String> {
		Ok(metric_value(&self.metrics()?, name))
	}
}

impl Drop for Node {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

/// Read the node's stderr on a thread of its own (so it never blocks on a full pipe), keeping
/// the last lines and sending on the PeerId it announces.
fn drain(child: &mut Child, log: Arc<Mutex<VecDeque<String>>>) -> Result<Receiver<String>, String> {
	let stderr = child.stderr.take().ok_or("the node's stderr is not piped")?;
	let (sender, identities) = channel();
	std::thread::spawn(move || {
		for line in BufReader::new(stderr).lines().map_while(Result::ok) {
			if let Some(id) = peer_id_in(&line) {
				// Nobody listens after the start; the line is kept in the tail all the same.
				let _ = sender.send(id);
			}
			if let Ok(mut lines) = log.lock() {
				if lines.len() == LOG_TAIL {
					lines.pop_front();
				}
				lines.push_back(line);
			}
		}
	});
	Ok(identities)
}

/// The PeerId in a `Local node identity is: 12D3Koo...` log line.
fn peer_id_in(line: &str) -> Option<String> {
	let rest = line.split(IDENTITY_MARKER).nth(1)?;
	let id: String = rest.chars().take_while(char::is_ascii_alphanumeric).collect();
	(!id.is_empty()).then_some(id)
}

/// The value of an unlabelled sample `name` in Prometheus text.
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
	text.lines()
		.filter(|line| !line.starts_with('#'))
		.find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.split_whitespace().next())
		.and_then(|value| value.parse().ok())
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
			.prefix("propagation")
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
		let mut nodes = Nodes::empty(count, MESH_TIMEOUT)?;
		for _ in 0..count {
			let bootnode = nodes.nodes.first().map(Node::address);
			nodes.start(settings, bootnode, &[])?;
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
		self.nodes.iter().map(|node| Ok(node.metric(PEERS_METRIC)?.map(|n| n as u64))).collect()
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
			"the nodes did not connect within {:?}: {PEERS_METRIC} per node is [{}], \
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

	/// The first node.
	pub fn first(&self) -> &Node {
		&self.nodes[0]
	}

	/// The last node.
	pub fn last(&self) -> &Node {
		&self.nodes[self.nodes.len() - 1]
	}
}

/// `VmRSS` of `pid` in KiB (0 if it cannot be read).
pub fn rss_kib(pid: u32) -> u64 {
	let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
	status
		.lines()
		.find_map(|line| line.strip_prefix("VmRSS:"))
		.and_then(|value| value.split_whitespace().next()?.parse().ok())
		.unwrap_or(0)
}

/// CPU time `pid` has used (user and system), from `/proc/<pid>/stat` (zero if it cannot be
/// read). The kernel counts it in ticks of 1/100 s on Linux's usual `CLK_TCK`.
pub fn cpu_time(pid: u32) -> Duration {
	let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
	// The command name may hold spaces; the fields after its closing parenthesis do not.
	let fields: Vec<&str> =
		stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
	// utime and stime are the 14th and 15th fields, the 12th and 13th after the name.
	let ticks = |index: usize| fields.get(index).and_then(|value| value.parse::<u64>().ok());
	let total = ticks(11).unwrap_or(0) + ticks(12).unwrap_or(0);
	Duration::from_millis(total * 10)
}

/// The highest `VmRSS` of a process, sampled every [`RSS_PERIOD`] on a thread of its own.
pub struct RssPeak {
	peak: Arc<AtomicU64>,
	done: Arc<AtomicBool>,
	sampler: Option<JoinHandle<()>>,
}

impl RssPeak {
	/// Start sampling `pid`.
	pub fn start(pid: u32) -> RssPeak {
		let peak = Arc::new(AtomicU64::new(rss_kib(pid)));
		let done = Arc::new(AtomicBool::new(false));
		let sampler = {
			let (peak, done) = (peak.clone(), done.clone());
			std::thread::spawn(move || {
				while !done.load(Ordering::Relaxed) {
					peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
					std::thread::sleep(RSS_PERIOD);
				}
			})
		};
		RssPeak { peak, done, sampler: Some(sampler) }
	}

	/// Stop sampling; the peak in KiB.
	pub fn finish(mut self) -> u64 {
		self.stop();
		self.peak.load(Ordering::Relaxed)
	}

	fn stop(&mut self) {
		self.done.store(true, Ordering::Relaxed);
		if let Some(sampler) = self.sampler.take() {
			let _ = sampler.join();
		}
	}
}

impl Drop for RssPeak {
	fn drop(&mut self) {
		self.stop();
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_peer_id_is_read_from_the_identity_line() {
		let line = "2026-11-24 INFO statement_node: 🏷  Local node identity is: \
			12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm";
		assert_eq!(
			peer_id_in(line).as_deref(),
			Some("12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm")
		);
		assert_eq!(peer_id_in("Local node identity is: "), None);
		assert_eq!(peer_id_in("Statement store opened with 0 statements"), None);
	}

	#[test]
	fn this_process_has_used_some_cpu() {
		let spin = Instant::now();
		while spin.elapsed() < Duration::from_millis(50) {}
		assert!(cpu_time(std::process::id()) >= Duration::from_millis(10));
		assert_eq!(cpu_time(u32::MAX), Duration::ZERO);
	}

	#[test]
	fn metrics_are_read_by_exact_name() {
		let text = "# HELP substrate_sub_libp2p_peers_count Peers.\n\
			substrate_sub_libp2p_peers_count_max 9\n\
			substrate_sub_libp2p_peers_count 2\n\
			substrate_statement_store_statements 100000\n";
		assert_eq!(metric_value(text, PEERS_METRIC), Some(2.0));
		assert_eq!(metric_value(text, STATEMENTS_METRIC), Some(100_000.0));
		assert_eq!(metric_value(text, "substrate_missing"), None);
	}

	#[test]
	fn node_keys_are_64_hex_digits_and_differ() {
		assert_eq!(node_key(0).len(), 64);
		assert_ne!(node_key(0), node_key(1));
	}
}
