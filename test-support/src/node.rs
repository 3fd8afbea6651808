//! A `statement-node` child process, started as every test and harness starts it: RPC and
//! metrics on ports the OS picks, ready once the node has written its readiness file.
//!
//! The readiness file is the node's own contract (`--ready-file PATH`): once its JSON-RPC
//! server, its metrics endpoint and its p2p listeners are bound, the node writes `PATH` whole
//! (a temporary file renamed over it) with what it serves, as JSON ([`Ready`]). Nothing is
//! read from the node's log to find a port. The log is drained on a thread of its own (so the
//! node never blocks on a full pipe): its last lines are kept to explain a failure, and its
//! lines can be read as they come ([`Node::logs`]). The process is SIGKILLed when its handle
//! drops.

use crate::{http, metrics::Metrics, Error, Result};
use serde::Deserialize;
use std::{
	collections::VecDeque,
	ffi::OsString,
	io::{BufRead, BufReader},
	net::SocketAddr,
	path::{Path, PathBuf},
	process::{Child, Command, ExitStatus, Stdio},
	sync::{
		mpsc::{sync_channel, Receiver, RecvTimeoutError},
		Arc, Mutex,
	},
	time::{Duration, Instant},
};

/// The node's flag naming its readiness file.
pub const READY_FILE_FLAG: &str = "--ready-file";

/// How long a start may take: generous, since a reopened store may first catch up on its
/// journal, on two cores shared with other tests.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// What the node logs once its readiness file is written: the end of its start.
pub const READY_LOGGED: &str = "Ready: wrote ";

/// How long the start's last log lines may take to arrive after the readiness file (a log
/// filter that hides them costs this much once).
const READY_LOG_WAIT: Duration = Duration::from_secs(5);

/// How often the readiness file is looked for.
const POLL: Duration = Duration::from_millis(20);

/// Log lines kept to explain a failure.
const LOG_TAIL: usize = 200;

/// Log lines held for [`Node::logs`] before later ones are dropped from it (they are still in
/// the tail): a node that runs for hours with nobody reading must not grow the harness.
pub const LOG_QUEUE: usize = 65_536;

/// What the node wrote in its readiness file.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Ready {
	/// The node's process id.
	pub pid: u32,
	/// The JSON-RPC address (HTTP and WebSocket).
	pub rpc: SocketAddr,
	/// The Prometheus address; `None` under `--no-prometheus`.
	pub prometheus: Option<SocketAddr>,
	/// The node's PeerId.
	pub peer_id: String,
	/// The p2p addresses it listens on, each ending in `/p2p/<peer_id>`.
	pub listen: Vec<String>,
	/// Statements the store held when it opened.
	pub statements: u64,
}

impl Ready {
	/// Read a readiness file.
	pub fn read(path: &Path) -> Result<Ready> {
		let text = std::fs::read_to_string(path)
			.map_err(|err| Error::new(format!("{}: {err}", path.display())))?;
		serde_json::from_str(&text)
			.map_err(|err| Error::new(format!("{}: {err}: {text:.300}", path.display())))
	}
}

/// How to start the node.
#[derive(Clone, Debug)]
pub struct Launch {
	binary: PathBuf,
	args: Vec<OsString>,
	/// Soft descriptor limit, and the hard one (`None`: left as it is).
	descriptors: Option<(u64, Option<u64>)>,
	env: Vec<(OsString, OsString)>,
}

impl Launch {
	/// Run `binary` (see [`crate::binary`]). The launcher adds only `--rpc-port 0` and
	/// `--prometheus-port 0` where the caller's arguments name no port and `--ready-file` where
	/// they name no readiness file of their own. The node's `TMPDIR` is a directory of the
	/// launcher's, removed with the [`Node`], so a temporary base path (`--tmp`, `--dev`) of
	/// a node killed with SIGKILL does not stay behind (the node removes its own only when it
	/// stops cleanly).
	pub fn new(binary: impl Into<PathBuf>) -> Self {
		Launch { binary: binary.into(), args: Vec::new(), descriptors: None, env: Vec::new() }
	}

	/// `--dev`.
	pub fn dev(self) -> Self {
		self.arg("--dev")
	}

	/// `--chain spec`: `dev`, `local` or a chain spec file.
	pub fn chain(self, spec: impl Into<OsString>) -> Self {
		self.arg("--chain").arg(spec)
	}

	/// `-d path`: the same on every start reopens what the last one left.
	pub fn base_path(self, path: impl AsRef<Path>) -> Self {
		self.arg("-d").arg(path.as_ref())
	}

	/// Listen for peers on loopback only, on a port the OS picks.
	pub fn loopback(self) -> Self {
		self.args(["--listen-addr", "/ip4/127.0.0.1/tcp/0"])
	}

	/// One more argument.
	pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
		self.args.push(arg.into());
		self
	}

	/// More arguments.
	pub fn args<I: IntoIterator<Item = S>, S: Into<OsString>>(mut self, args: I) -> Self {
		self.args.extend(args.into_iter().map(Into::into));
		self
	}

	/// Set an environment variable for the node.
	pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
		self.env.push((key.into(), value.into()));
		self
	}

	/// Start the node with soft and hard descriptor limits of `limit`, which it cannot raise.
	pub fn descriptor_limit(mut self, limit: u64) -> Self {
		self.descriptors = Some((limit, Some(limit)));
		self
	}

	/// Start the node with a soft descriptor limit of `limit` and the hard limit as it is,
	/// which the node may raise its soft limit to.
	pub fn soft_descriptor_limit(mut self, limit: u64) -> Self {
		self.descriptors = Some((limit, None));
		self
	}

	/// The executable this launch runs.
	pub fn binary(&self) -> &Path {
		&self.binary
	}

	/// Start the node and wait until it is ready (its readiness file written), or fail with
	/// its log.
	pub fn start(&self) -> Result<Node> {
		let started = Instant::now();
		let ready_dir = tempfile::tempdir().map_err(|err| {
			Error::new(format!("a directory for the readiness file and temporary files: {err}"))
		})?;
		// The caller's own readiness file, if it names one; else one of the launcher's.
		let given = self.args.iter().position(|arg| arg == READY_FILE_FLAG);
		let ready_path = match given.and_then(|at| self.args.get(at + 1)) {
			Some(path) => PathBuf::from(path),
			None => ready_dir.path().join("ready.json"),
		};
		let mut command = Command::new(&self.binary);
		for flag in ["--rpc-port", "--prometheus-port"] {
			if !self.args.iter().any(|arg| arg == flag) {
				command.args([flag, "0"]);
			}
		}
		command.args(&self.args);
		if given.is_none() {
			command.arg(READY_FILE_FLAG).arg(&ready_path);
		}
		command
			.env("TMPDIR", ready_dir.path())
			.envs(self.env.iter().map(|(key, value)| (key, value)))
			.stdout(Stdio::null())
			.stderr(Stdio::piped());
		if let Some((soft, hard)) = self.descriptors {
			limit_descriptors(&mut command, soft, hard);
		}
		let mut child = command
			.spawn()
			.map_err(|err| Error::new(format!("cannot start {}: {err}", self.binary.display())))?;
		let tail = Arc::new(Mutex::new(VecDeque::new()));
		let logs = drain(&mut child, tail.clone())?;
		let mut node = Node {
			child,
			ready: None,
			logs,
			startup: Vec::new(),
			tail,
			started_in: Duration::ZERO,
			_ready_dir: ready_dir,
		};
		node.await_ready(&ready_path, started + START_TIMEOUT)?;
		node.started_in = started.elapsed();
		Ok(node)
	}
}

/// Give the child a soft descriptor limit of `soft` (and a hard one of `hard`, if given)
/// before it runs.
fn limit_descriptors(command: &mut Command, soft: u64, hard: Option<u64>) {
	use std::os::unix::process::CommandExt;
	// SAFETY: between fork and exec only getrlimit and setrlimit run, which are
	// async-signal-safe and touch only the struct they are given.
	unsafe {
		command.pre_exec(move || {
			let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
			if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
				return Err(std::io::Error::last_os_error());
			}
			limit.rlim_cur = soft;
			if let Some(hard) = hard {
				limit.rlim_max = hard;
			}
			if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
				return Err(std::io::Error::last_os_error());
			}
			Ok(())
		});
	}
}

/// A running node, SIGKILLed when dropped.
pub struct Node {
	child: Child,
	ready: Option<Ready>,
	logs: Receiver<String>,
	startup: Vec<String>,
	tail: Arc<Mutex<VecDeque<String>>>,
	started_in: Duration,
	_ready_dir: tempfile::TempDir,
}

impl Node {
	/// Wait for the readiness file, taking the log lines that come meanwhile.
	fn await_ready(&mut self, path: &Path, deadline: Instant) -> Result<()> {
		loop {
			match self.logs.recv_timeout(POLL) {
				Ok(line) => self.startup.push(line),
				Err(RecvTimeoutError::Timeout) => {}
				// The log closed: the process is gone or going; the exit check says so.
				Err(RecvTimeoutError::Disconnected) => std::thread::sleep(POLL),
			}
			if path.exists() {
				if let Ok(ready) = Ready::read(path) {
					self.ready = Some(ready);
					self.take_startup_log();
					return Ok(());
				}
			}
			if let Ok(Some(status)) = self.child.try_wait() {
				// Whatever it logged on the way out.
				std::thread::sleep(POLL);
				return Err(Error::new(format!(
					"the node exited ({status}) before it was ready; its log:\n{}",
					self.log_tail()
				)));
			}
			if Instant::now() > deadline {
				let _ = self.child.kill();
				let _ = self.child.wait();
				return Err(Error::new(format!(
					"the node was not ready within {START_TIMEOUT:?}; its log:\n{}",
					self.log_tail()
				)));
			}
		}
	}

	/// Take the lines the node logged up to its readiness (the line it logs right after the
	/// file is written), so that [`Node::startup_log`] holds all of its start.
	fn take_startup_log(&mut self) {
		if self.startup.iter().any(|line| line.contains(READY_LOGGED)) {
			return;
		}
		let deadline = Instant::now() + READY_LOG_WAIT;
		while let Some(left) = deadline.checked_duration_since(Instant::now()) {
			match self.logs.recv_timeout(left) {
				Ok(line) => {
					let last = line.contains(READY_LOGGED);
					self.startup.push(line);
					if last {
						return;
					}
				}
				Err(_) => return,
			}
		}
	}

	/// What the node said it serves.
	pub fn ready(&self) -> &Ready {
		self.ready.as_ref().expect("a started node is ready")
	}

	/// The JSON-RPC port (HTTP and WebSocket).
	pub fn rpc_port(&self) -> u16 {
		self.ready().rpc.port()
	}

	/// The Prometheus port; an error under `--no-prometheus`.
	pub fn metrics_port(&self) -> Result<u16> {
		self.ready()
			.prometheus
			.map(|addr| addr.port())
			.ok_or_else(|| Error::new("the node serves no metrics (--no-prometheus)"))
	}

	/// `http://127.0.0.1:<rpc port>`.
	pub fn http_url(&self) -> String {
		format!("http://127.0.0.1:{}", self.rpc_port())
	}

	/// `ws://127.0.0.1:<rpc port>`.
	pub fn ws_url(&self) -> String {
		format!("ws://127.0.0.1:{}", self.rpc_port())
	}

	/// The node's PeerId.
	pub fn peer_id(&self) -> &str {
		&self.ready().peer_id
	}

	/// Its p2p address on loopback (with `/p2p/<PeerId>`), if it listens there.
	pub fn loopback_address(&self) -> Option<&str> {
		self.ready().listen.iter().map(String::as_str).find(|addr| addr.starts_with("/ip4/127."))
	}

	/// A JSON-RPC call over HTTP: its result, or the error's text.
	pub fn rpc(&self, method: &str, params: serde_json::Value) -> Result<serde_json::Value> {
		http::rpc(self.rpc_port(), method, params)
	}

	/// One scrape of the node's metrics.
	pub fn metrics(&self) -> Result<Metrics> {
		Metrics::scrape(self.metrics_port()?)
	}

	/// The value of the one series `series` selects (see [`Metrics::value`]); an error if
	/// the node does not export it.
	pub fn metric(&self, series: &str) -> Result<f64> {
		self.metrics()?.value(series)
	}

	/// How long the start took, to ready.
	pub fn started_in(&self) -> Duration {
		self.started_in
	}

	/// The node's `RssAnon` in KiB (see [`anonymous_kib`]).
	pub fn anonymous_kib(&self) -> u64 {
		anonymous_kib(self.pid())
	}

	/// The process id.
	pub fn pid(&self) -> u32 {
		self.child.id()
	}

	/// The process, e.g. to see whether it exited.
	pub fn child_mut(&mut self) -> &mut Child {
		&mut self.child
	}

	/// The log lines of the node's start, to the one saying it is ready.
	pub fn startup_log(&self) -> &[String] {
		&self.startup
	}

	/// The log lines since the node was ready, as they come (at most [`LOG_QUEUE`] unread).
	pub fn logs(&self) -> &Receiver<String> {
		&self.logs
	}

	/// Wait for a log line containing `marker`, and return what follows it; an error with
	/// the lines seen if none comes within `within` or the node exits.
	pub fn wait_for_log(&mut self, marker: &str, within: Duration) -> Result<String> {
		let deadline = Instant::now() + within;
		let mut seen = Vec::new();
		while let Some(left) = deadline.checked_duration_since(Instant::now()) {
			match self.logs.recv_timeout(left.min(Duration::from_millis(200))) {
				Ok(line) => {
					if let Some(rest) = line.split(marker).nth(1) {
						return Ok(rest.to_string());
					}
					seen.push(line);
				}
				Err(RecvTimeoutError::Timeout) => {
					if let Ok(Some(status)) = self.child.try_wait() {
						return Err(Error::new(format!(
							"the node exited ({status}) before logging {marker:?}: {seen:#?}"
						)));
					}
				}
				Err(RecvTimeoutError::Disconnected) => break,
			}
		}
		Err(Error::new(format!("the node never logged {marker:?} within {within:?}: {seen:#?}")))
	}

	/// The last lines the node logged.
	pub fn log_tail(&self) -> String {
		let lines = self.tail.lock().map(|lines| Vec::from(lines.clone())).unwrap_or_default();
		lines.join("\n")
	}

	/// SIGKILL, and wait until the process is gone.
	pub fn kill(mut self) -> Result<()> {
		self.child.kill().map_err(|err| Error::new(format!("cannot kill the node: {err}")))?;
		self.child.wait().map_err(|err| Error::new(format!("cannot reap the node: {err}")))?;
		Ok(())
	}

	/// [`Node::stop`], then every line the node logged that was not read yet, to its last.
	pub fn stop_logged(self) -> Result<(ExitStatus, Vec<String>)> {
		// The channel outlives the process: take it before the handle goes.
		let (sender, placeholder) = sync_channel(0);
		drop(sender);
		let mut node = self;
		let logs = std::mem::replace(&mut node.logs, placeholder);
		let status = node.stop()?;
		// The log reader ends when the node's stderr closes.
		let mut lines = Vec::new();
		while let Ok(line) = logs.recv_timeout(Duration::from_secs(10)) {
			lines.push(line);
		}
		Ok((status, lines))
	}

	/// SIGTERM, then wait for the node to exit by itself; its exit status.
	pub fn stop(mut self) -> Result<ExitStatus> {
		let pid = libc::pid_t::try_from(self.child.id())
			.map_err(|_| Error::new("the node's pid does not fit pid_t"))?;
		// Through libc rather than the `kill` command, which a minimal system (a container,
		// a debootstrap) does not have. SAFETY: kill(2) with a valid signal only sends it.
		if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
			return Err(Error::new(format!(
				"SIGTERM to the node: {}",
				std::io::Error::last_os_error()
			)));
		}
		self.child.wait().map_err(|err| Error::new(format!("waiting for the node: {err}")))
	}
}

impl Drop for Node {
	fn drop(&mut self) {
		// After `stop` or `kill` the child is reaped and these fail harmlessly.
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

/// Read the node's log on a thread of its own, keeping the last lines and handing each on.
fn drain(child: &mut Child, tail: Arc<Mutex<VecDeque<String>>>) -> Result<Receiver<String>> {
	let stderr = child.stderr.take().ok_or_else(|| Error::new("the node's stderr is not piped"))?;
	let (sender, lines) = sync_channel(LOG_QUEUE);
	std::thread::spawn(move || {
		for line in BufReader::new(stderr).lines().map_while(std::result::Result::ok) {
			if let Ok(mut tail) = tail.lock() {
				if tail.len() == LOG_TAIL {
					tail.pop_front();
				}
				tail.push_back(line.clone());
			}
			// Full: nobody reads; the line is in the tail all the same.
			let _ = sender.try_send(line);
		}
	});
	Ok(lines)
}

/// `RssAnon` of process `pid` (heap and stacks, no mapped files) in KiB. Panics where it
/// cannot be read (Linux only): a memory bound must not pass on a figure never taken.
pub fn anonymous_kib(pid: u32) -> u64 {
	let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
		.unwrap_or_else(|err| panic!("/proc/{pid}/status: {err}"));
	let field = status.lines().find_map(|line| line.strip_prefix("RssAnon:"));
	field
		.and_then(|value| value.split_whitespace().next()?.parse().ok())
		.unwrap_or_else(|| panic!("no RssAnon in /proc/{pid}/status"))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_readiness_file_is_read_as_the_node_writes_it() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("ready.json");
		std::fs::write(
			&path,
			r#"{"pid": 42, "rpc": "127.0.0.1:40123", "prometheus": null,
			   "peer_id": "12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm",
			   "listen": ["/ip4/127.0.0.1/tcp/30333/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm"],
			   "statements": 1200}"#,
		)
		.unwrap();
		let ready = Ready::read(&path).unwrap();
		assert_eq!(ready.rpc.port(), 40123);
		assert_eq!(ready.prometheus, None);
		assert_eq!(ready.statements, 1200);
		std::fs::write(&path, r#"{"pid": 42}"#).unwrap();
		assert!(Ready::read(&path).unwrap_err().0.contains("missing field"));
	}

	#[test]
	fn a_node_that_exits_at_once_is_an_error_with_its_log() {
		// `false` exits at once without writing anything.
		let failed = Launch::new("/bin/false").start().err().expect("`false` is never ready");
		assert!(failed.0.contains("exited"), "{failed}");
	}
}
