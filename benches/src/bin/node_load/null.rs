//! The JSON-RPC path with a store that costs nothing: the bound a node's rate meets.
//!
//! `node_load --serve-null` (run by the harness as a child process of its own, so that its CPU
//! is read apart) serves the project's own RPC methods (`statement_rpc::StatementRpc`, the
//! module the node serves) over a plain jsonrpsee server on an OS-assigned port, in front of
//! [`NullStore`]: a submit is taken as new once the RPC layer has decoded it (hex, then SCALE),
//! and every query answers the same data the node's 1-topic query answers, already in memory.
//! What is left is the socket, the framing, JSON in and out and the hop to the blocking pool:
//! the node's rate cannot pass this server's, whatever its store does. The server is lighter
//! than the node's (no connection limits, timeouts or middleware), so the bound is a
//! generous one.

use crate::data::{self, Signed};
use statement_primitives::{
	AccountId, DecryptionKey, Error, Hash, Result, Statement, StatementSource, StatementStore,
	StatementSubscription, StatementsPage, SubmitResult, Topic, TopicFilter,
};
use std::{
	io::{BufRead, BufReader, Write},
	path::Path,
	process::{Child, Command, Stdio},
};

/// The line the child prints once it serves: this prefix, then the port.
const READY: &str = "null store serving on port ";

/// A store that does nothing: every submit is new, every query the same answer.
pub struct NullStore {
	answer: Vec<Vec<u8>>,
}

impl NullStore {
	/// A store whose queries all answer the data of the query set's 1-topic matches.
	pub fn answering_like(query_set: &[Signed]) -> NullStore {
		let wanted = data::one_topic();
		let answer = query_set
			.iter()
			.filter(|signed| wanted.iter().all(|topic| signed.statement.topics().contains(topic)))
			.filter_map(|signed| signed.statement.data().map(<[u8]>::to_vec))
			.collect();
		NullStore { answer }
	}

	fn unsupported<T>() -> Result<T> {
		Err(Error::Unsupported("the null store only takes submits and answers queries".into()))
	}
}

impl StatementStore for NullStore {
	fn statements(&self) -> Result<Vec<(Hash, Statement)>> {
		Ok(Vec::new())
	}

	fn statement(&self, _: &Hash) -> Result<Option<Statement>> {
		Ok(None)
	}

	fn has_statement(&self, _: &Hash) -> bool {
		false
	}

	fn broadcasts(&self, _: &[Topic]) -> Result<Vec<Vec<u8>>> {
		Ok(self.answer.clone())
	}

	fn posted(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Ok(self.answer.clone())
	}

	fn posted_clear(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Ok(self.answer.clone())
	}

	fn broadcasts_stmt(&self, _: &[Topic]) -> Result<Vec<Vec<u8>>> {
		Ok(self.answer.clone())
	}

	fn posted_stmt(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Ok(self.answer.clone())
	}

	fn posted_clear_stmt(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Ok(self.answer.clone())
	}

	fn submit(&self, _: Statement, _: StatementSource) -> SubmitResult {
		SubmitResult::New
	}

	fn remove(&self, _: &Hash) -> Result<()> {
		Ok(())
	}

	fn remove_by(&self, _: AccountId) -> Result<()> {
		Ok(())
	}

	fn statements_page(&self, _: Option<u64>, _: usize, _: usize) -> Result<StatementsPage> {
		Ok(StatementsPage { statements: Vec::new(), next: None })
	}

	fn subscribe_with_queue(
		&self,
		_: TopicFilter,
		_: usize,
	) -> Result<Box<dyn StatementSubscription>> {
		NullStore::unsupported()
	}

	fn admission_watermark(&self) -> u64 {
		0
	}

	fn admitted_page(&self, _: u64, _: u64, _: usize) -> Result<StatementsPage> {
		Ok(StatementsPage { statements: Vec::new(), next: None })
	}

	fn watch_admissions(&self, _: usize) -> Result<Box<dyn StatementSubscription>> {
		NullStore::unsupported()
	}
}

/// `node_load --serve-null`: serve the RPC methods over [`NullStore`] until killed.
pub fn serve() -> std::result::Result<(), String> {
	let query_set = data::query_set(&statement_store_benches::fixture::keys());
	let store = std::sync::Arc::new(NullStore::answering_like(&query_set));
	drop(query_set);
	let runtime = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.build()
		.map_err(|err| format!("cannot start the async runtime: {err}"))?;
	runtime.block_on(async move {
		let server = jsonrpsee::server::Server::builder()
			.build("127.0.0.1:0")
			.await
			.map_err(|err| format!("cannot listen: {err}"))?;
		let port = server.local_addr().map_err(|err| err.to_string())?.port();
		let module = statement_rpc::StatementRpc::new(store, false).into_module();
		let handle = server.start(module);
		println!("{READY}{port}");
		std::io::stdout().flush().map_err(|err| err.to_string())?;
		handle.stopped().await;
		Ok(())
	})
}

/// The null server, started as a child process of this executable.
pub struct NullServer {
	child: Child,
	/// Its JSON-RPC port.
	pub port: u16,
}

impl NullServer {
	/// Start `node_load --serve-null` and wait until it serves.
	pub fn start() -> std::result::Result<NullServer, String> {
		let exe = std::env::current_exe().map_err(|err| format!("cannot find myself: {err}"))?;
		let mut child = Command::new(Path::new(&exe))
			.arg("--serve-null")
			.stdout(Stdio::piped())
			.spawn()
			.map_err(|err| format!("cannot start the null server: {err}"))?;
		let stdout = child.stdout.take().ok_or("the null server's stdout is not piped")?;
		let mut line = String::new();
		BufReader::new(stdout)
			.read_line(&mut line)
			.map_err(|err| format!("cannot read the null server's port: {err}"))?;
		let port = line
			.trim()
			.strip_prefix(READY)
			.and_then(|port| port.parse().ok())
			.ok_or_else(|| format!("the null server did not start: {line:?}"))?;
		Ok(NullServer { child, port })
	}

	/// The process id, for `/proc`.
	pub fn pid(&self) -> u32 {
		self.child.id()
	}
}

impl Drop for NullServer {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_null_store_answers_what_the_one_topic_query_returns() {
		let keys = statement_store_benches::fixture::keys();
		let query_set = data::query_set(&keys);
		let store = NullStore::answering_like(&query_set);
		let answer = store.broadcasts(&data::one_topic()).unwrap();
		assert_eq!(answer.len(), data::QUERY_MATCHES);
		assert!(answer.iter().all(|item| item.len() == 256));
	}
}
