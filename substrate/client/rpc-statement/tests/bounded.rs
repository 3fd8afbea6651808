//! The RPC methods in process: lagging subscribers are dropped with an error, dumps too large
//! for one response point to the paged method, and the paged dump returns everything once.

mod common;

use statement_test_support::hex::encode as hex;

use common::{open, open_with_budget};
use jsonrpsee::{MethodsError, RpcModule};
use serde_json::{json, Value};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult};
use statement_rpc::StatementRpc;
use statement_store::Store;
use std::{
	collections::HashSet,
	sync::Arc,
	time::{Duration, Instant},
};

/// Statement `n` of eight accounts, `size` data bytes that begin with `n`.
fn numbered(n: u32, size: usize) -> Statement {
	let mut data = vec![0u8; size];
	data[..4].copy_from_slice(&n.to_le_bytes());
	TestStatement::new().expiry(u32::MAX, n).data(data).signed_ed25519(&ed25519_pair(n % 8))
}

/// The RPC module over `store`, its subscribers dropped once `queue_bytes` behind.
fn module_with_queue(store: &Store, queue_bytes: usize) -> RpcModule<StatementRpc> {
	StatementRpc::new(Arc::new(store.clone()), true)
		.with_subscriber_queue_bytes(queue_bytes)
		.into_module()
}

/// Submit 1,000-byte statements until the store has no subscriber left; how many it took.
async fn submit_until_dropped(store: &Store) -> u32 {
	let deadline = Instant::now() + Duration::from_secs(60);
	let mut n = 0;
	while store.metrics().subscriptions != 0 {
		assert!(Instant::now() < deadline, "still subscribed after {n} statements");
		assert_eq!(store.submit(numbered(n, 1000), StatementSource::Local), SubmitResult::New);
		n += 1;
		if n % 50 == 0 {
			tokio::time::sleep(Duration::from_millis(10)).await;
		}
	}
	n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_never_reads_is_dropped_with_an_error_and_forgotten() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module_with_queue(&store, 16 * 1024);
	// A client whose buffer holds four notifications, and which never reads.
	let mut subscription =
		module.subscribe("statement_subscribeStatement", vec![json!("any")], 4).await.unwrap();
	assert_eq!(store.metrics().subscriptions, 1);
	let n = submit_until_dropped(&store).await;
	assert!(n < 1000, "dropped after about 16 KiB plus what the client holds, not {n} statements");
	// The client gets what was in its buffer, then the subscription ends.
	let mut received = 0;
	while let Some(item) =
		tokio::time::timeout(Duration::from_secs(30), subscription.next::<Value>())
			.await
			.expect("the subscription ends")
	{
		item.unwrap();
		received += 1;
	}
	assert!(received <= 5, "{received} notifications");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_subscriber_is_told_why_in_an_error_notification() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module_with_queue(&store, 16 * 1024);
	// The raw messages the connection would write, four at most in its buffer, unread.
	let request = json!({
		"jsonrpc": "2.0", "id": 1, "method": "statement_subscribeStatement", "params": ["any"],
	});
	let (response, mut messages) = module.raw_json_request(&request.to_string(), 4).await.unwrap();
	let response: Value = serde_json::from_str(response.get()).unwrap();
	let id = response["result"].clone();
	assert!(!id.is_null(), "{response}");
	submit_until_dropped(&store).await;
	// The client reads what it was sent: the replay, the notifications its buffer held, then
	// the error, which waited for room.
	let mut seen = Vec::new();
	let error = loop {
		let message = tokio::time::timeout(Duration::from_secs(30), messages.recv())
			.await
			.unwrap_or_else(|_| panic!("no error notification after {} others", seen.len()))
			.unwrap_or_else(|| {
				panic!("the connection closed without an error, after {} notifications", seen.len())
			});
		let message: Value = serde_json::from_str(message.get()).unwrap();
		if message["params"].get("error").is_some() {
			break message;
		}
		seen.push(message);
	};
	assert_eq!(error["method"], "statement_statement", "{error}");
	assert_eq!(error["params"]["subscription"], id, "{error}");
	let reason = error["params"]["error"].as_str().unwrap();
	assert!(reason.starts_with("subscription dropped"), "{reason}");
	assert!(seen.len() <= 5, "{} notifications before the error", seen.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_does_not_read_holds_at_most_its_in_flight_bytes() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module_with_queue(&store, 4 << 20);
	// A buffer of 10,000 messages, never read: only the pump's byte bound holds it back.
	let request = json!({
		"jsonrpc": "2.0", "id": 1, "method": "statement_subscribeStatement", "params": ["any"],
	});
	let (_, mut messages) = module.raw_json_request(&request.to_string(), 10_000).await.unwrap();
	// 4 MiB of 20 KB statements, one commit at a time, so that each could be a notification.
	for n in 0..200 {
		assert_eq!(store.submit(numbered(n, 20_000), StatementSource::Local), SubmitResult::New);
		store.wait_for_matching();
		tokio::time::sleep(Duration::from_millis(2)).await;
	}
	tokio::time::sleep(Duration::from_millis(300)).await;
	// What the buffer holds now: as it is read, the pump fills it again behind.
	let held = messages.len();
	let (mut notifications, mut bytes, mut largest) = (0, 0, 0);
	for _ in 0..held {
		let message = messages.try_recv().unwrap();
		let message: Value = serde_json::from_str(message.get()).unwrap();
		let Some(result) = message["params"].get("result") else { continue };
		if result["data"].get("remaining").is_some() {
			continue;
		}
		let size = serde_json::to_string(result).unwrap().len();
		notifications += 1;
		bytes += size;
		largest = largest.max(size);
	}
	assert!(notifications > 2, "only {notifications} notifications: the bound is in bytes");
	assert!(
		bytes <= statement_rpc::limits::CONNECTION_IN_FLIGHT_BYTES + largest,
		"{bytes} bytes in {notifications} notifications waited in the buffer"
	);
	assert_eq!(store.metrics().subscriptions, 1, "the subscriber is within its queue");
}

/// A notification the pump cannot send yet (the client does not read) counts against the
/// store's subscription budget while it waits: past the budget its subscriber is dropped,
/// and told why, like one whose queue grew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_page_held_for_a_client_that_does_not_read_counts_against_the_budget() {
	let dir = common::dir();
	// Room for the subscription's own state; not for a 160 KB page of hex besides.
	let store = open_with_budget(&dir, 128 * 1024);
	// 200 KB stored: a replay of two pages, the last of them ~80 KB (~160 KB as hex).
	for n in 0..10 {
		assert_eq!(store.submit(numbered(n, 20_000), StatementSource::Local), SubmitResult::New);
	}
	let module = module_with_queue(&store, 4 << 20);
	// A buffer of one message, never read: the first page fills it, and the last page waits
	// in the pump.
	let request = json!({
		"jsonrpc": "2.0", "id": 1, "method": "statement_subscribeStatement", "params": ["any"],
	});
	let (_, mut messages) = module.raw_json_request(&request.to_string(), 1).await.unwrap();
	let deadline = Instant::now() + Duration::from_secs(60);
	while store.metrics().subscriptions_dropped_for_budget == 0 {
		let metrics = store.metrics();
		assert!(
			Instant::now() < deadline,
			"not dropped: {} subscriptions, {} bytes queued",
			metrics.subscriptions,
			metrics.subscription_queued_bytes
		);
		tokio::time::sleep(Duration::from_millis(20)).await;
	}
	assert_eq!(store.metrics().subscriptions, 0);
	assert_eq!(store.metrics().subscription_queued_bytes, 0, "the held page left the count");
	// The client reads its buffer: the first page, then the error, not the held page.
	let mut pages = 0;
	let error = loop {
		let message = tokio::time::timeout(Duration::from_secs(30), messages.recv())
			.await
			.unwrap_or_else(|_| panic!("no error notification after {pages} pages"))
			.expect("the connection stays open");
		let message: Value = serde_json::from_str(message.get()).unwrap();
		match message["params"].get("error") {
			Some(error) => break error.as_str().unwrap().to_string(),
			None => pages += 1,
		}
	};
	assert_eq!(pages, 1, "only the first page was sent");
	assert!(error.starts_with("subscription dropped"), "{error}");
}

/// Past half the store's subscription budget a subscription is refused with the code
/// jsonrpsee gives a connection's subscription limit, saying why; a bad filter is still
/// answered as one; one closing makes room again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_past_the_stores_budget_are_refused_as_too_many() {
	let dir = common::dir();
	// Half of it holds two subscriptions' state.
	let store = open_with_budget(&dir, 4 * statement_primitives::SUBSCRIPTION_STATE_BYTES);
	let module = module_with_queue(&store, 1 << 20);
	let subscribe =
		|filter: Value| module.subscribe("statement_subscribeStatement", vec![filter], 16);
	let first = subscribe(json!("any")).await.expect("the first opens");
	let _second = subscribe(json!("any")).await.expect("the second opens");
	let Err(MethodsError::JsonRpc(err)) = subscribe(json!("any")).await else {
		panic!("the third was not refused with a JSON-RPC error")
	};
	assert_eq!(err.code(), jsonrpsee::types::error::TOO_MANY_SUBSCRIPTIONS_CODE);
	assert!(err.message().contains("too many subscriptions"), "{}", err.message());
	let Err(MethodsError::JsonRpc(err)) = subscribe(json!({"matchAll": "nope"})).await else {
		panic!("a bad filter was not refused with a JSON-RPC error")
	};
	assert_eq!(err.code(), statement_rpc::error::INVALID_PARAMS, "{}", err.message());
	assert_eq!(store.metrics().subscriptions_refused_for_budget, 1);
	drop(first);
	let deadline = Instant::now() + Duration::from_secs(60);
	while store.metrics().subscriptions != 1 {
		let open = store.metrics().subscriptions;
		assert!(Instant::now() < deadline, "{open} subscriptions still open after one closed");
		tokio::time::sleep(Duration::from_millis(20)).await;
	}
	subscribe(json!("any")).await.expect("room again");
}

#[tokio::test]
async fn a_dump_too_large_for_one_response_points_to_the_paged_method() {
	let dir = common::dir();
	let store = open(&dir);
	let expected: HashSet<String> = (0..300)
		.map(|n| {
			let statement = numbered(n, 1000);
			store.submit(statement.clone(), StatementSource::Local);
			hex(&statement.encode())
		})
		.collect();
	// Room for about 70 statements in one answer.
	let module = StatementRpc::new(Arc::new(store.clone()), true)
		.with_max_response_bytes(200 * 1024)
		.into_module();
	let err = module.call::<_, Value>("statement_dump", Vec::<Value>::new()).await.unwrap_err();
	let MethodsError::JsonRpc(err) = err else { panic!("expected a JSON-RPC error, got {err}") };
	assert_eq!(err.code(), statement_rpc::error::RESPONSE_TOO_LARGE);
	assert!(err.message().contains("page through it with statement_dumpPage"), "{}", err.message());

	let mut seen = Vec::new();
	let mut cursor = Value::Null;
	let mut pages = 0;
	loop {
		let page: Value =
			module.call("statement_dumpPage", vec![cursor.clone(), json!(50)]).await.unwrap();
		let statements = page["statements"].as_array().unwrap();
		assert!(statements.len() <= 50);
		seen.extend(statements.iter().map(|s| s.as_str().unwrap().to_string()));
		pages += 1;
		cursor = page["next"].clone();
		if cursor.is_null() {
			break;
		}
	}
	assert!(pages >= 6, "{pages} pages");
	assert_eq!(seen.len(), expected.len(), "each statement once");
	assert_eq!(seen.into_iter().collect::<HashSet<_>>(), expected);

	let small = StatementRpc::new(Arc::new(store), true).into_module();
	let all: Vec<String> = small.call("statement_dump", Vec::<Value>::new()).await.unwrap();
	assert_eq!(all.len(), 300, "a dump that fits is answered whole");
	let page: Value = small.call("statement_dumpPage", vec![Value::Null]).await.unwrap();
	assert_eq!(page["statements"].as_array().unwrap().len(), 300);
	assert_eq!(page["next"], json!(null));
}

/// Live subscriptions are served from one task: many idle ones each get exactly the new
/// statements they match, in order, and one whose client closes it is forgotten by the store
/// within a sweep of the pump.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_subscriptions_get_their_statements_and_are_forgotten_when_closed() {
	let dir = common::dir();
	let store = open(&dir);
	let module: RpcModule<StatementRpc> =
		StatementRpc::new(Arc::new(store.clone()), true).into_module();
	let mut subscriptions = Vec::new();
	for _ in 0..200 {
		subscriptions.push(
			module.subscribe("statement_subscribeStatement", vec![json!("any")], 64).await.unwrap(),
		);
	}
	// Each first gets its (empty) replay.
	for subscription in &mut subscriptions {
		let first: (Value, _) = subscription.next().await.unwrap().unwrap();
		assert_eq!(first.0["data"]["statements"], json!([]), "{}", first.0);
	}
	let sent: Vec<String> = (0..5)
		.map(|n| {
			let statement = numbered(n, 100);
			assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
			hex(&statement.encode())
		})
		.collect();
	for subscription in &mut subscriptions {
		let mut got = Vec::new();
		while got.len() < sent.len() {
			let (event, _): (Value, _) =
				tokio::time::timeout(Duration::from_secs(30), subscription.next())
					.await
					.expect("live statements arrive")
					.unwrap()
					.unwrap();
			for statement in event["data"]["statements"].as_array().unwrap() {
				got.push(statement.as_str().unwrap().to_string());
			}
		}
		assert_eq!(got, sent, "each new statement once, in order");
	}
	assert_eq!(store.metrics().subscriptions, 200);
	for mut subscription in subscriptions.drain(..100) {
		subscription.close();
	}
	let deadline = Instant::now() + Duration::from_secs(30);
	while store.metrics().subscriptions != 100 {
		let open = store.metrics().subscriptions;
		assert!(Instant::now() < deadline, "{open} subscriptions still open, 100 expected");
		tokio::time::sleep(Duration::from_millis(20)).await;
	}
}
