//! Connection limits over real sockets: clients that hold a connection without finishing a
//! request must not lock out the rest, and oversized or excess requests get clear answers.

mod common;

use jsonrpsee::{
	core::client::{ClientT, SubscriptionClientT},
	rpc_params,
	ws_client::WsClientBuilder,
};
use serde_json::{json, Value};
use statement_test_support::{http, ws};
use std::{
	io::{Read, Write},
	net::TcpStream,
	time::{Duration, Instant},
};

/// Slots in every test here: small, so that a handful of sockets fills them.
const SLOTS: usize = 4;

fn connect(port: u16) -> TcpStream {
	let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
	stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
	stream.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
	stream
}

/// A POST that announces 1,000 bytes of body and sends one: a slow-body (slowloris) sender.
fn slow_body_sender(port: u16) -> TcpStream {
	let mut stream = connect(port);
	stream
		.write_all(
			b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
		)
		.unwrap();
	stream
}

/// A completed WebSocket handshake that then never sends a frame.
fn idle_websocket(port: u16) -> TcpStream {
	let stream = ws::connect(port).unwrap_or_else(|err| panic!("{err}"));
	stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
	stream
}

/// One JSON-RPC call over a fresh HTTP connection; the whole response, or why there is none.
fn call_over_http(port: u16, method: &str) -> Result<String, String> {
	let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": []}).to_string();
	let mut stream = connect(port);
	let request = format!(
		"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
		body.len()
	);
	stream.write_all(request.as_bytes()).map_err(|err| format!("write: {err}"))?;
	let mut response = String::new();
	stream.read_to_string(&mut response).map_err(|err| format!("read: {err}"))?;
	Ok(response)
}

/// `count` calls one after another, each on a new connection; panics on the first not served.
fn legitimate_calls_are_served(port: u16, count: usize) {
	for n in 0..count {
		let started = Instant::now();
		let response = call_over_http(port, "system_health");
		let served = response.as_deref().is_ok_and(|response| {
			response.starts_with("HTTP/1.1 200") && response.contains("\"result\"")
		});
		assert!(served, "call {n} of {count} not served: {response:?}");
		assert!(
			started.elapsed() < Duration::from_secs(5),
			"call {n} took {:?}",
			started.elapsed()
		);
	}
}

/// Whether the server closed `stream` within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
	stream.set_read_timeout(Some(within)).unwrap();
	let mut buf = [0u8; 256];
	loop {
		match stream.read(&mut buf) {
			Ok(0) => return true,
			Ok(_) => continue,
			Err(err) => {
				return !matches!(
					err.kind(),
					std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
				)
			}
		}
	}
}

fn slots_flag() -> String {
	SLOTS.to_string()
}

#[tokio::test]
async fn slow_body_senders_do_not_lock_out_requests_or_evict_a_working_session() {
	let slots = slots_flag();
	let node = common::start(&["--tmp", "--no-prometheus", "--rpc-max-connections", &slots]);
	let session = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let _: Value = session.request("system_health", rpc_params![]).await.unwrap();
	// Twice as many as there are slots: every slot that is not the session's ends up held by
	// a sender that never finishes its body.
	let _senders: Vec<TcpStream> =
		(0..2 * SLOTS).map(|_| slow_body_sender(node.rpc_port())).collect();
	std::thread::sleep(Duration::from_millis(300));
	legitimate_calls_are_served(node.rpc_port(), 10);
	let fresh = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let _: Value = fresh.request("system_health", rpc_params![]).await.unwrap();
	let _: Value = session.request("system_health", rpc_params![]).await.unwrap();
}

#[tokio::test]
async fn idle_websocket_upgrades_do_not_lock_out_requests() {
	let slots = slots_flag();
	let node = common::start(&["--tmp", "--no-prometheus", "--rpc-max-connections", &slots]);
	let _idle: Vec<TcpStream> = (0..SLOTS).map(|_| idle_websocket(node.rpc_port())).collect();
	legitimate_calls_are_served(node.rpc_port(), 10);
	let fresh = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let _: Value = fresh.request("system_health", rpc_params![]).await.unwrap();
}

#[test]
fn connections_that_never_finish_a_request_are_closed_after_the_request_timeout() {
	let node = common::start(&["--tmp", "--no-prometheus", "--rpc-request-timeout", "1"]);
	let mut sender = slow_body_sender(node.rpc_port());
	let mut upgrade = idle_websocket(node.rpc_port());
	let mut silent = connect(node.rpc_port());
	for (what, stream) in
		[("slow body", &mut sender), ("idle upgrade", &mut upgrade), ("silent", &mut silent)]
	{
		assert!(closed_within(stream, Duration::from_secs(5)), "the {what} connection stayed open");
	}
	legitimate_calls_are_served(node.rpc_port(), 1);
}

#[test]
fn an_oversized_body_is_read_and_answered_413_with_a_json_rpc_error() {
	let node = common::start(&["--tmp", "--no-prometheus"]);
	let body = vec![b' '; 17 * 1024 * 1024];
	let mut stream = connect(node.rpc_port());
	let head = format!(
		"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
		body.len()
	);
	stream.write_all(head.as_bytes()).unwrap();
	// A client that sends its whole request before it reads, as most do.
	let sent = stream.write_all(&body);
	assert!(sent.is_ok(), "the node reset the connection while the body was sent: {sent:?}");
	let head = http::read_head(&mut stream).unwrap();
	assert!(head.starts_with("HTTP/1.1 413"), "{head}");
	let length: usize = head
		.lines()
		.find_map(|line| {
			line.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned)
		})
		.and_then(|length| length.trim().parse().ok())
		.expect("a content-length");
	let mut answer = vec![0u8; length];
	stream.read_exact(&mut answer).unwrap();
	let answer: Value = serde_json::from_slice(&answer).unwrap();
	assert_eq!(answer["error"]["code"], json!(-32007), "{answer}");
}

#[tokio::test]
async fn the_subscription_past_the_per_connection_limit_is_refused_with_a_clear_error() {
	let node =
		common::start(&["--tmp", "--no-prometheus", "--rpc-max-subscriptions-per-connection", "2"]);
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let subscribe = || {
		ws.subscribe::<Value, _>(
			"statement_subscribeStatement",
			rpc_params![json!("any")],
			"statement_unsubscribeStatement",
		)
	};
	let _first = subscribe().await.unwrap();
	let _second = subscribe().await.unwrap();
	match subscribe().await {
		Err(jsonrpsee::core::ClientError::Call(error)) => {
			assert_eq!(error.code(), -32006, "{error:?}");
			assert!(error.message().contains("Too many subscriptions"), "{error:?}");
		}
		other => panic!("a third subscription was not refused: {:?}", other.map(|_| ())),
	}
	let health: Value = ws.request("system_health", rpc_params![]).await.unwrap();
	assert_eq!(health["peers"], json!(0), "the connection stays usable");
}

/// A soft descriptor limit below the hard one (the common 1,024 default, here 256) is raised
/// to the hard limit at start, as a Substrate node does, and the figure is logged.
#[cfg(target_os = "linux")]
#[test]
fn the_soft_file_descriptor_limit_is_raised_to_the_hard_limit_at_start() {
	let mut hard = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
	assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut hard) }, 0);
	assert!(
		hard.rlim_max > 256,
		"the hard descriptor limit ({}) leaves nothing to raise: run with a higher one",
		hard.rlim_max
	);
	let node = common::launch(&["--dev", "--no-prometheus"])
		.soft_descriptor_limit(256)
		.start()
		.unwrap_or_else(|err| panic!("{err}"));
	let startup = node.startup_log();
	let raised = format!("File descriptor limit raised from 256 to {}", hard.rlim_max);
	assert!(startup.iter().any(|line| line.contains(&raised)), "{raised:?} not in {startup:#?}");
	assert!(node.stop().unwrap().success());
}

/// Requests the never-reading client sends at most.
const FLOOD_REQUESTS: usize = 1_000_000;

/// How much a never-reading client may grow the node by (KiB): the defaults let a connection
/// hold 512 calls and 4 MiB of their answers; the rest is the allocator's slack.
const FLOOD_GROWTH_KIB: u64 = 48 * 1024;

/// A WebSocket client sends up to 1,000,000 `system_health` requests as fast as the node
/// takes them and never reads an answer. The node stops reading it once it holds its
/// connection's share (512 calls, 4 MiB of answers), so the client's writes stall well short
/// of the million, the node's anonymous memory stays within [`FLOOD_GROWTH_KIB`] of where it
/// was, and another client is still answered. Without the bound, every request read became a
/// task and an answer queued for the socket: +1,574 MiB at 1,000,000 in a release node.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_answers_holds_a_bounded_share_of_the_node() {
	let node = common::start(&["--dev"]);
	let other = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let health = || async {
		let started = Instant::now();
		let answer: Value = other.request("system_health", rpc_params![]).await.unwrap();
		assert!(answer.get("peers").is_some(), "system_health answered {answer}");
		started.elapsed()
	};
	let mut alone = Vec::new();
	for _ in 0..200 {
		alone.push(health().await);
	}
	let before = node.anonymous_kib();

	let mut flood = ws::connect(node.rpc_port()).unwrap_or_else(|err| panic!("{err}"));
	let mut peak = before;
	let request = r#"{"jsonrpc":"2.0","id":1,"method":"system_health","params":[]}"#;
	let ws::Flooded { sent, stalled } =
		ws::flood(&mut flood, request, FLOOD_REQUESTS, Duration::from_secs(10), |sent| {
			peak = peak.max(node.anonymous_kib());
			assert!(
				peak - before <= FLOOD_GROWTH_KIB,
				"after {sent} requests never read, the node grew by {} KiB (bound \
				 {FLOOD_GROWTH_KIB})",
				peak - before
			);
		})
		.unwrap_or_else(|err| panic!("{err}"));
	let mut beside = Vec::new();
	for _ in 0..200 {
		beside.push(health().await);
	}
	peak = peak.max(node.anonymous_kib());
	let p99 = |mut times: Vec<Duration>| {
		times.sort();
		times[times.len() * 99 / 100]
	};
	eprintln!(
		"{sent} requests sent, never read (stalled: {stalled}); the node grew by {} KiB; \
		 another client's system_health p99 {:?} alone, {:?} beside it",
		peak - before,
		p99(alone),
		p99(beside)
	);
	assert!(stalled, "the node read all {sent} requests of a client that never reads");
	assert!(
		peak - before <= FLOOD_GROWTH_KIB,
		"the node grew by {} KiB (bound {FLOOD_GROWTH_KIB})",
		peak - before
	);
	drop(flood);
	// The node lets the stalled connection go and goes on serving.
	health().await;
}
