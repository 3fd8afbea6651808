//! A `statement-node` child process for the harnesses that load one node (`crash_load`,
//! `node_load`): a chain spec giving every client account an unlimited allowance, starting on
//! a fixed base path with an OS-assigned RPC port, and SIGKILL.

use codec::Encode;
use serde_json::{json, Map, Value};
use statement_primitives::{statement_allowance_key, StatementAllowance};
use std::{
	io::{BufRead, BufReader},
	path::{Path, PathBuf},
	process::{Child, Command, Stdio},
	sync::mpsc::{channel, Receiver, RecvTimeoutError},
	time::{Duration, Instant},
};

/// How long a start may take before the harness gives up.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Log lines kept to explain a failed start.
const LOG_TAIL: usize = 30;

/// The genesis storage that lets each of `accounts` keep `u32::MAX` statements and bytes:
/// `(":statement_allowance:" ++ account, allowance)` pairs, as the chain spec holds them, so an
/// in-process store can be given exactly the node's allowances.
pub fn unlimited_allowances(accounts: &[[u8; 32]]) -> Vec<(Vec<u8>, Vec<u8>)> {
	let unlimited = StatementAllowance::new(u32::MAX, u32::MAX).encode();
	accounts.iter().map(|account| (statement_allowance_key(account), unlimited.clone())).collect()
}

/// Write a chain spec (Substrate's raw form, as `statement-node build-spec` prints) in which
/// each of `accounts` may keep `u32::MAX` statements and bytes, so nothing is ever evicted.
pub fn write_chain_spec(path: &Path, accounts: &[[u8; 32]]) -> Result<(), String> {
	let hex = |bytes: &[u8]| format!("0x{}", hex::encode(bytes));
	let top: Map<String, Value> = unlimited_allowances(accounts)
		.iter()
		.map(|(key, value)| (hex(key), Value::String(hex(value))))
		.collect();
	let spec = json!({
		"name": "Load harness",
		"id": "load_harness",
		"chainType": "Local",
		"bootNodes": [],
		"genesis": {"raw": {"top": top}},
	});
	std::fs::write(path, spec.to_string())
		.map_err(|err| format!("cannot write the chain spec {}: {err}", path.display()))
}

/// `statement-node` in the directory of this executable (`target/release` for a release
/// harness), or why there is none.
pub fn binary_beside_me() -> Result<PathBuf, String> {
	let exe = std::env::current_exe().map_err(|err| format!("cannot find myself: {err}"))?;
	let beside = exe.with_file_name("statement-node");
	if beside.is_file() {
		return Ok(beside);
	}
	Err(format!(
		"no {}: build it first (`cargo build --release -p statement-node`) or pass --node PATH",
		beside.display()
	))
}

/// How to start the node.
pub struct Launch {
	/// The `statement-node` executable.
	pub binary: PathBuf,
	/// `-d`: the same on every start, so each start reopens what the last one left.
	pub base_path: PathBuf,
	/// `--chain`.
	pub chain_spec: PathBuf,
}

/// A running node.
pub struct Node {
	child: Child,
	/// The JSON-RPC port (HTTP and WebSocket).
	pub port: u16,
	/// Statements the store reported at open.
	pub opened_with: Option<u64>,
}

impl Launch {
	/// Start the node and wait until it serves JSON-RPC; also returns how long that took.
	pub fn start(&self) -> Result<(Node, Duration), String> {
		let started = Instant::now();
		let mut child = Command::new(&self.binary)
			.arg("--chain")
			.arg(&self.chain_spec)
			.arg("-d")
			.arg(&self.base_path)
			.args(["--rpc-port", "0", "--no-prometheus", "--listen-addr", "/ip4/127.0.0.1/tcp/0"])
			.stdout(Stdio::null())
			.stderr(Stdio::piped())
			.spawn()
			.map_err(|err| format!("cannot start {}: {err}", self.binary.display()))?;
		let logs = drain(&mut child)?;
		let mut tail = Vec::new();
		let mut opened_with = None;
		let deadline = started + START_TIMEOUT;
		while let Some(left) = deadline.checked_duration_since(Instant::now()) {
			match logs.recv_timeout(left.min(Duration::from_millis(100))) {
				Ok(line) => {
					if let Some(rest) = line.split("Statement store opened with ").nth(1) {
						opened_with = rest.split(' ').next().and_then(|n| n.parse().ok());
					}
					if let Some(rest) = line.split("Running JSON-RPC server: addr=").nth(1) {
						let addr = rest.split(',').next().unwrap_or_default();
						let port = port_of(addr)
							.ok_or_else(|| format!("no port in the node's log line {line:?}"))?;
						return Ok((Node { child, port, opened_with }, started.elapsed()));
					}
					tail.push(line);
					if tail.len() > LOG_TAIL {
						tail.remove(0);
					}
				}
				Err(RecvTimeoutError::Timeout) => {
					if let Ok(Some(status)) = child.try_wait() {
						return Err(format!(
							"the node exited ({status}) before serving JSON-RPC; its log:\n{}",
							tail.join("\n")
						));
					}
				}
				Err(RecvTimeoutError::Disconnected) => {
					let status = child.wait().map_err(|err| err.to_string())?;
					return Err(format!(
						"the node exited ({status}) before serving JSON-RPC; its log:\n{}",
						tail.join("\n")
					));
				}
			}
		}
		let _ = child.kill();
		let _ = child.wait();
		Err(format!(
			"the node did not serve JSON-RPC within {START_TIMEOUT:?}; its log:\n{}",
			tail.join("\n")
		))
	}
}

/// Read the node's log on a thread of its own, so it never blocks on a full pipe.
fn drain(child: &mut Child) -> Result<Receiver<String>, String> {
	let stderr = child.stderr.take().ok_or("the node's stderr is not piped")?;
	let (sender, logs) = channel();
	std::thread::spawn(move || {
		for line in BufReader::new(stderr).lines().map_while(Result::ok) {
			// After the start the receiver is gone; the lines are read and dropped.
			let _ = sender.send(line);
		}
	});
	Ok(logs)
}

/// Port number at the end of `host:port`.
fn port_of(addr: &str) -> Option<u16> {
	let after_colon = addr.rsplit_once(':').map_or(addr, |(_, rest)| rest);
	after_colon.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

impl Node {
	/// The process id, for `/proc`.
	pub fn pid(&self) -> u32 {
		self.child.id()
	}

	/// `http://127.0.0.1:port`.
	pub fn http_url(&self) -> String {
		format!("http://127.0.0.1:{}", self.port)
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

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_port_is_read_from_the_log_address() {
		assert_eq!(port_of("127.0.0.1:40123"), Some(40123));
		assert_eq!(port_of("[::1]:9944"), Some(9944));
		assert_eq!(port_of("nowhere"), None);
	}
}
