//! Bad parameters of the statement methods, over a real socket: each gets `-32602` and a message
//! naming the parameter, the accepted forms and what was given, over HTTP and WebSocket alike,
//! and subscriptions (refused by another path through jsonrpsee) say the same.

mod common;

use statement_test_support::hex::encode as hex;

use jsonrpsee::{
	core::{
		client::{ClientT, SubscriptionClientT},
		params::ArrayParams,
		ClientError,
	},
	http_client::HttpClientBuilder,
	rpc_params,
	ws_client::WsClientBuilder,
};
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::testing::TestStatement;
use statement_primitives::{Statement, Topic};
use std::time::Duration;

const FORMS: &str = r#"expected "any", {"matchAll": [topics]} or {"matchAny": [topics]}"#;

/// `params` as a positional list for a jsonrpsee client.
fn positional(params: &[Value]) -> ArrayParams {
	let mut array = ArrayParams::new();
	for param in params {
		array.insert(param).unwrap();
	}
	array
}

/// The (code, message) of a JSON-RPC error.
fn refusal(err: ClientError) -> (i32, String) {
	match err {
		ClientError::Call(object) => (object.code(), object.message().to_string()),
		other => panic!("expected a JSON-RPC error, got {other}"),
	}
}

/// Method calls with a bad parameter each, and the message each must get.
fn bad_calls() -> Vec<(&'static str, Vec<Value>, String)> {
	let topic = json!(hex(&[0x11; 32]));
	vec![
		(
			"statement_broadcasts",
			vec![json!(vec![topic.clone(); 5])],
			"bad topics: 5 topics given, at most 4".into(),
		),
		(
			"statement_broadcasts",
			vec![topic],
			"bad topics: expected an array of at most 4 topics, got a string".into(),
		),
		(
			"statement_posted",
			vec![json!([]), json!(format!("0x{}", "zz".repeat(32)))],
			"bad decryption key: not valid hex: 'z' at position 2 is not a hex digit".into(),
		),
		("statement_remove", vec![json!("0x0102")], "bad statement hash: expected 32 bytes, got 2".into()),
		(
			"statement_postedClear",
			vec![json!([])],
			"missing decryption key: expected a 0x-hex string of 32 bytes or an array of 32 numbers"
				.into(),
		),
		("statement_broadcastsStatement", vec![], "missing topics: expected an array of at most 4 topics".into()),
	]
}

#[tokio::test]
async fn bad_method_params_are_named_with_what_was_expected_over_http_and_websocket() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let mut wrong = Vec::new();
	for (method, params, expected) in bad_calls() {
		let over_http = http.request::<Value, _>(method, positional(&params)).await;
		let over_ws = ws.request::<Value, _>(method, positional(&params)).await;
		for (transport, answer) in [("http", over_http), ("ws", over_ws)] {
			let (code, message) = refusal(answer.expect_err(method));
			if code != -32602 || message != expected {
				wrong.push(format!("{transport} {method} {params:?}: {code} {message}"));
			}
		}
	}
	assert!(wrong.is_empty(), "{}", wrong.join("\n"));
	let health: Value = ws.request("system_health", rpc_params![]).await.unwrap();
	assert_eq!(health["peers"], json!(0), "the connection survived every bad request");
}

fn signed(topic: Topic, data: &[u8]) -> Statement {
	TestStatement::new()
		.expiring_in(3600, 0)
		.topic(0, topic)
		.data(data)
		.signed_sr25519(&sr25519::Pair::from_string("//Alice", None).unwrap())
}

#[tokio::test]
async fn bad_topic_filters_are_named_and_number_array_topics_subscribe() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let topic = json!(hex(&[0x11; 32]));
	let cases: Vec<(Vec<Value>, String)> = vec![
		(vec![json!("Any")], format!(r#"bad topic filter: {FORMS}, got "Any""#)),
		(vec![json!("all")], format!(r#"bad topic filter: {FORMS}, got "all""#)),
		(
			vec![json!({ "match_all": [topic] })],
			format!(r#"bad topic filter: {FORMS}, got {{"match_all":["0x{}…"#, "1".repeat(23)),
		),
		(
			vec![json!({ "matchAll": vec![topic; 5] })],
			"bad topic filter: matchAll: 5 topics given, at most 4".into(),
		),
		(vec![], format!("missing topic filter: {FORMS}")),
	];
	let mut wrong = Vec::new();
	for (params, expected) in cases {
		let answer = ws
			.subscribe::<Value, _>(
				"statement_subscribeStatement",
				positional(&params),
				"statement_unsubscribeStatement",
			)
			.await;
		let (code, message) = refusal(answer.expect_err("a bad filter is refused"));
		if code != -32602 || message != expected {
			wrong.push(format!("{params:?}: {code} {message}"));
		}
	}
	assert!(wrong.is_empty(), "{}", wrong.join("\n"));

	// Topics as arrays of 32 numbers, in both filter kinds, find what hex finds.
	let wanted = signed(Topic([17; 32]), b"wanted");
	let other = signed(Topic([18; 32]), b"other");
	for statement in [&wanted, &other] {
		let result: Value =
			ws.request("statement_submit", rpc_params![hex(&statement.encode())]).await.unwrap();
		assert_eq!(result, json!({"status": "new"}));
	}
	for kind in ["matchAll", "matchAny"] {
		let mut subscription = ws
			.subscribe::<Value, _>(
				"statement_subscribeStatement",
				rpc_params![json!({ kind: [vec![17u8; 32]] })],
				"statement_unsubscribeStatement",
			)
			.await
			.unwrap_or_else(|err| panic!("{kind} with a number-array topic refused: {err}"));
		let replay = tokio::time::timeout(Duration::from_secs(10), subscription.next())
			.await
			.expect("a replay notification")
			.unwrap()
			.unwrap();
		assert_eq!(
			replay,
			json!({"event": "newStatements", "data": {"statements": [hex(&wanted.encode())], "remaining": 0}}),
			"{kind}"
		);
	}
}
