//! Runs the same workloads against our store and the RAM-index baseline in one process and
//! prints ours / baseline ratios, then a JSON summary.
//!
//! `cargo run --release -p statement-store-benches --bin compare -- [--quick]`
//!
//! `--quick` measures 1k and 10k statements; the full run adds 50k.

use statement_primitives::{Hash, Statement, StatementSource, StatementStore};
use statement_store::Store;
use statement_store_benches::{baseline::RamIndexStore, fixture};
use std::time::{Duration, Instant};

/// Median time of one operation over `rounds` batches of `per_round` calls.
fn measure(rounds: usize, per_round: usize, mut op: impl FnMut(usize)) -> Duration {
	let mut samples: Vec<Duration> = (0..rounds)
		.map(|round| {
			let start = Instant::now();
			for i in 0..per_round {
				op(round * per_round + i);
			}
			start.elapsed() / per_round as u32
		})
		.collect();
	samples.sort();
	samples[samples.len() / 2]
}

struct Row {
	figure: String,
	ours: Duration,
	baseline: Duration,
}

fn concurrent(store: &(dyn StatementStore + Sync), queries: usize) -> Duration {
	let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
	let topics = [fixture::topic(3), fixture::topic(1003)];
	let start = Instant::now();
	std::thread::scope(|scope| {
		for _ in 0..threads {
			scope.spawn(|| {
				for _ in 0..queries / threads {
					let found = store.broadcasts(&topics).expect("query");
					std::hint::black_box(found);
				}
			});
		}
	});
	start.elapsed()
}

fn run_size(n: u32, statements: &[Statement], rows: &mut Vec<Row>) {
	let ours_dir = tempfile::tempdir().expect("temp dir");
	let base_dir = tempfile::tempdir().expect("temp dir");
	let ours = Store::open(fixture::config(ours_dir.path()), fixture::unlimited()).expect("open");
	let baseline = RamIndexStore::open(base_dir.path()).expect("open baseline");
	let label = |what: &str| format!("{what} ({}k)", n / 1000);

	let submit_ours = measure(1, n as usize, |i| {
		ours.submit(statements[i].clone(), StatementSource::Local);
	});
	let submit_base = measure(1, n as usize, |i| {
		baseline.submit(statements[i].clone(), StatementSource::Local);
	});
	rows.push(Row { figure: label("submit"), ours: submit_ours, baseline: submit_base });
	// Let both databases finish applying their logs in the background before timing reads.
	std::thread::sleep(Duration::from_secs(2));

	let hashes: Vec<Hash> = statements.iter().map(Statement::hash).collect();
	let per = hashes.len();
	let hit = |store: &dyn StatementStore| {
		measure(7, per, |i| assert!(store.has_statement(&hashes[i % per])))
	};
	rows.push(Row {
		figure: label("has_statement hit"),
		ours: hit(&ours),
		baseline: hit(&baseline),
	});
	let miss = |store: &dyn StatementStore| {
		measure(7, per, |i| {
			let mut h = hashes[i % per];
			h[0] ^= 0xff;
			assert!(!store.has_statement(&h))
		})
	};
	rows.push(Row {
		figure: label("has_statement miss"),
		ours: miss(&ours),
		baseline: miss(&baseline),
	});

	let two = [fixture::topic(3), fixture::topic(1003)];
	let one = [fixture::topic(3)];
	let expected_two = (n / 100) as usize;
	let query =
		|store: &dyn StatementStore, topics: &[statement_primitives::Topic], expect: usize| {
			measure(15, 40, |_| assert_eq!(store.broadcasts(topics).expect("query").len(), expect))
		};
	rows.push(Row {
		figure: label("broadcasts 2 topics, warm"),
		ours: query(&ours, &two, expected_two),
		baseline: query(&baseline, &two, expected_two),
	});
	let cold = measure(15, 40, |_| {
		ours.clear_cache();
		assert_eq!(ours.broadcasts(&two).expect("query").len(), expected_two);
	});
	rows.push(Row {
		figure: label("broadcasts 2 topics, cold"),
		ours: cold,
		baseline: query(&baseline, &two, expected_two),
	});
	rows.push(Row {
		figure: label("broadcasts 1 topic, warm"),
		ours: query(&ours, &one, (n / 10) as usize),
		baseline: query(&baseline, &one, (n / 10) as usize),
	});
	let lookup = |store: &dyn StatementStore| {
		measure(5, per.min(2000), |i| {
			assert!(store.statement(&hashes[i % per]).expect("get").is_some())
		})
	};
	rows.push(Row {
		figure: label("statement(hash)"),
		ours: lookup(&ours),
		baseline: lookup(&baseline),
	});
	if n == 1000 {
		ours.broadcasts(&two).expect("warm up");
		let c_ours = (0..5).map(|_| concurrent(&ours, 640)).min().unwrap_or_default();
		let c_base = (0..5).map(|_| concurrent(&baseline, 640)).min().unwrap_or_default();
		rows.push(Row {
			figure: label("640 concurrent broadcasts"),
			ours: c_ours,
			baseline: c_base,
		});
	}
}

fn main() {
	let quick = std::env::args().any(|arg| arg == "--quick");
	let sizes: &[u32] = if quick { &[1_000, 10_000] } else { &[1_000, 10_000, 50_000] };
	let keys = fixture::keys();
	let largest = *sizes.last().unwrap_or(&1000);
	eprintln!("signing {largest} statements...");
	let statements: Vec<Statement> = (0..largest).map(|i| fixture::statement(i, &keys)).collect();
	let mut rows = Vec::new();
	for &n in sizes {
		eprintln!("measuring {n} statements...");
		run_size(n, &statements[..n as usize], &mut rows);
	}
	println!("| figure | ours | baseline | ours / baseline |");
	println!("|---|---|---|---|");
	for row in &rows {
		let ratio = row.ours.as_secs_f64() / row.baseline.as_secs_f64().max(1e-12);
		println!("| {} | {:?} | {:?} | {ratio:.2}x |", row.figure, row.ours, row.baseline);
	}
	let json: Vec<String> = rows
		.iter()
		.map(|row| {
			format!(
				"{{\"figure\":\"{}\",\"ours_ns\":{},\"baseline_ns\":{},\"ratio\":{:.3}}}",
				row.figure,
				row.ours.as_nanos(),
				row.baseline.as_nanos(),
				row.ours.as_secs_f64() / row.baseline.as_secs_f64().max(1e-12)
			)
		})
		.collect();
	println!("{{\"quick\":{quick},\"results\":[{}]}}", json.join(","));
}
