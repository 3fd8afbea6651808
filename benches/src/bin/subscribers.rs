//! Node memory with subscribers that never read: starts the release `statement-node` twice,
//! submits the same pre-signed statements over HTTP JSON-RPC, once alone and once with
//! WebSocket subscriptions (filter "any") that never read, and prints the node's peak RSS
//! (`VmRSS` sampled from `/proc/<pid>/status`, and `VmHWM`) for both.
//!
//! ```sh
//! cargo build --release -p statement-node
//! cargo run --release -p statement-store-benches --bin subscribers -- \
//!     --node target/release/statement-node --statements 100000 --subscribers 100
//! ```
//!
//! Statements are signed (sr25519) by the dev accounts, which the dev chain spec gives
//! allowances; data is 256 bytes, topics as in the rest of the benchmarks.

use sp_core::{sr25519, Pair};
use statement_primitives::Statement;
use statement_store_benches::fixture::topic;
use std::{
	io::{Read, Write},
	net::{TcpListener, TcpStream},
	process::{Child, Command, Stdio},
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc,
	},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

const DEV_ACCOUNTS: [&str; 6] = ["//Alice", "//Bob", "//Charlie", "//Dave", "//Eve", "//Ferdie"];
/// Submits per HTTP request (one JSON-RPC batch).
const BATCH: usize = 250;
/// Connections submitting at once.
const SUBMITTERS: usize = 2;

struct Args {
	node: String,
	statements: usize,
	subscribers: usize,
	per_connection: usize,
	/// Subscribe to every statement (`any`), or to a topic nobody submits on (`idle`).
	filter: Filter,
}

#[derive(Clone, Copy, PartialEq)]
enum Filter {
	Any,
	Idle,
}

impl Filter {
	/// The filter as `statement_subscribeStatement` takes it.
	fn json(self) -> String {
		match self {
			Filter::Any => r#""any""#.into(),
			Filter::Idle => format!(r#"{{"matchAll":["0x{}"]}}"#, "ee".repeat(32)),
		}
	}
}

fn parse_args() -> Result<Args, String> {
	let mut args = Args {
		node: "target/release/statement-node".into(),
		statements: 100_000,
		subscribers: 100,
		per_connection: 1,
		filter: Filter::Any,
	};
	let mut iter = std::env::args().skip(1);
	while let Some(flag) = iter.next() {
		let mut value = || iter.next().ok_or_else(|| format!("{flag} needs a value"));
		let number = |text: String| text.parse::<usize>().map_err(|err| format!("{text}: {err}"));
		match flag.as_str() {
			"--node" => args.node = value()?,
			"--statements" => args.statements = number(value()?)?,
			"--subscribers" => args.subscribers = number(value()?)?,
			"--per-connection" => args.per_connection = number(value()?)?.max(1),
			"--filter" => {
				args.filter = match value()?.as_str() {
					"any" => Filter::Any,
					"idle" => Filter::Idle,
					other => return Err(format!("--filter {other}: use any or idle")),
				}
			}
			other => {
				return Err(format!(
					"unknown argument {other}; use --node PATH --statements N --subscribers N \
					 [--per-connection N] [--filter any|idle]"
				))
			}
		}
	}
	Ok(args)
}

fn free_port() -> u16 {
	TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_or(0, |a| a.port())
}

fn hex(bytes: &[u8]) -> String {
	let mut out = String::with_capacity(2 + bytes.len() * 2);
	out.push_str("0x");
	for byte in bytes {
		out.push_str(&format!("{byte:02x}"));
	}
	out
}

/// The statements, signed once and reused by both runs, as JSON-RPC batch bodies.
fn signed_batches(count: usize) -> Vec<String> {
	let pairs: Vec<sr25519::Pair> = DEV_ACCOUNTS
		.iter()
		.map(|suri| sr25519::Pair::from_string(suri, None).expect("dev account"))
		.collect();
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
	let expiry = (now + 24 * 3600) as u32;
	let statements: Vec<String> = (0..count as u32)
		.map(|i| {
			let mut statement = Statement::new();
			statement.set_expiry_from_parts(expiry, i);
			statement.set_topic(0, topic(i % 10));
			statement.set_topic(1, topic(1000 + i % 100));
			let mut data = vec![0u8; 256];
			data[..4].copy_from_slice(&i.to_le_bytes());
			statement.set_plain_data(data);
			statement.sign_sr25519_private(&pairs[i as usize % pairs.len()]);
			hex(&statement.encode())
		})
		.collect();
	statements
		.chunks(BATCH)
		.map(|chunk| {
			let calls: Vec<String> = chunk
				.iter()
				.enumerate()
				.map(|(id, s)| {
					format!(
						r#"{{"jsonrpc":"2.0","id":{id},"method":"statement_submit","params":["{s}"]}}"#
					)
				})
				.collect();
			format!("[{}]", calls.join(","))
		})
		.collect()
}

struct Node {
	child: Child,
	rpc_port: u16,
	metrics_port: u16,
}

impl Node {
	fn start(path: &str) -> Result<Node, String> {
		let (rpc_port, metrics_port) = (free_port(), free_port());
		let child = Command::new(path)
			.args(["--dev", "--rpc-max-connections", "1000"])
			.args(["--rpc-port", &rpc_port.to_string()])
			.args(["--prometheus-port", &metrics_port.to_string()])
			.args(["--listen-addr", "/ip4/127.0.0.1/tcp/0"])
			.stdout(Stdio::null())
			.stderr(Stdio::null())
			.spawn()
			.map_err(|err| format!("cannot start {path}: {err}"))?;
		let node = Node { child, rpc_port, metrics_port };
		let deadline = Instant::now() + Duration::from_secs(60);
		while TcpStream::connect(("127.0.0.1", rpc_port)).is_err() {
			if Instant::now() > deadline {
				return Err("the node did not open its RPC port within 60 s".into());
			}
			std::thread::sleep(Duration::from_millis(50));
		}
		Ok(node)
	}

	/// A `/proc/<pid>/status` figure in KiB.
	fn status_kib(&self, field: &str) -> u64 {
		let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
			.unwrap_or_default();
		status
			.lines()
			.find(|line| line.starts_with(field))
			.and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
			.unwrap_or(0)
	}

	fn metric(&self, name: &str) -> Option<f64> {
		let body = http(self.metrics_port, "GET", "/metrics", "").ok()?;
		let line = body.lines().find(|line| line.starts_with(&format!("{name} ")))?;
		line.split(' ').nth(1)?.parse().ok()
	}
}

impl Drop for Node {
	fn drop(&mut self) {
		let _ = self.child.kill();
		let _ = self.child.wait();
	}
}

/// One HTTP/1.1 exchange on a fresh connection; the response body.
fn http(port: u16, method: &str, path: &str, body: &str) -> Result<String, String> {
	let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
	exchange(&mut stream, method, path, body, true)
}

/// One HTTP/1.1 exchange on `stream` (kept alive unless `close`); the response body.
fn exchange(
	stream: &mut TcpStream,
	method: &str,
	path: &str,
	body: &str,
	close: bool,
) -> Result<String, String> {
	let connection = if close { "close" } else { "keep-alive" };
	let request = format!(
		"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
		 Content-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
		body.len()
	);
	stream.write_all(request.as_bytes()).map_err(|err| err.to_string())?;
	let mut head = Vec::new();
	let mut byte = [0u8; 1];
	while !head.ends_with(b"\r\n\r\n") {
		stream.read_exact(&mut byte).map_err(|err| format!("reading the response: {err}"))?;
		head.push(byte[0]);
	}
	let head = String::from_utf8_lossy(&head).to_lowercase();
	let length = head
		.lines()
		.find_map(|line| line.strip_prefix("content-length:"))
		.and_then(|value| value.trim().parse::<usize>().ok());
	let mut body = Vec::new();
	match length {
		Some(length) => {
			body.resize(length, 0);
			stream.read_exact(&mut body).map_err(|err| err.to_string())?;
		}
		None => {
			stream.read_to_end(&mut body).map_err(|err| err.to_string())?;
		}
	}
	Ok(String::from_utf8_lossy(&body).into_owned())
}

/// A WebSocket connection with `count` subscriptions on `filter`; it never reads past the
/// handshake.
fn idle_subscriber(port: u16, count: usize, filter: Filter) -> Result<TcpStream, String> {
	let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
	let handshake = format!(
		"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
		 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	);
	stream.write_all(handshake.as_bytes()).map_err(|err| err.to_string())?;
	let mut response = Vec::new();
	let mut byte = [0u8; 1];
	while !response.ends_with(b"\r\n\r\n") {
		stream.read_exact(&mut byte).map_err(|err| err.to_string())?;
		response.push(byte[0]);
	}
	if !response.starts_with(b"HTTP/1.1 101") {
		return Err(format!("handshake refused: {}", String::from_utf8_lossy(&response)));
	}
	for id in 0..count {
		let request = format!(
			r#"{{"jsonrpc":"2.0","id":{id},"method":"statement_subscribeStatement","params":[{}]}}"#,
			filter.json()
		);
		// A masked text frame, as clients must send (16-bit length past 125 bytes).
		let mask = [0x5au8, 0x17, 0xc3, 0x88];
		let mut frame = if request.len() < 126 {
			vec![0x81, 0x80 | request.len() as u8]
		} else {
			let length = (request.len() as u16).to_be_bytes();
			vec![0x81, 0x80 | 126, length[0], length[1]]
		};
		frame.extend_from_slice(&mask);
		frame.extend(request.bytes().enumerate().map(|(at, byte)| byte ^ mask[at % 4]));
		stream.write_all(&frame).map_err(|err| err.to_string())?;
	}
	Ok(stream)
}

struct Run {
	idle_mib: f64,
	/// RSS once every subscription is open, before any submit.
	subscribed_mib: f64,
	peak_mib: f64,
	hwm_mib: f64,
	end_mib: f64,
	seconds: f64,
	accepted: usize,
	open_subscriptions: Option<f64>,
}

fn run(args: &Args, batches: &[String], subscribers: usize) -> Result<Run, String> {
	let node = Node::start(&args.node)?;
	std::thread::sleep(Duration::from_millis(500));
	let idle_mib = node.status_kib("VmRSS:") as f64 / 1024.0;
	// Gossip's own watch of the store counts as a subscription.
	let already = node.metric("substrate_statement_store_subscriptions").unwrap_or(0.0);
	let mut idle = Vec::new();
	let mut opened = 0;
	while opened < subscribers {
		let count = args.per_connection.min(subscribers - opened);
		idle.push(idle_subscriber(node.rpc_port, count, args.filter)?);
		opened += count;
	}
	let deadline = Instant::now() + Duration::from_secs(30);
	let deadline = deadline + Duration::from_secs(subscribers as u64 / 1_000);
	while subscribers > 0
		&& node.metric("substrate_statement_store_subscriptions")
			!= Some(already + subscribers as f64)
	{
		if Instant::now() > deadline {
			return Err("the subscriptions did not all open in time".into());
		}
		std::thread::sleep(Duration::from_millis(50));
	}
	// Let the replies drain and the allocator settle.
	std::thread::sleep(Duration::from_secs(1));
	let subscribed_mib = node.status_kib("VmRSS:") as f64 / 1024.0;

	let peak = Arc::new(AtomicU64::new(0));
	let done = Arc::new(AtomicBool::new(false));
	let sampler = {
		let (peak, done) = (peak.clone(), done.clone());
		let status = format!("/proc/{}/status", node.child.id());
		std::thread::spawn(move || {
			while !done.load(Ordering::Relaxed) {
				let text = std::fs::read_to_string(&status).unwrap_or_default();
				let rss = text
					.lines()
					.find(|line| line.starts_with("VmRSS:"))
					.and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
					.unwrap_or(0);
				peak.fetch_max(rss, Ordering::Relaxed);
				std::thread::sleep(Duration::from_millis(20));
			}
		})
	};
	let started = Instant::now();
	let accepted: usize = std::thread::scope(|scope| {
		let workers: Vec<_> = (0..SUBMITTERS)
			.map(|worker| {
				let port = node.rpc_port;
				scope.spawn(move || -> Result<usize, String> {
					let mut stream =
						TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
					let mut accepted = 0;
					for body in batches.iter().skip(worker).step_by(SUBMITTERS) {
						let answer = exchange(&mut stream, "POST", "/", body, false)?;
						accepted += answer.matches(r#""status":"new""#).count();
					}
					Ok(accepted)
				})
			})
			.collect();
		workers.into_iter().map(|worker| worker.join().unwrap_or(Ok(0))).sum::<Result<usize, _>>()
	})?;
	let seconds = started.elapsed().as_secs_f64();
	// Let the node settle (background writes, dropping lagging subscribers).
	std::thread::sleep(Duration::from_secs(2));
	done.store(true, Ordering::Relaxed);
	let _ = sampler.join();
	let open_subscriptions = node.metric("substrate_statement_store_subscriptions");
	let result = Run {
		idle_mib,
		subscribed_mib,
		peak_mib: peak.load(Ordering::Relaxed) as f64 / 1024.0,
		hwm_mib: node.status_kib("VmHWM:") as f64 / 1024.0,
		end_mib: node.status_kib("VmRSS:") as f64 / 1024.0,
		seconds,
		accepted,
		open_subscriptions,
	};
	drop(idle);
	Ok(result)
}

fn main() {
	let args = match parse_args() {
		Ok(args) => args,
		Err(err) => {
			eprintln!("{err}");
			std::process::exit(2);
		}
	};
	eprintln!("signing {} statements ...", args.statements);
	let batches = signed_batches(args.statements);
	println!(
		"| subscribers (never reading) | accepted | submit time | submits/s | RSS idle | RSS subscribed | per subscription | peak RSS (sampled) | VmHWM | RSS at end | subscriptions open at end |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|");
	let mut rates = Vec::new();
	let mut peaks = Vec::new();
	for subscribers in [0, args.subscribers] {
		match run(&args, &batches, subscribers) {
			Ok(run) => {
				let rate = run.accepted as f64 / run.seconds;
				rates.push(rate);
				let per_subscription = if subscribers == 0 {
					"-".to_string()
				} else {
					let kib = (run.subscribed_mib - run.idle_mib) * 1024.0 / subscribers as f64;
					format!("{kib:.2} KiB")
				};
				println!(
					"| {subscribers} | {} | {:.1} s | {rate:.0} | {:.0} MiB | {:.0} MiB | {per_subscription} | {:.0} MiB | {:.0} MiB | {:.0} MiB | {} |",
					run.accepted,
					run.seconds,
					run.idle_mib,
					run.subscribed_mib,
					run.peak_mib,
					run.hwm_mib,
					run.end_mib,
					run.open_subscriptions.map_or("?".into(), |open| format!("{open}")),
				);
				peaks.push(run.hwm_mib.max(run.peak_mib));
			}
			Err(err) => {
				eprintln!("run with {subscribers} subscribers failed: {err}");
				std::process::exit(1);
			}
		}
	}
	if let [without, with] = rates[..] {
		println!(
			"\nsubmits/s with {} subscribers / without: {:.2}",
			args.subscribers,
			with / without
		);
	}
	if let [without, with] = peaks[..] {
		println!(
			"\npeak RSS with {} subscribers - without: {:+.0} MiB (goal: within 128 MiB)",
			args.subscribers,
			with - without
		);
	}
}
