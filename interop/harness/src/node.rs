//! Our side: a `statement-node` process on loopback, its JSON-RPC and its metrics.

use sc_network::{Multiaddr, PeerId};
use serde_json::{json, Value};
use std::{
	io::{BufRead, BufReader, Read, Write},
	net::TcpStream,
	path::{Path, PathBuf},
	process::{Child, Command, Stdio},
	sync::{
		mpsc::{channel, RecvTimeoutError},
		Arc, Mutex,
	},
	time::{Duration, Instant},
};

/// Environment variable naming the `statement-node` to test, instead of building one.
pub const BINARY_ENV: &str = "STATEMENT_NODE_BIN";

/// The node binary: [`BINARY_ENV`], else built from the repository (debug profile) with the
/// cargo running these tests, found where cargo reports its target directory.
pub fn binary() -> Result<PathBuf, String> {
	if let Some(named) = std::env::var_os(BINARY_ENV) {
		return Ok(PathBuf::from(named));
	}
	let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
	let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
	let built = Command::new(&cargo)
		.args(["build", "-p", "statement-node", "--manifest-path"])
		.arg(&manifest)
		.status()
		.map_err(|err| format!("cannot run cargo: {err}"))?;
	if !built.success() {
		return Err(format!("`cargo build -p statement-node` failed: {built}"));
	}
	let metadata = Command::new(&cargo)
		.args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
		.arg(&manifest)
		.output()
		.map_err(|err| format!("cannot run cargo metadata: {err}"))?;
	let metadata: Value = serde_json::from_slice(&metadata.stdout)
		.map_err(|err| format!("cargo metadata printed no JSON: {err}"))?;
	let target = metadata["target_directory"].as_str().ok_or("no target_directory")?;
	Ok(Path::new(target).join("debug").join("statement-node"))
}

/// A running node, killed when dropped.
pub struct OurNode {
	child: Child,
	/// JSON-RPC port.
	pub rpc_port: u16,
	/// Prometheus port.
	pub metrics_port: u16,
	/// Its PeerId.
	pub peer_id: PeerId,
	/// Its p2p address, with `/p2p/<PeerId>`.
	pub address: Multiaddr,
	log: Arc<Mutex<Vec<String>>>,
	_dir: Option<tempfile::TempDir>,
}

impl OurNode {
	/// Start a `--dev` node in a fresh directory with `extra` arguments (e.g.
	/// `--statement-protocol-version 1`), on loopback, without discovery.
	pub fn start(extra: &[&str]) -> Result<OurNode, String> {
		let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
		let mut node = OurNode::start_in(dir.path(), extra)?;
		node._dir = Some(dir);
		Ok(node)
	}

	/// [`OurNode::start`] with its database in `dir` (kept across restarts).
	pub fn start_in(dir: &Path, extra: &[&str]) -> Result<OurNode, String> {
		let mut child = Command::new(binary()?)
			.args(["--dev", "-d"])
			.arg(dir)
			.args(["--rpc-port", "0", "--prometheus-port", "0", "--no-discovery"])
			.args(["--listen-addr", "/ip4/127.0.0.1/tcp/0"])
			.args(extra)
			.stdout(Stdio::null())
			.stderr(Stdio::piped())
			.spawn()
			.map_err(|err| format!("cannot start statement-node: {err}"))?;
		let stderr = child.stderr.take().ok_or("no stderr")?;
		let (lines, logs) = channel();
		let log = Arc::new(Mutex::new(Vec::new()));
		let kept = log.clone();
		std::thread::spawn(move || {
			for line in BufReader::new(stderr).lines().map_while(Result::ok) {
				if let Ok(mut kept) = kept.lock() {
					kept.push(line.clone());
				}
				let _ = lines.send(line);
			}
		});
		let deadline = Instant::now() + Duration::from_secs(60);
		let (mut rpc, mut metrics, mut address) = (None, None, None);
		while rpc.is_none() || metrics.is_none() || address.is_none() {
			let line = match logs.recv_timeout(Duration::from_millis(200)) {
				Ok(line) => line,
				Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => continue,
				Err(_) => {
					let _ = child.kill();
					let seen = log.lock().map(|lines| lines.join("\n")).unwrap_or_default();
					return Err(format!("statement-node did not start:\n{seen}"));
				}
			};
			if let Some(rest) = line.split("Running JSON-RPC server: addr=").nth(1) {
				rpc = Some(port_of(rest.split(',').next().unwrap_or_default()));
			}
			if let Some(rest) = line.split("Prometheus exporter started at ").nth(1) {
				metrics = Some(port_of(rest.split('/').next().unwrap_or_default()));
			}
			if let Some(rest) = line.split("Listening for peers on ").nth(1) {
				if rest.starts_with("/ip4/127.0.0.1/") {
					address = rest.trim().parse::<Multiaddr>().ok();
				}
			}
		}
		let address = address.ok_or("no address")?;
		let peer_id = address
			.iter()
			.find_map(|protocol| match protocol {
				sc_network::multiaddr::Protocol::P2p(id) => PeerId::from_multihash(id).ok(),
				_ => None,
			})
			.ok_or("no PeerId in the node's address")?;
		Ok(OurNode {
			child,
			rpc_port: rpc.ok_or("no RPC port")?,
			metrics_port: metrics.ok_or("no metrics port")?,
			peer_id,
			address,
			log,
			_dir: None,
		})
	}

	/// A JSON-RPC call over HTTP.
	pub fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
		let body =
			json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
		let request = format!(
			"POST / HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
			body.len()
		);
		let answer = http(self.rpc_port, &request)?;
		let value: Value =
			serde_json::from_str(&answer).map_err(|err| format!("{method}: {err}: {answer}"))?;
		match value.get("result") {
			Some(result) => Ok(result.clone()),
			None => Err(format!("{method}: {value}")),
		}
	}

	/// `statement_submit` of many encoded statements, in JSON-RPC batches; the answers.
	pub fn submit_all(&self, encoded: &[Vec<u8>]) -> Result<Vec<Value>, String> {
		let mut answers = Vec::with_capacity(encoded.len());
		for chunk in encoded.chunks(500) {
			let batch: Vec<Value> = chunk
				.iter()
				.enumerate()
				.map(|(id, statement)| {
					json!({"jsonrpc": "2.0", "id": id, "method": "statement_submit", "params": [format!("0x{}", hex(statement))]})
				})
				.collect();
			let body = Value::Array(batch).to_string();
			let request = format!(
				"POST / HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
				body.len()
			);
			let answer: Value = serde_json::from_str(&http(self.rpc_port, &request)?)
				.map_err(|err| format!("statement_submit batch: {err}"))?;
			let mut results: Vec<(u64, Value)> = answer
				.as_array()
				.ok_or("the batch answer is not an array")?
				.iter()
				.map(|one| (one["id"].as_u64().unwrap_or(0), one["result"].clone()))
				.collect();
			results.sort_by_key(|(id, _)| *id);
			answers.extend(results.into_iter().map(|(_, result)| result));
		}
		Ok(answers)
	}

	/// `statement_submit` of an encoded statement.
	pub fn submit(&self, encoded: &[u8]) -> Result<Value, String> {
		self.rpc("statement_submit", json!([format!("0x{}", hex(encoded))]))
	}

	/// Every statement the node stores, encoded (`statement_dumpPage` walk).
	pub fn stored(&self) -> Result<Vec<Vec<u8>>, String> {
		let mut cursor = Value::Null;
		let mut all = Vec::new();
		loop {
			let page = self.rpc("statement_dumpPage", json!([cursor, 1000]))?;
			for statement in page["statements"].as_array().ok_or("no statements")? {
				let text = statement.as_str().ok_or("not a string")?;
				all.push(unhex(text)?);
			}
			cursor = page["next"].clone();
			if cursor.is_null() {
				return Ok(all);
			}
		}
	}

	/// One metric of the node's (the first sample whose line starts with `name`).
	pub fn metric(&self, name: &str) -> Result<f64, String> {
		let answer = http(self.metrics_port, "GET /metrics HTTP/1.0\r\n\r\n")?;
		Ok(answer
			.lines()
			.filter(|line| !line.starts_with('#'))
			.find_map(|line| line.strip_prefix(name)?.split_whitespace().last()?.parse().ok())
			.unwrap_or(0.0))
	}

	/// The node's log so far.
	pub fn log(&self) -> String {
		self.log.lock().map(|lines| lines.join("\n")).unwrap_or_default()
	}
}

impl Drop for OurNode {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

fn http(port: u16, request: &str) -> Result<String, String> {
	let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
	stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|err| err.to_string())?;
	stream.write_all(request.as_bytes()).map_err(|err| err.to_string())?;
	let mut answer = String::new();
	stream.read_to_string(&mut answer).map_err(|err| err.to_string())?;
	Ok(answer.split_once("\r\n\r\n").map_or(answer.clone(), |(_, body)| body.to_string()))
}

fn port_of(text: &str) -> u16 {
	let after_colon = text.rsplit_once(':').map_or(text, |(_, rest)| rest);
	after_colon.chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap_or(0)
}

/// Lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
	bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
	let digits = text.trim_start_matches("0x");
	(0..digits.len())
		.step_by(2)
		.map(|i| u8::from_str_radix(&digits[i..i + 2], 16).map_err(|err| err.to_string()))
		.collect()
}
