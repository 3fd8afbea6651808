//! `--mode replay`: at each store size, `add_filter` to `replayDone` for filters of 8
//! matches, the rate of an `"any"` replay against the legacy one, and submits beside an
//! `"any"` replay against submits alone.

use crate::{
	fixture::{self, Fixture, GROUP},
	wire::{answer, request, Handler, Socket},
	Args,
};
use serde_json::{json, Value};
use statement_store_benches::{
	client::{batches, contains, statements_in, submit_all},
	latency::Latency,
	node::{Launch, Node},
	procfs::cpu_time,
	workload::on_every_core,
};
use statement_test_support::hex;
use std::{
	sync::{Arc, Mutex},
	time::{Duration, Instant},
};

/// How long any one answer or replay may take: a hang detector.
const PATIENCE: Duration = Duration::from_secs(600);

/// Upstream's figure for the same 8-match replay on a 4.19M store (PR #12774's comment).
const UPSTREAM_8_MATCHES: &str = "2.7-8.9 s";

pub fn run(args: &Args) -> Result<(), String> {
	let binary = args.node()?;
	let mut rows = Vec::new();
	for &size in &args.sizes {
		let n = u32::try_from(size).map_err(|_| format!("{size} statements is too many"))?;
		let fixture = fixture::prepare(&args.fixtures(), n)?;
		let copy = fixture.working_copy()?;
		let node = start(&binary, &fixture, copy.path())?;
		eprintln!("{n}: node open in {:.2} s", node.started_in().as_secs_f64());
		let eight = eight_matches(&node, n, args.samples)?;
		let rates = any_replays(&node, n)?;
		let submits = submits_beside_a_replay(&node, n, args.submits)?;
		rows.push((n, eight, rates, submits));
		node.stop().map_err(String::from)?;
	}
	println!("| statements | add_filter to replayDone, 8 matches: p50 / p99 / max | `any` replay, median of 5 rounds: v2 / legacy | v2 / legacy | node CPU per statement replayed: v2 / legacy | submits/s alone / beside an `any` replay | beside / alone |");
	println!("|---|---|---|---|---|---|---|");
	for (n, eight, any, (alone, beside)) in rows {
		println!(
			"| {n} | {:.2} / {:.2} / {:.2} ms | {:.0}/s / {:.0}/s | {:.2}x | {:.2} / {:.2} µs | {alone:.0}/s / {beside:.0}/s | {:.2}x |",
			ms(eight.p50),
			ms(eight.p99),
			ms(eight.max),
			any.v2,
			any.legacy,
			any.v2 / any.legacy,
			any.v2_cpu.as_secs_f64() * 1e6,
			any.legacy_cpu.as_secs_f64() * 1e6,
			beside / alone
		);
	}
	println!(
		"\nTargets: 8-match p99 <= 5 ms (upstream {UPSTREAM_8_MATCHES} at 4.19M); v2 / legacy >= 1.00x; beside / alone >= 0.80x."
	);
	Ok(())
}

fn ms(duration: Duration) -> f64 {
	duration.as_secs_f64() * 1000.0
}

/// The node on a copy of the fixture at `base`, with room for the statements the benchmark
/// submits.
fn start(
	binary: &std::path::Path,
	fixture: &Fixture,
	base: &std::path::Path,
) -> Result<Node, String> {
	let room = (u64::from(fixture.n) * 2).max(1 << 20);
	let node = Launch::new(binary)
		.chain(&fixture.spec)
		.base_path(base)
		.loopback()
		.args(["--statement-store-max-total-statements", &room.to_string()])
		.args(["--statement-store-max-total-size", &(room * 1024).to_string()])
		.start()
		.map_err(String::from)?;
	let held = node.ready().statements;
	if held != u64::from(fixture.n) {
		return Err(format!("the node opened {held} statements of the fixture's {}", fixture.n));
	}
	Ok(node)
}

/// The event of a `statement_unstable_subscribeEvent` notification, if it is one.
fn event(message: &Value) -> Option<&Value> {
	(message["method"] == "statement_unstable_subscribeEvent").then(|| &message["params"]["result"])
}

/// `add_filter` to `replayDone` for `samples` filters of 8 matches, one after another on one
/// subscription, each removed after its replay.
fn eight_matches(node: &Node, n: u32, samples: usize) -> Result<Latency, String> {
	let (mut socket, incoming) = Socket::with_channel(node.rpc_port())?;
	socket.send(&request(0, "statement_unstable_subscribe", json!([])))?;
	let unexpected = |_, message: Value| eprintln!("unexpected before subscribing: {message}");
	let subscription = answer(&incoming, 0, PATIENCE, unexpected)?;
	let groups = (n / GROUP).max(1);
	let mut took = Vec::with_capacity(samples);
	for sample in 0..samples as u64 {
		// Groups spread over the whole store, a different one each time.
		let group = ((sample * 2_654_435_761) % u64::from(groups)) as u32;
		let filter = json!({"matchAll": [hex::encode(&fixture::group_topic(group).0)]});
		let id = sample + 1;
		let started = Instant::now();
		socket.send(&request(
			id,
			"statement_unstable_add_filter",
			json!([subscription, filter]),
		))?;
		let mut early = None;
		let filter_id = answer(&incoming, id, PATIENCE, |_, message| early = Some(message))?;
		if let Some(early) = early {
			return Err(format!("an event came before add_filter's answer: {early}"));
		}
		let mut replayed = 0;
		let done = loop {
			let (at, message) = incoming
				.recv_timeout(PATIENCE)
				.map_err(|err| format!("waiting for replayDone of filter {filter_id}: {err}"))?;
			let Some(event) = event(&message) else { continue };
			if event["filterId"] != filter_id {
				return Err(format!("an event of another filter: {event}"));
			}
			match event["event"].as_str() {
				Some("replayStatements") => {
					replayed += event["statements"].as_array().map_or(0, Vec::len)
				}
				Some("replayDone") => break at,
				_ => return Err(format!("unexpected during a replay: {event}")),
			}
		};
		if replayed != GROUP as usize {
			return Err(format!("group {group}'s replay had {replayed} statements, not {GROUP}"));
		}
		took.push(done - started);
		let remove = id + 1_000_000;
		socket.send(&request(
			remove,
			"statement_unstable_remove_filter",
			json!([subscription, filter_id]),
		))?;
		answer(&incoming, remove, PATIENCE, |_, _| {})?;
	}
	socket.close();
	Latency::of(took).ok_or_else(|| "no samples".to_string())
}

/// What a counting reader saw of a replay.
#[derive(Default)]
struct Seen {
	/// Statements in replay pages.
	replayed: usize,
	/// When the replay ended.
	done: Option<Instant>,
	/// When the first replay page came.
	first_page: Option<Instant>,
	/// Statements that came live.
	live: usize,
	/// Live statements that came before the replay ended.
	live_before_done: usize,
	/// Answers to requests, parsed.
	answers: Vec<Value>,
}

/// A reader that counts statements without parsing (it runs beside the node): v2 events, or
/// the legacy pages (`"remaining"`, last in the message) and live notifications. What kind a
/// message is shows in its first bytes (the method and the event) and its last.
fn counting(seen: Arc<Mutex<Seen>>) -> Handler {
	Box::new(move |at, message| {
		let head = &message[..message.len().min(256)];
		let tail = &message[message.len().saturating_sub(64)..];
		let mut seen = seen.lock().expect("the counts");
		let legacy = contains(head, br#""statement_statement""#);
		if contains(head, br#""replayStatements""#) || (legacy && contains(tail, br#""remaining""#))
		{
			seen.first_page.get_or_insert(at);
			seen.replayed += statements_in(message);
			if legacy && contains(tail, br#""remaining":0}"#) {
				seen.done = Some(at);
			}
		} else if contains(head, br#""replayDone""#) {
			seen.done = Some(at);
		} else if legacy || contains(head, br#""newStatements""#) {
			let count = statements_in(message);
			seen.live += count;
			if seen.done.is_none() {
				seen.live_before_done += count;
			}
		} else if let Ok(value) = serde_json::from_slice(message) {
			seen.answers.push(value);
		}
	})
}

/// Wait until `done` says so of `seen`, or fail after [`PATIENCE`] with `what`.
fn wait_for(seen: &Mutex<Seen>, what: &str, done: impl Fn(&Seen) -> bool) -> Result<(), String> {
	let deadline = Instant::now() + PATIENCE;
	loop {
		{
			let seen = seen.lock().expect("the counts");
			if done(&seen) {
				return Ok(());
			}
			if Instant::now() > deadline {
				return Err(format!(
					"{what}: not within {PATIENCE:?} ({} replayed, {} live, answers {:?})",
					seen.replayed, seen.live, seen.answers
				));
			}
		}
		std::thread::sleep(Duration::from_millis(1));
	}
}

/// A v2 subscription with an `"any"` filter: the socket, what it saw, and when the filter
/// was asked for.
fn any_subscription(node: &Node) -> Result<(Socket, Arc<Mutex<Seen>>, Instant), String> {
	let seen = Arc::new(Mutex::new(Seen::default()));
	let mut socket = Socket::connect(node.rpc_port(), counting(seen.clone()))?;
	socket.send(&request(0, "statement_unstable_subscribe", json!([])))?;
	wait_for(&seen, "subscribe", |seen| !seen.answers.is_empty())?;
	let subscription = seen.lock().expect("the counts").answers[0]["result"].clone();
	let started = Instant::now();
	socket.send(&request(1, "statement_unstable_add_filter", json!([subscription, "any"])))?;
	Ok((socket, seen, started))
}

/// How `"any"` replays of the whole store went: the median statements/s of each API over the
/// rounds (one slow or fast round moves it less than the best would), and the node's CPU
/// time per statement replayed (all rounds), which a busy machine disturbs less.
struct AnyReplays {
	v2: f64,
	legacy: f64,
	v2_cpu: Duration,
	legacy_cpu: Duration,
}

/// Rounds of `"any"` replays, v2 then legacy in each.
const ANY_ROUNDS: u32 = 5;

/// `"any"` replays of the whole store, v2 then legacy, [`ANY_ROUNDS`] times, alternating.
fn any_replays(node: &Node, n: u32) -> Result<AnyReplays, String> {
	let (mut v2_cpu, mut legacy_cpu) = (Duration::ZERO, Duration::ZERO);
	let (mut v2_rates, mut legacy_rates) = (Vec::new(), Vec::new());
	for round in 0..ANY_ROUNDS {
		let before = cpu_time(node.pid());
		let (socket, seen, started) = any_subscription(node)?;
		wait_for(&seen, "the v2 replay", |seen| seen.done.is_some())?;
		let v2 = rate_of(&seen, n, started, "v2")?;
		socket.close();
		let between = cpu_time(node.pid());
		v2_rates.push(v2);
		v2_cpu += between.saturating_sub(before);

		let seen = Arc::new(Mutex::new(Seen::default()));
		let started = Instant::now();
		let mut socket = Socket::connect(node.rpc_port(), counting(seen.clone()))?;
		socket.send(&request(0, "statement_subscribeStatement", json!(["any"])))?;
		wait_for(&seen, "the legacy replay", |seen| seen.done.is_some())?;
		let legacy = rate_of(&seen, n, started, "legacy")?;
		socket.close();
		legacy_rates.push(legacy);
		legacy_cpu += cpu_time(node.pid()).saturating_sub(between);
		eprintln!("{n}: `any` replay, round {}: v2 {v2:.0}/s, legacy {legacy:.0}/s", round + 1);
	}
	let statements = n * ANY_ROUNDS;
	Ok(AnyReplays {
		v2: median(v2_rates),
		legacy: median(legacy_rates),
		v2_cpu: v2_cpu / statements,
		legacy_cpu: legacy_cpu / statements,
	})
}

/// The middle of `rates` (of an odd count).
fn median(mut rates: Vec<f64>) -> f64 {
	rates.sort_by(f64::total_cmp);
	rates[rates.len() / 2]
}

/// The replay's statements/s; an error unless it carried exactly `n`.
fn rate_of(seen: &Mutex<Seen>, n: u32, started: Instant, what: &str) -> Result<f64, String> {
	let seen = seen.lock().expect("the counts");
	if seen.replayed != n as usize {
		return Err(format!("the {what} replay carried {} statements, not {n}", seen.replayed));
	}
	let took = seen.done.expect("done") - started;
	Ok(f64::from(n) / took.as_secs_f64())
}

/// Submits/s of `count` new statements alone, then of `count` more while an `"any"` replay
/// of the store runs; checks that the replay carries what was stored when its filter came,
/// and the statements submitted beside it come after it as new statements.
fn submits_beside_a_replay(node: &Node, n: u32, count: usize) -> Result<(f64, f64), String> {
	let keys = statement_store_benches::fixture::keys();
	let fresh = |from: u32| {
		let statements = on_every_core(from, from + count as u32, |i| {
			hex::encode(&fixture::statement(i, &keys).encode())
		});
		batches("statement_unstable_submit", &statements)
	};
	let (first, second) = (fresh(n), fresh(n + count as u32));
	let submit = |bodies: &[String]| -> Result<f64, String> {
		let started = Instant::now();
		let accepted = submit_all(node.rpc_port(), bodies)?;
		if accepted != count {
			return Err(format!("{accepted} of {count} submits were new"));
		}
		Ok(count as f64 / started.elapsed().as_secs_f64())
	};
	let alone = submit(&first)?;
	let (socket, seen, _) = any_subscription(node)?;
	wait_for(&seen, "the replay's first page", |seen| seen.first_page.is_some())?;
	let beside = submit(&second)?;
	let running = seen.lock().expect("the counts").done.is_none();
	if !running {
		eprintln!("{n}: the replay ended before the submits did: the figure covers part of it");
	}
	let stored = n as usize + count;
	wait_for(&seen, "the replay and the statements submitted beside it", |seen| {
		seen.done.is_some() && seen.live >= count
	})?;
	let seen = seen.lock().expect("the counts");
	if seen.replayed != stored || seen.live != count || seen.live_before_done != 0 {
		return Err(format!(
			"the replay carried {} (stored: {stored}), then {} new ({} before replayDone), of {count} submitted beside it",
			seen.replayed, seen.live, seen.live_before_done
		));
	}
	drop(seen);
	socket.close();
	eprintln!("{n}: submits alone {alone:.0}/s, beside an `any` replay {beside:.0}/s");
	Ok((alone, beside))
}
