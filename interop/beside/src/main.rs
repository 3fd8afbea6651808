//! `beside_upstream`: our store and the published reference store (`sc-statement-store` 33,
//! with its RAM index) in one process, on the same signed statements, through each store's
//! own API, one after the other on fresh directories: the figures issue 47 holds ours to.
//!
//! For each size `n` and each store:
//! - **fill**: `n` statements submitted in a row on one thread into an empty store (64
//!   accounts, topics `(i % 10, 1000 + i % 100)`, 256 bytes of data, as `compare`'s data
//!   set), the mean per submit, signature check and allowance read included in both;
//! - **stream**: 20,000 more into the filled store, the mean per submit;
//! - **burst after idle**: 2 s with nothing to do, then 1,000 more, the mean per submit;
//! - **statement(hash)**: every stored statement looked up once (up to 200,000 of them), the
//!   mean, right after the fill and again after reopening (the reference's parity-db answers
//!   much of the first from the log it holds in memory until it applies it to its tables);
//! - **has_statement**, stored and not stored hashes, the mean;
//! - **MatchAll, first call**: the 2-topic broadcast query (n / 100 statements) over ten
//!   topic pairs, each the first time it is asked, ours with its caches dropped before each;
//! - **MatchAll, warm**: one pair asked again and again, the mean;
//! - **bytes written**: `/proc/self/io` `write_bytes` from opening the empty store to closing
//!   it after all of the above, per statement stored;
//! - **reopen**, then **the first query after reopen** (the same 2-topic query), then the
//!   lookups by hash again;
//! - **posted fill**: a fresh store filled with `--posted` statements addressed to four keys,
//!   the mean per submit.
//!
//! Ours runs as a node runs it (`Config::new`'s defaults); the reference as `new` builds it
//! (parity-db's defaults, no maintenance task: neither store runs maintenance here). Both
//! read allowances from the same one-block client. Figures are one run; the machine's load
//! moves them, so the ratio column (ours / reference) is what to compare.
//!
//! ```sh
//! cargo build --release --manifest-path interop/Cargo.toml -p statement-beside-upstream
//! interop/target/release/beside_upstream --sizes 200k,1M
//! ```

use codec::{Decode, Encode};
use sp_core::{ed25519, Pair};
use sp_statement_store::{
	Statement as SpStatement, StatementSource as SpSource, StatementStore as _,
	SubmitResult as SpSubmit, Topic as SpTopic,
};
use statement_interop_chain::{Backend, Block, Client, TokioSpawner, ALLOWANCE};
use statement_primitives::{self as ours, StatementStore as _};
use std::{
	path::Path,
	sync::Arc,
	time::{Duration, Instant},
};

/// Accounts signing the data set.
const ACCOUNTS: u32 = 64;
/// Submits after the fill, and after the idle pause.
const STREAM: u32 = 20_000;
const BURST: u32 = 1_000;
/// Most statements looked up by hash, and hashes asked of `has_statement`.
const LOOKUPS: usize = 200_000;
/// Topic pairs asked for the first time, and warm repeats of one.
const FIRST_CALLS: u32 = 10;
const WARM_CALLS: u32 = 50;

/// Topic `n`, as `compare`'s data set spells it.
fn topic(n: u32) -> [u8; 32] {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0x7c;
	bytes
}

/// Destination key `n` of the posted statements.
fn destination(n: u32) -> [u8; 32] {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[31] = 0xd5;
	bytes
}

/// The 2-topic query `k` (k < 10): `n / 100` statements match it.
fn pair(k: u32) -> [[u8; 32]; 2] {
	[topic(k), topic(1000 + k)]
}

/// Encodings of statements `from..to`, signed on every core; posted ones to four keys.
fn encodings(from: u32, to: u32, posted: bool) -> Vec<Vec<u8>> {
	let keys: Vec<ed25519::Pair> = (0..ACCOUNTS)
		.map(|n| {
			let mut seed = [0u8; 32];
			seed[..4].copy_from_slice(&n.to_le_bytes());
			seed[31] = 0xbe;
			ed25519::Pair::from_seed(&seed)
		})
		.collect();
	let make = |i: u32| {
		let mut statement = SpStatement::new();
		statement.set_expiry_from_parts(u32::MAX - 1, i);
		statement.set_topic(0, SpTopic(topic(i % 10)));
		statement.set_topic(1, SpTopic(topic(1000 + i % 100)));
		if posted {
			statement.set_decryption_key(destination(i % 4));
		}
		let mut data = vec![0u8; 256];
		data[..4].copy_from_slice(&i.to_le_bytes());
		statement.set_plain_data(data);
		statement.sign_ed25519_private(&keys[(i % ACCOUNTS) as usize]);
		statement.encode()
	};
	let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u32;
	let span = (to - from).div_ceil(threads).max(1);
	std::thread::scope(|scope| {
		let parts: Vec<_> = (0..threads)
			.map(|t| {
				let (start, end) = ((from + t * span).min(to), (from + (t + 1) * span).min(to));
				let make = &make;
				scope.spawn(move || (start..end).map(make).collect::<Vec<_>>())
			})
			.collect();
		parts.into_iter().flat_map(|part| part.join().expect("signing")).collect()
	})
}

/// What the run needs of a store, each store through its own API.
trait Side: Sized {
	const NAME: &'static str;
	type Statement;
	fn open(path: &Path, client: &Arc<Client>) -> Self;
	fn decode(encoding: &[u8]) -> Self::Statement;
	/// Whether the store took it as new.
	fn submit(&self, statement: Self::Statement) -> bool;
	fn found(&self, hash: &[u8; 32]) -> bool;
	fn has(&self, hash: &[u8; 32]) -> bool;
	fn broadcasts(&self, topics: &[[u8; 32]; 2]) -> usize;
	/// Drop what the store keeps of earlier queries (the reference keeps nothing).
	fn forget_queries(&self) {}
}

struct Ours(statement_store::Store);

impl Side for Ours {
	const NAME: &'static str = "ours";
	type Statement = ours::Statement;

	fn open(path: &Path, client: &Arc<Client>) -> Self {
		let allowances =
			statement_store_sp_adapter::ClientAllowances::<Block, Client, Backend>::new(
				client.clone(),
			);
		let config = statement_store::Config::new(path.join("statements"));
		Ours(statement_store::Store::open(config, Arc::new(allowances)).expect("ours opens"))
	}

	fn decode(encoding: &[u8]) -> ours::Statement {
		ours::Statement::from_bytes(encoding).expect("a statement")
	}

	fn submit(&self, statement: ours::Statement) -> bool {
		matches!(self.0.submit(statement, ours::StatementSource::Local), ours::SubmitResult::New)
	}

	fn found(&self, hash: &[u8; 32]) -> bool {
		self.0.statement(hash).expect("a lookup").is_some()
	}

	fn has(&self, hash: &[u8; 32]) -> bool {
		self.0.has_statement(hash)
	}

	fn broadcasts(&self, topics: &[[u8; 32]; 2]) -> usize {
		let topics = topics.map(ours::Topic);
		self.0.broadcasts(&topics).expect("a query").len()
	}

	fn forget_queries(&self) {
		self.0.clear_cache();
	}
}

/// The reference store, and the runtime its subscription workers run on (dropped after it).
struct Reference {
	store: sc_statement_store::Store,
	_runtime: tokio::runtime::Runtime,
}

impl Side for Reference {
	const NAME: &'static str = "sc-statement-store 33";
	type Statement = SpStatement;

	fn open(path: &Path, client: &Arc<Client>) -> Self {
		let runtime = tokio::runtime::Builder::new_multi_thread()
			.worker_threads(1)
			.enable_all()
			.build()
			.expect("a runtime");
		let keystore = Arc::new(sc_keystore::LocalKeystore::in_memory());
		let store = sc_statement_store::Store::new(
			path,
			Default::default(),
			client.clone(),
			keystore,
			None,
			Box::new(TokioSpawner(runtime.handle().clone())),
		)
		.expect("the reference opens");
		Reference { store, _runtime: runtime }
	}

	fn decode(encoding: &[u8]) -> SpStatement {
		SpStatement::decode(&mut &encoding[..]).expect("a statement")
	}

	fn submit(&self, statement: SpStatement) -> bool {
		matches!(self.store.submit(statement, SpSource::Local), SpSubmit::New)
	}

	fn found(&self, hash: &[u8; 32]) -> bool {
		self.store.statement(hash).expect("a lookup").is_some()
	}

	fn has(&self, hash: &[u8; 32]) -> bool {
		self.store.has_statement(hash)
	}

	fn broadcasts(&self, topics: &[[u8; 32]; 2]) -> usize {
		let topics = topics.map(SpTopic);
		self.store.broadcasts(&topics).expect("a query").len()
	}
}

/// A figure's name and where it is in [`Figures`].
type Row = (&'static str, fn(&Figures) -> f64);

/// One store's figures at one size, in microseconds unless named otherwise.
#[derive(Default)]
struct Figures {
	fill: f64,
	stream: f64,
	burst: f64,
	posted_fill: f64,
	hash: f64,
	has_hit: f64,
	has_miss: f64,
	hash_after_reopen: f64,
	first_call: f64,
	warm: f64,
	bytes_per_statement: f64,
	reopen: f64,
	first_after_reopen: f64,
}

/// Bytes this process has had written to storage (`/proc/self/io`: `write_bytes` less
/// `cancelled_write_bytes`, so a file deleted before the kernel wrote it costs nothing, as
/// `compare` counts; 0 elsewhere than Linux).
fn written_bytes() -> u64 {
	let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
	let field = |name: &str| -> u64 {
		io.lines()
			.find_map(|line| line.strip_prefix(name))
			.and_then(|value| value.trim().parse().ok())
			.unwrap_or(0)
	};
	field("write_bytes:").saturating_sub(field("cancelled_write_bytes:"))
}

fn micros(took: Duration, count: usize) -> f64 {
	took.as_secs_f64() * 1e6 / count.max(1) as f64
}

/// Submit every encoding (each new); the mean per submit.
fn submit_all<S: Side>(store: &S, encodings: &[Vec<u8>]) -> f64 {
	let statements: Vec<S::Statement> = encodings.iter().map(|e| S::decode(e)).collect();
	let start = Instant::now();
	for (n, statement) in statements.into_iter().enumerate() {
		assert!(store.submit(statement), "{}: submit {n} was not new", S::NAME);
	}
	micros(start.elapsed(), encodings.len())
}

/// Look every hash up once; the mean per lookup.
fn lookups<S: Side>(store: &S, hashes: &[[u8; 32]]) -> f64 {
	let start = Instant::now();
	for hash in hashes {
		assert!(store.found(hash), "{}: a stored statement not found by hash", S::NAME);
	}
	micros(start.elapsed(), hashes.len())
}

fn run<S: Side>(dir: &Path, client: &Arc<Client>, data: &Data) -> Figures {
	let mut figures = Figures::default();
	let path = dir.join(S::NAME.replace(' ', "-"));
	let n = data.fill.len();
	let written = written_bytes();
	let store = S::open(&path, client);
	eprintln!("{}: filling {n}", S::NAME);
	figures.fill = submit_all(&store, &data.fill);
	figures.stream = submit_all(&store, &data.stream);
	std::thread::sleep(Duration::from_secs(2));
	figures.burst = submit_all(&store, &data.burst);

	figures.hash = lookups(&store, &data.hashes);
	let start = Instant::now();
	for hash in &data.hashes {
		assert!(store.has(std::hint::black_box(hash)), "{}: has_statement missed", S::NAME);
	}
	figures.has_hit = micros(start.elapsed(), data.hashes.len());
	let start = Instant::now();
	for hash in &data.absent {
		assert!(!store.has(std::hint::black_box(hash)), "{}: has_statement lied", S::NAME);
	}
	figures.has_miss = micros(start.elapsed(), data.absent.len());

	let matches = |store: &S, k: u32| {
		let found = store.broadcasts(&pair(k));
		assert_eq!(found, data.expected[k as usize], "{}: the 2-topic query {k}", S::NAME);
	};
	let mut took = Duration::ZERO;
	for k in 0..FIRST_CALLS {
		store.forget_queries();
		let start = Instant::now();
		matches(&store, k);
		took += start.elapsed();
	}
	figures.first_call = micros(took, FIRST_CALLS as usize);
	let start = Instant::now();
	for _ in 0..WARM_CALLS {
		matches(&store, 3);
	}
	figures.warm = micros(start.elapsed(), WARM_CALLS as usize);
	drop(store);
	let stored = n + data.stream.len() + data.burst.len();
	figures.bytes_per_statement = (written_bytes() - written) as f64 / stored as f64;

	let start = Instant::now();
	let store = S::open(&path, client);
	figures.reopen = micros(start.elapsed(), 1);
	let start = Instant::now();
	matches(&store, 3);
	figures.first_after_reopen = micros(start.elapsed(), 1);
	figures.hash_after_reopen = lookups(&store, &data.hashes);
	drop(store);
	std::fs::remove_dir_all(&path).expect("the store's directory goes");

	let posted = S::open(&dir.join(format!("{}-posted", S::NAME.replace(' ', "-"))), client);
	eprintln!("{}: filling {} posted", S::NAME, data.posted.len());
	figures.posted_fill = submit_all(&posted, &data.posted);
	figures
}

/// The statements of one size, encoded once for both stores.
struct Data {
	fill: Vec<Vec<u8>>,
	stream: Vec<Vec<u8>>,
	burst: Vec<Vec<u8>>,
	posted: Vec<Vec<u8>>,
	hashes: Vec<[u8; 32]>,
	absent: Vec<[u8; 32]>,
	/// How many stored statements each 2-topic query `k` matches once all are submitted.
	expected: Vec<usize>,
}

impl Data {
	fn new(n: u32, posted: u32) -> Data {
		let fill = encodings(0, n, false);
		let stream = encodings(n, n + STREAM, false);
		let burst = encodings(n + STREAM, n + STREAM + BURST, false);
		let posted = encodings(0, posted, true);
		let step = (fill.len() / LOOKUPS).max(1);
		let hashes: Vec<[u8; 32]> =
			fill.iter().step_by(step).map(|encoding| ours::hash_encoded(encoding)).collect();
		let absent =
			(0..hashes.len() as u64).map(|n: u64| ours::hash_encoded(&n.to_le_bytes())).collect();
		let total = n + STREAM + BURST;
		// Statement i has topics (i % 10, 1000 + i % 100): pair k matches i % 100 == k.
		let expected = (0..FIRST_CALLS).map(|k| (0..total).filter(|i| i % 100 == k).count());
		Data { fill, stream, burst, posted, hashes, absent, expected: expected.collect() }
	}
}

fn parse_size(text: &str) -> Result<u32, String> {
	statement_test_support::size::parse_count(text).ok_or_else(|| format!("not a size: {text}"))
}

const USAGE: &str = "usage: beside_upstream [--sizes 200k,1M] [--posted 100k] [--dir PARENT]
  --sizes   store sizes to fill, comma-separated, k and M suffixes (default 200k)
  --posted  statements of the posted fill, on a store of their own (default 100k)
  --dir     where the scratch directories go (default the system's temporary directory)";

struct Args {
	sizes: Vec<u32>,
	posted: u32,
	dir: std::path::PathBuf,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
	let mut parsed = Args { sizes: vec![200_000], posted: 100_000, dir: std::env::temp_dir() };
	while let Some(arg) = args.next() {
		let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
		match arg.as_str() {
			"--sizes" => {
				parsed.sizes = value()?.split(',').map(parse_size).collect::<Result<_, _>>()?
			}
			"--posted" => parsed.posted = parse_size(&value()?)?,
			"--dir" => parsed.dir = value()?.into(),
			"--help" | "-h" => {
				println!("{USAGE}");
				std::process::exit(0);
			}
			_ => return Err(format!("unknown argument {arg}\n{USAGE}")),
		}
	}
	Ok(parsed)
}

fn main() {
	let args = parse_args(std::env::args().skip(1)).unwrap_or_else(|err| {
		eprintln!("{err}");
		std::process::exit(2);
	});
	let client = Arc::new(Client::with_allowance([9; 32], ALLOWANCE));
	println!("| size | figure | ours | sc-statement-store 33 | ours / 33 |");
	println!("|---|---|---|---|---|");
	for &n in &args.sizes {
		eprintln!("signing {n} statements");
		let data = Data::new(n, args.posted);
		let dir = tempfile::Builder::new()
			.prefix("beside-upstream")
			.tempdir_in(&args.dir)
			.expect("a scratch directory");
		let reference = run::<Reference>(dir.path(), &client, &data);
		let ours = run::<Ours>(dir.path(), &client, &data);
		let rows: [Row; 13] = [
			("submit, fill (us)", |f| f.fill),
			("submit, stream (us)", |f| f.stream),
			("submit, burst after idle (us)", |f| f.burst),
			("submit, posted fill (us)", |f| f.posted_fill),
			("statement(hash), after the fill (us)", |f| f.hash),
			("statement(hash), after reopen (us)", |f| f.hash_after_reopen),
			("has_statement, stored (us)", |f| f.has_hit),
			("has_statement, not stored (us)", |f| f.has_miss),
			("2-topic MatchAll, first call (us)", |f| f.first_call),
			("2-topic MatchAll, warm (us)", |f| f.warm),
			("bytes written a statement, open to close", |f| f.bytes_per_statement),
			("reopen (us)", |f| f.reopen),
			("first query after reopen (us)", |f| f.first_after_reopen),
		];
		for (figure, of) in rows {
			let (a, b) = (of(&ours), of(&reference));
			println!("| {n} | {figure} | {a:.3} | {b:.3} | {:.2}x |", a / b);
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_documented_invocations_parse() {
		let args = |line: &str| parse_args(line.split_whitespace().map(String::from));
		let parsed = args("--sizes 200k,1M --posted 50k --dir /tmp").expect("parses");
		assert_eq!(parsed.sizes, [200_000, 1_000_000]);
		assert_eq!(parsed.posted, 50_000);
		assert!(args("--sizes 0").is_err(), "a size of nothing is refused");
		assert!(args("--sizes").is_err(), "a flag without its value is refused");
		assert!(args("--quick").is_err(), "an unknown flag is refused");
	}

	#[test]
	fn both_stores_take_the_same_statements_and_answer_the_same_queries() {
		let client = Arc::new(Client::with_allowance([9; 32], ALLOWANCE));
		let dir = tempfile::tempdir().expect("a scratch directory");
		let encodings = encodings(0, 300, false);
		let reference = Reference::open(&dir.path().join("reference"), &client);
		let ours = Ours::open(&dir.path().join("ours"), &client);
		submit_all(&reference, &encodings);
		submit_all(&ours, &encodings);
		for k in 0..10 {
			assert_eq!(ours.broadcasts(&pair(k)), reference.broadcasts(&pair(k)), "pair {k}");
		}
		assert_eq!(ours.broadcasts(&pair(3)), 3, "statements 3, 103 and 203");
		let hash = ours::hash_encoded(&encodings[7]);
		assert!(ours.found(&hash) && reference.found(&hash) && ours.has(&hash));
	}
}
