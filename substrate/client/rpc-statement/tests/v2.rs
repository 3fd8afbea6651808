//! The spec-v2 statement RPC (`statement_unstable_*`) in process: every rule of its methods,
//! the delivery guarantees of `statement_unstable_subscribe.md`, checked against a model over
//! random interleavings of filters, submits and slow reads, and a reader that stalls.

mod common;

use common::open;
use jsonrpsee::RpcModule;
use proptest::prelude::*;
use serde_json::{json, Value};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult, Topic};
use statement_rpc::{
	error::{INVALID_PARAMS, TOO_MANY_V2_SUBSCRIPTIONS, UNKNOWN_SUBSCRIPTION},
	v2::MAX_FILTERS,
	StatementRpc,
};
use statement_store::Store;
use statement_test_support::hex;
use std::{
	collections::{BTreeMap, BTreeSet},
	sync::Arc,
	time::Duration,
};
use tokio::sync::mpsc::Receiver;

/// How long an event may take to come: a hang detector on a busy machine.
const WITHIN: Duration = Duration::from_secs(60);

fn topic(n: u8) -> Topic {
	Topic([n; 32])
}

fn topic_hex(n: u8) -> String {
	hex::encode(&[n; 32])
}

/// Statement `n` on `topics`, by one of eight accounts.
fn numbered(n: u32, topics: &[u8]) -> Statement {
	let topics: Vec<Topic> = topics.iter().map(|t| topic(*t)).collect();
	TestStatement::new()
		.expiring_in(3600, n)
		.topics(&topics)
		.data(n.to_le_bytes().to_vec())
		.signed_ed25519(&ed25519_pair(n % 8))
}

fn module(store: &Store) -> RpcModule<StatementRpc> {
	StatementRpc::new(Arc::new(store.clone()), false).into_module()
}

/// A call's whole answer.
async fn call(module: &RpcModule<StatementRpc>, method: &str, params: Value) -> Value {
	let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
	let (response, _) = module.raw_json_request(&request.to_string(), 1).await.unwrap();
	serde_json::from_str(response.get()).unwrap()
}

/// A call's result; fails the test on an error.
async fn result(module: &RpcModule<StatementRpc>, method: &str, params: Value) -> Value {
	let answer = call(module, method, params.clone()).await;
	assert!(answer.get("error").is_none(), "{method} {params}: {answer}");
	answer["result"].clone()
}

/// A call's error code.
async fn error_code(module: &RpcModule<StatementRpc>, method: &str, params: Value) -> i64 {
	let answer = call(module, method, params.clone()).await;
	answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("{method} {params}: {answer}"))
}

/// A subscription: its id and the messages the connection would write, `buffer` at most.
async fn subscribe(
	module: &RpcModule<StatementRpc>,
	buffer: usize,
) -> (String, Receiver<Box<serde_json::value::RawValue>>) {
	let request =
		json!({"jsonrpc": "2.0", "id": 1, "method": "statement_unstable_subscribe", "params": []});
	let (response, messages) = module.raw_json_request(&request.to_string(), buffer).await.unwrap();
	let response: Value = serde_json::from_str(response.get()).unwrap();
	// In process jsonrpsee numbers subscriptions; the node's server gives 16 random
	// characters (`node/tests/v2.rs`). Either is passed back as a string.
	let id = match &response["result"] {
		Value::String(id) => id.clone(),
		Value::Number(id) => id.to_string(),
		_ => panic!("subscribe: {response}"),
	};
	(id, messages)
}

/// The next event of a subscription, or `None` if none comes within `wait`.
async fn next_event(
	messages: &mut Receiver<Box<serde_json::value::RawValue>>,
	wait: Duration,
) -> Option<Value> {
	let message = tokio::time::timeout(wait, messages.recv()).await.ok()??;
	let message: Value = serde_json::from_str(message.get()).unwrap();
	assert_eq!(message["method"], "statement_unstable_subscribeEvent", "{message}");
	Some(message["params"]["result"].clone())
}

async fn submit(store: &Store, statement: &Statement) {
	assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
}

#[tokio::test]
async fn subscribe_answers_an_opaque_string_and_filters_are_numbered_from_zero_never_reused() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module(&store);
	let (sub, _messages) = subscribe(&module, 64).await;
	let any = json!([sub, "any"]);
	assert_eq!(result(&module, "statement_unstable_add_filter", any.clone()).await, json!("0"));
	let all = json!([sub, {"matchAll": [topic_hex(1), topic_hex(2)]}]);
	assert_eq!(result(&module, "statement_unstable_add_filter", all).await, json!("1"));
	let removed = result(&module, "statement_unstable_remove_filter", json!([sub, "0"])).await;
	assert_eq!(removed, Value::Null);
	// Removing what is not there answers null too.
	for unknown in [json!([sub, "0"]), json!([sub, "99"]), json!(["nobody", "1"])] {
		assert_eq!(result(&module, "statement_unstable_remove_filter", unknown).await, Value::Null);
	}
	assert_eq!(result(&module, "statement_unstable_add_filter", any).await, json!("2"));
}

#[tokio::test]
async fn add_filter_refuses_what_the_spec_does_not_allow() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module(&store);
	let (sub, _messages) = subscribe(&module, 64).await;
	let five: Vec<String> = (1..=5).map(topic_hex).collect();
	for bad in [
		json!({"matchAny": [topic_hex(1)]}),
		json!({"matchAll": []}),
		json!({"matchAll": five}),
		json!({"matchAll": ["0x1234"]}),
		json!("Any"),
	] {
		let code = error_code(&module, "statement_unstable_add_filter", json!([sub, bad])).await;
		assert_eq!(code, i64::from(INVALID_PARAMS), "{bad}");
	}
	let unknown =
		error_code(&module, "statement_unstable_add_filter", json!(["nope", "any"])).await;
	assert_eq!(unknown, i64::from(UNKNOWN_SUBSCRIPTION));
}

#[tokio::test]
async fn the_filter_after_the_hundred_and_twenty_eighth_is_limit_reached_until_one_goes() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module(&store);
	let (sub, _messages) = subscribe(&module, 1024).await;
	for n in 0..MAX_FILTERS {
		let filter = json!([sub, {"matchAll": [hex::encode(&(n as u64).to_le_bytes().repeat(4))]}]);
		assert_eq!(
			result(&module, "statement_unstable_add_filter", filter).await,
			json!(n.to_string())
		);
	}
	let past = result(&module, "statement_unstable_add_filter", json!([sub, "any"])).await;
	assert_eq!(past, json!({"result": "limitReached"}));
	result(&module, "statement_unstable_remove_filter", json!([sub, "5"])).await;
	let again = result(&module, "statement_unstable_add_filter", json!([sub, "any"])).await;
	assert_eq!(again, json!(MAX_FILTERS.to_string()), "ids are never reused");
}

#[tokio::test]
async fn a_connection_holds_its_configured_number_of_subscriptions_and_never_fewer_than_two() {
	let dir = common::dir();
	let store = open(&dir);
	let module = StatementRpc::new(Arc::new(store.clone()), false)
		.with_v2_subscriptions_per_connection(1)
		.into_module();
	let (_first, _a) = subscribe(&module, 8).await;
	let (_second, _b) = subscribe(&module, 8).await;
	let third = call(&module, "statement_unstable_subscribe", json!([])).await;
	assert_eq!(third["error"]["code"], TOO_MANY_V2_SUBSCRIPTIONS, "{third}");
}

#[tokio::test]
async fn submit_answers_with_upstreams_outcomes() {
	let dir = common::dir();
	let store = open(&dir);
	let module = module(&store);
	let fresh = numbered(1, &[1]);
	let encoded = hex::encode(&fresh.encode());
	let first = result(&module, "statement_unstable_submit", json!([encoded])).await;
	assert_eq!(first, json!({"status": "new"}));
	assert_eq!(
		result(&module, "statement_unstable_submit", json!([encoded])).await,
		json!({"status": "known"})
	);
	let expired = TestStatement::new().expiry(1, 0).data(vec![1]).signed_ed25519(&ed25519_pair(1));
	let expired =
		result(&module, "statement_unstable_submit", json!([hex::encode(&expired.encode())])).await;
	assert_eq!(expired, json!({"status": "invalid", "reason": "alreadyExpired"}));
	let unsigned = TestStatement::new().expiring_in(3600, 0).data(vec![1]).unsigned();
	let unsigned =
		result(&module, "statement_unstable_submit", json!([hex::encode(&unsigned.encode())]))
			.await;
	assert_eq!(unsigned, json!({"status": "invalid", "reason": "noProof"}));
	let mut trailing = fresh.encode();
	trailing.push(0);
	for bad in [json!(["0xzz"]), json!(["0xffff"]), json!([hex::encode(&trailing)]), json!([7])] {
		assert_eq!(
			error_code(&module, "statement_unstable_submit", bad.clone()).await,
			i64::from(INVALID_PARAMS),
			"{bad}"
		);
	}
}

#[tokio::test]
async fn a_replay_then_new_statements_each_once_with_every_filter_that_takes_it() {
	let dir = common::dir();
	let store = open(&dir);
	let stored = numbered(1, &[1, 2]);
	submit(&store, &stored).await;
	let module = module(&store);
	let (sub, mut events) = subscribe(&module, 64).await;
	let one = result(
		&module,
		"statement_unstable_add_filter",
		json!([sub, {"matchAll": [topic_hex(1)]}]),
	)
	.await;
	assert_eq!(
		next_event(&mut events, WITHIN).await.unwrap(),
		json!({"event": "replayStatements", "filterId": one, "statements": [hex::encode(&stored.encode())]})
	);
	assert_eq!(
		next_event(&mut events, WITHIN).await.unwrap(),
		json!({"event": "replayDone", "filterId": one})
	);
	let two = result(
		&module,
		"statement_unstable_add_filter",
		json!([sub, {"matchAll": [topic_hex(2)]}]),
	)
	.await;
	// The stored statement again, for the new filter: a replay of its own.
	let replay = next_event(&mut events, WITHIN).await.unwrap();
	assert_eq!(replay["filterId"], two);
	assert_eq!(
		next_event(&mut events, WITHIN).await.unwrap(),
		json!({"event": "replayDone", "filterId": two})
	);
	// A new statement both take: once, naming both.
	let both = numbered(2, &[1, 2]);
	submit(&store, &both).await;
	let new = next_event(&mut events, WITHIN).await.unwrap();
	assert_eq!(
		new,
		json!({"event": "newStatements", "statements": [{"statement": hex::encode(&both.encode()), "filterIds": [one, two]}]})
	);
	// After remove_filter, the filter takes nothing more.
	result(&module, "statement_unstable_remove_filter", json!([sub, one])).await;
	let only_one = numbered(3, &[1]);
	let only_two = numbered(4, &[2]);
	submit(&store, &only_one).await;
	submit(&store, &only_two).await;
	let new = next_event(&mut events, WITHIN).await.unwrap();
	assert_eq!(
		new["statements"],
		json!([{"statement": hex::encode(&only_two.encode()), "filterIds": [two]}])
	);
	assert_eq!(next_event(&mut events, Duration::from_millis(300)).await, None);
}

#[tokio::test]
async fn a_reader_that_stalls_gets_everything_in_order_once_it_reads_again() {
	let dir = common::dir();
	let store = open(&dir);
	let module = StatementRpc::new(Arc::new(store.clone()), false)
		.with_subscriber_queue_bytes(16 * 1024)
		.into_module();
	// A connection buffer of four messages, not read while 1,000 statements come.
	let (sub, mut events) = subscribe(&module, 4).await;
	result(&module, "statement_unstable_add_filter", json!([sub, "any"])).await;
	let statements: Vec<Statement> = (0..1000).map(|n| numbered(n, &[9])).collect();
	for statement in &statements {
		submit(&store, statement).await;
	}
	let mut delivered = Vec::new();
	let mut stopped = false;
	while let Some(event) = next_event(&mut events, Duration::from_secs(5)).await {
		assert!(!stopped, "an event after stop: {event}");
		match event["event"].as_str().unwrap() {
			"replayDone" => {}
			"newStatements" => {
				for entry in event["statements"].as_array().unwrap() {
					delivered.push(entry["statement"].as_str().unwrap().to_string());
				}
			}
			"stop" => stopped = true,
			other => panic!("unexpected {other}: {event}"),
		}
	}
	// 16 KiB of queue cannot hold 1,000 statements for a reader that stalls: it spilled, and
	// what it owed was read from the store, in order, with no gap and no stop.
	let expected: Vec<String> = statements.iter().map(|s| hex::encode(&s.encode())).collect();
	assert_eq!(delivered[..], expected[..delivered.len()], "a gap in what was delivered");
	assert!(!stopped, "stopped after {} of {}", delivered.len(), expected.len());
	assert_eq!(delivered.len(), expected.len(), "not everything came");
}

/// One step of a random interleaving.
#[derive(Clone, Debug)]
enum Step {
	/// Add a filter: `None` for "any", else matchAll of these topics.
	Add(Option<Vec<u8>>),
	/// Remove the filter added `n`-th (if still there).
	Remove(usize),
	/// Submit a statement on these topics.
	Submit(Vec<u8>),
	/// Read what has come.
	Read,
}

fn step() -> impl Strategy<Value = Step> {
	let topics = proptest::collection::vec(1u8..4, 1..3);
	prop_oneof![
		2 => proptest::option::of(proptest::collection::vec(1u8..4, 1..3)).prop_map(Step::Add),
		1 => (0usize..6).prop_map(Step::Remove),
		4 => topics.prop_map(Step::Submit),
		2 => Just(Step::Read),
	]
}

/// What the model knows of one filter.
struct Modelled {
	filter: Option<Vec<u8>>,
	/// The statements stored when it was added: exactly its replay.
	replay: BTreeSet<String>,
	removed: bool,
	done: bool,
	replayed: BTreeSet<String>,
}

fn takes(filter: &Option<Vec<u8>>, topics: &[u8]) -> bool {
	filter.as_ref().is_none_or(|wanted| wanted.iter().all(|t| topics.contains(t)))
}

/// Check one event against the model, in the order events came.
fn check(
	event: &Value,
	filters: &mut BTreeMap<String, Modelled>,
	live: &BTreeMap<String, (Vec<u8>, BTreeSet<String>)>,
	delivered: &mut BTreeSet<String>,
) {
	match event["event"].as_str().unwrap() {
		"replayStatements" => {
			let filter =
				filters.get_mut(event["filterId"].as_str().unwrap()).expect("a known filter");
			assert!(!filter.done, "replay after replayDone: {event}");
			for statement in event["statements"].as_array().unwrap() {
				let statement = statement.as_str().unwrap().to_string();
				assert!(
					filter.replay.contains(&statement),
					"replayed what was not stored when added"
				);
				assert!(filter.replayed.insert(statement), "replayed twice");
			}
		}
		"replayDone" => {
			let filter =
				filters.get_mut(event["filterId"].as_str().unwrap()).expect("a known filter");
			assert!(!filter.done, "two replayDone: {event}");
			if !filter.removed {
				assert_eq!(filter.replayed, filter.replay, "a replay left statements out");
			}
			filter.done = true;
		}
		"newStatements" => {
			for entry in event["statements"].as_array().unwrap() {
				let statement = entry["statement"].as_str().unwrap().to_string();
				assert!(delivered.insert(statement.clone()), "a new statement delivered twice");
				let (_, took) = live.get(&statement).expect("a submitted statement");
				let ids: BTreeSet<String> = entry["filterIds"]
					.as_array()
					.unwrap()
					.iter()
					.map(|id| id.as_str().unwrap().to_string())
					.collect();
				assert!(!ids.is_empty(), "no filter ids");
				assert!(
					ids.is_subset(took),
					"ids {ids:?} beyond the filters {took:?} there at its commit"
				);
				for id in took {
					let filter = &filters[id];
					if !filter.removed {
						assert!(ids.contains(id), "filter {id} left out");
						// Guarantee 5: after the replay of every filter that takes it.
						assert!(filter.done, "delivered before filter {id}'s replayDone");
					}
					assert!(
						!filter.replayed.contains(&statement),
						"replayed and delivered live under {id}"
					);
				}
			}
		}
		other => panic!("unexpected {other}: {event}"),
	}
}

proptest! {
	#![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

	#[test]
	fn every_interleaving_keeps_the_delivery_guarantees(steps in proptest::collection::vec(step(), 1..40)) {
		let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
		runtime.block_on(interleaving(steps));
	}
}

async fn interleaving(steps: Vec<Step>) {
	let dir = common::dir();
	let store = open(&dir);
	// A queue of 2 KiB and a connection buffer of 4 messages, read only at `Read` steps: the
	// reads are slow, the queue spills to the store, the sends wait for room.
	let module = StatementRpc::new(Arc::new(store.clone()), false)
		.with_subscriber_queue_bytes(2 * 1024)
		.into_module();
	let (sub, mut events) = subscribe(&module, 4).await;
	let mut stored = BTreeSet::new();
	let mut filters: BTreeMap<String, Modelled> = BTreeMap::new();
	let mut order: Vec<String> = Vec::new();
	let mut live: BTreeMap<String, (Vec<u8>, BTreeSet<String>)> = BTreeMap::new();
	let mut delivered = BTreeSet::new();
	let mut n = 0u32;
	let read = |events: &mut Receiver<Box<serde_json::value::RawValue>>| {
		let mut got = Vec::new();
		while let Ok(message) = events.try_recv() {
			let message: Value = serde_json::from_str(message.get()).unwrap();
			got.push(message["params"]["result"].clone());
		}
		got
	};
	for step in steps {
		match step {
			Step::Add(filter) => {
				let param = match &filter {
					None => json!("any"),
					Some(topics) => {
						json!({"matchAll": topics.iter().map(|t| topic_hex(*t)).collect::<Vec<_>>()})
					}
				};
				let id =
					result(&module, "statement_unstable_add_filter", json!([sub, param])).await;
				let id = id.as_str().unwrap().to_string();
				let replay = stored
					.iter()
					.filter(|(_, topics): &&(String, Vec<u8>)| takes(&filter, topics))
					.map(|(s, _)| s.clone())
					.collect();
				filters.insert(
					id.clone(),
					Modelled {
						filter,
						replay,
						removed: false,
						done: false,
						replayed: BTreeSet::new(),
					},
				);
				order.push(id);
			}
			Step::Remove(k) => {
				if let Some(id) = order.get(k) {
					result(&module, "statement_unstable_remove_filter", json!([sub, id])).await;
					filters.get_mut(id).unwrap().removed = true;
				}
			}
			Step::Submit(topics) => {
				let statement = numbered(n, &topics);
				n += 1;
				submit(&store, &statement).await;
				let encoded = hex::encode(&statement.encode());
				let took: BTreeSet<String> = filters
					.iter()
					.filter(|(_, f)| !f.removed && takes(&f.filter, &topics))
					.map(|(id, _)| id.clone())
					.collect();
				live.insert(encoded.clone(), (topics.clone(), took));
				stored.insert((encoded, topics));
			}
			Step::Read => {
				for event in read(&mut events) {
					check(&event, &mut filters, &live, &mut delivered);
				}
			}
		}
	}
	// Everything owed comes in the end: every replay done, every statement a filter (still
	// there) takes delivered.
	store.wait_for_matching();
	let owed = |filters: &BTreeMap<String, Modelled>, delivered: &BTreeSet<String>| {
		filters.values().any(|f| !f.removed && !f.done)
			|| live.iter().any(|(s, (_, took))| {
				took.iter().any(|id| !filters[id].removed) && !delivered.contains(s)
			})
	};
	let deadline = tokio::time::Instant::now() + WITHIN;
	while owed(&filters, &delivered) {
		assert!(tokio::time::Instant::now() < deadline, "still owed after {WITHIN:?}");
		if let Some(event) = next_event(&mut events, Duration::from_millis(200)).await {
			check(&event, &mut filters, &live, &mut delivered);
		}
	}
	// And nothing more.
	while let Some(event) = next_event(&mut events, Duration::from_millis(200)).await {
		check(&event, &mut filters, &live, &mut delivered);
	}
}
