//! A `statement-node` child process, as every harness that runs the real node starts it: the
//! RPC and metrics ports left to the OS and read from the node's log, and the node counted as
//! ready only once both answer. Its log is kept (the last lines) to explain a failure, and the
//! lines the harnesses need from it are read on the way: the statements the store opened with
//! and the node's PeerId. The process is SIGKILLed when its handle drops.

use crate::metrics;
use std::{
	collections::VecDeque,
	io::{BufRead, BufReader},
	net::TcpStream,
	path::PathBuf,
	process::{Child, Command, Stdio},
	sync::{
		mpsc::{channel, Receiver, RecvTimeoutError},
		Arc, Mutex,
	},
	time::{Duration, Instant},
};

/// How long a start may take before the harness gives up: generous, since a reopened store may
/// first catch up on its journal, on two cores shared with the harness.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How often an endpoint that does not answer yet is tried again.
const RETRY: Duration = Duration::from_millis(20);

/// Log lines kept to explain a failure.
const LOG_TAIL: usize = 40;

/// The log line (stderr) that gives the JSON-RPC address.
const RPC_MARKER: &str = "Running JSON-RPC server: addr=";

/// The log line that gives the metrics address.
const METRICS_MARKER: &str = "Prometheus exporter started at ";

/// The log line that gives the statements found at open.
const OPENED_MARKER: &str = "Statement store opened with ";

/// The log line that names the node's PeerId.
const IDENTITY_MARKER: &str = "Local node identity is: ";

/// `--node` if given, else `statement-node` beside this executable (`target/release` for a
/// release harness), in `$CARGO_TARGET_DIR/release` or in `target/release`, whichever exists
/// first; or why there is none.
pub fn binary(explicit: Option<PathBuf>) -> Result<PathBuf, String> {
	if let Some(path) = explicit {
		return Ok(path);
	}
	let mut tried = Vec::new();
	if let Ok(exe) = std::env::current_exe() {
		tried.push(exe.with_file_name("statement-node"));
	}
	if let Some(target) = std::env::var_os("CARGO_TARGET_DIR") {
		tried.push(PathBuf::from(target).join("release").join("statement-node"));
	}
	tried.push(PathBuf::from("target/release/statement-node"));
	if let Some(found) = tried.iter().find(|path| path.is_file()) {
		return Ok(found.clone());
	}
	let tried: Vec<String> = tried.iter().map(|path| path.display().to_string()).collect();
	Err(format!(
		"no statement-node at {}: build it (`cargo build --release -p statement-node`) or pass \
		 --node PATH",
		tried.join(", ")
	))
}

/// Which chain the node runs.
#[derive(Clone, Debug)]
pub enum Chain {
	/// `--dev`: the dev accounts have allowances.
	Dev,
	/// `--chain PATH`, such as a spec from [`crate::chain_spec::write`].
	Spec(PathBuf),
}

/// How to start the node.
#[derive(Clone, Debug)]
pub struct Launch {
	/// The `statement-node` executable.
	pub binary: PathBuf,
	/// `-d`: the same on every start reopens what the last one left; `None` leaves it to the
	/// node (a temporary one under `--dev`).
	pub base_path: Option<PathBuf>,
	/// The chain.
	pub chain: Chain,
	/// Everything else the node is given (networking, limits); the launcher adds only the
	/// chain, the base path and `--rpc-port 0 --prometheus-port 0`.
	pub args: Vec<String>,
}

/// A running node, SIGKILLed when dropped.
pub struct Node {
	child: Child,
	/// The JSON-RPC port (HTTP and WebSocket).
	pub rpc_port: u16,
	/// The Prometheus port.
	pub metrics_port: u16,
	/// Statements the store reported at open.
	pub opened_with: Option<u64>,
	/// The PeerId the node announced.
	pub peer_id: Option<String>,
	log: Arc<Mutex<VecDeque<String>>>,
}

/// What the log has said so far about the start.
#[derive(Default)]
struct Seen {
	rpc_port: Option<u16>,
	metrics_port: Option<u16>,
	opened_with: Option<u64>,
	peer_id: Option<String>,
}

impl Seen {
	fn read(&mut self, line: &str) -> Result<(), String> {
		let after = |marker: &str| line.split(marker).nth(1);
		if let Some(rest) = after(OPENED_MARKER) {
			self.opened_with = rest.split(' ').next().and_then(|n| n.parse().ok());
		}
		if let Some(rest) = after(IDENTITY_MARKER) {
			self.peer_id = peer_id_in(rest);
		}
		if let Some(rest) = after(RPC_MARKER) {
			let port = port_of(rest.split(',').next().unwrap_or_default());
			self.rpc_port = Some(port.ok_or_else(|| format!("no port in the log line {line:?}"))?);
		}
		if let Some(rest) = after(METRICS_MARKER) {
			let port = port_of(rest.split('/').next().unwrap_or_default());
			self.metrics_port =
				Some(port.ok_or_else(|| format!("no port in the log line {line:?}"))?);
		}
		Ok(())
	}

	/// What a failed start had got to.
	fn describe(&self, rpc_answered: bool, metrics_answered: bool) -> String {
		let port = |port: Option<u16>, answered: bool| match port {
			None => "not logged yet".to_string(),
			Some(port) if answered => format!("{port}, answering"),
			Some(port) => format!("{port}, not answering"),
		};
		format!(
			"RPC port {}; metrics port {}",
			port(self.rpc_port, rpc_answered),
			port(self.metrics_port, metrics_answered)
		)
	}
}

impl Launch {
	/// Start the node and wait until its JSON-RPC port and its metrics endpoint both answer;
	/// also returns how long that took.
	pub fn start(&self) -> Result<(Node, Duration), String> {
		let started = Instant::now();
		let mut command = Command::new(&self.binary);
		match &self.chain {
			Chain::Dev => command.arg("--dev"),
			Chain::Spec(path) => command.arg("--chain").arg(path),
		};
		if let Some(base_path) = &self.base_path {
			command.arg("-d").arg(base_path);
		}
		let mut child = command
			.args(["--rpc-port", "0", "--prometheus-port", "0"])
			.args(&self.args)
			.stdout(Stdio::null())
			.stderr(Stdio::piped())
			.spawn()
			.map_err(|err| format!("cannot start {}: {err}", self.binary.display()))?;
		let log = Arc::new(Mutex::new(VecDeque::new()));
		let lines = drain(&mut child, log.clone())?;
		let mut node =
			Node { child, rpc_port: 0, metrics_port: 0, opened_with: None, peer_id: None, log };
		let seen = node.await_ready(&lines, started + START_TIMEOUT)?;
		node.opened_with = seen.opened_with;
		node.peer_id = seen.peer_id;
		Ok((node, started.elapsed()))
	}
}

impl Node {
	/// Read the log until it gives both ports, then try both until each answers.
	fn await_ready(&mut self, lines: &Receiver<String>, deadline: Instant) -> Result<Seen, String> {
		let mut seen = Seen::default();
		let (mut rpc_answered, mut metrics_answered) = (false, false);
		let mut log_open = true;
		loop {
			// Both addresses are logged once their listeners are bound; until then, the log.
			if log_open && (seen.rpc_port.is_none() || seen.metrics_port.is_none()) {
				match lines.recv_timeout(RETRY) {
					Ok(line) => seen.read(&line)?,
					Err(RecvTimeoutError::Timeout) => {}
					// The log closed: the process is gone or going; the exit check says so.
					Err(RecvTimeoutError::Disconnected) => log_open = false,
				}
			} else {
				if let Some(port) = seen.rpc_port.filter(|_| !rpc_answered) {
					rpc_answered = TcpStream::connect(("127.0.0.1", port)).is_ok();
				}
				if let Some(port) = seen.metrics_port.filter(|_| !metrics_answered) {
					metrics_answered = metrics::scrape(port).is_ok();
				}
				if let (Some(rpc), Some(metrics), true, true) =
					(seen.rpc_port, seen.metrics_port, rpc_answered, metrics_answered)
				{
					(self.rpc_port, self.metrics_port) = (rpc, metrics);
					return Ok(seen);
				}
				std::thread::sleep(RETRY);
			}
			if let Ok(Some(status)) = self.child.try_wait() {
				return Err(format!(
					"the node exited ({status}) while starting ({}); its log:\n{}",
					seen.describe(rpc_answered, metrics_answered),
					self.log_tail()
				));
			}
			if Instant::now() > deadline {
				let _ = self.child.kill();
				let _ = self.child.wait();
				return Err(format!(
					"the node was not ready within {START_TIMEOUT:?} ({}); its log:\n{}",
					seen.describe(rpc_answered, metrics_answered),
					self.log_tail()
				));
			}
		}
	}

	/// The process id, for `/proc`.
	pub fn pid(&self) -> u32 {
		self.child.id()
	}

	/// `http://127.0.0.1:<rpc port>`.
	pub fn http_url(&self) -> String {
		format!("http://127.0.0.1:{}", self.rpc_port)
	}

	/// The last lines the node logged.
	pub fn log_tail(&self) -> String {
		let lines = self.log.lock().map(|lines| Vec::from(lines.clone())).unwrap_or_default();
		lines.join("\n")
	}

	/// The metrics text, or why it could not be read.
	pub fn metrics(&self) -> Result<String, String> {
		metrics::scrape(self.metrics_port)
	}

	/// One metric's value, `None` if the node does not export it.
	pub fn metric(&self, name: &str) -> Result<Option<f64>, String> {
		Ok(metrics::value(&self.metrics()?, name))
	}

	/// SIGKILL, and wait until the process is gone.
	pub fn kill(mut self) -> Result<(), String> {
		self.child.kill().map_err(|err| format!("cannot kill the node: {err}"))?;
		self.child.wait().map_err(|err| format!("cannot reap the node: {err}"))?;
		Ok(())
	}
}

impl Drop for Node {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

/// Read the node's log on a thread of its own (so it never blocks on a full pipe), keeping the
/// last lines and sending each on while the start is watched.
fn drain(child: &mut Child, log: Arc<Mutex<VecDeque<String>>>) -> Result<Receiver<String>, String> {
	let stderr = child.stderr.take().ok_or("the node's stderr is not piped")?;
	let (sender, lines) = channel();
	std::thread::spawn(move || {
		for line in BufReader::new(stderr).lines().map_while(Result::ok) {
			if let Ok(mut lines) = log.lock() {
				if lines.len() == LOG_TAIL {
					lines.pop_front();
				}
				lines.push_back(line.clone());
			}
			// After the start nobody listens; the line is kept in the tail all the same.
			let _ = sender.send(line);
		}
	});
	Ok(lines)
}

/// Port number at the end of `host:port`.
fn port_of(addr: &str) -> Option<u16> {
	let after_colon = addr.rsplit_once(':').map_or(addr, |(_, rest)| rest);
	after_colon.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

/// The PeerId at the start of what follows the identity marker.
fn peer_id_in(rest: &str) -> Option<String> {
	let id: String = rest.chars().take_while(char::is_ascii_alphanumeric).collect();
	(!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_port_is_read_from_the_log_address() {
		assert_eq!(port_of("127.0.0.1:40123"), Some(40123));
		assert_eq!(port_of("[::1]:9944"), Some(9944));
		assert_eq!(port_of("nowhere"), None);
	}

	#[test]
	fn the_start_is_read_from_the_node_log() {
		let mut seen = Seen::default();
		for line in [
			"2026-11-28 INFO statement_node: Statement store opened with 1200 statements",
			"2026-11-24 INFO statement_node: 🏷  Local node identity is: \
			 12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm",
			"INFO Running JSON-RPC server: addr=127.0.0.1:40123, unsafe methods allowed, \
			 allowed origins=all",
			"INFO Prometheus exporter started at 127.0.0.1:40125/metrics",
		] {
			seen.read(line).unwrap();
		}
		assert_eq!(seen.opened_with, Some(1200));
		assert_eq!(
			seen.peer_id.as_deref(),
			Some("12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm")
		);
		assert_eq!((seen.rpc_port, seen.metrics_port), (Some(40123), Some(40125)));
		assert!(seen.describe(true, false).contains("40125, not answering"));
	}

	#[test]
	fn an_empty_identity_is_no_peer_id() {
		let mut seen = Seen::default();
		seen.read("Local node identity is: ").unwrap();
		assert_eq!(seen.peer_id, None);
	}
}
