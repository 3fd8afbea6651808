//! Workloads shared by the criterion suite and the `compare` command, so both measure the
//! same operations on the same data for our store and the baseline.

use crate::{baseline::RamIndexStore, fixture};
use sp_core::ed25519;
use statement_primitives::{Hash, Statement, StatementSource, StatementStore, SubmitResult, Topic};
use statement_store::Store;
use std::{
	sync::{
		atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

/// A store that a workload can run against.
pub type Shared = dyn Driven;

/// A store the workloads drive: either one, through the statement-store API, plus what
/// finishing a timed removal takes.
pub trait Driven: StatementStore + Sync {
	/// Finish the removals made so far as the store would before its next write: ours
	/// applies the index edits of the removals it acknowledged (`Store::settle`), the
	/// baseline has nothing left to do. The removal workloads time this too, so that a
	/// removal is charged its whole cost rather than leaving part of it to the next figure.
	fn settle(&self) {}
}

impl Driven for Store {
	fn settle(&self) {
		Store::settle(self).expect("apply the acknowledged removals");
	}
}

impl Driven for RamIndexStore {}

/// Both stores filled with the same statements, in temporary directories.
pub struct Pair {
	/// Our store.
	pub ours: Store,
	/// The RAM-index baseline.
	pub baseline: RamIndexStore,
	/// Hashes of the statements in both, in submission order.
	pub hashes: Vec<Hash>,
	/// Unix seconds as both stores see it (ours reads it through its clock).
	pub clock: Arc<AtomicU64>,
	_dirs: (tempfile::TempDir, tempfile::TempDir),
}

/// Our store at `path`, with the benchmark's options and unlimited allowances.
pub fn open_ours(path: &std::path::Path) -> Store {
	Store::open(fixture::config(path), fixture::unlimited()).expect("open our store")
}

/// The baseline at `path`.
pub fn open_baseline(path: &std::path::Path) -> RamIndexStore {
	RamIndexStore::open(path).expect("open baseline")
}

impl Pair {
	/// Both stores, empty.
	pub fn empty() -> Pair {
		let ours_dir = tempfile::tempdir().expect("temp dir");
		let base_dir = tempfile::tempdir().expect("temp dir");
		let clock = Arc::new(AtomicU64::new(fixture::NOW));
		let ours =
			Store::open(fixture::config_with_clock(ours_dir.path(), &clock), fixture::unlimited())
				.expect("open our store");
		let baseline = RamIndexStore::open(base_dir.path()).expect("open baseline");
		Pair { ours, baseline, hashes: Vec::new(), clock, _dirs: (ours_dir, base_dir) }
	}

	/// Both stores holding `statements`, submitted with full checks, logs applied.
	pub fn filled(statements: &[Statement]) -> Pair {
		let mut pair = Pair::empty();
		pair.add(statements);
		pair
	}

	/// Submit `statements` to both.
	pub fn add(&mut self, statements: &[Statement]) {
		for statement in statements {
			assert_eq!(
				self.ours.submit(statement.clone(), StatementSource::Local),
				SubmitResult::New
			);
			assert_eq!(
				self.baseline.submit(statement.clone(), StatementSource::Local),
				SubmitResult::New
			);
			self.hashes.push(statement.hash());
		}
		// Let both databases apply their logs in the background before reads are timed.
		std::thread::sleep(Duration::from_millis(300));
	}

	/// The two stores, named.
	pub fn both(&self) -> [(&'static str, &Shared); 2] {
		[("ours", &self.ours), ("baseline", &self.baseline)]
	}
}

/// The two topics of a 2-topic MatchAll that returns N/100 statements.
pub fn two_topics() -> [Topic; 2] {
	[fixture::topic(3), fixture::topic(1003)]
}

/// Run `queries` 2-topic broadcasts spread over every core; wall time for all of them.
pub fn concurrent_broadcasts(store: &Shared, queries: usize) -> Duration {
	let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
	let topics = two_topics();
	let start = Instant::now();
	std::thread::scope(|scope| {
		for _ in 0..threads {
			scope.spawn(|| {
				for _ in 0..queries / threads {
					std::hint::black_box(store.broadcasts(&topics).expect("query"));
				}
			});
		}
	});
	start.elapsed()
}

/// One writer submits `writes` (pre-signed, new) statements while a reader thread runs
/// `reads` 2-topic broadcasts; wall time until both finish.
pub fn mixed(store: &Shared, writes: &[Statement], reads: usize) -> Duration {
	let topics = two_topics();
	let start = Instant::now();
	std::thread::scope(|scope| {
		scope.spawn(|| {
			for statement in writes {
				std::hint::black_box(store.submit(statement.clone(), StatementSource::Local));
			}
		});
		scope.spawn(|| {
			for _ in 0..reads {
				std::hint::black_box(store.broadcasts(&topics).expect("query"));
			}
		});
	});
	start.elapsed()
}

/// Time `reads` 2-topic broadcasts while another thread submits `writes` without pause
/// (the writer stops when the reads are done or it runs out of statements).
pub fn reads_under_writer(store: &Shared, writes: &[Statement], reads: usize) -> Duration {
	let topics = two_topics();
	let stop = AtomicBool::new(false);
	std::thread::scope(|scope| {
		scope.spawn(|| {
			for statement in writes {
				if stop.load(Ordering::Relaxed) {
					break;
				}
				std::hint::black_box(store.submit(statement.clone(), StatementSource::Local));
			}
		});
		// Give the writer a head start so every read overlaps it.
		std::thread::sleep(Duration::from_millis(5));
		let start = Instant::now();
		for _ in 0..reads {
			std::hint::black_box(store.broadcasts(&topics).expect("query"));
		}
		let elapsed = start.elapsed();
		stop.store(true, Ordering::Relaxed);
		elapsed
	})
}

/// Submit `statements` (new to the store) one after another; total time.
pub fn submit_all(store: &Shared, statements: &[Statement]) -> Duration {
	let start = Instant::now();
	for statement in statements {
		let outcome = store.submit(statement.clone(), StatementSource::Local);
		debug_assert_eq!(outcome, SubmitResult::New);
		std::hint::black_box(outcome);
	}
	start.elapsed()
}

/// Remove `hashes` one by one, then settle them (see [`Driven::settle`]); total time.
pub fn remove_all(store: &Shared, hashes: &[Hash]) -> Duration {
	let start = Instant::now();
	for hash in hashes {
		store.remove(hash).expect("remove");
	}
	store.settle();
	start.elapsed()
}

/// Remove `hashes` from `threads` threads at once, each taking an equal share in order (the
/// shape of upstream's `remove_640`: 64 threads of 10), then settle them (see
/// [`Driven::settle`]); wall time for all of it.
pub fn remove_concurrently(store: &Shared, hashes: &[Hash], threads: usize) -> Duration {
	let share = hashes.len().div_ceil(threads).max(1);
	let start = Instant::now();
	std::thread::scope(|scope| {
		for part in hashes.chunks(share) {
			scope.spawn(move || {
				for hash in part {
					store.remove(hash).expect("remove");
				}
			});
		}
	});
	store.settle();
	start.elapsed()
}

/// Indices of statements no store holds yet (data sets use indices below a million).
static NEXT_FRESH: AtomicU32 = AtomicU32::new(1_000_000);

/// The first of `count` statement indices never handed out before.
pub fn fresh_indices(count: u32) -> u32 {
	NEXT_FRESH.fetch_add(count, Ordering::Relaxed)
}

/// `count` signed statements that no store holds yet.
pub fn fresh(count: u32, keys: &[ed25519::Pair]) -> Vec<Statement> {
	let from = fresh_indices(count);
	signed(from, from + count, keys)
}

/// Signed statements `from..to` of the data set, signed on every core.
pub fn signed(from: u32, to: u32, keys: &[ed25519::Pair]) -> Vec<Statement> {
	on_every_core(from, to, |i| fixture::statement(i, keys))
}

/// `make(i)` for every `i` in `from..to`, in order, spread over every core (for signing).
pub fn on_every_core<T: Send>(from: u32, to: u32, make: impl Fn(u32) -> T + Sync) -> Vec<T> {
	let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
	let span = (to - from).div_ceil(threads).max(1);
	let make = &make;
	std::thread::scope(|scope| {
		let parts: Vec<_> = (0..threads)
			.map(|t| {
				let start = (from + t * span).min(to);
				let end = (start + span).min(to);
				scope.spawn(move || (start..end).map(make).collect::<Vec<_>>())
			})
			.collect();
		parts.into_iter().flat_map(|part| part.join().expect("signer")).collect()
	})
}

/// `work(item)` for every item, the items split over every core.
pub fn for_each_on_every_core<T: Send>(items: &mut [T], work: impl Fn(&mut T) + Sync) {
	let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
	let per_thread = items.len().div_ceil(threads).max(1);
	let work = &work;
	std::thread::scope(|scope| {
		for chunk in items.chunks_mut(per_thread) {
			scope.spawn(move || chunk.iter_mut().for_each(work));
		}
	});
}

/// Statements that expire at `expiry` (unix seconds), for maintenance.
pub fn expiring(from: u32, to: u32, expiry: u32, keys: &[ed25519::Pair]) -> Vec<Statement> {
	(from..to).map(|i| fixture::statement_expiring(i, expiry, keys)).collect()
}

/// Statements `from..to` posted to one of [`fixture::DESTINATIONS`] destination keys.
pub fn posted(from: u32, to: u32, keys: &[ed25519::Pair]) -> Vec<Statement> {
	(from..to).map(|i| fixture::posted_statement(i, keys)).collect()
}

/// Expire everything the clock has passed: ours through its maintenance (expiry index, in
/// slices), the baseline by scanning its index. Returns the time and the number removed.
pub fn expire(pair: &Pair, which: &str) -> (Duration, usize) {
	let now = pair.clock.load(Ordering::Relaxed);
	let start = Instant::now();
	let removed = if which == "ours" {
		let mut removed = 0;
		loop {
			let report = pair.ours.maintain_for(Duration::from_secs(60)).expect("maintain");
			removed += report.expired;
			if !report.incomplete {
				break;
			}
		}
		removed
	} else {
		pair.baseline.expire(now).expect("expire")
	};
	(start.elapsed(), removed)
}

/// The median over `rounds` of how long `run` takes, each time on what an untimed `setup`
/// made (criterion's `iter_batched`, for workloads that consume their input).
pub fn median_batched<T>(
	rounds: usize,
	mut setup: impl FnMut() -> T,
	mut run: impl FnMut(T),
) -> Duration {
	let mut samples: Vec<Duration> = (0..rounds.max(1))
		.map(|_| {
			let input = setup();
			let start = Instant::now();
			run(input);
			start.elapsed()
		})
		.collect();
	samples.sort();
	samples[samples.len() / 2]
}

/// Submit `statements` (new to the store) from `threads` threads at once, each taking an
/// equal share in order (upstream's `submit_640`: 64 threads of 10); every one must be
/// stored.
pub fn submit_concurrently(store: &Shared, statements: Vec<Statement>, threads: usize) {
	let share = statements.len().div_ceil(threads).max(1);
	std::thread::scope(|scope| {
		for part in statements.chunks(share) {
			scope.spawn(move || {
				for statement in part {
					let outcome = store.submit(statement.clone(), StatementSource::Local);
					assert_eq!(outcome, SubmitResult::New, "a concurrent submit was refused");
				}
			});
		}
	});
}
