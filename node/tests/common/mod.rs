//! The one fixture every node test shares: the real `statement-node` binary on a port the OS
//! picks, with its log readable.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::{
	io::{BufRead, BufReader},
	process::{Child, Command, Stdio},
	sync::mpsc::{channel, Receiver, RecvTimeoutError},
	time::{Duration, Instant},
};

/// A running `statement-node`, killed when dropped.
pub struct Node {
	/// The process.
	pub child: Child,
	/// Its JSON-RPC port.
	pub port: u16,
	/// Its log lines, as they come.
	pub logs: Receiver<String>,
}

/// Wait for a log line containing `marker` and return what follows it.
pub fn wait_for_log(logs: &Receiver<String>, marker: &str, child: &mut Child) -> String {
	let deadline = Instant::now() + Duration::from_secs(60);
	let mut seen = Vec::new();
	while let Some(left) = deadline.checked_duration_since(Instant::now()) {
		match logs.recv_timeout(left.min(Duration::from_millis(200))) {
			Ok(line) => {
				if let Some(rest) = line.split(marker).nth(1) {
					return rest.to_string();
				}
				seen.push(line);
			}
			Err(RecvTimeoutError::Timeout) => {
				if let Ok(Some(status)) = child.try_wait() {
					panic!("the node exited ({status}) before logging {marker:?}: {seen:#?}");
				}
			}
			Err(RecvTimeoutError::Disconnected) => break,
		}
	}
	panic!("the node never logged {marker:?}: {seen:#?}");
}

/// Port number at the start of `host:port...`.
pub fn port_of(text: &str) -> u16 {
	let after_colon = text.rsplit_once(':').map_or(text, |(_, rest)| rest);
	after_colon.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

impl Node {
	/// Start the node on an RPC port the OS picks, and learn the port from its log.
	pub fn start(args: &[&str]) -> Node {
		Node::start_logged(args).0
	}

	/// Start the node as [`Node::start`] does, and return with it its log lines up to and
	/// including the one naming the RPC address (which `start` reads past).
	pub fn start_logged(args: &[&str]) -> (Node, Vec<String>) {
		Node::start_command(Command::new(env!("CARGO_BIN_EXE_statement-node")), args)
	}

	/// Start `command` (the node's binary, set up by the caller) as [`Node::start_logged`]
	/// does.
	pub fn start_command(mut command: Command, args: &[&str]) -> (Node, Vec<String>) {
		let mut child = command
			.args(args)
			.args(["--rpc-port", "0", "--listen-addr", "/ip4/127.0.0.1/tcp/0"])
			.stdout(Stdio::null())
			.stderr(Stdio::piped())
			.spawn()
			.expect("the node starts");
		let stderr = child.stderr.take().unwrap();
		let (sender, logs) = channel();
		// Keeps draining the log, so the node never blocks on a full pipe.
		std::thread::spawn(move || {
			for line in BufReader::new(stderr).lines().map_while(Result::ok) {
				let _ = sender.send(line);
			}
		});
		let deadline = Instant::now() + Duration::from_secs(60);
		let mut seen = Vec::new();
		loop {
			match logs.recv_timeout(Duration::from_millis(200)) {
				Ok(line) => {
					let running =
						line.split("Running JSON-RPC server: addr=").nth(1).map(str::to_string);
					seen.push(line);
					if let Some(rest) = running {
						let port = port_of(rest.split(',').next().unwrap_or_default());
						return (Node { child, port, logs }, seen);
					}
				}
				Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {
					if let Ok(Some(status)) = child.try_wait() {
						panic!("the node exited ({status}) before serving RPC: {seen:#?}");
					}
				}
				Err(_) => {
					let _ = child.kill();
					let _ = child.wait();
					panic!("the node never started its RPC server: {seen:#?}");
				}
			}
		}
	}

	/// Its JSON-RPC address over HTTP.
	pub fn http(&self) -> String {
		format!("http://127.0.0.1:{}", self.port)
	}

	/// Its JSON-RPC address over WebSocket.
	pub fn ws(&self) -> String {
		format!("ws://127.0.0.1:{}", self.port)
	}

	/// SIGTERM, then wait for a clean exit.
	pub fn stop(mut self) -> std::process::ExitStatus {
		// Through libc rather than the `kill` command, which a minimal system (a container, a
		// debootstrap) does not have.
		let pid = libc::pid_t::try_from(self.child.id()).expect("a pid fits pid_t");
		// SAFETY: kill(2) with a valid signal number only sends a signal.
		let sent = unsafe { libc::kill(pid, libc::SIGTERM) };
		assert_eq!(sent, 0, "SIGTERM to the node: {}", std::io::Error::last_os_error());
		let status = self.child.wait().unwrap();
		std::mem::forget(self);
		status
	}
}

impl Drop for Node {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

/// Raw HTTP for what the JSON-RPC clients do not show: the server crate's helpers.
#[allow(unused_imports)]
pub use statement_rpc_server::testing::{exchange as http_exchange, post, Answer};
