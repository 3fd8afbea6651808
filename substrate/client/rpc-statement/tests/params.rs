//! Every statement method, in process, answers a bad parameter with `-32602` and a message
//! naming the parameter, the accepted forms and what was given; subscriptions too, whose
//! refusals take another path through jsonrpsee.

mod common;

use common::open;
use jsonrpsee::RpcModule;
use serde_json::{json, Value};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult, Topic};
use statement_rpc::{error::INVALID_PARAMS as INVALID_PARAMS_CODE, StatementRpc};
use std::{sync::Arc, time::Duration};

const FORMS: &str = r#"expected "any", {"matchAll": [topics]} or {"matchAny": [topics]}"#;
const BYTES32: &str = "a 0x-hex string of 32 bytes or an array of 32 numbers";

fn hex32(byte: u8) -> Value {
	json!(format!("0x{}", format!("{byte:02x}").repeat(32)))
}

/// The error a raw request gets, as (code, message).
async fn error_of(module: &RpcModule<StatementRpc>, method: &str, params: &str) -> (i64, String) {
	let request = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
	let (response, _) = module.raw_json_request(&request, 1).await.unwrap();
	let response: Value = serde_json::from_str(response.get()).unwrap();
	let error = &response["error"];
	assert!(error.is_object(), "{method} {params} answered {response}");
	(error["code"].as_i64().unwrap(), error["message"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn every_bad_parameter_is_named_with_what_was_expected_and_given() {
	let dir = common::dir();
	let module = StatementRpc::new(Arc::new(open(&dir)), true).into_module();
	let topic = hex32(0x11);
	let five = json!(vec![topic.clone(); 5]);
	let bad_key = json!(format!("0x{}", "zz".repeat(32)));
	let cases: Vec<(&str, Value, String)> = vec![
		(
			"statement_subscribeStatement",
			json!(["Any"]),
			format!(r#"bad topic filter: {FORMS}, got "Any""#),
		),
		(
			"statement_subscribeStatement",
			json!(["all"]),
			format!(r#"bad topic filter: {FORMS}, got "all""#),
		),
		(
			"statement_subscribeStatement",
			json!([{ "match_all": [topic] }]),
			format!(r#"bad topic filter: {FORMS}, got {{"match_all":["0x{}…"#, "1".repeat(23)),
		),
		(
			"statement_subscribeStatement",
			json!([{ "matchAll": five }]),
			"bad topic filter: matchAll: 5 topics given, at most 4".into(),
		),
		(
			"statement_subscribeStatement",
			json!([{ "matchAny": ["0x0102"] }]),
			"bad topic filter: matchAny[0]: expected 32 bytes, got 2".into(),
		),
		("statement_subscribeStatement", json!([]), format!("missing topic filter: {FORMS}")),
		("statement_broadcasts", json!([five]), "bad topics: 5 topics given, at most 4".into()),
		(
			"statement_broadcasts",
			json!([topic]),
			"bad topics: expected an array of at most 4 topics, got a string".into(),
		),
		(
			"statement_broadcasts",
			json!([]),
			"missing topics: expected an array of at most 4 topics".into(),
		),
		(
			"statement_broadcastsStatement",
			json!([["0x12"]]),
			"bad topics[0]: expected 32 bytes, got 1".into(),
		),
		(
			"statement_posted",
			json!([[], bad_key]),
			"bad decryption key: not valid hex: 'z' at position 2 is not a hex digit".into(),
		),
		(
			"statement_postedStatement",
			json!([[]]),
			format!("missing decryption key: expected {BYTES32}"),
		),
		(
			"statement_postedClear",
			json!([[], "0x0102"]),
			"bad decryption key: expected 32 bytes, got 2".into(),
		),
		(
			"statement_postedClearStatement",
			json!([[], [1, 2]]),
			"bad decryption key: expected 32 numbers, got 2".into(),
		),
		(
			"statement_remove",
			json!(["0x0102"]),
			"bad statement hash: expected 32 bytes, got 2".into(),
		),
		("statement_remove", json!([]), format!("missing statement hash: expected {BYTES32}")),
		(
			"statement_submit",
			json!([]),
			"missing statement: expected a 0x-hex SCALE-encoded statement".into(),
		),
		(
			"statement_submit",
			json!(["0x08022"]),
			"bad statement: not valid hex: odd number of hex digits (5)".into(),
		),
		(
			"statement_dumpPage",
			json!(["x"]),
			r#"bad cursor: expected null or the "next" number of the previous page, got a string"#
				.into(),
		),
		(
			"statement_dumpPage",
			json!([null, "10"]),
			"bad limit: expected null or a whole number from 1 (at most 1000 are returned), got a \
			 string"
				.into(),
		),
		(
			"statement_dumpPage",
			json!([null, 0]),
			"bad limit: expected null or a whole number from 1 (at most 1000 are returned), got 0"
				.into(),
		),
		(
			"statement_broadcasts",
			json!({ "topics": [] }),
			"bad params: expected an array of parameters by position, got an object".into(),
		),
	];
	let mut wrong = Vec::new();
	for (method, params, expected) in cases {
		let (code, message) = error_of(&module, method, &params.to_string()).await;
		if code != i64::from(INVALID_PARAMS_CODE) || message != expected {
			wrong.push(format!(
				"{method} {params}:\n  got      {code} {message}\n  expected {expected}"
			));
		}
	}
	assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn with_topic(topic: [u8; 32], n: u32) -> Statement {
	TestStatement::new()
		.expiry(u32::MAX, n)
		.topic(0, Topic(topic))
		.data(n.to_le_bytes())
		.signed_ed25519(&ed25519_pair(7))
}

#[tokio::test]
async fn filters_take_topics_as_number_arrays_and_the_subscription_works() {
	let dir = common::dir();
	let store = open(&dir);
	assert_eq!(store.submit(with_topic([17; 32], 1), StatementSource::Local), SubmitResult::New);
	assert_eq!(store.submit(with_topic([18; 32], 2), StatementSource::Local), SubmitResult::New);
	let module = StatementRpc::new(Arc::new(store.clone()), false).into_module();
	for kind in ["matchAll", "matchAny"] {
		let filter = json!({ kind: [vec![17u8; 32]] });
		let mut subscription =
			module.subscribe_unbounded("statement_subscribeStatement", vec![filter]).await.unwrap();
		let (event, _) =
			tokio::time::timeout(Duration::from_secs(10), subscription.next::<Value>())
				.await
				.unwrap()
				.unwrap()
				.unwrap();
		let statements = event["data"]["statements"].as_array().unwrap();
		assert_eq!(statements.len(), 1, "{kind}: the one statement with topic 17: {event}");
		// The same topic given as hex in a plain list finds the same statement.
		let found: Vec<Value> =
			module.call("statement_broadcastsStatement", vec![json!([hex32(17)])]).await.unwrap();
		assert_eq!(&found, statements);
	}
}
