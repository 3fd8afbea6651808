//! A submit-only loop, for profilers and quick ratios: signing happens before the timed part.
//! Each store is first filled with N statements, then timed over N more; with `both`, ours
//! and the baseline run one after the other in this process and the ratio is printed.
//!
//! ```sh
//! cargo build --release -p statement-store-benches --example profile_submit
//! target/release/examples/profile_submit both 50000
//! perf record -g --call-graph dwarf target/release/examples/profile_submit ours 20000
//! ```

use statement_primitives::{Statement, StatementSource, StatementStore, SubmitResult};
use statement_store::Store;
use statement_store_benches::{baseline::RamIndexStore, fixture, workload};
use std::time::{Duration, Instant};

/// Fill `store` with the first half of `statements`, then time the second half. Returns the
/// mean time per submit and prints how much of the total went to submits slower than 1 ms
/// (waits on locks or on the allocator behind background work, rather than work).
fn timed(name: &str, store: &dyn StatementStore, statements: &[Statement]) -> Duration {
	let (fill, timed) = statements.split_at(statements.len() / 2);
	for statement in fill {
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
	let (mut slow, mut slow_total, mut slowest) = (0, Duration::ZERO, Duration::ZERO);
	let start = Instant::now();
	for statement in timed {
		let one = Instant::now();
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		let took = one.elapsed();
		if took > Duration::from_millis(1) {
			slow += 1;
			slow_total += took;
		}
		slowest = slowest.max(took);
	}
	let total = start.elapsed();
	println!(
		"{name}: {slow} submits over 1 ms took {slow_total:?} of {total:?}; slowest {slowest:?}"
	);
	total / timed.len() as u32
}

fn main() {
	let mut args = std::env::args().skip(1);
	let which = args.next().unwrap_or_else(|| "both".into());
	let n: u32 = args.next().and_then(|n| n.parse().ok()).unwrap_or(20_000);
	let keys = fixture::keys();
	let statements = workload::signed(0, 2 * n, &keys);
	let verify = Instant::now();
	for statement in &statements[n as usize..] {
		std::hint::black_box(statement.verify_signature());
	}
	println!("verify alone {:?} per statement", verify.elapsed() / n);
	let mut ours = None;
	let mut baseline = None;
	if which == "ours" || which == "both" {
		let dir = tempfile::tempdir().expect("temp dir");
		let store = Store::open(fixture::config(dir.path()), fixture::unlimited()).expect("open");
		let per = timed("ours", &store, &statements);
		println!("ours: submit {per:?} per statement over {n} into a store of {n}");
		ours = Some(per);
	}
	if which == "baseline" || which == "both" {
		let dir = tempfile::tempdir().expect("temp dir");
		let store = RamIndexStore::open(dir.path()).expect("open");
		let per = timed("baseline", &store, &statements);
		println!("baseline: submit {per:?} per statement over {n} into a store of {n}");
		baseline = Some(per);
	}
	if let (Some(ours), Some(baseline)) = (ours, baseline) {
		println!("ours / baseline: {:.2}", ours.as_secs_f64() / baseline.as_secs_f64());
	}
}
