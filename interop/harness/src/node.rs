//! Our side: a `statement-node` process on loopback, its JSON-RPC and its metrics, started by
//! the workspace's launcher (`statement-test-support`) from the binary it finds or builds once.

use sc_network::{Multiaddr, PeerId};
use serde_json::{json, Value};
use statement_test_support::{binary, hex, http, node::Launch};
use std::path::Path;

pub use statement_test_support::binary::BINARY_ENV;

/// A running node, killed when dropped.
pub struct OurNode {
	node: statement_test_support::node::Node,
	/// JSON-RPC port.
	pub rpc_port: u16,
	/// Prometheus port.
	pub metrics_port: u16,
	/// Its PeerId.
	pub peer_id: PeerId,
	/// Its p2p address, with `/p2p/<PeerId>`.
	pub address: Multiaddr,
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
		let node = Launch::new(binary::statement_node()?)
			.dev()
			.base_path(dir)
			.args(["--no-discovery"])
			.loopback()
			.args(extra)
			.start()?;
		let address: Multiaddr = node
			.loopback_address()
			.ok_or("the node listens on no loopback address")?
			.parse()
			.map_err(|err| format!("the node's address: {err}"))?;
		let peer_id: PeerId =
			node.peer_id().parse().map_err(|err| format!("the node's PeerId: {err:?}"))?;
		Ok(OurNode {
			rpc_port: node.rpc_port(),
			metrics_port: node.metrics_port()?,
			peer_id,
			address,
			node,
			_dir: None,
		})
	}

	/// A JSON-RPC call over HTTP.
	pub fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
		Ok(self.node.rpc(method, params)?)
	}

	/// `statement_submit` of many encoded statements, in JSON-RPC batches; the answers.
	pub fn submit_all(&self, encoded: &[Vec<u8>]) -> Result<Vec<Value>, String> {
		let params: Vec<Value> = encoded.iter().map(|bytes| json!([hex::encode(bytes)])).collect();
		Ok(http::rpc_batch(self.rpc_port, "statement_submit", &params, 500)?)
	}

	/// `statement_submit` of an encoded statement.
	pub fn submit(&self, encoded: &[u8]) -> Result<Value, String> {
		self.rpc("statement_submit", json!([hex::encode(encoded)]))
	}

	/// Every statement the node stores, encoded (`statement_dumpPage` walk).
	pub fn stored(&self) -> Result<Vec<Vec<u8>>, String> {
		let mut cursor = Value::Null;
		let mut all = Vec::new();
		loop {
			let page = self.rpc("statement_dumpPage", json!([cursor, 1000]))?;
			for statement in page["statements"].as_array().ok_or("no statements")? {
				let text = statement.as_str().ok_or("not a string")?;
				all.push(hex::decode(text)?);
			}
			cursor = page["next"].clone();
			if cursor.is_null() {
				return Ok(all);
			}
		}
	}

	/// One metric of the node's (the one series `name` selects); an error if it does not
	/// export it.
	pub fn metric(&self, name: &str) -> Result<f64, String> {
		Ok(self.node.metric(name)?)
	}

	/// The node's last log lines.
	pub fn log(&self) -> String {
		self.node.log_tail()
	}
}
