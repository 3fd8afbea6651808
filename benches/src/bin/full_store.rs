//! Upstream's full-store workloads (polkadot-sdk `benches/full_store`) against our store and
//! the RAM-index baseline, on upstream's fixture shape at the store's default capacity
//! (4,194,304 statements, see [`statement_store_benches::full`]).
//!
//! ```sh
//! cargo run --release -p statement-store-benches --bin full_store            # 4,194,304
//! cargo run --release -p statement-store-benches --bin full_store -- --n 262144
//! ```
//!
//! The fixture (both stores, the same statements) is built once under `--dir` (default
//! `bench-fixtures`, as `memory` uses) and reused; the write groups submit as a 65th account
//! and remove what they added before the eviction group, so a reused fixture measures the
//! same. The groups run in upstream's order, each group on both stores before the next: point
//! reads, bounded and diverse queries, 640 concurrent queries, scans, writes, mixed loads,
//! eviction (both stores reopened with every account capped at its fixture count, so that
//! each submit to account 0 evicts) and reopening. Each figure is a median over rounds;
//! the table gives ours / baseline beside upstream's published disk / RAM ratio for the group.

use clap::Parser;
use sp_core::{ed25519, Pair as _};
use statement_primitives::{
	Statement, StatementAllowance, StatementSource, SubmitResult, TopicFilter,
};
use statement_store::{MapAllowances, Store};
use statement_store_benches::{
	baseline::RamIndexStore,
	fixture, full,
	workload::{self, median_batched, Shared},
};
use std::{
	path::{Path, PathBuf},
	sync::{
		atomic::{AtomicU32, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// Threads and calls a thread of upstream's concurrent groups.
const THREADS: usize = 64;
const PER_THREAD: usize = 10;
const BATCH: usize = THREADS * PER_THREAD;

/// Upstream's published ratios to its own RAM index for a benchmark, stage 2a and stage 2b,
/// from the cost-benefit run on polkadot-sdk PR #12774 (2026-08-02, i9-13900K: P1 / P0 and
/// P2 / P0), where that run published the benchmark. `subscribe_topic_diverse` is from stage
/// 2a's own run (PR #12304, 2026-07-14, EPYC-Milan), which gives no 2b figure. The 4M reads
/// other than that were not published in either.
fn published(benchmark: &str) -> (Option<f64>, Option<f64>) {
	match benchmark {
		"subscribe_topic_diverse" => (Some(6.5), None),
		"submit_640" => (Some(2.2), Some(3.8)),
		"submit_topics4_640" => (Some(4.2), Some(7.3)),
		"remove_640" => (Some(1.9), Some(8.3)),
		"maintain_after_640_removals" => (Some(6.6), Some(6.2)),
		"mixed_workload_640" => (Some(1.1), Some(1.4)),
		"contention_32r_32w" => (Some(2.6), Some(2.8)),
		"submit_evict_640" => (Some(3.6), Some(8.0)),
		// Reopening the full store: 8.7 s, 7.5 s and 2.0 s.
		"reopen" => (Some(7.5 / 8.7), Some(2.0 / 8.7)),
		_ => (None, None),
	}
}

/// One figure: a group's time per iteration on each store.
struct Row {
	group: &'static str,
	what: &'static str,
	ours: Duration,
	baseline: Duration,
}

/// Numbers for the 65th account's statements that no earlier group or run has used: a run
/// takes fewer than 2^20, from a base set by the clock (what an earlier run removed stays
/// banned for a while, so it must not be submitted again).
struct Fresh(AtomicU32);

impl Fresh {
	fn new() -> Fresh {
		let now = std::time::SystemTime::now()
			.duration_since(std::time::UNIX_EPOCH)
			.expect("clock after 1970")
			.as_secs();
		Fresh(AtomicU32::new(((now % 4096) as u32) << 20))
	}

	fn take(&self, count: usize) -> std::ops::Range<u32> {
		let from = self.0.fetch_add(count as u32, Ordering::Relaxed);
		from..from + count as u32
	}
}

fn config(path: &Path, n: u32) -> statement_store::Config {
	let mut config = fixture::config(path);
	// Room above the fixture, as upstream's fixture config leaves, so that the write groups
	// never meet the global limits.
	config.max_total_statements = 2 * u64::from(n);
	config.max_total_size = 16 << 30;
	config
}

/// Every account may keep `max_count` statements (unlimited when `None`).
fn allowances(max_count: Option<u32>) -> Arc<MapAllowances> {
	match max_count {
		None => fixture::unlimited(),
		Some(max_count) => Arc::new(
			MapAllowances::new().with_default(StatementAllowance { max_count, max_size: u32::MAX }),
		),
	}
}

/// Both stores' time for `run`, ours first, the median of `rounds`, each round on what an
/// untimed `setup` made for that store.
fn both<T>(
	stores: [&Shared; 2],
	rounds: usize,
	mut setup: impl FnMut(&Shared) -> T,
	mut run: impl FnMut(&Shared, T),
) -> (Duration, Duration) {
	let [ours, baseline] =
		stores.map(|store| median_batched(rounds, || setup(store), |input| run(store, input)));
	(ours, baseline)
}

/// The median time of one call of `op`, over `rounds` rounds of `calls` calls.
fn per_call(
	stores: [&Shared; 2],
	rounds: usize,
	calls: u32,
	op: impl Fn(&Shared),
) -> (Duration, Duration) {
	let (ours, baseline) =
		both(stores, rounds, |_| (), |store, ()| (0..calls).for_each(|_| op(store)));
	(ours / calls, baseline / calls)
}

/// [`PER_THREAD`] calls of `op` from each of [`THREADS`] threads at once.
fn concurrently(store: &Shared, op: impl Fn(&Shared) + Sync) {
	std::thread::scope(|scope| {
		for _ in 0..THREADS {
			scope.spawn(|| (0..PER_THREAD).for_each(|_| op(store)));
		}
	});
}

/// A figure, printed as it is measured.
fn row(group: &'static str, what: &'static str, (ours, baseline): (Duration, Duration)) -> Row {
	eprintln!("  {what}: ours {ours:?}, baseline {baseline:?}");
	Row { group, what, ours, baseline }
}

/// What the groups share: the fixture's size and keys, the 65th account and its numbers.
struct Run<'a> {
	n: u32,
	keys: Vec<ed25519::Pair>,
	sacrifice: ed25519::Pair,
	fresh: &'a Fresh,
}

impl Run<'_> {
	/// `count` statements of the 65th account with `topics` topics of their own, signed on
	/// every core.
	fn sacrificial(&self, count: usize, topics: usize) -> Vec<Statement> {
		let range = self.fresh.take(count);
		workload::on_every_core(range.start, range.end, |i| {
			full::sacrificial(i, topics, &self.sacrifice)
		})
	}

	/// The read groups, on the fixture as built.
	fn reads(&self, stores: [&Shared; 2]) -> Vec<Row> {
		let mut rows = Vec::new();
		let n = self.n;
		let hit = full::statement(1, &self.keys).hash();
		let miss = [0xab; 32];
		for store in stores {
			assert!(store.has_statement(&hit) && !store.has_statement(&miss));
		}
		let point = |op: &dyn Fn(&Shared)| per_call(stores, 21, 10_000, op);
		rows.push(row(
			"full4m_point",
			"has_statement_hit",
			point(&|s| assert!(s.has_statement(&hit))),
		));
		rows.push(row(
			"full4m_point",
			"has_statement_miss",
			point(&|s| assert!(!s.has_statement(&miss))),
		));
		rows.push(row(
			"full4m_point",
			"statement_hit",
			point(&|s| assert!(s.statement(&hit).expect("lookup").is_some())),
		));

		let t01 = full::t01();
		let dk42 = full::dk42();
		let (diverse_topic, diverse_key) = ([full::diverse_topic(n)], full::diverse_key(n));
		fn broadcasts(
			topics: &[statement_primitives::Topic],
			expect: usize,
		) -> impl Fn(&Shared) + Sync + '_ {
			move |s: &Shared| assert_eq!(s.broadcasts(topics).expect("broadcasts").len(), expect)
		}
		let posted = |key, expect: usize| {
			move |s: &Shared| assert_eq!(s.posted(&[], key).expect("posted").len(), expect)
		};
		let query = |op: &dyn Fn(&Shared)| per_call(stores, 15, 100, op);
		rows.push(row("full4m_query", "broadcasts_100", query(&broadcasts(&t01, full::BOUNDED))));
		rows.push(row(
			"full4m_query",
			"broadcasts_diverse_6",
			query(&broadcasts(&diverse_topic, full::DIVERSE_TOPIC_MATCHES)),
		));
		rows.push(row("full4m_query", "posted_100", query(&posted(dk42, full::BOUNDED))));
		rows.push(row(
			"full4m_query",
			"posted_diverse_4",
			query(&posted(diverse_key, full::DIVERSE_KEY_MATCHES)),
		));

		let together = |op: &(dyn Fn(&Shared) + Sync)| {
			both(stores, 11, |_| (), |store, ()| concurrently(store, op))
		};
		rows.push(row(
			"full4m_query_concurrent",
			"broadcasts_100_x640",
			together(&broadcasts(&t01, full::BOUNDED)),
		));
		rows.push(row(
			"full4m_query_concurrent",
			"posted_100_x640",
			together(&posted(dk42, full::BOUNDED)),
		));

		let scaled = full::scaled_matches(n);
		rows.push(row(
			"full4m_scan",
			"broadcasts_scaled_419k",
			both(stores, 5, |_| (), |s, ()| broadcasts(&full::t23(), scaled)(s)),
		));
		// Ours: a subscription's replay of the 8 carriers, read to its end. The baseline
		// keeps no subscribers; the same statements as one query stand in for it.
		let [ours, baseline] = stores;
		let subscribe = |store: &Shared| {
			let filter = TopicFilter::MatchAll(diverse_topic.to_vec());
			let mut subscription = store.subscribe_with_queue(filter, 1 << 20).expect("subscribe");
			let mut replayed = 0;
			while let Some(page) = subscription.next_replay_page(1 << 20).expect("replay") {
				replayed += page.len();
			}
			assert_eq!(replayed, full::DIVERSE_TOPIC_CARRIERS);
		};
		let stand_in = |store: &Shared| {
			assert_eq!(store.broadcasts_stmt(&diverse_topic).expect("query").len(), 6);
		};
		let ours_subscribe = per_call([ours, ours], 15, 100, subscribe).0;
		let baseline_query = per_call([baseline, baseline], 15, 100, stand_in).0;
		rows.push(row("full4m_scan", "subscribe_topic_diverse", (ours_subscribe, baseline_query)));
		rows.push(row(
			"full4m_scan",
			"statements_all_4m",
			both(
				stores,
				3,
				|_| (),
				|s, ()| assert!(s.statements().expect("dump").len() >= n as usize),
			),
		));
		rows
	}

	/// The write and mixed groups, through the 65th account (`maintain` runs each store's
	/// maintenance).
	fn writes(&self, stores: [&Shared; 2], maintain: [&dyn Fn(); 2]) -> Vec<Row> {
		let mut rows = Vec::new();
		let rounds = 11;
		let submitted = |store: &Shared, statements: Vec<Statement>| {
			workload::submit_concurrently(store, statements, THREADS)
		};
		rows.push(row(
			"full4m_write",
			"submit_640",
			both(stores, rounds, |_| self.sacrificial(BATCH, 0), submitted),
		));
		rows.push(row(
			"full4m_write",
			"submit_topics4_640",
			both(stores, rounds, |_| self.sacrificial(BATCH, 4), submitted),
		));
		let added = |store: &Shared| {
			let statements = self.sacrificial(BATCH, 0);
			let hashes: Vec<_> = statements.iter().map(Statement::hash).collect();
			workload::submit_all(store, &statements);
			hashes
		};
		rows.push(row(
			"full4m_write",
			"remove_640",
			both(stores, rounds, added, |store, hashes| {
				workload::remove_concurrently(store, &hashes, THREADS);
			}),
		));
		// Not an upstream group: 640 submits rotating over the 64 fixture accounts (thread t's
		// k-th by account (t + k) % 64), each account holding a fixture account's count.
		// Everything they add is removed once the group is done (untimed).
		let rotated = std::cell::RefCell::new(Vec::new());
		let rotating = |_: &Shared| {
			let range = self.fresh.take(BATCH);
			let statements = workload::on_every_core(range.start, range.end, |i| {
				let nth = (i - range.start) as usize;
				let account = (nth / PER_THREAD + nth % PER_THREAD) % self.keys.len();
				full::outranking(i, full::EXPIRY, &self.keys[account])
			});
			rotated.borrow_mut().extend(statements.iter().map(Statement::hash));
			statements
		};
		let figures = both(stores, rounds, rotating, submitted);
		for store in stores {
			workload::remove_all(store, &rotated.borrow());
		}
		rows.push(row("account rotation", "submit_rotating_accounts_640", figures));
		let [ours_maintain, baseline_maintain] = maintain;
		let [ours, baseline] = stores;
		let after_removals = |store: &Shared, maintain: &dyn Fn()| {
			median_batched(
				rounds,
				|| {
					let hashes = added(store);
					workload::remove_all(store, &hashes);
				},
				|()| maintain(),
			)
		};
		let figures =
			(after_removals(ours, ours_maintain), after_removals(baseline, baseline_maintain));
		rows.push(row("full4m_write", "maintain_after_640_removals", figures));

		let t01 = full::t01();
		let carrying = |count: usize| {
			let range = self.fresh.take(count);
			workload::on_every_core(range.start, range.end, |i| {
				full::scaled_writer(i, &self.sacrifice)
			})
		};
		rows.push(row(
			"full4m_mixed",
			"mixed_workload_640",
			both(
				stores,
				rounds,
				|_| carrying(BATCH),
				|store, statements| {
					let share = statements.len() / THREADS;
					std::thread::scope(|scope| {
						for part in statements.chunks(share) {
							scope.spawn(move || {
								for statement in part {
									let outcome =
										store.submit(statement.clone(), StatementSource::Local);
									assert_eq!(outcome, SubmitResult::New);
									std::hint::black_box(store.broadcasts(&t01).expect("query"));
								}
							});
						}
					});
				},
			),
		));
		rows.push(row(
			"full4m_mixed",
			"contention_32r_32w",
			both(
				stores,
				rounds,
				|_| carrying(BATCH / 2),
				|store, statements| {
					std::thread::scope(|scope| {
						for part in statements.chunks(PER_THREAD) {
							scope.spawn(move || {
								for statement in part {
									std::hint::black_box(
										store.submit(statement.clone(), StatementSource::Local),
									);
								}
							});
						}
						for _ in 0..THREADS / 2 {
							scope.spawn(|| {
								for _ in 0..PER_THREAD {
									std::hint::black_box(store.broadcasts(&t01).expect("query"));
								}
							});
						}
					});
				},
			),
		));
		rows
	}
}

/// Time to open each store of the fixture (ours from its snapshot; the baseline rebuilds its
/// index from every body).
fn reopen(dir: &Path, n: u32) -> (Duration, Duration) {
	let started = Instant::now();
	let ours = Store::open(config(&dir.join("ours"), n), allowances(None)).expect("reopen ours");
	let ours_took = started.elapsed();
	assert!(ours.reopened_from_snapshot(), "our store did not close cleanly");
	drop(ours);
	let started = Instant::now();
	let baseline = RamIndexStore::open(&dir.join("baseline")).expect("reopen baseline");
	let baseline_took = started.elapsed();
	drop(baseline);
	(ours_took, baseline_took)
}

/// Upstream's full-store workloads against our store and the RAM-index baseline.
#[derive(Parser, Debug)]
#[command(name = "full_store")]
struct Args {
	/// Fixture size in statements: a multiple of 64, at least 65,536 (upstream's smoke runs
	/// use smaller; the figures are for the default).
	#[arg(long, default_value_t = full::STATEMENTS, value_parser = fixture_size)]
	n: u32,
	/// Where the fixture is built and reused.
	#[arg(long, value_name = "PATH", default_value = "bench-fixtures")]
	dir: PathBuf,
	/// Only build the fixture (if it is not built yet), so that the measuring run can be
	/// started later on a quiet machine.
	#[arg(long)]
	build_only: bool,
	/// Leave out the eviction group, for a rerun of the other groups.
	#[arg(long)]
	no_eviction: bool,
	/// Run the eviction group alone (and reopening), for a profile of it (`perf record`).
	#[arg(long, conflicts_with = "no_eviction")]
	only_eviction: bool,
}

fn fixture_size(text: &str) -> Result<u32, String> {
	match text.trim().parse::<u32>() {
		Ok(n) if n >= 65_536 && n % 64 == 0 && n <= 16 * full::STATEMENTS => Ok(n),
		_ => Err(format!("{text:?} is not a multiple of 64 from 65536 to 67108864")),
	}
}

fn main() {
	let args = Args::parse();
	let n = args.n;
	let dir = args.dir.join(format!("full-{n}"));
	fixture::build_both(&dir, n, config(&dir.join("ours"), n), full::statement);
	if args.build_only {
		return;
	}
	let fresh = Fresh::new();
	let keys = fixture::keys();
	let run = Run { n, keys, sacrifice: fixture::key(full::SACRIFICE), fresh: &fresh };

	eprintln!("opening both stores of {}...", dir.display());
	let ours = Store::open(config(&dir.join("ours"), n), allowances(None)).expect("open ours");
	let baseline = RamIndexStore::open(&dir.join("baseline")).expect("open baseline");
	let stores: [&Shared; 2] = [&ours, &baseline];
	// A run left out of the eviction group, or stopped, leaves the 65th account's statements
	// behind: the reads below count the fixture's own.
	for store in stores {
		store.remove_by(run.sacrifice.public().0).expect("remove the 65th account's statements");
	}
	let mut rows = Vec::new();
	if !args.only_eviction {
		eprintln!("reads...");
		rows.extend(run.reads(stores));
	}
	let now = || {
		std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs()
	};
	let ours_maintain = || {
		ours.maintain().expect("maintain ours");
	};
	let baseline_maintain = || {
		baseline.expire(now()).expect("baseline expiry");
	};
	if !args.only_eviction {
		eprintln!("writes...");
		rows.extend(run.writes(stores, [&ours_maintain, &baseline_maintain]));
	}
	// What the write groups added goes, then the 65th account is filled to a fixture
	// account's count for the eviction group.
	let sacrifice = run.sacrifice.public().0;
	let cap = n / fixture::ACCOUNTS;
	let filling = if args.no_eviction { Vec::new() } else { run.sacrificial(cap as usize, 0) };
	for store in stores {
		store.remove_by(sacrifice).expect("remove the 65th account's statements");
		workload::submit_all(store, &filling);
	}
	ours_maintain();
	drop((ours, baseline));
	if !args.no_eviction {
		evict(&dir, n, cap, &fresh, &run.sacrifice, &mut rows);
	}
	rows.push(row("index_load", "reopen", reopen(&dir, n)));
	print(n, &rows);
}

/// `submit_evict_640`: both stores reopened with every account capped at `cap`, the 65th
/// account (filled to `cap`) evicting one statement a submit; what it added is removed after.
fn evict(
	dir: &Path,
	n: u32,
	cap: u32,
	fresh: &Fresh,
	sacrifice: &ed25519::Pair,
	rows: &mut Vec<Row>,
) {
	eprintln!("eviction...");
	let ours = Store::open(config(&dir.join("ours"), n), allowances(Some(cap))).expect("open ours");
	let baseline = RamIndexStore::open_capped(&dir.join("baseline"), cap).expect("open baseline");
	let next_expiry = std::sync::atomic::AtomicU64::new(full::EXPIRY + 1);
	let evicting = |_: &Shared| {
		let expiry = next_expiry.fetch_add(1, Ordering::Relaxed);
		let range = fresh.take(BATCH);
		workload::on_every_core(range.start, range.end, |i| full::outranking(i, expiry, sacrifice))
	};
	let stores: [&Shared; 2] = [&ours, &baseline];
	let figures = both(stores, 11, evicting, |store, statements| {
		workload::submit_concurrently(store, statements, THREADS)
	});
	rows.push(row("full4m_evict", "submit_evict_640", figures));
	for store in stores {
		assert_eq!(store.statements().expect("dump").len(), n as usize + cap as usize);
		store.remove_by(sacrifice.public().0).expect("remove the 65th account's statements");
	}
	ours.maintain().expect("maintain ours");
}

/// The table and the JSON line.
fn print(n: u32, rows: &[Row]) {
	println!("| group | benchmark | ours | baseline | ours / baseline | upstream 2a / RAM | upstream 2b / RAM |");
	println!("|---|---|---|---|---|---|---|");
	let ratio = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}x"));
	for row in rows {
		let (stage_2a, stage_2b) = published(row.what);
		println!(
			"| {} | {} | {:?} | {:?} | {:.3}x | {} | {} |",
			row.group,
			row.what,
			row.ours,
			row.baseline,
			row.ours.as_secs_f64() / row.baseline.as_secs_f64().max(1e-12),
			ratio(stage_2a),
			ratio(stage_2b),
		);
	}
	let json: Vec<String> = rows
		.iter()
		.map(|row| {
			format!(
				"{{\"group\":\"{}\",\"benchmark\":\"{}\",\"ours_ns\":{},\"baseline_ns\":{}}}",
				row.group,
				row.what,
				row.ours.as_nanos(),
				row.baseline.as_nanos()
			)
		})
		.collect();
	println!("{{\"n\":{n},\"results\":[{}]}}", json.join(","));
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"full_store",
			"full_store --n 262144",
			"full_store --dir /f --n 65536",
			"full_store --build-only",
		]);
		assert_eq!(parse_line::<Args>("full_store").unwrap().n, 4_194_304);
		assert!(parse_line::<Args>("full_store --n 65537").is_err());
		assert!(parse_line::<Args>("full_store --n 64").is_err());
	}
}
