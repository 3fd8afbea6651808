//! The spec-v2 statement RPC over real sockets against the real node: upstream's JSON, the
//! answer to `add_filter` before that filter's first event, subscription ids as Substrate
//! hands them out, the methods listed, and the RPC metrics under upstream's names.

mod common;

use serde_json::{json, Value};
use statement_primitives::testing::TestStatement;
use statement_test_support::{hex, http, metrics::Metrics, topic, wait, ws};
use std::{io::Write, net::TcpStream, time::Duration};

fn signed(n: u32, name: &str) -> String {
	let pair = sp_core::Pair::from_string("//Alice", None).unwrap();
	let statement = TestStatement::new()
		.expiring_in(3600, n)
		.topic(0, topic::named(name))
		.data(n.to_le_bytes().to_vec())
		.signed_sr25519(&pair);
	hex::encode(&statement.encode())
}

/// Send a JSON-RPC request over the WebSocket.
fn send(stream: &mut TcpStream, id: u64, method: &str, params: Value) {
	let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
	stream.write_all(&ws::text(&request.to_string())).unwrap();
}

/// The next text message the node sent, as JSON.
fn next(stream: &mut TcpStream) -> Value {
	let payload = ws::read_text(stream).expect("a message within the timeout");
	serde_json::from_slice(&payload).unwrap()
}

#[test]
fn the_spec_v2_api_answers_add_filter_before_its_first_event_and_counts_its_calls() {
	let node = common::start(&["--dev"]);
	let port = node.rpc_port();
	let earlier = signed(1, "v2-greetings");
	assert_eq!(
		http::rpc(port, "statement_submit", json!([earlier])).unwrap(),
		json!({"status": "new"})
	);

	let mut stream = ws::connect(port).unwrap();
	stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
	send(&mut stream, 1, "statement_unstable_subscribe", json!([]));
	let subscribed = next(&mut stream);
	let id = subscribed["result"].as_str().unwrap_or_else(|| panic!("{subscribed}")).to_string();
	assert_eq!(id.len(), 16, "{id}");
	assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");

	let filter = json!({"matchAll": [topic::named_hex("v2-greetings")]});
	send(&mut stream, 2, "statement_unstable_add_filter", json!([id, filter]));
	// The answer, then the filter's replay and its end: in that order, always.
	let answer = next(&mut stream);
	assert_eq!(answer, json!({"jsonrpc": "2.0", "id": 2, "result": "0"}));
	let replay = next(&mut stream);
	assert_eq!(replay["method"], "statement_unstable_subscribeEvent", "{replay}");
	assert_eq!(replay["params"]["subscription"], id);
	assert_eq!(
		replay["params"]["result"],
		json!({"event": "replayStatements", "filterId": "0", "statements": [earlier]})
	);
	let done = next(&mut stream);
	assert_eq!(done["params"]["result"], json!({"event": "replayDone", "filterId": "0"}));

	// A new statement, submitted through the new API: the answer and the event, each once.
	let later = signed(2, "v2-greetings");
	send(&mut stream, 3, "statement_unstable_submit", json!([later]));
	let (mut answered, mut delivered) = (false, false);
	while !(answered && delivered) {
		let message = next(&mut stream);
		if message["id"] == 3 {
			assert!(!answered);
			assert_eq!(message["result"], json!({"status": "new"}));
			answered = true;
		} else {
			assert!(!delivered, "{message}");
			assert_eq!(
				message["params"]["result"],
				json!({"event": "newStatements", "statements": [{"statement": later, "filterIds": ["0"]}]})
			);
			delivered = true;
		}
	}

	// Legacy subscriptions get the same kind of id.
	send(&mut stream, 4, "statement_subscribeStatement", json!(["any"]));
	let legacy = loop {
		let message = next(&mut stream);
		if message["id"] == 4 {
			break message;
		}
	};
	assert_eq!(legacy["result"].as_str().map(str::len), Some(16), "{legacy}");

	let methods = http::rpc(port, "rpc_methods", json!([])).unwrap();
	for method in [
		"statement_unstable_subscribe",
		"statement_unstable_unsubscribe",
		"statement_unstable_add_filter",
		"statement_unstable_remove_filter",
		"statement_unstable_submit",
	] {
		assert!(
			methods["methods"].as_array().unwrap().contains(&json!(method)),
			"{method} not in {methods}"
		);
	}

	// Both submissions counted. Polled: one run of the workspace tests scraped 1 of 2 just
	// after both answers had come, which is not explained yet (each is counted before its
	// answer is written); a count that never comes still fails here.
	let submits = "substrate_sub_statement_store_rpc_submit_calls_total{result=\"new\"}";
	let port = node.metrics_port().unwrap();
	let counted = || Metrics::scrape(port).unwrap().value(submits).unwrap();
	let both =
		wait::eventually_blocking("two submissions counted", Duration::from_secs(60), || {
			counted() == 2.0
		});
	assert!(both.is_ok(), "{both:?}: {submits} is {}", counted());
	let metrics = Metrics::scrape(port).unwrap();
	assert_eq!(
		metrics
			.value("substrate_sub_statement_store_rpc_subscribe_calls_total{result=\"ok\"}")
			.unwrap(),
		2.0
	);
	assert_eq!(
		metrics.value("substrate_sub_statement_store_rpc_active_subscriptions").unwrap(),
		2.0
	);
	assert_eq!(
		metrics.value("substrate_sub_statement_store_rpc_submit_duration_seconds_count").unwrap(),
		2.0
	);
}

/// The answer to request `id` on `stream`, skipping notifications.
fn answer(stream: &mut TcpStream, id: u64) -> Value {
	loop {
		let message = next(stream);
		if message["id"] == id {
			return message;
		}
	}
}

#[test]
fn subscriptions_belong_to_their_connection_and_each_connection_holds_its_configured_number() {
	let node = common::start(&["--dev", "--statement-rpc-subscriptions-per-connection", "2"]);
	let port = node.rpc_port();
	let connect = || {
		let stream = ws::connect(port).unwrap();
		stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
		stream
	};
	let (mut mine, mut theirs) = (connect(), connect());
	send(&mut mine, 1, "statement_unstable_subscribe", json!([]));
	let first = answer(&mut mine, 1)["result"].clone();
	send(&mut mine, 2, "statement_unstable_subscribe", json!([]));
	assert!(answer(&mut mine, 2)["result"].is_string());
	send(&mut mine, 3, "statement_unstable_subscribe", json!([]));
	assert_eq!(answer(&mut mine, 3)["error"]["code"], -32800);
	// Another connection cannot add to this one's subscription, and has room of its own.
	send(&mut theirs, 1, "statement_unstable_add_filter", json!([first, "any"]));
	assert_eq!(answer(&mut theirs, 1)["error"]["code"], -32801);
	send(&mut theirs, 2, "statement_unstable_subscribe", json!([]));
	assert!(answer(&mut theirs, 2)["result"].is_string());
	// A filter the spec does not have is a parameter error.
	let any_of = json!({"matchAny": [topic::named_hex("x")]});
	send(&mut mine, 4, "statement_unstable_add_filter", json!([first, any_of]));
	assert_eq!(answer(&mut mine, 4)["error"]["code"], -32602);
	// Unsubscribing frees a place on the connection (once the subscription's task has seen it
	// go, which takes a moment).
	send(&mut mine, 5, "statement_unstable_unsubscribe", json!([first]));
	assert_eq!(answer(&mut mine, 5)["result"], true);
	let deadline = std::time::Instant::now() + Duration::from_secs(60);
	let mut id = 6;
	loop {
		send(&mut mine, id, "statement_unstable_subscribe", json!([]));
		let answered = answer(&mut mine, id);
		if answered["result"].is_string() {
			break;
		}
		assert_eq!(answered["error"]["code"], -32800, "{answered}");
		assert!(std::time::Instant::now() < deadline, "the place was not freed within 60 s");
		std::thread::sleep(Duration::from_millis(50));
		id += 1;
	}
}
