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
		let mut child = Command::new(env!("CARGO_BIN_EXE_statement-node"))
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
		let rest = wait_for_log(&logs, "Running JSON-RPC server: addr=", &mut child);
		let addr = rest.split(',').next().unwrap_or_default();
		Node { child, port: port_of(addr), logs }
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
		let status =
			Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status().unwrap();
		assert!(status.success());
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
