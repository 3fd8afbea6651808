//! The server alone, with a few methods of its own, over real sockets: what a node built on it
//! gets without writing any of it (the node's own tests drive the same paths through the node).

use jsonrpsee::{server::ServerHandle, RpcModule};
use statement_rpc_server::{
	metrics::{Protocol, UNKNOWN_METHOD},
	Config, Cors, Server, ServerMetrics, MAX_REQUEST_BYTES, SUBSCRIPTION_OVER_HTTP_CODE,
};
use statement_test_support::{
	http::{exchange, post, Answer},
	wait::{eventually, Check},
	ws,
};
use std::{
	io::{Read, Write},
	net::TcpStream,
	time::Duration,
};

/// A server on a free port with `hello`, a subscription, and `system_health` reporting one peer.
async fn serve(cors: &str, max_connections: u32) -> (ServerHandle, u16) {
	let (handle, port, _) = serve_measured(cors, max_connections).await;
	(handle, port)
}

/// [`serve`], with the server's metrics.
async fn serve_measured(cors: &str, max_connections: u32) -> (ServerHandle, u16, ServerMetrics) {
	let mut methods = RpcModule::new(());
	methods.register_method("hello", |_, _, _| "world").unwrap();
	methods
		.register_method(
			"system_health",
			|_, _, _| serde_json::json!({"peers": 1, "isSyncing": false, "shouldHavePeers": true}),
		)
		.unwrap();
	methods
		.register_subscription("sub", "note", "unsub", |_, pending, _, _| async move {
			pending.accept().await?;
			Ok(())
		})
		.unwrap();
	// A subscription that stays open until it is unsubscribed (or its connection goes).
	methods
		.register_subscription_raw("hold", "held", "unhold", |_, pending, _, _| {
			tokio::spawn(async move {
				if let Ok(sink) = pending.accept().await {
					sink.closed().await;
				}
			});
		})
		.unwrap();
	let config = Config {
		cors: Cors::parse(cors).unwrap(),
		max_connections,
		max_subscriptions_per_connection: 4,
		request_timeout: Duration::from_secs(60),
		max_calls_in_flight_per_connection:
			statement_rpc_server::DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CONNECTION,
		max_answer_bytes_per_connection:
			statement_rpc_server::DEFAULT_MAX_ANSWER_BYTES_PER_CONNECTION,
	};
	let server = Server::bind("127.0.0.1:0".parse().unwrap(), config).await.unwrap();
	let port = server.local_addr().unwrap().port();
	let metrics = server.metrics();
	(server.start(methods), port, metrics)
}

const HELLO: &str = r#"{"jsonrpc":"2.0","id":1,"method":"hello"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_the_policy_refuses_gets_403_and_an_allowed_one_is_served_with_cors_headers() {
	let (server, port) = serve("http://localhost:*", 8).await;
	let answer = tokio::task::spawn_blocking(move || {
		let refused = post(port, Some("http://localhost.evil.com"), HELLO);
		let allowed = post(port, Some("http://localhost:3000"), HELLO);
		let no_origin = post(port, None, HELLO);
		(refused, allowed, no_origin)
	})
	.await
	.unwrap();
	let (refused, allowed, no_origin) = answer;
	assert_eq!(refused.status, 403, "{refused:?}");
	assert!(refused.body.contains("--rpc-cors"), "{refused:?}");
	assert_eq!(allowed.status, 200, "{allowed:?}");
	assert!(
		allowed.headers.contains("access-control-allow-origin: http://localhost:3000"),
		"{allowed:?}"
	);
	assert!(allowed.body.contains("world"), "{allowed:?}");
	assert_eq!(no_origin.status, 200, "{no_origin:?}");
	server.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_over_plain_http_is_refused_naming_the_websocket_address() {
	let (server, port) = serve("all", 8).await;
	let Answer { status, body, .. } = tokio::task::spawn_blocking(move || {
		post(port, None, r#"{"jsonrpc":"2.0","id":1,"method":"sub"}"#)
	})
	.await
	.unwrap();
	assert_eq!(status, 200);
	let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
	assert_eq!(answer["error"]["code"], SUBSCRIPTION_OVER_HTTP_CODE, "{body}");
	let message = answer["error"]["message"].as_str().unwrap_or_default();
	assert!(message.contains(&format!("ws://127.0.0.1:{port}")), "{message}");
	server.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_is_counted_by_protocol_and_method_and_every_websocket_session() {
	let (server, port, metrics) = serve_measured("all", 8).await;
	tokio::task::spawn_blocking(move || {
		assert!(post(port, None, HELLO).body.contains("world"));
		// A batch: each call counts, a made-up name as `unknown`, an error as an error.
		let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"hello"},
			{"jsonrpc":"2.0","id":2,"method":"made_up_42"}]"#;
		assert!(post(port, None, batch).body.contains("world"));
		let mut socket = ws::connect(port).unwrap();
		socket.write_all(&ws::text(HELLO)).unwrap();
		let answer = ws::read_text(&mut socket).unwrap();
		assert!(String::from_utf8_lossy(&answer).contains("world"), "{answer:?}");
	})
	.await
	.unwrap();
	let snapshot =
		eventually("the WebSocket session to be counted closed", Duration::from_secs(30), || {
			let snapshot = metrics.snapshot();
			async move {
				match snapshot.sessions_closed {
					1 => Check::Met(snapshot),
					_ => Check::Unmet(format!("{snapshot:?}")),
				}
			}
		})
		.await
		.unwrap();
	let calls = |protocol, method: &'static str| snapshot.calls[&(protocol, method)].clone();
	let http_hello = calls(Protocol::Http, "hello");
	assert_eq!((http_hello.started, http_hello.succeeded, http_hello.failed), (2, 2, 0));
	assert_eq!(http_hello.time.count, 2);
	let unknown = calls(Protocol::Http, UNKNOWN_METHOD);
	assert_eq!((unknown.started, unknown.succeeded, unknown.failed), (1, 0, 1));
	let ws_hello = calls(Protocol::Ws, "hello");
	assert_eq!((ws_hello.started, ws_hello.succeeded), (1, 1));
	assert_eq!(snapshot.sessions_opened, 1);
	assert_eq!(snapshot.session_time.count, 1);
	server.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_is_pinged_as_it_opens_so_a_first_answer_is_read_past_the_ping() {
	let (server, port) = serve("all", 8).await;
	let (first, answer) = tokio::task::spawn_blocking(move || {
		let mut socket = ws::connect(port).unwrap();
		socket.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
		// What a client that reads its first frame as the answer to its first call can meet
		// (on a busy machine the ping goes out before that answer is ready).
		let first = ws::read_message(&mut socket).unwrap();
		socket.write_all(&ws::text(HELLO)).unwrap();
		(first, ws::read_text(&mut socket).unwrap())
	})
	.await
	.unwrap();
	assert_eq!(first.0, ws::PING, "the first frame of a session: {first:?}");
	assert!(String::from_utf8_lossy(&answer).contains("world"), "{answer:?}");
	server.stop().unwrap();
}

/// An unsubscribe sent the moment the client has its subscription's id finds the
/// subscription. jsonrpsee listed a subscription only after writing its id, so an unsubscribe
/// served in between answered `false` and left the subscription open (`node/tests/v2.rs`
/// failed so once in a full test run; this test failed in 6 runs of 6 without the fix). Four
/// connections subscribe and unsubscribe at once, 500 times each, beside a thread that keeps
/// a core busy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsubscribe_sent_as_soon_as_the_id_arrives_finds_the_subscription() {
	let (server, port) = serve("all", 8).await;
	let busy = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
	let spinning = busy.clone();
	let spinner = std::thread::spawn(move || {
		while spinning.load(std::sync::atomic::Ordering::Relaxed) {
			std::hint::spin_loop();
		}
	});
	let clients: Vec<_> = (0..4)
		.map(|_| {
			tokio::task::spawn_blocking(move || {
				let mut socket = ws::connect(port).unwrap();
				socket.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
				let mut call = |request: serde_json::Value| -> serde_json::Value {
					socket.write_all(&ws::text(&request.to_string())).unwrap();
					serde_json::from_slice(&ws::read_text(&mut socket).unwrap()).unwrap()
				};
				let mut refused = Vec::new();
				for round in 0..500u64 {
					let answer = call(serde_json::json!({
						"jsonrpc": "2.0", "id": round, "method": "hold"
					}));
					let id = answer["result"].clone();
					assert!(id.is_string(), "subscribe answered {answer}");
					let answer = call(serde_json::json!({
						"jsonrpc": "2.0", "id": round, "method": "unhold", "params": [id]
					}));
					if answer["result"] != true {
						refused.push((round, answer));
					}
				}
				refused
			})
		})
		.collect();
	let mut refused = Vec::new();
	for client in clients {
		refused.extend(client.await.unwrap());
	}
	busy.store(false, std::sync::atomic::Ordering::Relaxed);
	spinner.join().unwrap();
	assert!(refused.is_empty(), "unsubscribes that did not find their subscription: {refused:?}");
	server.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_are_answered_from_system_health() {
	let (server, port) = serve("all", 8).await;
	let get = move |path: &str| {
		let request =
			format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
		exchange(port, &request)
	};
	let (health, readiness) =
		tokio::task::spawn_blocking(move || (get("/health"), get("/health/readiness")))
			.await
			.unwrap();
	assert_eq!(health.status, 200);
	assert_eq!(health.body, r#"{"peers":1,"isSyncing":false,"shouldHavePeers":true}"#);
	assert_eq!(readiness.status, 200, "one peer and not syncing: ready");
	server.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_declared_over_the_limit_is_answered_413_once_it_is_read() {
	let (server, port) = serve("all", 8).await;
	let (status, _, body) = tokio::task::spawn_blocking(move || {
		let size = MAX_REQUEST_BYTES as usize + 1;
		let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
		stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
		let head = format!(
			"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
			 Content-Length: {size}\r\nConnection: close\r\n\r\n"
		);
		stream.write_all(head.as_bytes()).unwrap();
		// The whole body goes out without a reset: the server reads it through.
		stream.write_all(&vec![b' '; size]).unwrap();
		let mut response = String::new();
		stream.read_to_string(&mut response).unwrap();
		let (head, body) = response.split_once("\r\n\r\n").unwrap();
		let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
		(status, head.to_string(), body.to_string())
	})
	.await
	.unwrap();
	assert_eq!(status, 413, "{body}");
	server.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_with_every_connection_busy_a_newcomer_gets_429() {
	let (server, port) = serve("all", 1).await;
	let refused = tokio::task::spawn_blocking(move || {
		// A WebSocket that has made a call is a session, never evicted.
		let mut session = ws::connect(port).unwrap();
		session.write_all(&ws::text(HELLO)).unwrap();
		let mut buf = [0u8; 1024];
		let _ = session.read(&mut buf).unwrap();
		// The newcomer sends nothing: the answer comes on accept, and a request left unread
		// on the closed socket would reset it before the answer is read.
		let mut newcomer = TcpStream::connect(("127.0.0.1", port)).unwrap();
		newcomer.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
		let mut refused = String::new();
		newcomer.read_to_string(&mut refused).unwrap();
		drop(session);
		refused
	})
	.await
	.unwrap();
	assert!(refused.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{refused:?}");
	assert!(refused.ends_with("\r\n\r\nToo many connections. Please try again later."));
	server.stop().unwrap();
}
