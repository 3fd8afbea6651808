//! Criterion benchmarks: every workload runs against our store and the RAM-index baseline,
//! named `<workload>/<store>/<statements>`, so that each pair reads as a ratio.
//!
//! `cargo bench -p statement-store-benches` (all), or add a filter: `-- has_statement`.

// `criterion_group!` defines a public function it cannot document.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use statement_primitives::{Hash, Statement, StatementStore};
use statement_store_benches::{
	fixture,
	workload::{self, Pair, Shared},
};
use std::{hint::black_box, sync::atomic::Ordering, time::Duration};

const SIZES: [u32; 3] = [1_000, 10_000, 50_000];

fn fresh(count: u64) -> Vec<Statement> {
	workload::fresh(count as u32, &fixture::keys())
}

fn data_set(n: u32) -> Pair {
	Pair::filled(&workload::signed(0, n, &fixture::keys()))
}

fn flipped(hash: &Hash) -> Hash {
	let mut miss = *hash;
	miss[5] ^= 0xff;
	miss
}

fn reads(c: &mut Criterion) {
	for n in SIZES {
		let pair = data_set(n);
		let mut group = c.benchmark_group("has_statement");
		for (name, store) in pair.both() {
			let hashes = &pair.hashes;
			group.bench_function(BenchmarkId::new(format!("hit/{name}"), n), |b| {
				let mut i = 0;
				b.iter(|| {
					i = (i + 1) % hashes.len();
					assert!(store.has_statement(&hashes[i]));
				})
			});
			let misses: Vec<Hash> = hashes.iter().map(flipped).collect();
			group.bench_function(BenchmarkId::new(format!("miss/{name}"), n), |b| {
				let mut i = 0;
				b.iter(|| {
					i = (i + 1) % misses.len();
					assert!(!store.has_statement(&misses[i]));
				})
			});
		}
		group.finish();

		let topics = workload::two_topics();
		let mut group = c.benchmark_group("broadcasts_2_topics");
		for (name, store) in pair.both() {
			group.bench_function(BenchmarkId::new(name, n), |b| {
				b.iter(|| assert_eq!(store.broadcasts(&topics).unwrap().len(), (n / 100) as usize))
			});
		}
		group.finish();

		if n == 10_000 {
			let mut group = c.benchmark_group("matchall_cache");
			for (name, store) in pair.both() {
				group.bench_function(BenchmarkId::new(format!("hit/{name}"), n), |b| {
					b.iter(|| black_box(store.broadcasts(&topics).unwrap()))
				});
			}
			// A miss: our cache emptied before each query; the baseline has no cache, so its
			// figure is the same query as a hit.
			group.bench_function(BenchmarkId::new("miss/ours", n), |b| {
				b.iter(|| {
					pair.ours.clear_cache();
					black_box(pair.ours.broadcasts(&topics).unwrap())
				})
			});
			group.bench_function(BenchmarkId::new("miss/baseline", n), |b| {
				b.iter(|| black_box(pair.baseline.broadcasts(&topics).unwrap()))
			});
			group.finish();

			let mut group = c.benchmark_group("statement_by_hash");
			for (name, store) in pair.both() {
				let hashes = &pair.hashes;
				group.bench_function(BenchmarkId::new(name, n), |b| {
					let mut i = 0;
					b.iter(|| {
						i = (i + 1) % hashes.len();
						black_box(store.statement(&hashes[i]).unwrap().unwrap())
					})
				});
			}
			group.finish();
		}

		if n <= 10_000 {
			let mut group = c.benchmark_group("statements_dump");
			for (name, store) in pair.both() {
				group.bench_function(BenchmarkId::new(name, n), |b| {
					b.iter(|| assert_eq!(store.statements().unwrap().len(), n as usize))
				});
			}
			group.finish();
		}

		if n == 1_000 {
			pair.ours.broadcasts(&topics).unwrap();
			let mut group = c.benchmark_group("concurrent_640_broadcasts");
			for (name, store) in pair.both() {
				group.bench_function(BenchmarkId::new(name, n), |b| {
					b.iter_custom(|iters| {
						(0..iters).map(|_| workload::concurrent_broadcasts(store, 640)).sum()
					})
				});
			}
			group.finish();
		}
	}
}

fn posted(c: &mut Criterion) {
	let n = 10_000;
	let pair = Pair::filled(&workload::posted(0, n, &fixture::keys()));
	// Statement i carries topic 1000 + i % 100 and destination i % 4: this returns N / 100.
	let dest = fixture::destination(3);
	let topics = workload::two_topics();
	let mut group = c.benchmark_group("posted_2_topics");
	for (name, store) in pair.both() {
		group.bench_function(BenchmarkId::new(name, n), |b| {
			b.iter(|| assert_eq!(store.posted(&topics, dest).unwrap().len(), (n / 100) as usize))
		});
	}
	group.finish();
}

fn writes(c: &mut Criterion) {
	let n = 10_000;
	let pair = data_set(n);
	let mut group = c.benchmark_group("submit");
	for (name, store) in pair.both() {
		group.bench_function(BenchmarkId::new(name, n), |b| {
			b.iter_custom(|iters| workload::submit_all(store, &fresh(iters)))
		});
	}
	group.finish();

	let mut group = c.benchmark_group("remove");
	for (name, store) in pair.both() {
		group.bench_function(BenchmarkId::new(name, n), |b| {
			b.iter_custom(|iters| {
				let statements = fresh(iters);
				workload::submit_all(store, &statements);
				let hashes: Vec<Hash> = statements.iter().map(Statement::hash).collect();
				workload::remove_all(store, &hashes)
			})
		});
	}
	group.finish();
}

fn maintenance(c: &mut Criterion) {
	let n = 10_000;
	let pair = data_set(n);
	let keys = fixture::keys();
	let mut group = c.benchmark_group("maintenance_expire");
	for (name, store) in pair.both() {
		group.bench_function(BenchmarkId::new(name, n), |b| {
			b.iter_custom(|iters| {
				let now = pair.clock.load(Ordering::Relaxed);
				let from = workload::fresh_indices(iters as u32);
				let expiring =
					workload::expiring(from, from + iters as u32, (now + 10) as u32, &keys);
				workload::submit_all(store, &expiring);
				pair.clock.store(now + 20, Ordering::Relaxed);
				let (took, removed) = workload::expire(&pair, name);
				assert_eq!(removed as u64, iters);
				took
			})
		});
	}
	group.finish();
}

fn contention(c: &mut Criterion) {
	let n = 10_000;
	let pair = data_set(n);
	let mut group = c.benchmark_group("mixed_1_submit_4_reads");
	for (name, store) in pair.both() {
		group.bench_function(BenchmarkId::new(name, n), |b| {
			b.iter_custom(|iters| workload::mixed(store, &fresh(iters), 4 * iters as usize))
		});
	}
	group.finish();

	let mut group = c.benchmark_group("reads_under_writer");
	for (name, store) in pair.both() {
		group.bench_function(BenchmarkId::new(name, n), |b| {
			b.iter_custom(|iters| {
				let writes = fresh(iters + 200);
				workload::reads_under_writer(store as &Shared, &writes, iters as usize)
			})
		});
	}
	group.finish();
}

fn config() -> Criterion {
	Criterion::default()
		.sample_size(20)
		.warm_up_time(Duration::from_millis(500))
		.measurement_time(Duration::from_secs(2))
}

criterion_group! { name = benches; config = config(); targets = reads, posted, writes, maintenance, contention }
criterion_main!(benches);
