//! A submit-only loop on our store, for profilers: signing happens before the timed part.
//!
//! ```sh
//! cargo build --release -p statement-store-benches --example profile_submit
//! perf record -g --call-graph dwarf target/release/examples/profile_submit 20000
//! ```

use statement_primitives::{StatementSource, StatementStore, SubmitResult};
use statement_store::Store;
use statement_store_benches::{fixture, workload};
use std::time::Instant;

fn main() {
	let n: u32 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
	let keys = fixture::keys();
	let statements = workload::signed(0, 2 * n, &keys);
	let dir = tempfile::tempdir().expect("temp dir");
	let store = Store::open(fixture::config(dir.path()), fixture::unlimited()).expect("open");
	for statement in &statements[..n as usize] {
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
	let verify = Instant::now();
	for statement in &statements[n as usize..] {
		std::hint::black_box(statement.verify_signature());
	}
	let verify = verify.elapsed() / n;
	let start = Instant::now();
	for statement in &statements[n as usize..] {
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
	let submit = start.elapsed() / n;
	println!(
		"submit {submit:?} per statement over {n} into a store of {n}; verify alone {verify:?}"
	);
}
