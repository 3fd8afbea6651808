//! The real `statement-node` binary on a free port, driven over HTTP and WebSocket JSON-RPC.

mod common;

use common::http_exchange;
use jsonrpsee::{
	core::client::{ClientT, SubscriptionClientT},
	http_client::HttpClientBuilder,
	rpc_params,
	ws_client::WsClientBuilder,
};
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::testing::TestStatement;
use statement_primitives::{Statement, Topic, SUBSCRIPTION_STATE_BYTES};
use statement_test_support::{hex::encode as hex, metrics::Metrics, topic::named as topic, ws};
use std::{
	io::{Read, Write},
	net::TcpStream,
	path::{Path, PathBuf},
	process::{Command, Stdio},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

fn now() -> u64 {
	SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn signed(suri: &str, topics: &[Topic], key: Option<[u8; 32]>, data: &[u8]) -> Statement {
	TestStatement::new()
		.expiring_in(3600, 0)
		.topics(topics)
		.decryption_key(key)
		.data(data)
		.signed_sr25519(&sr25519::Pair::from_string(suri, None).unwrap())
}

fn topics_json(topics: &[Topic]) -> Value {
	Value::Array(topics.iter().map(|t| Value::String(hex(&t.0))).collect())
}

fn error_code(err: jsonrpsee::core::ClientError) -> (i32, String) {
	match err {
		jsonrpsee::core::ClientError::Call(object) => (object.code(), object.message().to_string()),
		other => panic!("expected a JSON-RPC error, got {other}"),
	}
}

#[tokio::test]
async fn every_method_answers_over_http_and_websocket() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();

	let methods: Value = http.request("rpc_methods", rpc_params![]).await.unwrap();
	for name in [
		"statement_submit",
		"statement_broadcasts",
		"statement_posted",
		"statement_postedClear",
		"statement_broadcastsStatement",
		"statement_postedStatement",
		"statement_postedClearStatement",
		"statement_dump",
		"statement_dumpPage",
		"statement_remove",
		"statement_subscribeStatement",
		"system_health",
		"system_name",
		"system_version",
	] {
		assert!(methods["methods"].as_array().unwrap().contains(&json!(name)), "{name} missing");
	}
	let health: Value = http.request("system_health", rpc_params![]).await.unwrap();
	assert_eq!(health["isSyncing"], json!(false));
	let name: String = ws.request("system_name", rpc_params![]).await.unwrap();
	assert_eq!(name, "statement-node");
	let version: String = ws.request("system_version", rpc_params![]).await.unwrap();
	assert_eq!(version, env!("CARGO_PKG_VERSION"));

	let (a, b) = (topic("a"), topic("b"));
	let broadcast = signed("//Alice", &[a, b], None, b"hello");
	let posted = signed("//Bob", &[a], Some([7; 32]), b"for key 7");
	let result: Value =
		http.request("statement_submit", rpc_params![hex(&broadcast.encode())]).await.unwrap();
	assert_eq!(result, json!({"status": "new"}));
	let result: Value =
		ws.request("statement_submit", rpc_params![hex(&broadcast.encode())]).await.unwrap();
	assert_eq!(result, json!({"status": "known"}));
	let result: Value =
		ws.request("statement_submit", rpc_params![hex(&posted.encode())]).await.unwrap();
	assert_eq!(result, json!({"status": "new"}));

	let data: Vec<String> =
		http.request("statement_broadcasts", rpc_params![topics_json(&[a])]).await.unwrap();
	assert_eq!(data, vec![hex(b"hello")]);
	let encoded: Vec<String> = ws
		.request("statement_broadcastsStatement", rpc_params![topics_json(&[b, a])])
		.await
		.unwrap();
	assert_eq!(encoded, vec![hex(&broadcast.encode())]);
	let key = hex(&[7; 32]);
	let data: Vec<String> = http
		.request("statement_posted", rpc_params![topics_json(&[a]), key.clone()])
		.await
		.unwrap();
	assert_eq!(data, vec![hex(b"for key 7")]);
	let encoded: Vec<String> = http
		.request("statement_postedStatement", rpc_params![topics_json(&[]), key.clone()])
		.await
		.unwrap();
	assert_eq!(encoded, vec![hex(&posted.encode())]);
	for method in ["statement_postedClear", "statement_postedClearStatement"] {
		let clear: Vec<String> =
			http.request(method, rpc_params![topics_json(&[a]), key.clone()]).await.unwrap();
		assert!(clear.is_empty(), "{method}: this node holds no decryption keys");
	}

	let dump: Vec<String> = http.request("statement_dump", rpc_params![]).await.unwrap();
	assert_eq!(dump.len(), 2);
	let removed: Value =
		ws.request("statement_remove", rpc_params![hex(&broadcast.hash())]).await.unwrap();
	assert_eq!(removed, Value::Null);
	let data: Vec<String> =
		http.request("statement_broadcasts", rpc_params![topics_json(&[a])]).await.unwrap();
	assert!(data.is_empty());
}

#[tokio::test]
async fn unsafe_methods_are_refused_unless_allowed() {
	let node = common::start(&["--dev", "--no-prometheus", "--rpc-methods", "safe"]);
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let err = http.request::<Value, _>("statement_dump", rpc_params![]).await.unwrap_err();
	assert_eq!(error_code(err).0, -32601);
	let err =
		http.request::<Value, _>("statement_remove", rpc_params![hex(&[0; 32])]).await.unwrap_err();
	assert_eq!(error_code(err).0, -32601);
	let data: Vec<String> =
		http.request("statement_broadcasts", rpc_params![topics_json(&[])]).await.unwrap();
	assert!(data.is_empty(), "safe methods still work");
}

#[tokio::test]
async fn a_subscription_replays_stored_statements_then_streams_new_ones() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let t = topic("chat");
	let first = signed("//Alice", &[t], None, b"first");
	let _: Value = ws.request("statement_submit", rpc_params![hex(&first.encode())]).await.unwrap();
	let mut subscription = ws
		.subscribe::<Value, _>(
			"statement_subscribeStatement",
			rpc_params![json!({"matchAll": [hex(&t.0)]})],
			"statement_unsubscribeStatement",
		)
		.await
		.unwrap();
	let replay = subscription.next().await.unwrap().unwrap();
	assert_eq!(
		replay,
		json!({"event": "newStatements", "data": {"statements": [hex(&first.encode())], "remaining": 0}})
	);
	let second = signed("//Bob", &[t, topic("other")], None, b"second");
	let unrelated = signed("//Bob", &[topic("other")], None, b"unrelated");
	for statement in [&unrelated, &second] {
		let _: Value =
			ws.request("statement_submit", rpc_params![hex(&statement.encode())]).await.unwrap();
	}
	let live = tokio::time::timeout(Duration::from_secs(10), subscription.next())
		.await
		.expect("a live notification")
		.unwrap()
		.unwrap();
	assert_eq!(
		live,
		json!({"event": "newStatements", "data": {"statements": [hex(&second.encode())]}})
	);
}

#[tokio::test]
async fn statements_survive_a_restart() {
	let dir = tempfile::tempdir().unwrap();
	let base = dir.path().to_str().unwrap().to_string();
	let statement = signed("//Charlie", &[topic("persist")], None, b"still here");
	{
		let node = common::start(&["--dev", "--no-prometheus", "-d", &base]);
		let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
		let result: Value =
			http.request("statement_submit", rpc_params![hex(&statement.encode())]).await.unwrap();
		assert_eq!(result, json!({"status": "new"}));
		assert!(node.stop().unwrap().success(), "the node exits cleanly on SIGTERM");
	}
	let node = common::start(&["--dev", "--no-prometheus", "-d", &base]);
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let data: Vec<String> = http
		.request("statement_broadcasts", rpc_params![topics_json(&[topic("persist")])])
		.await
		.unwrap();
	assert_eq!(data, vec![hex(b"still here")]);
}

/// `build-spec --allowance` grants allowances without a runtime: the accounts it names (a
/// range of upstream's test accounts here) may submit on the chain it prints; others may not.
#[tokio::test]
async fn build_spec_allowances_let_the_named_accounts_submit_and_no_others() {
	let dir = tempfile::tempdir().unwrap();
	let built = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["build-spec", "--chain", "local"])
		.args(["--allowance", "//StatementClient//{0..4}=2,1024"])
		.output()
		.unwrap();
	assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
	let spec = dir.path().join("spec.json");
	std::fs::write(&spec, &built.stdout).unwrap();
	let node = common::start(&["--chain", spec.to_str().unwrap(), "--tmp", "--no-prometheus"]);
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let submit = |suri: &str, data: &'static [u8]| {
		let statement = signed(suri, &[topic("granted")], None, data);
		let http = http.clone();
		async move {
			let result: Value = http
				.request("statement_submit", rpc_params![hex(&statement.encode())])
				.await
				.unwrap();
			result
		}
	};
	assert_eq!(submit("//StatementClient//3", b"granted").await, json!({"status": "new"}));
	let refused = submit("//StatementClient//4", b"not granted").await;
	assert_eq!(refused, json!({"status": "rejected", "reason": "noAllowance"}));
	// A malformed grant stops build-spec with a message naming it.
	let bad = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["build-spec", "--allowance", "//Alice=10"])
		.output()
		.unwrap();
	assert!(!bad.status.success());
	let said = String::from_utf8_lossy(&bad.stderr);
	assert!(said.contains("bad --allowance \"//Alice=10\""), "{said}");
}

/// `--ready-file` says what the node serves, in agreement with the node itself, is written
/// whole once everything listens, and goes at a clean stop.
#[tokio::test]
async fn the_readiness_file_names_what_the_node_serves_and_goes_at_a_clean_stop() {
	let dir = tempfile::tempdir().unwrap();
	let base = dir.path().to_str().unwrap().to_string();
	let statement = signed("//Dave", &[topic("ready")], None, b"counted at open");
	let first = common::start(&["--dev", "-d", &base]);
	let http = HttpClientBuilder::default().build(first.http_url()).unwrap();
	let _: Value =
		http.request("statement_submit", rpc_params![hex(&statement.encode())]).await.unwrap();
	assert!(first.stop().unwrap().success());
	let path = dir.path().join("ready.json");
	let node = common::launch(&["--dev", "-d", &base, "--ready-file", path.to_str().unwrap()])
		.start()
		.unwrap();
	let ready = statement_test_support::node::Ready::read(&path).unwrap();
	assert_eq!(&ready, node.ready(), "the launcher's own file and this one agree");
	assert_eq!(ready.pid, node.pid());
	assert_eq!(ready.statements, 1);
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let peer_id: String = http.request("system_localPeerId", rpc_params![]).await.unwrap();
	assert_eq!(ready.peer_id, peer_id);
	let listen: Vec<String> =
		http.request("system_localListenAddresses", rpc_params![]).await.unwrap();
	assert_eq!(ready.listen, listen);
	let metrics = ready.prometheus.expect("metrics are served");
	assert!(Metrics::scrape(metrics.port())
		.unwrap()
		.has("substrate_sub_statement_store_statements_total"));
	assert!(node.stop().unwrap().success());
	assert!(!path.exists(), "the readiness file outlived the node");
}

#[tokio::test]
async fn bad_params_get_clear_errors_and_the_connection_stays_usable() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let (code, message) = error_code(
		ws.request::<Value, _>("statement_submit", rpc_params!["0xzz"]).await.unwrap_err(),
	);
	assert_eq!(code, -32602, "{message}");
	let (code, message) = error_code(
		ws.request::<Value, _>("statement_submit", rpc_params!["0x08022a0"]).await.unwrap_err(),
	);
	assert_eq!(code, -32602);
	assert!(
		message.contains("bad statement: not valid hex: odd number of hex digits"),
		"{message}"
	);
	let (code, message) = error_code(
		ws.request::<Value, _>("statement_submit", rpc_params!["0x08022a"]).await.unwrap_err(),
	);
	assert_eq!(code, -32602);
	assert!(message.contains("does not decode"), "{message}");
	let five: Vec<Topic> = (0..5).map(|n| topic(&n.to_string())).collect();
	let (code, message) = error_code(
		ws.request::<Value, _>("statement_broadcasts", rpc_params![topics_json(&five)])
			.await
			.unwrap_err(),
	);
	assert_eq!(code, -32602);
	assert!(message.contains("at most 4"), "{message}");
	let (_, message) = error_code(
		ws.request::<Value, _>("statement_posted", rpc_params![topics_json(&[]), "0x0102"])
			.await
			.unwrap_err(),
	);
	assert!(message.contains("32 bytes"), "{message}");
	let huge = signed("//Alice", &[], None, &vec![0u8; 1024 * 1024]);
	let result: Value =
		ws.request("statement_submit", rpc_params![hex(&huge.encode())]).await.unwrap();
	assert_eq!(result["status"], json!("invalid"));
	assert_eq!(result["reason"], json!("encodingTooLarge"));
	let health: Value = ws.request("system_health", rpc_params![]).await.unwrap();
	assert_eq!(health["peers"], json!(0), "the connection survived every bad request");
}

#[test]
fn a_second_node_on_the_same_base_path_is_refused_with_a_clear_error() {
	let dir = tempfile::tempdir().unwrap();
	let base = dir.path().to_str().unwrap();
	let _first = common::start(&["--dev", "--no-prometheus", "-d", base]);
	let mut second = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["--dev", "--no-prometheus", "-d", base, "--rpc-port", "0"])
		.stdout(Stdio::null())
		.stderr(Stdio::piped())
		.spawn()
		.unwrap();
	let deadline = Instant::now() + Duration::from_secs(60);
	let status = loop {
		if let Some(status) = second.try_wait().unwrap() {
			break status;
		}
		if Instant::now() > deadline {
			let _ = second.kill();
			panic!("the second node kept running on a base path in use");
		}
		std::thread::sleep(Duration::from_millis(50));
	};
	assert!(!status.success());
	let mut stderr = String::new();
	second.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
	assert_eq!(stderr.matches("in use by another process").count(), 1, "said once: {stderr}");
}

/// One value from the node's Prometheus endpoint.
fn metric(port: u16, name: &str) -> f64 {
	Metrics::scrape(port)
		.and_then(|metrics| metrics.value(name))
		.unwrap_or_else(|err| panic!("{err}"))
}

/// A WebSocket connection that opens `count` subscriptions on `filter` (its JSON) and then
/// never reads.
fn never_reading_subscriptions(port: u16, count: usize, filter: &str) -> TcpStream {
	let mut stream = ws::connect(port).unwrap();
	let mut frames = Vec::new();
	for id in 0..count {
		let request = format!(
			r#"{{"jsonrpc":"2.0","id":{id},"method":"statement_subscribeStatement","params":[{filter}]}}"#
		);
		frames.extend(ws::text(&request));
	}
	stream.write_all(&frames).unwrap();
	stream
}

/// 50,000 subscriptions that never read, from one client (50 WebSockets): half on every
/// statement, half on a topic nobody uses, then 2,000 statements. With a budget of 16 MiB
/// (`--statement-subscription-memory-mib`) the node opens at most 4,096 (their own state,
/// 2 KiB each, may take half of it) and refuses the rest; what those on every statement have
/// queued or held unsent stays within the budget, the furthest behind dropped; the idle ones
/// stay open; and the node's anonymous memory grows by less than the budget plus 64 MiB.
/// Without the budget, the shared pump and the counting of notifications held unsent, such
/// subscribers take gigabytes.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_thousand_stuck_subscriptions_stay_within_the_budget_plus_64_mib() {
	const BUDGET_MIB: u64 = 16;
	let mut node = common::start(&[
		"--dev",
		"--prometheus-port",
		"0",
		"--statement-subscription-memory-mib",
		&BUDGET_MIB.to_string(),
	]);
	let metrics_port = node.metrics_port().unwrap();
	let http = HttpClientBuilder::default().build(node.http_url()).unwrap();
	let gossip = metric(metrics_port, "substrate_statement_store_subscriptions");
	let submit = |n: u32| {
		let http = &http;
		async move {
			let data = [n.to_le_bytes().to_vec(), vec![7; 200]].concat();
			let statement = signed("//Alice", &[topic("busy")], None, &data);
			let result: Value = http
				.request("statement_submit", rpc_params![hex(&statement.encode())])
				.await
				.unwrap();
			assert_eq!(result, json!({"status": "new"}), "statement {n}");
		}
	};
	// Warm up what a node allocates on its first submits, then take the baseline.
	for n in 0..50 {
		submit(n).await;
	}
	tokio::time::sleep(Duration::from_secs(1)).await;
	let before = node.anonymous_kib();

	let idle = format!(r#"{{"matchAll":["{}"]}}"#, hex(&topic("nobody").0));
	let mut clients = Vec::new();
	for connection in 0..50 {
		let filter = if connection % 2 == 0 { r#""any""# } else { idle.as_str() };
		clients.push(never_reading_subscriptions(node.rpc_port(), 1_000, filter));
	}
	// Each is refused, or opens and stays open or is dropped to keep within the budget.
	let counts = || {
		let open = metric(metrics_port, "substrate_statement_store_subscriptions") - gossip;
		let dropped = metric(
			metrics_port,
			"substrate_statement_store_subscriptions_dropped_for_budget_total",
		);
		let refused = metric(
			metrics_port,
			"substrate_statement_store_subscriptions_refused_for_budget_total",
		);
		(open, dropped, refused)
	};
	let deadline = Instant::now() + Duration::from_secs(300);
	let (open, dropped, refused) = loop {
		let (open, dropped, refused) = counts();
		if open + dropped + refused == 50_000.0 {
			break (open, dropped, refused);
		}
		assert!(
			Instant::now() < deadline,
			"of 50,000 subscriptions only {open} are open, {dropped} dropped, {refused} refused"
		);
		tokio::time::sleep(Duration::from_millis(500)).await;
	};
	eprintln!("subscribed: {open} open, {dropped} dropped, {refused} refused");
	let share = (BUDGET_MIB << 20) as f64 / 2.0 / SUBSCRIPTION_STATE_BYTES as f64;
	// A dropped one's place is taken by a later one.
	assert!(open <= share, "{open} open, past {share}");
	assert!(refused >= 50_000.0 - share - dropped, "{refused} refused");
	let subscribed = node.anonymous_kib();
	for n in 50..2_050 {
		submit(n).await;
	}
	if let Some(status) = node.child_mut().try_wait().unwrap() {
		panic!("the node died: {status}");
	}
	// What the node holds, not pages it freed that the allocator has yet to give back
	// (jemalloc returns them over about 10 s): the least of 12 samples a second apart.
	let mut after = u64::MAX;
	for _ in 0..12 {
		tokio::time::sleep(Duration::from_secs(1)).await;
		after = after.min(node.anonymous_kib());
	}
	let queued = metric(metrics_port, "substrate_statement_store_subscription_queued_bytes");
	let (still_open, _, _) = counts();
	eprintln!(
		"anonymous memory: {before} KiB before, {subscribed} KiB with 50,000 subscriptions, \
		 {after} KiB after 2,000 statements; {queued} bytes queued, {still_open} subscriptions \
		 open"
	);
	assert!(queued <= (BUDGET_MIB << 20) as f64, "{queued} bytes queued");
	// Subscriptions alternate between connections on every statement and idle ones: about
	// half of those opened are idle, and nothing drops those.
	assert!(still_open >= open / 3.0, "the idle ones stay open: {still_open} of {open}");
	let grown_mib = after.saturating_sub(before) / 1024;
	assert!(
		grown_mib <= BUDGET_MIB + 64,
		"the node grew by {grown_mib} MiB, past the budget ({BUDGET_MIB} MiB) plus 64 MiB"
	);
	drop(clients);
}

#[tokio::test]
async fn a_subscriber_that_never_reads_is_dropped_and_the_node_forgets_it() {
	let node = common::start(&["--dev"]);
	let metrics_port = node.metrics_port().unwrap();
	let http =
		HttpClientBuilder::default().max_request_size(16 << 20).build(node.http_url()).unwrap();
	// Gossip watches the store too: that subscription stays.
	let gossip = metric(metrics_port, "substrate_statement_store_subscriptions");
	let _idle = never_reading_subscriptions(node.rpc_port(), 1, r#""any""#);
	let deadline = Instant::now() + Duration::from_secs(30);
	while metric(metrics_port, "substrate_statement_store_subscriptions") != gossip + 1.0 {
		assert!(Instant::now() < deadline, "the subscription never opened");
		std::thread::sleep(Duration::from_millis(20));
	}
	// 64 KiB statements until the node drops the subscriber: the store queues 1 MiB, the
	// kernel's socket buffers hold a few more; past 60 MiB it never will.
	let mut submitted = 0;
	while metric(metrics_port, "substrate_statement_store_subscriptions") != gossip {
		assert!(submitted < 960, "still subscribed after {submitted} statements of 64 KiB");
		for _ in 0..16 {
			let data = [vec![submitted as u8; 4], vec![0; 64 * 1024 - 4]].concat();
			let statement = signed("//Alice", &[topic("bulk")], None, &data);
			let result: Value = http
				.request("statement_submit", rpc_params![hex(&statement.encode())])
				.await
				.unwrap();
			assert_eq!(result, json!({"status": "new"}));
			submitted += 1;
		}
	}
	let health: Value = http.request("system_health", rpc_params![]).await.unwrap();
	assert_eq!(health["peers"], json!(0), "the node still serves others");
}

#[test]
fn prometheus_serves_process_and_store_metrics() {
	let node = common::start(&["--dev"]);
	let metrics_port = node.metrics_port().unwrap();
	let mut stream = TcpStream::connect(("127.0.0.1", metrics_port)).unwrap();
	stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
	let mut body = String::new();
	stream.read_to_string(&mut body).unwrap();
	assert!(body.starts_with("HTTP/1.1 200"), "{body}");
	assert!(body.contains("substrate_process_start_time_seconds"), "{body}");
	assert!(
		body.contains("substrate_sub_statement_store_statements_total{chain=\"dev\"} 0"),
		"{body}"
	);
}

fn vectors_path() -> PathBuf {
	if let Some(path) = std::env::var_os("STATEMENT_VECTORS") {
		return PathBuf::from(path);
	}
	// The primitives' copy of the upstream-made vectors, in this repository.
	let path = Path::new(env!("CARGO_MANIFEST_DIR"))
		.join("../substrate/primitives/statement-store/tests/vectors/statements.json");
	assert!(path.is_file(), "no {}; set STATEMENT_VECTORS to the file", path.display());
	path
}

#[tokio::test]
async fn every_valid_conformance_vector_is_accepted_unless_already_expired() {
	let vectors: Value =
		serde_json::from_str(&std::fs::read_to_string(vectors_path()).unwrap()).unwrap();
	let valid: Vec<&Value> = vectors["statements"]
		.as_array()
		.unwrap()
		.iter()
		.filter(|v| v["signature"]["result"] == json!("valid"))
		.collect();
	assert!(!valid.is_empty());
	// A chain spec that gives every vector signer a generous allowance.
	let mut top = serde_json::Map::new();
	for vector in &valid {
		let account = vector["signature"]["account"].as_str().unwrap();
		let mut key = b":statement_allowance:".to_vec();
		key.extend(::hex::decode(account.trim_start_matches("0x")).unwrap());
		top.insert(hex(&key), json!("0xffffff00ffffff00"));
	}
	let spec = json!({"name": "Vectors", "id": "vectors", "bootNodes": [], "genesis": {"raw": {"top": top}}});
	let dir = tempfile::tempdir().unwrap();
	let spec_path = dir.path().join("spec.json");
	std::fs::write(&spec_path, spec.to_string()).unwrap();
	let node = common::start(&["--tmp", "--no-prometheus", "--chain", spec_path.to_str().unwrap()]);
	let http =
		HttpClientBuilder::default().max_request_size(16 << 20).build(node.http_url()).unwrap();
	let (mut accepted, mut expired) = (0, 0);
	for vector in valid {
		let expiry: u64 = vector["expiry"].as_str().unwrap().parse().unwrap();
		let result: Value =
			http.request("statement_submit", rpc_params![vector["encoded"].clone()]).await.unwrap();
		if expiry >> 32 >= now() {
			assert_eq!(result, json!({"status": "new"}), "{}", vector["hash"]);
			accepted += 1;
		} else {
			assert_eq!(result, json!({"status": "invalid", "reason": "alreadyExpired"}));
			expired += 1;
		}
	}
	println!("{accepted} vectors accepted, {expired} already expired");
	let dump: Vec<String> = http.request("statement_dump", rpc_params![]).await.unwrap();
	assert_eq!(dump.len(), accepted);
}

#[test]
fn rpc_cors_allows_the_listed_origin_only() {
	let node = common::start(&["--tmp", "--no-prometheus", "--rpc-cors", "http://app.example"]);
	let preflight = |origin: &str| {
		http_exchange(
			node.rpc_port(),
			&format!(
				"OPTIONS / HTTP/1.1\r\nHost: localhost\r\nOrigin: {origin}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\nConnection: close\r\n\r\n"
			),
		)
	};
	let allowed = preflight("http://app.example").headers;
	assert!(allowed.contains("access-control-allow-origin: http://app.example"), "{allowed}");
	let refused = preflight("http://evil.example");
	assert_eq!(refused.status, 403, "{}", refused.headers);
	assert!(!refused.headers.contains("access-control-allow-origin"), "{}", refused.headers);
}

#[tokio::test]
async fn rpc_max_connections_refuses_connections_past_the_limit() {
	let node = common::start(&["--tmp", "--no-prometheus", "--rpc-max-connections", "1"]);
	let first = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let _: Value = first.request("system_health", rpc_params![]).await.unwrap();
	let second = WsClientBuilder::default().build(node.ws_url()).await;
	let refused = match second {
		Err(_) => true,
		Ok(client) => client.request::<Value, _>("system_health", rpc_params![]).await.is_err(),
	};
	assert!(refused, "a second connection was served past --rpc-max-connections 1");
	let _: Value = first.request("system_health", rpc_params![]).await.unwrap();
}
