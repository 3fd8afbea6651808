//! `--mode replay`: a new subscription's replay of stored statements against
//! `statement_broadcastsStatement` for the same statements.

use crate::{
	start_node,
	statements::{batches, hex, match_all, signed, submit_all},
	wire::{close, contains, subscriber, Reader},
	Args,
};
use statement_store_benches::{client::statements_in, fixture::topic};
use statement_test_support::http::exchange_on;
use std::{
	net::TcpStream,
	sync::{
		atomic::{AtomicBool, AtomicUsize, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// `replay`'s topic, and the second topics that split its statements into five answers.
const REPLAY_TOPIC: u32 = 77;
const REPLAY_PARTS: u32 = 5;

pub fn run_mode(args: &Args) -> Result<(), String> {
	let count = args.statements;
	eprintln!("signing {count} statements ...");
	let statements = signed(count, |i, statement| {
		let mut data = vec![0u8; 32];
		data[..4].copy_from_slice(&i.to_le_bytes());
		let part = topic(REPLAY_TOPIC + 1 + i % REPLAY_PARTS);
		statement.topic(0, topic(REPLAY_TOPIC)).topic(1, part).data(data)
	});
	let node = start_node(&args.node, args.budget_mib)?;
	let accepted = submit_all(node.rpc_port(), &batches(&statements))?;
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
			TcpStream::connect(("127.0.0.1", node.rpc_port())).map_err(|err| err.to_string())?;
		for part in 0..REPLAY_PARTS {
			let topics = [topic(REPLAY_TOPIC), topic(REPLAY_TOPIC + 1 + part)];
			let body = format!(
				r#"{{"jsonrpc":"2.0","id":1,"method":"statement_broadcastsStatement","params":[["{}","{}"]]}}"#,
				hex(&topics[0].0),
				hex(&topics[1].0)
			);
			let answer = exchange_on(&mut stream, "POST", "/", &body, false)?;
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
		let stream =
			subscriber(node.rpc_port(), 1, &match_all(&topic(REPLAY_TOPIC)), Some(reader))?;
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
