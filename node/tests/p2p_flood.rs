//! The p2p port under a flood of idle connections: bounded per address, and a listener that
//! accepts again after running out of descriptors. Its own test binary, and one test at a
//! time, so no other test's node competes with a flood for the two cores.

mod common;

use common::Node;
use jsonrpsee::{core::client::ClientT, http_client::HttpClientBuilder, rpc_params};
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::{Statement, Topic};
use statement_test_support::{metrics::Metrics, privileged};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// zombienet's key for a node named `alice`.
const ALICE_KEY: &str = "2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90";

/// Held by each test: they run one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn call(node: &Node, method: &str) -> Value {
	let client = HttpClientBuilder::default().build(node.http_url()).unwrap();
	client.request(method, rpc_params![]).await.unwrap()
}

/// A statement signed by `//Alice` on `topic`, hex-encoded for `statement_submit`.
fn signed_on(topic: Topic, data: &[u8]) -> String {
	let mut statement = Statement::new();
	let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
	statement.set_expiry_from_parts((now + 3600) as u32, 0);
	statement.set_topic(0, topic);
	statement.set_plain_data(data.to_vec());
	statement.sign_sr25519_private(&sr25519::Pair::from_string("//Alice", None).unwrap());
	format!("0x{}", hex::encode(codec::Encode::encode(&statement)))
}

/// Submit `data` on `topic` to `from` and wait (hang detector) until `to` serves it.
async fn gossiped(from: &Node, to: &Node, topic: Topic, data: &[u8]) {
	let from_rpc = HttpClientBuilder::default().build(from.http_url()).unwrap();
	let result: Value =
		from_rpc.request("statement_submit", rpc_params![signed_on(topic, data)]).await.unwrap();
	assert_eq!(result, json!({"status": "new"}));
	let to_rpc = HttpClientBuilder::default().build(to.http_url()).unwrap();
	let topics = json!([format!("0x{}", hex::encode(topic.0))]);
	let wanted = json!(format!("0x{}", hex::encode(data)));
	let deadline = Instant::now() + Duration::from_secs(60);
	loop {
		let found: Value =
			to_rpc.request("statement_broadcasts", rpc_params![topics.clone()]).await.unwrap();
		if found.as_array().is_some_and(|all| all.contains(&wanted)) {
			return;
		}
		assert!(Instant::now() < deadline, "the statement never reached the peer: {found}");
		tokio::time::sleep(Duration::from_millis(50)).await;
	}
}

/// Wait (hang detector) until `node` has `count` statement peers; on failure, show the end of
/// its log and of `peer`'s.
async fn peers_reach(node: &Node, peer: &Node, count: u64, what: &str) {
	let deadline = Instant::now() + Duration::from_secs(60);
	loop {
		let health = call(node, "system_health").await;
		if health["peers"] == json!(count) {
			return;
		}
		if Instant::now() >= deadline {
			let tail = |node: &Node| {
				let lines: Vec<String> = node.logs().try_iter().collect();
				lines[lines.len().saturating_sub(40)..].join("\n")
			};
			panic!("{what}: {health}\nits log:\n{}\nthe peer's:\n{}", tail(node), tail(peer));
		}
		tokio::time::sleep(Duration::from_millis(100)).await;
	}
}

/// An idle TCP connection to `port` on 127.0.0.1 from 127.0.0.2: a second address of the
/// loopback, as an attacker's host would be.
///
/// Its port must not keep the test's own peers from dialling: litep2p binds a dial to
/// `0.0.0.0:<its listen port>`, which a socket holding `127.0.0.2:<that port>` without
/// `SO_REUSEADDR` (the flood's, established or in TIME_WAIT) refuses with `EADDRINUSE`.
/// On separate hosts this cannot happen; here the flood's sockets share the peers' ports,
/// so they set `SO_REUSEADDR`, and close with a reset (no TIME_WAIT left behind).
#[cfg(target_os = "linux")]
fn idle_connection_from_elsewhere(port: u16) -> std::io::Result<std::net::TcpStream> {
	use std::os::fd::FromRawFd;
	unsafe {
		let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
		if fd < 0 {
			return Err(std::io::Error::last_os_error());
		}
		let stream = std::net::TcpStream::from_raw_fd(fd);
		let on: libc::c_int = 1;
		let linger = libc::linger { l_onoff: 1, l_linger: 0 };
		let set = |name, value: *const libc::c_void, size: usize| {
			libc::setsockopt(fd, libc::SOL_SOCKET, name, value, size as libc::socklen_t)
		};
		if set(libc::SO_REUSEADDR, &on as *const _ as _, std::mem::size_of_val(&on)) != 0
			|| set(libc::SO_LINGER, &linger as *const _ as _, std::mem::size_of_val(&linger)) != 0
		{
			return Err(std::io::Error::last_os_error());
		}
		let mut from: libc::sockaddr_in = std::mem::zeroed();
		from.sin_family = libc::AF_INET as libc::sa_family_t;
		from.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 2]).to_be();
		let size = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
		if libc::bind(fd, &from as *const _ as *const libc::sockaddr, size) != 0 {
			return Err(std::io::Error::last_os_error());
		}
		let mut to = from;
		to.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
		to.sin_port = port.to_be();
		if libc::connect(fd, &to as *const _ as *const libc::sockaddr, size) != 0 {
			return Err(std::io::Error::last_os_error());
		}
		Ok(stream)
	}
}

/// An attacker on another address keeping `count` idle connections to `port` open, opening
/// a new one for each the node closes, until dropped.
#[cfg(target_os = "linux")]
struct Flood {
	stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
	thread: Option<std::thread::JoinHandle<usize>>,
}

#[cfg(target_os = "linux")]
impl Flood {
	fn start(port: u16, count: usize) -> Flood {
		use std::sync::atomic::Ordering;
		let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
		let stopping = stop.clone();
		let thread = std::thread::spawn(move || {
			let mut held: std::collections::VecDeque<std::net::TcpStream> = Default::default();
			let mut opened = 0;
			while !stopping.load(Ordering::Relaxed) {
				if held.len() >= count {
					// Forget those the node has closed; replace up to 100 of them a sweep.
					held.retain(|stream| {
						let _ = stream.set_nonblocking(true);
						let mut buf = [0u8; 256];
						match std::io::Read::read(&mut &*stream, &mut buf) {
							Ok(0) => false,
							Ok(_) => true,
							Err(err) => err.kind() == std::io::ErrorKind::WouldBlock,
						}
					});
					let refill = (held.len() + 100).min(count);
					while held.len() < refill && !stopping.load(Ordering::Relaxed) {
						match idle_connection_from_elsewhere(port) {
							Ok(stream) => {
								held.push_back(stream);
								opened += 1;
							}
							Err(_) => break,
						}
					}
					std::thread::sleep(Duration::from_millis(100));
					continue;
				}
				match idle_connection_from_elsewhere(port) {
					Ok(stream) => {
						held.push_back(stream);
						opened += 1;
					}
					Err(_) => std::thread::sleep(Duration::from_millis(5)),
				}
			}
			opened
		});
		Flood { stop, thread: Some(thread) }
	}

	/// End the flood; how many connections it opened.
	fn end(mut self) -> usize {
		self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
		self.thread.take().unwrap().join().unwrap()
	}
}

/// A node to flood, with 256 descriptors and `args` besides the fixture's.
#[cfg(target_os = "linux")]
struct Target {
	node: Node,
	/// Its Prometheus port.
	prometheus: u16,
	/// Its p2p address, `/ip4/127.0.0.1/tcp/P/p2p/<PeerId>`.
	address: String,
	/// `P`.
	port: u16,
}

#[cfg(target_os = "linux")]
async fn target(args: &[&str]) -> Target {
	let common = ["--dev", "--node-key", ALICE_KEY, "--no-discovery"];
	let all: Vec<&str> = common.iter().chain(args).copied().collect();
	let node =
		common::launch(&all).descriptor_limit(256).start().unwrap_or_else(|err| panic!("{err}"));
	let prometheus = node.metrics_port().unwrap();
	let listen = call(&node, "system_localListenAddresses").await;
	let address = listen[0].as_str().unwrap().to_string();
	let port = address.split('/').nth(4).unwrap().parse().unwrap();
	Target { node, prometheus, address, port }
}

/// A metric's value from the node's Prometheus endpoint (`name` with its labels).
fn metric(prometheus_port: u16, name: &str) -> f64 {
	Metrics::scrape(prometheus_port)
		.and_then(|metrics| metrics.value(name))
		.unwrap_or_else(|err| panic!("{err}"))
}

/// The floods need 8,192 descriptors in the test process.
mod needs_root {
	use super::*;

	/// Thousands of idle connections from one address, against a node with 256 descriptors: it
	/// keeps 32 of them and closes the rest as they come, so a real peer connects and gossips
	/// while the flood goes on, and after: the port stays open to real peers.
	#[cfg(target_os = "linux")]
	#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
	#[ignore = "needs root or a hard descriptor limit of 8,192; run with --ignored needs_root::"]
	async fn idle_connections_from_one_address_leave_the_port_to_real_peers() {
		let _alone = ONE_AT_A_TIME.lock().await;
		privileged::descriptors(8_192);
		let Target { node: alice, prometheus, address, port } = target(&[]).await;
		let flood = Flood::start(port, 3_000);
		// Let the flood reach its size before the peer comes.
		let deadline = Instant::now() + Duration::from_secs(60);
		while metric(prometheus, "statement_network_inbound_refused_total{limit=\"per_address\"}")
			< 1_000.0
		{
			assert!(Instant::now() < deadline, "the flood never met the per-address bound");
			tokio::time::sleep(Duration::from_millis(200)).await;
		}
		let bob =
			common::start(&["--dev", "--no-prometheus", "--no-discovery", "--bootnodes", &address]);
		peers_reach(&bob, &alice, 1, "bob never connected to alice under the flood").await;
		let topic = Topic::from_name("flood");
		gossiped(&alice, &bob, topic, b"during the flood").await;
		let held = metric(prometheus, "statement_network_inbound_connections");
		assert!(held <= 32.0 + 4.0, "alice holds {held} inbound connections");
		assert_eq!(metric(prometheus, "statement_network_listener_accept_errors_total"), 0.0);
		let refused =
			metric(prometheus, "statement_network_inbound_refused_total{limit=\"per_address\"}");
		let opened = flood.end();
		eprintln!("flood: {opened} connections opened, {refused} closed on accept, {held} held");
		assert!(opened >= 3_000, "the flood opened only {opened} connections");
		gossiped(&bob, &alice, topic, b"after the flood").await;
		let charlie =
			common::start(&["--dev", "--no-prometheus", "--no-discovery", "--bootnodes", &address]);
		peers_reach(&charlie, &alice, 1, "charlie never connected to alice after the flood").await;
		gossiped(&alice, &charlie, topic, b"to a newcomer").await;
	}

	/// With the bounds lifted above the descriptor limit, the flood does exhaust the node's
	/// descriptors and `accept` fails: the listener pauses, logs, counts it, and accepts again
	/// once the flood ends, so a peer joins without a restart: the port never closes for good.
	#[cfg(target_os = "linux")]
	#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
	#[ignore = "needs root or a hard descriptor limit of 8,192; run with --ignored needs_root::"]
	async fn the_listener_accepts_again_after_descriptors_run_out() {
		let _alone = ONE_AT_A_TIME.lock().await;
		privileged::descriptors(8_192);
		let Target { node: mut alice, prometheus, address, port } =
			target(&["--max-connections-per-ip", "100000", "--max-inbound-connections", "100000"])
				.await;
		let flood = Flood::start(port, 1_000);
		alice
			.wait_for_log(
				"accepting a connection failed; the listener pauses and tries again",
				Duration::from_secs(120),
			)
			.unwrap();
		// Failed accepts in a row: the pause grows, the listener stays.
		tokio::time::sleep(Duration::from_secs(3)).await;
		flood.end();
		// The flood's connections wait in the listen queue and in handshakes; the node takes them
		// in and sees them closed. Then a peer comes.
		let deadline = Instant::now() + Duration::from_secs(60);
		loop {
			let held = metric(prometheus, "statement_network_inbound_connections");
			if held == 0.0 {
				break;
			}
			assert!(Instant::now() < deadline, "alice still holds {held} flood connections");
			tokio::time::sleep(Duration::from_millis(200)).await;
		}
		let bob =
			common::start(&["--dev", "--no-prometheus", "--no-discovery", "--bootnodes", &address]);
		peers_reach(&bob, &alice, 1, "bob never connected to alice once the flood ended").await;
		let topic = Topic::from_name("exhausted");
		gossiped(&bob, &alice, topic, b"after running out").await;
		let errors = metric(prometheus, "statement_network_listener_accept_errors_total");
		assert!(errors >= 1.0, "no failed accept counted");
	}
}
