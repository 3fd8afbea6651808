//! The write-side workloads of `compare` in a loop on our store, for profilers: removing
//! statements one by one, or from 64 threads at once (`concurrent`: upstream's `remove_640`
//! shape, in rounds of 640), or expiring them through maintenance.
//!
//! ```sh
//! cargo build --release -p statement-store-benches --example profile_write
//! perf record -g target/release/examples/profile_write remove 20
//! perf record -g target/release/examples/profile_write expire 20
//! target/release/examples/profile_write concurrent 20
//! ```

use statement_primitives::{Hash, Statement};
use statement_store_benches::{fixture, workload};
use std::{sync::atomic::Ordering, time::Duration};

fn main() {
	let mut args = std::env::args().skip(1);
	let which = args.next().unwrap_or_else(|| "remove".into());
	let rounds: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(10);
	let keys = fixture::keys();
	let pair = workload::Pair::filled(&workload::signed(0, 10_000, &keys));
	let batch = 2000;
	let (mut took, mut count) = (Duration::ZERO, 0u32);
	for _ in 0..rounds {
		if which == "remove" || which == "concurrent" {
			let added = workload::fresh(batch, &keys);
			workload::submit_all(&pair.ours, &added);
			let hashes: Vec<Hash> = added.iter().map(Statement::hash).collect();
			took += if which == "remove" {
				workload::remove_all(&pair.ours, &hashes)
			} else {
				hashes
					.chunks(640)
					.map(|round| workload::remove_concurrently(&pair.ours, round, 64))
					.sum()
			};
		} else {
			let now = pair.clock.load(Ordering::Relaxed);
			let from = workload::fresh_indices(batch);
			let expiring = workload::expiring(from, from + batch, (now + 10) as u32, &keys);
			workload::submit_all(&pair.ours, &expiring);
			pair.clock.store(now + 20, Ordering::Relaxed);
			let (spent, removed) = workload::expire(&pair, "ours");
			assert_eq!(removed, batch as usize);
			took += spent;
		}
		count += batch;
	}
	assert!(pair.ours.len() >= 10_000);
	println!("{which}: {:?} per statement over {count}", took / count);
}
