//! `--mode fanout`: one statement at a time to many reading subscriptions on its topic; the
//! time from the submit call to the last subscription's delivery.

use crate::{
	start_node,
	statements::{match_all, signed},
	subscriptions::open_subscriptions,
	wire::close,
	Args,
};
use statement_store_benches::{fixture::topic, latency::Latency};
use statement_test_support::http::exchange_on;
use std::{
	net::TcpStream,
	sync::{
		atomic::{AtomicU64, AtomicUsize, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// Subscriptions per connection in `fanout` (the node's default limit is 1,024).
const FANOUT_PER_CONNECTION: usize = 1_000;
/// `fanout`'s topic.
const FANOUT_TOPIC: u32 = 88;

pub fn run_mode(args: &Args) -> Result<(), String> {
	let count = args.subscribers.iter().copied().max().unwrap_or(10_000);
	let statements = signed(args.rounds, |i, statement| {
		let mut data = vec![0u8; 256];
		data[..4].copy_from_slice(&i.to_le_bytes());
		statement.topic(0, topic(FANOUT_TOPIC)).data(data)
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
		TcpStream::connect(("127.0.0.1", node.rpc_port())).map_err(|err| err.to_string())?;
	let mut latencies = Vec::new();
	for (round, statement) in statements.iter().enumerate() {
		let body = format!(
			r#"{{"jsonrpc":"2.0","id":1,"method":"statement_submit","params":["{statement}"]}}"#
		);
		let sent = base.elapsed().as_nanos() as u64;
		let answer = exchange_on(&mut submitter, "POST", "/", &body, false)?;
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
		latencies.push(Duration::from_nanos(last.load(Ordering::Relaxed).saturating_sub(sent)));
	}
	close(streams);
	let rounds = latencies.len();
	let latency = Latency::of(latencies).ok_or("no rounds ran")?;
	let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
	println!("| subscribers | rounds | p50 | p99 | max |");
	println!("|---|---|---|---|---|");
	println!(
		"| {count} | {rounds} | {:.1} ms | {:.1} ms | {:.1} ms |",
		ms(latency.p50),
		ms(latency.p99),
		ms(latency.max)
	);
	println!("\nfrom the submit call to the last subscription's delivery (target: p99 <= 100 ms)");
	Ok(())
}
