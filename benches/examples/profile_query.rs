//! A broadcast loop on one store, for profilers: both stores are filled first, then only the
//! chosen one is queried, single-threaded, for the given number of seconds, with the 2-topic
//! MatchAll of `compare` (n / 100 statements) or, given `1` as the last argument, its 1-topic
//! query (n / 10); given `hash`, `statement(hash)` over every statement in turn (each
//! looked up once per pass, as `compare` does, so that the body cache rarely holds it); given
//! `dump`, `statements()`; given `cold`, the 2-topic query after dropping our caches each
//! time (`compare`'s cold figure; the baseline has no caches to drop); given `hit` or `miss`,
//! `has_statement` over every stored hash in turn, or over as many hashes that are not stored.
//!
//! ```sh
//! cargo build --release -p statement-store-benches --example profile_query
//! perf record -D 3000 -g target/release/examples/profile_query ours 10000 10
//! target/release/examples/profile_query ours 200000 10 1
//! target/release/examples/profile_query ours 200000 10 hash
//! target/release/examples/profile_query ours 200000 10 dump
//! target/release/examples/profile_query ours 200000 10 cold
//! target/release/examples/profile_query baseline 1000000 10 miss
//! ```

use statement_store_benches::{fixture, workload};
use std::time::{Duration, Instant};

fn main() {
	let mut args = std::env::args().skip(1);
	let which = args.next().unwrap_or_else(|| "ours".into());
	let n: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(10_000);
	let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
	let mode = args.next();
	let one_topic = mode.as_deref() == Some("1");
	let cold = mode.as_deref() == Some("cold");
	let keys = fixture::keys();
	let signed = workload::signed(0, n, &keys);
	let hashes: Vec<_> = signed.iter().map(|statement| statement.hash()).collect();
	let pair = workload::Pair::filled(&signed);
	let store = pair.both().into_iter().find(|(name, _)| *name == which).expect("ours|baseline").1;
	let topics = match one_topic {
		true => vec![fixture::topic(3)],
		false => workload::two_topics().to_vec(),
	};
	eprintln!("filled {n}; querying {which} on {} topics for {seconds} s", topics.len());
	let start = Instant::now();
	let mut queries = 0u64;
	if mode.as_deref() == Some("dump") {
		while start.elapsed() < Duration::from_secs(seconds) {
			assert_eq!(store.statements().expect("dump").len(), n as usize);
			queries += 1;
		}
		println!("{which}: {:?} per dump over {queries}", start.elapsed() / queries as u32);
		return;
	}
	if let Some(hit) =
		mode.as_deref().and_then(|mode| ["miss", "hit"].iter().position(|&m| m == mode))
	{
		let absent: Vec<_> = (0..hashes.len() as u64)
			.map(|n| statement_primitives::hash_encoded(&n.to_le_bytes()))
			.collect();
		let asked = if hit == 1 { &hashes } else { &absent };
		while start.elapsed() < Duration::from_secs(seconds) {
			for hash in asked {
				assert_eq!(store.has_statement(std::hint::black_box(hash)), hit == 1);
			}
			queries += asked.len() as u64;
		}
		println!(
			"{which}: {:?} per has_statement over {queries}",
			start.elapsed() / queries as u32
		);
		return;
	}
	if mode.as_deref() == Some("hash") {
		while start.elapsed() < Duration::from_secs(seconds) {
			for hash in &hashes {
				std::hint::black_box(store.statement(hash).expect("get").expect("stored"));
			}
			queries += hashes.len() as u64;
		}
		println!("{which}: {:?} per lookup over {queries}", start.elapsed() / queries as u32);
		return;
	}
	while start.elapsed() < Duration::from_secs(seconds) {
		for _ in 0..10 {
			if cold {
				pair.ours.clear_cache();
			}
			std::hint::black_box(store.broadcasts(&topics).expect("query"));
		}
		queries += 10;
	}
	println!("{which}: {:?} per query over {queries}", start.elapsed() / queries as u32);
}
