//! The query hook: a one-shot query waits for it before the store answers, so that what it
//! brings into the store (a routed node's fetch from the topic's holders) is in the answer.
//! The hook here submits a statement after a pause, as a fetch over the network would.

mod common;

use common::{dir, open};
use serde_json::{json, Value};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{StatementSource, StatementStore, SubmitResult, Topic};
use statement_rpc::StatementRpc;
use statement_test_support::hex;
use std::{
	sync::{Arc, Mutex},
	time::Duration,
};

#[tokio::test]
async fn a_query_is_answered_after_its_hook_brought_the_statements_in() {
	let dir = dir();
	let store = Arc::new(open(&dir));
	let topic = Topic([7; 32]);
	let fetched = TestStatement::new()
		.expiring_in(3600, 1)
		.topics(&[topic])
		.data(b"from the holders".to_vec())
		.signed_ed25519(&ed25519_pair(1));
	let asked: Arc<Mutex<Vec<Vec<Topic>>>> = Arc::default();
	let hook = {
		let (store, asked) = (store.clone(), asked.clone());
		Arc::new(move |topics: Vec<Topic>| {
			asked.lock().unwrap().push(topics);
			let (store, statement) = (store.clone(), fetched.clone());
			Box::pin(async move {
				tokio::time::sleep(Duration::from_millis(50)).await;
				let result = store.submit(statement, StatementSource::Network);
				assert_eq!(result, SubmitResult::New, "the hook's statement is stored");
			}) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
		})
	};
	let rpc = StatementRpc::new(store.clone(), false).with_query_hook(hook);
	let module = rpc.into_module();
	let topic_hex = hex::encode(&topic.0);
	let request = json!({
		"jsonrpc": "2.0", "id": 1, "method": "statement_broadcasts", "params": [[topic_hex]]
	});
	let (response, _) = module.raw_json_request(&request.to_string(), 1).await.unwrap();
	let response: Value = serde_json::from_str(response.get()).unwrap();
	let expected = hex::encode(b"from the holders");
	assert_eq!(response["result"], json!([expected]), "the answer: {response}");
	assert_eq!(*asked.lock().unwrap(), vec![vec![topic]], "the hook was given the topics");
}
