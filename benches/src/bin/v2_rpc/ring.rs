//! `--mode ring`: clients over two nodes, each subscribed to its neighbour's topic, all
//! submitting at once each round; the latency of each delivery, legacy against v2.
//!
//! Client `i` is on node `i % 2` and subscribes to client `i + 1`'s topic, so every
//! statement a client receives was submitted on the other node and came by gossip. Each run
//! (a client count and an API) has topics of its own, so that a subscription's replay finds
//! nothing of an earlier run.

use crate::{
	wire::{request, Handler, Socket},
	Args,
};
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::testing::TestStatement;
use statement_store_benches::{
	fixture::topic,
	metrics::PEERS,
	node::{Launch, Node},
	workload::on_every_core,
};
use statement_test_support::{hex, wait::eventually_blocking};
use std::{
	collections::HashMap,
	path::Path,
	sync::{Arc, Mutex},
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

/// How long setting up or one round may take: a hang detector.
const PATIENCE: Duration = Duration::from_secs(600);

/// What each client's account may keep (statements, bytes).
const ALLOWANCE: &str = "1000,1000000";

/// Upstream's own run, for reference: 5 collators and 50,000 clients.
const UPSTREAM: &str =
	"5 collators, 50,000 clients: average 18.4 s on the legacy API, 12.1 s on v2";

/// Which API a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
	Legacy,
	V2,
}

impl Api {
	fn label(self) -> &'static str {
		match self {
			Api::Legacy => "legacy",
			Api::V2 => "v2",
		}
	}

	fn submit(self) -> &'static str {
		match self {
			Api::Legacy => "statement_submit",
			Api::V2 => "statement_unstable_submit",
		}
	}
}

pub fn run(args: &Args) -> Result<(), String> {
	let binary = args.node()?;
	let most = args.clients.iter().copied().max().unwrap_or(1);
	let dir = tempfile::tempdir().map_err(|err| format!("a temporary directory: {err}"))?;
	let spec = dir.path().join("spec.json");
	build_spec(&binary, &spec, most)?;
	eprintln!("deriving {most} client keys ...");
	let keys = on_every_core(0, most as u32, |i| {
		sr25519::Pair::from_string(&format!("//StatementClient//{i}"), None).expect("a derivation")
	});
	let nodes = start_pair(&binary, &spec, args.per_connection)?;
	let mut rows = Vec::new();
	let mut run_number = 0;
	for &clients in &args.clients {
		for api in [Api::Legacy, Api::V2] {
			run_number += 1;
			let ring = Ring { clients, api, run: run_number, per_connection: args.per_connection };
			let latencies = ring.measure(&nodes, &keys, args.rounds)?;
			let count = latencies.len();
			let total: Duration = latencies.iter().sum();
			let (min, max) = (latencies.iter().min().copied(), latencies.iter().max().copied());
			let average = total / count.max(1) as u32;
			eprintln!("{clients} clients, {}: average {:.1} ms", api.label(), ms(average));
			rows.push((
				clients,
				api,
				min.unwrap_or_default(),
				average,
				max.unwrap_or_default(),
				count,
			));
		}
	}
	println!("| clients | API | min | avg | max | deliveries |");
	println!("|---|---|---|---|---|---|");
	for (clients, api, min, average, max, count) in rows {
		println!(
			"| {clients} | {} | {:.1} ms | {:.1} ms | {:.1} ms | {count} |",
			api.label(),
			ms(min),
			ms(average),
			ms(max)
		);
	}
	println!("\nUpstream's `statement-latency-bench`, for reference: {UPSTREAM}.");
	for node in nodes {
		node.stop().map_err(String::from)?;
	}
	Ok(())
}

fn ms(duration: Duration) -> f64 {
	duration.as_secs_f64() * 1000.0
}

/// `statement-node build-spec --allowance //StatementClient//{0..most}=..` into `spec`.
fn build_spec(binary: &Path, spec: &Path, most: usize) -> Result<(), String> {
	let grant = format!("//StatementClient//{{0..{most}}}={ALLOWANCE}");
	let output = std::process::Command::new(binary)
		.args(["build-spec", "--chain", "local", "--allowance", &grant])
		.output()
		.map_err(|err| format!("cannot run {} build-spec: {err}", binary.display()))?;
	if !output.status.success() {
		return Err(format!("build-spec failed: {}", String::from_utf8_lossy(&output.stderr)));
	}
	std::fs::write(spec, &output.stdout).map_err(|err| format!("{}: {err}", spec.display()))
}

/// Two nodes on `spec`, the second dialling the first, once each sees the other.
fn start_pair(binary: &Path, spec: &Path, per_connection: usize) -> Result<Vec<Node>, String> {
	let launch = |bootnode: Option<String>| {
		let mut launch = Launch::new(binary)
			.chain(spec)
			.arg("--tmp")
			.loopback()
			.args(["--rpc-max-connections", "1000"])
			.args([
				"--statement-rpc-subscriptions-per-connection",
				&per_connection.max(2).to_string(),
			]);
		if let Some(bootnode) = bootnode {
			launch = launch.args(["--bootnodes", &bootnode]);
		}
		launch.start().map_err(String::from)
	};
	let first = launch(None)?;
	let address =
		first.loopback_address().ok_or("the first node listens on no loopback address")?;
	let second = launch(Some(address.to_string()))?;
	for node in [&first, &second] {
		eventually_blocking("the two nodes to see each other", PATIENCE, || {
			node.metric(PEERS).map(|peers| peers >= 1.0).unwrap_or(false)
		})
		.map_err(String::from)?;
	}
	Ok(vec![first, second])
}

/// One run: a client count and an API.
struct Ring {
	clients: usize,
	api: Api,
	run: u32,
	per_connection: usize,
}

/// What the sockets of a run saw.
#[derive(Default)]
struct Seen {
	/// Answers to requests, by id.
	answers: HashMap<u64, Value>,
	/// The client of each subscription id.
	clients: HashMap<String, usize>,
	/// When each client got each statement, in order.
	received: Vec<Vec<Instant>>,
	/// Notifications of subscriptions nobody holds.
	strays: usize,
}

/// Request ids: subscribe `i`, add_filter `ADD + i`, submit of round `r` `SUBMIT * (r + 1) + i`.
const ADD: u64 = 1 << 32;
const SUBMIT: u64 = 1 << 40;

impl Ring {
	/// Client `i`'s topic in this run.
	fn topic(&self, i: usize) -> statement_primitives::Topic {
		topic(10_000_000 * self.run + i as u32)
	}

	/// Every delivery's latency over `rounds` rounds.
	fn measure(
		&self,
		nodes: &[Node],
		keys: &[sr25519::Pair],
		rounds: usize,
	) -> Result<Vec<Duration>, String> {
		let seen = Arc::new(Mutex::new(Seen {
			received: vec![Vec::new(); self.clients],
			..Seen::default()
		}));
		// The clients of each connection, and the connection.
		let mut sockets: Vec<(Vec<usize>, Socket)> = Vec::new();
		for (k, node) in nodes.iter().enumerate() {
			let mine: Vec<usize> = (k..self.clients).step_by(nodes.len()).collect();
			for group in mine.chunks(self.per_connection) {
				let socket = Socket::connect(node.rpc_port(), reader(seen.clone()))?;
				sockets.push((group.to_vec(), socket));
			}
		}
		self.subscribe(&mut sockets, &seen)?;
		let mut latencies = Vec::with_capacity(self.clients * rounds);
		for round in 0..rounds {
			latencies.extend(self.round(&mut sockets, &seen, keys, round)?);
		}
		for (_, socket) in sockets {
			socket.close();
		}
		Ok(latencies)
	}

	/// Subscribe every client to its neighbour's topic; wait until all are.
	fn subscribe(
		&self,
		sockets: &mut [(Vec<usize>, Socket)],
		seen: &Mutex<Seen>,
	) -> Result<(), String> {
		let filter =
			|i: usize| json!({"matchAll": [hex::encode(&self.topic((i + 1) % self.clients).0)]});
		for (group, socket) in sockets.iter_mut() {
			let requests: Vec<String> = group
				.iter()
				.map(|&i| match self.api {
					Api::Legacy => {
						request(i as u64, "statement_subscribeStatement", json!([filter(i)]))
					}
					Api::V2 => request(i as u64, "statement_unstable_subscribe", json!([])),
				})
				.collect();
			socket.send_all(&requests)?;
		}
		let ids: Vec<u64> = (0..self.clients as u64).collect();
		let subscriptions = answers(seen, &ids, "subscribe")?;
		{
			let mut seen = seen.lock().expect("the run");
			for (i, subscription) in subscriptions.iter().enumerate() {
				let id =
					subscription.as_str().map_or_else(|| subscription.to_string(), String::from);
				seen.clients.insert(id, i);
			}
		}
		if self.api == Api::V2 {
			for (group, socket) in sockets.iter_mut() {
				let requests: Vec<String> = group
					.iter()
					.map(|&i| {
						request(
							ADD + i as u64,
							"statement_unstable_add_filter",
							json!([subscriptions[i], filter(i)]),
						)
					})
					.collect();
				socket.send_all(&requests)?;
			}
			let ids: Vec<u64> = (0..self.clients as u64).map(|i| ADD + i).collect();
			answers(seen, &ids, "add_filter")?;
		}
		Ok(())
	}

	/// One round: every client submits its statement on its own connection at once; the
	/// latency of each delivery, from its submit.
	fn round(
		&self,
		sockets: &mut [(Vec<usize>, Socket)],
		seen: &Mutex<Seen>,
		keys: &[sr25519::Pair],
		round: usize,
	) -> Result<Vec<Duration>, String> {
		let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
		let expiry = (now + 3600) as u32;
		let statements = on_every_core(0, self.clients as u32, |i| {
			let mut data = vec![0u8; 64];
			data[..4].copy_from_slice(&i.to_le_bytes());
			data[4..8].copy_from_slice(&(round as u32).to_le_bytes());
			data[8..12].copy_from_slice(&self.run.to_le_bytes());
			let statement = TestStatement::new()
				.expiry(expiry, (self.run << 8) + round as u32)
				.topic(0, self.topic(i as usize))
				.data(data)
				.signed_sr25519(&keys[i as usize]);
			hex::encode(&statement.encode())
		});
		let base = SUBMIT * (round as u64 + 1);
		let mut submitted = vec![Instant::now(); self.clients];
		for (group, socket) in sockets.iter_mut() {
			let requests: Vec<String> = group
				.iter()
				.map(|&i| request(base + i as u64, self.api.submit(), json!([statements[i]])))
				.collect();
			let at = Instant::now();
			socket.send_all(&requests)?;
			for &i in group.iter() {
				submitted[i] = at;
			}
		}
		let ids: Vec<u64> = (0..self.clients as u64).map(|i| base + i).collect();
		for (i, answer) in answers(seen, &ids, "submit")?.iter().enumerate() {
			if answer["status"] != "new" {
				return Err(format!("client {i}'s submit: {answer}"));
			}
		}
		let want = round + 1;
		let result =
			eventually_blocking("every client to get its neighbour's statement", PATIENCE, || {
				seen.lock().expect("the run").received.iter().all(|times| times.len() >= want)
			});
		let seen = seen.lock().expect("the run");
		if result.is_err() {
			let short = seen.received.iter().filter(|times| times.len() < want).count();
			return Err(format!(
				"{} clients, {}, round {want}: {short} clients got nothing within {PATIENCE:?} ({} strays)",
				self.clients,
				self.api.label(),
				seen.strays
			));
		}
		if let Some((i, times)) =
			seen.received.iter().enumerate().find(|(_, times)| times.len() > want)
		{
			return Err(format!("client {i} got {} statements by round {want}", times.len()));
		}
		Ok((0..self.clients)
			.map(|i| {
				seen.received[i][round].saturating_duration_since(submitted[(i + 1) % self.clients])
			})
			.collect())
	}
}

/// The answers to requests `ids`, in order, once all have come; an error for any error.
fn answers(seen: &Mutex<Seen>, ids: &[u64], what: &str) -> Result<Vec<Value>, String> {
	eventually_blocking(what, PATIENCE, || {
		let seen = seen.lock().expect("the run");
		ids.iter().all(|id| seen.answers.contains_key(id))
	})
	.map_err(|err| format!("{what}: {err}"))?;
	let mut seen = seen.lock().expect("the run");
	ids.iter()
		.map(|id| {
			let answer = seen.answers.remove(id).expect("came");
			match answer.get("error") {
				Some(error) => Err(format!("{what} {id}: {error}")),
				None => Ok(answer["result"].clone()),
			}
		})
		.collect()
}

/// A connection's reader: answers by id; each statement notification counted to the client
/// whose subscription it is (replays, which find nothing, and `replayDone` are ignored).
fn reader(seen: Arc<Mutex<Seen>>) -> Handler {
	Box::new(move |at, message| {
		let Ok(message) = serde_json::from_slice::<Value>(message) else { return };
		let mut seen = seen.lock().expect("the run");
		if let Some(id) = message.get("id").and_then(Value::as_u64) {
			seen.answers.insert(id, message);
			return;
		}
		let params = &message["params"];
		let result = &params["result"];
		let statements = match (result["event"].as_str(), result.get("data")) {
			// Legacy: replay pages carry `remaining`, live statements do not.
			(Some("newStatements"), Some(data)) if data.get("remaining").is_none() => {
				data["statements"].as_array().map_or(0, Vec::len)
			}
			(Some("newStatements"), None) => result["statements"].as_array().map_or(0, Vec::len),
			_ => 0,
		};
		if statements == 0 {
			return;
		}
		let subscription = params["subscription"]
			.as_str()
			.map_or_else(|| params["subscription"].to_string(), String::from);
		match seen.clients.get(&subscription).copied() {
			Some(client) => seen.received[client].extend(std::iter::repeat_n(at, statements)),
			None => seen.strays += 1,
		}
	})
}
