//! Our node's spec-v2 statement RPC read with upstream's own types (sp-statement-store 29):
//! every answer and event the node gives parses as `SubmitOutcome`, `AddFilterResponse` and
//! `SubscribeEvent`, and upstream's values serialize to exactly the bytes our node sends.

use serde_json::{json, value::RawValue, Value};
use sp_statement_store_29::{
	AddFilterResponse, NewStatementEntry, SubmitInvalidReason, SubmitOutcome,
	SubmitRejectionReason, SubscribeEvent,
};
use statement_interop::node::OurNode;
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_test_support::{hex, ws};
use std::{collections::HashMap, io::Write, net::TcpStream, time::Duration};

fn send(stream: &mut TcpStream, id: u64, method: &str, params: Value) {
	let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
	stream.write_all(&ws::text(&request.to_string())).unwrap();
}

/// The next text message, as its exact text.
fn next(stream: &mut TcpStream) -> String {
	String::from_utf8(ws::read_text(stream).expect("a message in time")).unwrap()
}

/// The exact text of a message's `result` (of an answer, or inside a notification), as the
/// node wrote it: its keys in the node's order.
fn result_text(message: &str) -> String {
	type Fields = HashMap<String, Box<RawValue>>;
	let fields: Fields = serde_json::from_str(message).unwrap();
	match fields.get("result") {
		Some(result) => result.get().to_string(),
		None => {
			let params = fields.get("params").unwrap_or_else(|| panic!("no result: {message}"));
			let params: Fields = serde_json::from_str(params.get()).unwrap();
			params["result"].get().to_string()
		}
	}
}

#[test]
fn every_answer_and_event_parses_as_upstreams_and_upstreams_serialize_to_ours() {
	let node = OurNode::start(&[]).expect("our node starts");
	let topic = [0x42u8; 32];
	let statement = |n: u32| {
		TestStatement::new()
			.expiring_in(3600, n)
			.topic(0, statement_primitives::Topic(topic))
			.data(vec![n as u8; 8])
			.signed_ed25519(&ed25519_pair(n))
	};
	// Dev accounts only have allowances: an ed25519 test key has none.
	let refused = statement(1).encode();
	let mut stream = ws::connect(node.rpc_port).unwrap();
	stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();

	send(&mut stream, 1, "statement_unstable_submit", json!([hex::encode(&refused)]));
	let outcome: SubmitOutcome = serde_json::from_str(&result_text(&next(&mut stream))).unwrap();
	assert_eq!(outcome, SubmitOutcome::Rejected(SubmitRejectionReason::NoAllowance));
	let expired = TestStatement::new().expiry(1, 0).signed_ed25519(&ed25519_pair(2)).encode();
	send(&mut stream, 2, "statement_unstable_submit", json!([hex::encode(&expired)]));
	let outcome_text = result_text(&next(&mut stream));
	let outcome: SubmitOutcome = serde_json::from_str(&outcome_text).unwrap();
	assert_eq!(outcome, SubmitOutcome::Invalid(SubmitInvalidReason::AlreadyExpired));
	assert_eq!(outcome_text, serde_json::to_string(&outcome).unwrap());

	let alice = sp_core::Pair::from_string("//Alice", None).unwrap();
	let admitted = TestStatement::new()
		.expiring_in(3600, 0)
		.topic(0, statement_primitives::Topic(topic))
		.data(b"from alice".to_vec())
		.signed_sr25519(&alice)
		.encode();
	send(&mut stream, 3, "statement_unstable_submit", json!([hex::encode(&admitted)]));
	let new_text = result_text(&next(&mut stream));
	assert_eq!(serde_json::from_str::<SubmitOutcome>(&new_text).unwrap(), SubmitOutcome::New);
	assert_eq!(new_text, serde_json::to_string(&SubmitOutcome::New).unwrap());

	send(&mut stream, 4, "statement_unstable_subscribe", json!([]));
	let subscription: String = serde_json::from_str(&result_text(&next(&mut stream))).unwrap();
	let filter = json!({"matchAll": [hex::encode(&topic)]});
	send(&mut stream, 5, "statement_unstable_add_filter", json!([subscription, filter]));
	let added_text = result_text(&next(&mut stream));
	let added: AddFilterResponse = serde_json::from_str(&added_text).unwrap();
	let AddFilterResponse::Ok(filter_id) = added else { panic!("{added_text}") };
	assert_eq!(
		added_text,
		serde_json::to_string(&AddFilterResponse::Ok(filter_id.clone())).unwrap()
	);

	let replay_text = result_text(&next(&mut stream));
	let replay: SubscribeEvent = serde_json::from_str(&replay_text).unwrap();
	let expected = SubscribeEvent::ReplayStatements {
		filter_id: filter_id.clone(),
		statements: vec![sp_core::Bytes(admitted.clone())],
	};
	assert_eq!(replay, expected);
	assert_eq!(replay_text, serde_json::to_string(&expected).unwrap(), "byte for byte");
	let done_text = result_text(&next(&mut stream));
	let done = SubscribeEvent::ReplayDone { filter_id: filter_id.clone() };
	assert_eq!(serde_json::from_str::<SubscribeEvent>(&done_text).unwrap(), done);
	assert_eq!(done_text, serde_json::to_string(&done).unwrap());

	let later = TestStatement::new()
		.expiring_in(3600, 1)
		.topic(0, statement_primitives::Topic(topic))
		.data(b"later".to_vec())
		.signed_sr25519(&alice)
		.encode();
	assert_eq!(node.submit(&later).unwrap(), json!({"status": "new"}));
	let new_event_text = result_text(&next(&mut stream));
	let new_event = SubscribeEvent::NewStatements {
		statements: vec![NewStatementEntry {
			statement: sp_core::Bytes(later),
			filter_ids: vec![filter_id],
		}],
	};
	assert_eq!(serde_json::from_str::<SubscribeEvent>(&new_event_text).unwrap(), new_event);
	assert_eq!(new_event_text, serde_json::to_string(&new_event).unwrap());
	// The stop event, as upstream writes it.
	assert_eq!(serde_json::to_string(&SubscribeEvent::Stop).unwrap(), r#"{"event":"stop"}"#);
}
