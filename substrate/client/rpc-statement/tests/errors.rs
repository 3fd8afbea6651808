//! A store that fails reaches apps with the code of its failure: a full disk (retry later)
//! and damaged files (repair first) each have their own, apart from other failures. The store
//! here fails every call on purpose; the methods are the crate's own.

use jsonrpsee::RpcModule;
use serde_json::Value;
use statement_primitives::{
	AccountId, DecryptionKey, Error, Hash, Result, Statement, StatementSource, StatementStore,
	StatementSubscription, StatementsPage, SubmitResult, Topic, TopicFilter,
};
use statement_rpc::{
	error::{STORE_DAMAGED, STORE_DISK_FULL, STORE_FAILED},
	StatementRpc,
};
use std::sync::Arc;

/// Fails every call with its error.
struct Failing(Error);

impl StatementStore for Failing {
	fn statements(&self) -> Result<Vec<(Hash, Statement)>> {
		Err(self.0.clone())
	}
	fn statement(&self, _: &Hash) -> Result<Option<Statement>> {
		Err(self.0.clone())
	}
	fn has_statement(&self, _: &Hash) -> bool {
		false
	}
	fn broadcasts(&self, _: &[Topic]) -> Result<Vec<Vec<u8>>> {
		Err(self.0.clone())
	}
	fn posted(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Err(self.0.clone())
	}
	fn posted_clear(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Err(self.0.clone())
	}
	fn broadcasts_stmt(&self, _: &[Topic]) -> Result<Vec<Vec<u8>>> {
		Err(self.0.clone())
	}
	fn posted_stmt(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Err(self.0.clone())
	}
	fn posted_clear_stmt(&self, _: &[Topic], _: DecryptionKey) -> Result<Vec<Vec<u8>>> {
		Err(self.0.clone())
	}
	fn submit(&self, _: Statement, _: StatementSource) -> SubmitResult {
		SubmitResult::InternalError(self.0.clone())
	}
	fn remove(&self, _: &Hash) -> Result<()> {
		Err(self.0.clone())
	}
	fn remove_by(&self, _: AccountId) -> Result<()> {
		Err(self.0.clone())
	}
	fn statements_page(&self, _: Option<u64>, _: usize, _: usize) -> Result<StatementsPage> {
		Err(self.0.clone())
	}
	fn subscribe_with_queue(
		&self,
		_: TopicFilter,
		_: usize,
	) -> Result<Box<dyn StatementSubscription>> {
		Err(self.0.clone())
	}
	fn admission_watermark(&self) -> u64 {
		0
	}
	fn admitted_page(&self, _: u64, _: u64, _: usize) -> Result<StatementsPage> {
		Err(self.0.clone())
	}
	fn watch_admissions(&self, _: usize) -> Result<Box<dyn StatementSubscription>> {
		Err(self.0.clone())
	}
}

/// The error object `method` answers with.
async fn error_of(module: &RpcModule<StatementRpc>, method: &str, params: &str) -> Value {
	let request = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
	let (response, _) = module.raw_json_request(&request, 1).await.unwrap();
	let response: Value = serde_json::from_str(response.get()).unwrap();
	assert!(response["error"].is_object(), "{method} answered {response}");
	response["error"].clone()
}

#[tokio::test]
async fn each_kind_of_store_failure_has_its_own_code_on_every_method_that_reads() {
	let topics = format!(r#"[["0x{}"]]"#, "11".repeat(32));
	let hash = format!(r#"["0x{}"]"#, "22".repeat(32));
	let key = format!(r#"[["0x{}"], "0x{}"]"#, "11".repeat(32), "33".repeat(32));
	let calls = [
		("statement_broadcasts", topics.clone()),
		("statement_broadcastsStatement", topics),
		("statement_posted", key.clone()),
		("statement_postedClearStatement", key),
		("statement_dumpPage", "[null, 10]".to_string()),
		("statement_dump", "[]".to_string()),
		("statement_remove", hash),
	];
	let kinds = [
		(Error::DiskFull("the disk holding /db is nearly full".into()), STORE_DISK_FULL),
		(Error::Damaged("the database files are damaged".into()), STORE_DAMAGED),
		(Error::Db("an I/O error".into()), STORE_FAILED),
	];
	for (failure, code) in kinds {
		let module = StatementRpc::new(Arc::new(Failing(failure.clone())), true).into_module();
		for (method, params) in &calls {
			let error = error_of(&module, method, params).await;
			assert_eq!(error["code"], code, "{method} for {failure:?}: {error}");
			let message = error["message"].as_str().unwrap();
			assert!(message.contains(&failure.to_string()), "{method}: {message}");
		}
	}
}

#[tokio::test]
async fn a_failed_submit_is_a_result_not_an_error() {
	let module =
		StatementRpc::new(Arc::new(Failing(Error::DiskFull("full".into()))), false).into_module();
	let statement = statement_primitives::testing::TestStatement::new()
		.expiring_in(3600, 0)
		.signed_ed25519(&statement_primitives::testing::ed25519_pair(1));
	let request = format!(
		r#"{{"jsonrpc":"2.0","id":1,"method":"statement_submit","params":["{}"]}}"#,
		statement_test_support::hex::encode(&statement.encode())
	);
	let (response, _) = module.raw_json_request(&request, 1).await.unwrap();
	let response: Value = serde_json::from_str(response.get()).unwrap();
	assert_eq!(response["result"]["status"], "internalError", "{response}");
	// Upstream's kind, so that upstream's types read it.
	assert_eq!(response["result"]["Storage"], "full", "{response}");
}
