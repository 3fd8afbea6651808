//! Subscriptions against a release `statement-node`, over real sockets (issue 31). Three
//! modes:
//!
//! - `submit` (the default): starts a node per row and submits the same pre-signed
//!   statements over HTTP JSON-RPC, alone and beside each count of WebSocket subscriptions
//!   given to `--subscribers` (a list), and prints submits/s as a ratio to the run without
//!   any, the node's RSS per subscription (15 s after the last opened) and its peak RSS. `--filter any` subscribes to
//!   every statement, `--filter idle` to a topic nobody submits on; `--clients never` leaves
//!   every answer unread (subscribers stuck in their buffers), `--clients read` reads and
//!   drops them (a live app that has nothing coming).
//! - `replay`: stores `--statements` statements on one topic, then compares the rate at which
//!   a new `matchAll` subscription on that topic gets them (its replay) with the rate of
//!   `statement_broadcastsStatement` for the same statements (in five calls, so that each
//!   answer fits the server's 10 MiB response limit).
//! - `fanout`: opens `--subscribers` reading subscriptions on one topic (1,000 a connection),
//!   then submits `--rounds` statements on it one at a time, and prints p50/p99/max of the
//!   time from the submit call to the last subscription's delivery.
//!
//! ```sh
//! cargo build --release -p statement-node
//! B="cargo run --release -p statement-store-benches --bin subscribers --"
//! $B --node target/release/statement-node --statements 20000 \
//!     --subscribers 1000,10000,100000 --per-connection 1000 --filter idle --clients read
//! $B --node target/release/statement-node --mode replay --statements 100000
//! $B --node target/release/statement-node --mode fanout --subscribers 10000 --rounds 100
//! ```
//!
//! `--budget-mib N` starts the node with `--statement-subscription-memory-mib N`: at the
//! default (64) it opens at most 16,384 subscriptions and refuses the rest, which the tables
//! count.
//!
//! Statements are signed (sr25519) by the dev accounts, which the dev chain spec gives
//! allowances; data is 256 bytes (32 in `replay`), topics as in the rest of the benchmarks.

use sp_core::{sr25519, Pair};
use statement_primitives::{Statement, Topic};
use statement_store_benches::{
	fixture::topic,
	metrics::SUBSCRIPTIONS,
	node::{Chain, Launch, Node},
	procfs::{self, RssPeak},
};
use std::{
	io::{Read, Write},
	net::{Shutdown, TcpStream},
	path::PathBuf,
	sync::{
		atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
		Arc,
	},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

const DEV_ACCOUNTS: [&str; 6] = ["//Alice", "//Bob", "//Charlie", "//Dave", "//Eve", "//Ferdie"];
/// Submits per HTTP request (one JSON-RPC batch).
const BATCH: usize = 250;
/// Connections submitting at once.
const SUBMITTERS: usize = 2;
/// Subscriptions per connection in `fanout` (the node's default limit is 1,024).
const FANOUT_PER_CONNECTION: usize = 1_000;
/// `replay`'s topic, and the second topics that split its statements into five answers.
const REPLAY_TOPIC: u32 = 77;
const REPLAY_PARTS: u32 = 5;
/// How long `submit` waits after the subscriptions opened before it measures and submits.
const SETTLE: Duration = Duration::from_secs(15);
/// How often `submit` samples the node's RSS for its peak.
const RSS_PERIOD: Duration = Duration::from_millis(20);
/// `fanout`'s topic.
const FANOUT_TOPIC: u32 = 88;

struct Args {
	mode: Mode,
	node: String,
	statements: usize,
	/// Subscription counts, one run each (after a run without any, in `submit`).
	subscribers: Vec<usize>,
	per_connection: usize,
	/// Subscribe to every statement (`any`), or to a topic nobody submits on (`idle`).
	filter: Filter,
	/// Whether subscribing clients read what they are sent.
	read: bool,
	rounds: usize,
	/// The node's `--statement-subscription-memory-mib`, if given.
	budget_mib: Option<usize>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
	Submit,
	Replay,
	Fanout,
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

/// A `matchAll` filter on `topic`.
fn match_all(topic: &Topic) -> String {
	format!(r#"{{"matchAll":["{}"]}}"#, hex(&topic.0))
}

fn parse_args() -> Result<Args, String> {
	let mut args = Args {
		mode: Mode::Submit,
		node: "target/release/statement-node".into(),
		statements: 100_000,
		subscribers: vec![100],
		per_connection: 1,
		filter: Filter::Any,
		read: false,
		rounds: 100,
		budget_mib: None,
	};
	let mut iter = std::env::args().skip(1);
	while let Some(flag) = iter.next() {
		let mut value = || iter.next().ok_or_else(|| format!("{flag} needs a value"));
		let number = |text: &str| text.parse::<usize>().map_err(|err| format!("{text}: {err}"));
		match flag.as_str() {
			"--mode" => {
				args.mode = match value()?.as_str() {
					"submit" => Mode::Submit,
					"replay" => Mode::Replay,
					"fanout" => Mode::Fanout,
					other => return Err(format!("--mode {other}: use submit, replay or fanout")),
				}
			}
			"--node" => args.node = value()?,
			"--statements" => args.statements = number(&value()?)?,
			"--subscribers" => {
				args.subscribers = value()?.split(',').map(number).collect::<Result<_, _>>()?
			}
			"--per-connection" => args.per_connection = number(&value()?)?.max(1),
			"--rounds" => args.rounds = number(&value()?)?.max(1),
			"--budget-mib" => args.budget_mib = Some(number(&value()?)?),
			"--filter" => {
				args.filter = match value()?.as_str() {
					"any" => Filter::Any,
					"idle" => Filter::Idle,
					other => return Err(format!("--filter {other}: use any or idle")),
				}
			}
			"--clients" => {
				args.read = match value()?.as_str() {
					"read" => true,
					"never" => false,
					other => return Err(format!("--clients {other}: use read or never")),
				}
			}
			other => {
				return Err(format!(
					"unknown argument {other}; use [--mode submit|replay|fanout] --node PATH \
					 --statements N --subscribers N[,N...] [--per-connection N] \
					 [--filter any|idle] [--clients read|never] [--rounds N] [--budget-mib N]"
				))
			}
		}
	}
	Ok(args)
}

fn hex(bytes: &[u8]) -> String {
	let mut out = String::with_capacity(2 + bytes.len() * 2);
	out.push_str("0x");
	for byte in bytes {
		out.push_str(&format!("{byte:02x}"));
	}
	out
}

/// `count` statements signed by the dev accounts in turn, each encoded as `0x`-hex; `shape`
/// gives statement `i` its topics and data.
fn signed(count: usize, shape: impl Fn(u32, &mut Statement)) -> Vec<String> {
	let pairs: Vec<sr25519::Pair> = DEV_ACCOUNTS
		.iter()
		.map(|suri| sr25519::Pair::from_string(suri, None).expect("dev account"))
		.collect();
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
	let expiry = (now + 24 * 3600) as u32;
	(0..count as u32)
		.map(|i| {
			let mut statement = Statement::new();
			statement.set_expiry_from_parts(expiry, i);
			shape(i, &mut statement);
			statement.sign_sr25519_private(&pairs[i as usize % pairs.len()]);
			hex(&statement.encode())
		})
		.collect()
}

/// `submit`'s statements: two topics of the benchmarks' usual spread, 256 bytes of data.
fn submit_statements(count: usize) -> Vec<String> {
	signed(count, |i, statement| {
		statement.set_topic(0, topic(i % 10));
		statement.set_topic(1, topic(1000 + i % 100));
		let mut data = vec![0u8; 256];
		data[..4].copy_from_slice(&i.to_le_bytes());
		statement.set_plain_data(data);
	})
}

/// `statements` as JSON-RPC batch bodies of [`BATCH`] submits.
fn batches(statements: &[String]) -> Vec<String> {
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

/// Submit `batches` from [`SUBMITTERS`] kept-alive connections; how many were new.
fn submit_all(port: u16, batches: &[String]) -> Result<usize, String> {
	std::thread::scope(|scope| {
		let workers: Vec<_> = (0..SUBMITTERS)
			.map(|worker| {
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
		workers.into_iter().map(|worker| worker.join().unwrap_or(Ok(0))).sum()
	})
}

/// A `--dev` node on a temporary base path, with up to 1,000 RPC connections and the
/// subscription budget asked for.
fn start_node(path: &str, budget_mib: Option<usize>) -> Result<Node, String> {
	let mut args: Vec<String> = ["--rpc-max-connections", "1000"].map(String::from).to_vec();
	if let Some(mib) = budget_mib {
		args.extend(["--statement-subscription-memory-mib".to_string(), mib.to_string()]);
	}
	args.extend(["--listen-addr", "/ip4/127.0.0.1/tcp/0"].map(String::from));
	let launch = Launch { binary: PathBuf::from(path), base_path: None, chain: Chain::Dev, args };
	Ok(launch.start()?.0)
}

/// A metric of `node`, `None` if it is not exported or cannot be read.
fn metric(node: &Node, name: &str) -> Option<f64> {
	node.metric(name).ok().flatten()
}

/// A `/proc/<pid>/status` figure of `node` in MiB.
fn status_mib(node: &Node, field: &str) -> f64 {
	procfs::status_kib(node.pid(), field) as f64 / 1024.0
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

/// What a subscribing client does with each text message the node sends it.
type Reader = Box<dyn FnMut(&[u8]) + Send>;

/// A WebSocket connection with `count` subscriptions on `filter` (JSON). With `reader`, a
/// thread reads everything the node sends and hands each text message to it; without, nothing
/// past the handshake is ever read.
fn subscriber(
	port: u16,
	count: usize,
	filter: &str,
	reader: Option<Reader>,
) -> Result<TcpStream, String> {
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
	if let Some(mut reader) = reader {
		let mut incoming = stream.try_clone().map_err(|err| err.to_string())?;
		std::thread::spawn(move || {
			let mut pong = incoming.try_clone().ok();
			// Ends when the connection closes (the benchmark shuts it down).
			while let Ok((opcode, payload)) = read_message(&mut incoming) {
				match opcode {
					1 => reader(&payload),
					// Answer pings, or the node closes the connection after a minute.
					9 => {
						if let Some(pong) = pong.as_mut() {
							let _ = pong.write_all(&frame(0x8a, &payload));
						}
					}
					8 => break,
					_ => {}
				}
			}
		});
	}
	let mut frames = Vec::new();
	for id in 0..count {
		let request = format!(
			r#"{{"jsonrpc":"2.0","id":{id},"method":"statement_subscribeStatement","params":[{filter}]}}"#,
		);
		frames.extend(frame(0x81, request.as_bytes()));
	}
	stream.write_all(&frames).map_err(|err| err.to_string())?;
	Ok(stream)
}

/// A masked client frame (`first`: FIN and opcode) carrying `payload`.
fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
	let mask = [0x5au8, 0x17, 0xc3, 0x88];
	let mut frame = match payload.len() {
		short @ 0..=125 => vec![first, 0x80 | short as u8],
		long @ 126..=0xffff => {
			let length = (long as u16).to_be_bytes();
			vec![first, 0x80 | 126, length[0], length[1]]
		}
		long => {
			let mut frame = vec![first, 0x80 | 127];
			frame.extend((long as u64).to_be_bytes());
			frame
		}
	};
	frame.extend_from_slice(&mask);
	frame.extend(payload.iter().enumerate().map(|(at, byte)| byte ^ mask[at % 4]));
	frame
}

/// The next whole message from the server (unmasked frames, continuations joined): its opcode
/// and payload.
fn read_message(stream: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
	let mut payload = Vec::new();
	let mut opcode = None;
	loop {
		let mut head = [0u8; 2];
		stream.read_exact(&mut head)?;
		let length = match head[1] & 0x7f {
			126 => {
				let mut bytes = [0u8; 2];
				stream.read_exact(&mut bytes)?;
				u16::from_be_bytes(bytes) as usize
			}
			127 => {
				let mut bytes = [0u8; 8];
				stream.read_exact(&mut bytes)?;
				u64::from_be_bytes(bytes) as usize
			}
			short => short as usize,
		};
		let start = payload.len();
		payload.resize(start + length, 0);
		stream.read_exact(&mut payload[start..])?;
		let code = head[0] & 0x0f;
		// Control frames may arrive between a message's fragments.
		if code >= 8 {
			return Ok((code, payload.split_off(start)));
		}
		let opcode = *opcode.get_or_insert(code);
		if head[0] & 0x80 != 0 {
			return Ok((opcode, payload));
		}
	}
}

/// Wait until the store has answered `expected` subscriptions in all: open, or refused or
/// dropped for its memory budget. Returns how many are open.
fn wait_for_subscriptions(node: &Node, expected: f64, deadline: Instant) -> Result<f64, String> {
	let counted = |name: &str| metric(node, name).unwrap_or(0.0);
	loop {
		let open = metric(node, SUBSCRIPTIONS);
		let refused = counted("substrate_statement_store_subscriptions_refused_for_budget_total");
		let dropped = counted("substrate_statement_store_subscriptions_dropped_for_budget_total");
		if let Some(open) = open {
			if open + refused + dropped == expected {
				return Ok(open);
			}
		}
		if Instant::now() > deadline {
			return Err(format!(
				"{open:?} subscriptions open, {refused} refused and {dropped} dropped for the \
				 budget, waiting for {expected} in all"
			));
		}
		std::thread::sleep(Duration::from_millis(50));
	}
}

/// Whether `message` is a subscription notification with statements that is not a replay
/// page (replay pages say how many remain).
fn is_live_delivery(message: &[u8]) -> bool {
	contains(message, br#""statement_statement""#)
		&& !contains(message, br#""remaining""#)
		&& !contains(message, br#""statements":[]"#)
}

/// Whether `needle` occurs in `message` (no copy: the readers run beside the node).
fn contains(message: &[u8], needle: &[u8]) -> bool {
	message.windows(needle.len()).any(|window| window == needle)
}

/// The `p`-th percentile (0-100) of sorted `values`.
fn percentile(sorted: &[f64], p: f64) -> f64 {
	let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
	sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Open `count` subscriptions on `filter`, `per_connection` a connection, and wait until the
/// store counts them all (and, for reading clients, until each has its replay).
fn open_subscriptions(
	node: &Node,
	count: usize,
	per_connection: usize,
	filter: &str,
	read: bool,
	on_live: Option<Arc<dyn Fn() + Send + Sync>>,
) -> Result<(Vec<TcpStream>, usize), String> {
	// Gossip's own watch of the store counts as a subscription.
	let already = metric(node, SUBSCRIPTIONS).unwrap_or(0.0);
	let replays = Arc::new(AtomicUsize::new(0));
	let mut streams = Vec::new();
	let mut opened = 0;
	while opened < count {
		let batch = per_connection.min(count - opened);
		let reader: Option<Reader> = read.then(|| {
			let (replays, on_live) = (replays.clone(), on_live.clone());
			Box::new(move |message: &[u8]| {
				if contains(message, br#""remaining""#) {
					replays.fetch_add(1, Ordering::Relaxed);
				} else if let Some(on_live) = &on_live {
					if is_live_delivery(message) {
						on_live();
					}
				}
			}) as Reader
		});
		streams.push(subscriber(node.rpc_port, batch, filter, reader)?);
		opened += batch;
	}
	let deadline = Instant::now() + Duration::from_secs(30 + count as u64 / 1_000);
	let open = wait_for_subscriptions(node, already + count as f64, deadline)? - already;
	// Those refused get no replay.
	let opened = open.max(0.0) as usize;
	while read && replays.load(Ordering::Relaxed) < opened {
		if Instant::now() > deadline {
			let came = replays.load(Ordering::Relaxed);
			return Err(format!("{came} of {opened} replays came ({count} subscribed)"));
		}
		std::thread::sleep(Duration::from_millis(50));
	}
	Ok((streams, opened))
}

/// Close `streams`, which ends their reader threads.
fn close(streams: Vec<TcpStream>) {
	for stream in streams {
		let _ = stream.shutdown(Shutdown::Both);
	}
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
	/// Subscriptions the node opened (the rest it refused for its budget).
	opened: usize,
	open_subscriptions: Option<f64>,
}

fn run(args: &Args, batches: &[String], subscribers: usize) -> Result<Run, String> {
	let node = start_node(&args.node, args.budget_mib)?;
	std::thread::sleep(Duration::from_millis(500));
	let idle_mib = status_mib(&node, "VmRSS");
	let (streams, opened) = open_subscriptions(
		&node,
		subscribers,
		args.per_connection,
		&args.filter.json(),
		args.read,
		None,
	)?;
	// Let the replies drain and the allocator settle: jemalloc returns the pages that the
	// subscribing itself used after 10 s, work that would otherwise land on the submits.
	std::thread::sleep(SETTLE);
	let subscribed_mib = status_mib(&node, "VmRSS");

	let peak = RssPeak::start(node.pid(), RSS_PERIOD);
	let started = Instant::now();
	let accepted = submit_all(node.rpc_port, batches)?;
	let seconds = started.elapsed().as_secs_f64();
	// Let the node settle (background writes, dropping lagging subscribers).
	std::thread::sleep(Duration::from_secs(2));
	let peak_kib = peak.finish();
	let open_subscriptions = metric(&node, SUBSCRIPTIONS);
	let result = Run {
		idle_mib,
		subscribed_mib,
		peak_mib: peak_kib as f64 / 1024.0,
		hwm_mib: status_mib(&node, "VmHWM"),
		end_mib: status_mib(&node, "VmRSS"),
		seconds,
		accepted,
		opened,
		open_subscriptions,
	};
	close(streams);
	Ok(result)
}

fn submit_mode(args: &Args) -> Result<(), String> {
	eprintln!("signing {} statements ...", args.statements);
	let batches = batches(&submit_statements(args.statements));
	let clients = if args.read { "reading" } else { "never reading" };
	println!(
		"| subscribers ({clients}) | accepted | submit time | submits/s | vs 0 | RSS idle | RSS subscribed | per subscription | peak RSS (sampled) | VmHWM | RSS at end | subscriptions open at end |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
	let mut without = None;
	let mut peak_without = None;
	for subscribers in std::iter::once(0).chain(args.subscribers.iter().copied()) {
		let run = run(args, &batches, subscribers)
			.map_err(|err| format!("run with {subscribers} subscribers failed: {err}"))?;
		let rate = run.accepted as f64 / run.seconds;
		let base = *without.get_or_insert(rate);
		let peak = run.hwm_mib.max(run.peak_mib);
		let peak_base = *peak_without.get_or_insert(peak);
		let per_subscription = if subscribers == 0 {
			"-".to_string()
		} else {
			let kib = (run.subscribed_mib - run.idle_mib) * 1024.0 / run.opened.max(1) as f64;
			format!("{kib:.2} KiB ({} opened)", run.opened)
		};
		println!(
			"| {subscribers} | {} | {:.1} s | {rate:.0} | {:.2}x | {:.0} MiB | {:.0} MiB | {per_subscription} | {:.0} MiB ({:+.0}) | {:.0} MiB | {:.0} MiB | {} |",
			run.accepted,
			run.seconds,
			rate / base,
			run.idle_mib,
			run.subscribed_mib,
			run.peak_mib,
			peak - peak_base,
			run.hwm_mib,
			run.end_mib,
			run.open_subscriptions.map_or("?".into(), |open| format!("{open}")),
		);
	}
	Ok(())
}

/// How many `"0x` strings `body` holds: statements, in an answer or a notification.
fn statements_in(body: &[u8]) -> usize {
	body.windows(3).filter(|window| window == br#""0x"#).count()
}

fn replay_mode(args: &Args) -> Result<(), String> {
	let count = args.statements;
	eprintln!("signing {count} statements ...");
	let statements = signed(count, |i, statement| {
		statement.set_topic(0, topic(REPLAY_TOPIC));
		statement.set_topic(1, topic(REPLAY_TOPIC + 1 + i % REPLAY_PARTS));
		let mut data = vec![0u8; 32];
		data[..4].copy_from_slice(&i.to_le_bytes());
		statement.set_plain_data(data);
	});
	let node = start_node(&args.node, args.budget_mib)?;
	let accepted = submit_all(node.rpc_port, &batches(&statements))?;
	if accepted != count {
		return Err(format!("{accepted} of {count} statements accepted"));
	}
	println!("| round | broadcastsStatement (5 calls) | replay of one subscription | replay / broadcasts |");
	println!("|---|---|---|---|");
	let mut ratios = Vec::new();
	for round in 1..=3 {
		// The same statements through the query, in five answers under the 10 MiB limit.
		let started = Instant::now();
		let mut answered = 0;
		let mut stream =
			TcpStream::connect(("127.0.0.1", node.rpc_port)).map_err(|err| err.to_string())?;
		for part in 0..REPLAY_PARTS {
			let topics = [topic(REPLAY_TOPIC), topic(REPLAY_TOPIC + 1 + part)];
			let body = format!(
				r#"{{"jsonrpc":"2.0","id":1,"method":"statement_broadcastsStatement","params":[["{}","{}"]]}}"#,
				hex(&topics[0].0),
				hex(&topics[1].0)
			);
			let answer = exchange(&mut stream, "POST", "/", &body, false)?;
			answered += statements_in(answer.as_bytes());
		}
		let query_seconds = started.elapsed().as_secs_f64();
		if answered != count {
			return Err(format!("the queries answered {answered} of {count} statements"));
		}
		// A new subscription's replay: from the subscribe call to the page with `remaining: 0`.
		let received = Arc::new(AtomicUsize::new(0));
		let finished = Arc::new(AtomicBool::new(false));
		let started = Instant::now();
		let reader: Reader = {
			let (received, finished) = (received.clone(), finished.clone());
			Box::new(move |message: &[u8]| {
				received.fetch_add(statements_in(message), Ordering::Relaxed);
				if contains(message, br#""remaining":0"#) {
					finished.store(true, Ordering::Release);
				}
			})
		};
		let stream = subscriber(node.rpc_port, 1, &match_all(&topic(REPLAY_TOPIC)), Some(reader))?;
		let deadline = Instant::now() + Duration::from_secs(300);
		while !finished.load(Ordering::Acquire) {
			if Instant::now() > deadline {
				return Err(format!(
					"the replay sent {} statements in 300 s",
					received.load(Ordering::Relaxed)
				));
			}
			std::thread::sleep(Duration::from_micros(200));
		}
		let replay_seconds = started.elapsed().as_secs_f64();
		close(vec![stream]);
		let replayed = received.load(Ordering::Relaxed);
		if replayed != count {
			return Err(format!("the replay sent {replayed} of {count} statements"));
		}
		let (query_rate, replay_rate) =
			(count as f64 / query_seconds, count as f64 / replay_seconds);
		ratios.push(replay_rate / query_rate);
		println!(
			"| {round} | {query_rate:.0}/s ({query_seconds:.2} s) | {replay_rate:.0}/s ({replay_seconds:.2} s) | {:.2}x |",
			replay_rate / query_rate
		);
	}
	ratios.sort_by(f64::total_cmp);
	println!("\nreplay / broadcastsStatement, median of 3: {:.2}x (target >= 0.80x)", ratios[1]);
	Ok(())
}

fn fanout_mode(args: &Args) -> Result<(), String> {
	let count = args.subscribers.iter().copied().max().unwrap_or(10_000);
	let statements = signed(args.rounds, |i, statement| {
		statement.set_topic(0, topic(FANOUT_TOPIC));
		let mut data = vec![0u8; 256];
		data[..4].copy_from_slice(&i.to_le_bytes());
		statement.set_plain_data(data);
	});
	let node = start_node(&args.node, args.budget_mib)?;
	let base = Instant::now();
	let delivered = Arc::new(AtomicUsize::new(0));
	let last = Arc::new(AtomicU64::new(0));
	let on_live: Arc<dyn Fn() + Send + Sync> = {
		let (delivered, last) = (delivered.clone(), last.clone());
		Arc::new(move || {
			last.fetch_max(base.elapsed().as_nanos() as u64, Ordering::Relaxed);
			delivered.fetch_add(1, Ordering::Release);
		})
	};
	let filter = match_all(&topic(FANOUT_TOPIC));
	let (streams, opened) =
		open_subscriptions(&node, count, FANOUT_PER_CONNECTION, &filter, true, Some(on_live))?;
	if opened < count {
		return Err(format!(
			"the node opened {opened} of {count} subscriptions: raise --budget-mib (each open \
			 one counts 2 KiB against half of it)"
		));
	}
	let mut submitter =
		TcpStream::connect(("127.0.0.1", node.rpc_port)).map_err(|err| err.to_string())?;
	let mut latencies = Vec::new();
	for (round, statement) in statements.iter().enumerate() {
		let body = format!(
			r#"{{"jsonrpc":"2.0","id":1,"method":"statement_submit","params":["{statement}"]}}"#
		);
		let sent = base.elapsed().as_nanos() as u64;
		let answer = exchange(&mut submitter, "POST", "/", &body, false)?;
		if !answer.contains(r#""status":"new""#) {
			return Err(format!("round {round}: {answer}"));
		}
		let target = count * (round + 1);
		let deadline = Instant::now() + Duration::from_secs(60);
		while delivered.load(Ordering::Acquire) < target {
			if Instant::now() > deadline {
				return Err(format!(
					"round {round}: {} of {count} deliveries in 60 s",
					delivered.load(Ordering::Relaxed) + count - target
				));
			}
			std::thread::sleep(Duration::from_micros(100));
		}
		latencies.push((last.load(Ordering::Relaxed).saturating_sub(sent)) as f64 / 1e6);
	}
	close(streams);
	latencies.sort_by(f64::total_cmp);
	println!("| subscribers | rounds | p50 | p99 | max |");
	println!("|---|---|---|---|---|");
	println!(
		"| {count} | {} | {:.1} ms | {:.1} ms | {:.1} ms |",
		latencies.len(),
		percentile(&latencies, 50.0),
		percentile(&latencies, 99.0),
		latencies[latencies.len() - 1]
	);
	println!("\nfrom the submit call to the last subscription's delivery (target: p99 <= 100 ms)");
	Ok(())
}

fn main() {
	let args = match parse_args() {
		Ok(args) => args,
		Err(err) => {
			eprintln!("{err}");
			std::process::exit(2);
		}
	};
	let result = match args.mode {
		Mode::Submit => submit_mode(&args),
		Mode::Replay => replay_mode(&args),
		Mode::Fanout => fanout_mode(&args),
	};
	if let Err(err) = result {
		eprintln!("{err}");
		std::process::exit(1);
	}
}
