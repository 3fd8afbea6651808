//! The benchmark data set, as docs/DESIGN.md describes the reference runs: ed25519-signed
//! statements over 64 accounts, topics (i % 10, 1000 + i % 100), 256-byte data.

use sp_core::{ed25519, Pair};
use statement_primitives::testing::TestStatement;
use statement_primitives::{
	DecryptionKey, Statement, StatementSource, StatementStore, SubmitResult, Topic,
};
use statement_store::{Clock, Config, MapAllowances};
use std::{
	path::Path,
	sync::{
		atomic::{AtomicU64, AtomicUsize, Ordering},
		Arc,
	},
};

/// Accounts signing the data set.
pub const ACCOUNTS: u32 = 64;

/// The signing key of account `n`.
pub fn key(n: u32) -> ed25519::Pair {
	let mut seed = [0u8; 32];
	seed[..4].copy_from_slice(&n.to_le_bytes());
	seed[31] = 0xbe;
	ed25519::Pair::from_seed(&seed)
}

/// Topic number `n`.
pub fn topic(n: u32) -> Topic {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0x7c;
	Topic(bytes)
}

/// The benchmark clock's starting time (unix seconds, 2026-11-01).
pub const NOW: u64 = 1_793_491_200;

/// Destination keys that [`posted_statement`]s are addressed to.
pub const DESTINATIONS: u32 = 4;

/// Destination key `n`.
pub fn destination(n: u32) -> DecryptionKey {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0xd5;
	bytes
}

fn build(i: u32, expiry: u32, dest: Option<DecryptionKey>, keys: &[ed25519::Pair]) -> Statement {
	let mut data = vec![0u8; 256];
	data[..4].copy_from_slice(&i.to_le_bytes());
	TestStatement::new()
		.expiry(expiry, i)
		.decryption_key(dest)
		.topic(0, topic(i % 10))
		.topic(1, topic(1000 + i % 100))
		.data(data)
		.signed_ed25519(&keys[(i % ACCOUNTS) as usize])
}

/// Statement `i` of the data set, signed by account `i % 64` with key `keys[i % 64]`.
pub fn statement(i: u32, keys: &[ed25519::Pair]) -> Statement {
	build(i, u32::MAX - 1, None, keys)
}

/// Statement `i`, expiring at `expiry` (unix seconds).
pub fn statement_expiring(i: u32, expiry: u32, keys: &[ed25519::Pair]) -> Statement {
	build(i, expiry, None, keys)
}

/// Statement `i`, posted to [`destination`] `i % DESTINATIONS`.
pub fn posted_statement(i: u32, keys: &[ed25519::Pair]) -> Statement {
	build(i, u32::MAX - 1, Some(destination(i % DESTINATIONS)), keys)
}

/// The 64 keys.
pub fn keys() -> Vec<ed25519::Pair> {
	(0..ACCOUNTS).map(key).collect()
}

/// Allowances large enough that nothing is evicted.
pub fn unlimited() -> Arc<MapAllowances> {
	Arc::new(MapAllowances::unlimited())
}

/// The body cache the stores a benchmark opens get, in bytes; 0 keeps the store's default.
static BODY_CACHE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// Give every store opened from now on a body cache of `bytes` (0: the store's default).
pub fn set_body_cache_bytes(bytes: usize) {
	BODY_CACHE_BYTES.store(bytes, Ordering::Relaxed);
}

/// Store options for a benchmark directory (no fsync: we measure the index, not the disk).
pub fn config(path: &Path) -> Config {
	let mut config = Config::new(path);
	config.sync_wal = false;
	match BODY_CACHE_BYTES.load(Ordering::Relaxed) {
		0 => {}
		bytes => config.body_cache_bytes = bytes,
	}
	config
}

/// [`config`] with a clock the benchmark moves.
pub fn config_with_clock(path: &Path, now: &Arc<AtomicU64>) -> Config {
	let mut config = config(path);
	let now = now.clone();
	config.clock = Clock::from_fn(move || now.load(Ordering::Relaxed));
	config
}

/// Call `submit(i)` for every `i` in `0..n` on every core, in chunks, printing progress to
/// stderr under `label`, and `maintain()` every 5 s meanwhile and once at the end, as a node
/// runs its maintenance, so that the store on disk is what a node leaves (snapshots written,
/// the journal they cover pruned).
pub fn fill_in_parallel(
	label: &str,
	n: u32,
	submit: impl Fn(u32) + Sync,
	maintain: impl Fn() + Sync,
) -> std::time::Duration {
	const CHUNK: u64 = 1000;
	let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
	let next = AtomicU64::new(0);
	let started = std::time::Instant::now();
	let filled = std::sync::atomic::AtomicBool::new(false);
	std::thread::scope(|scope| {
		scope.spawn(|| {
			while !filled.load(Ordering::Relaxed) {
				for _ in 0..50 {
					std::thread::sleep(std::time::Duration::from_millis(100));
					if filled.load(Ordering::Relaxed) {
						return;
					}
				}
				maintain();
			}
		});
		let fillers: Vec<_> = (0..threads)
			.map(|_| {
				scope.spawn(|| loop {
					let from = next.fetch_add(CHUNK, Ordering::Relaxed);
					if from >= u64::from(n) {
						break;
					}
					let to = (from + CHUNK).min(u64::from(n));
					for i in from..to {
						submit(i as u32);
					}
					let step = (u64::from(n) / 20).max(CHUNK);
					if to % step < CHUNK {
						let rate = to as f64 / started.elapsed().as_secs_f64();
						eprintln!(
							"  {label}: {to}/{n} statements, {rate:.0}/s, about {:.0} s left",
							(u64::from(n) - to) as f64 / rate
						);
					}
				})
			})
			.collect();
		for filler in fillers {
			filler.join().expect("filler thread");
		}
		filled.store(true, Ordering::Relaxed);
	});
	maintain();
	started.elapsed()
}

/// Fill both stores of a fixture in `dir` (ours at `dir/ours` with `config`, the baseline at
/// `dir/baseline`) with `statement(i, keys)` for `i` in `0..n`, signing on every core, unless
/// a whole fixture is there already; then mark it built.
pub fn build_both(
	dir: &Path,
	n: u32,
	config: Config,
	statement: impl Fn(u32, &[ed25519::Pair]) -> Statement + Sync,
) {
	if reusable(dir) {
		return;
	}
	eprintln!("building fixture {} ({n} statements in each store)...", dir.display());
	let ours = statement_store::Store::open(config, unlimited()).expect("open our store");
	let baseline =
		crate::baseline::RamIndexStore::open(&dir.join("baseline")).expect("open baseline");
	let keys = keys();
	let took = fill_in_parallel(
		"both stores",
		n,
		|i| {
			let statement = statement(i, &keys);
			let outcome = ours.submit(statement.clone(), StatementSource::Local);
			assert_eq!(outcome, SubmitResult::New, "our store refused statement {i}");
			baseline.insert_verified(statement).expect("baseline insert");
		},
		|| {
			ours.maintain().expect("maintain our store");
		},
	);
	drop(ours);
	drop(baseline);
	mark_complete(dir, n);
	eprintln!("fixture built in {:.0} s", took.as_secs_f64());
}

/// The file that marks a fixture directory as built whole.
const COMPLETE: &str = "complete";

/// Whether the fixture in `dir` was built whole (and is reused); an incomplete one is
/// removed, to be built again.
pub fn reusable(dir: &Path) -> bool {
	if dir.join(COMPLETE).is_file() {
		eprintln!("reusing fixture {}", dir.display());
		return true;
	}
	if dir.exists() {
		eprintln!("removing incomplete fixture {}", dir.display());
		std::fs::remove_dir_all(dir).expect("remove incomplete fixture");
	}
	false
}

/// Mark the fixture in `dir`, of `n` statements, as built whole.
pub fn mark_complete(dir: &Path, n: u32) {
	std::fs::write(dir.join(COMPLETE), n.to_string()).expect("mark fixture complete");
}
