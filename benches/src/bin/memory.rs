//! Memory and reopen figures for our store and the RAM-index baseline at large sizes.
//!
//! ```sh
//! cargo run --release -p statement-store-benches --bin memory -- 100000 1000000 4194304
//! ```
//!
//! For each size N it builds (once; later runs reuse it) a fixture directory holding both
//! stores filled with the same N signed statements, then measures each store in a fresh child
//! process, ours four times: as after a clean stop; the same with the fixture's files taken
//! out of the page cache first (the first open after a reboot); as after a crash whose newest
//! membership snapshot is [`CRASH_CHANGES`] removals and as many admissions old, the most
//! maintenance lets it fall behind by default; and as after a crash with no snapshot at all.
//! Each time: reopen time, heap held after reopening (the steady index), peak heap while
//! reopening, heap after a sweep of 2-topic queries (our cache filled), peak RSS and size on
//! disk. Heap is counted by a global allocator wrapper; RSS is the kernel's high-water mark.
//!
//! With `--populate`, instead: a fresh store of ours filled with N statements in a child
//! process, signed as they go on every core (as a fixture is built), with the fill's time,
//! the peak heap while filling, the heap once filled, peak RSS and size on disk.
//!
//! Options: `--dir <path>` for the fixtures (default `bench-fixtures` in the working
//! directory), `--json` to print only the JSON summary; `--help` lists them.

use clap::Parser;
use statement_primitives::{StatementSource, StatementStore, SubmitResult};
use statement_store::Store;
use statement_store_benches::{baseline::RamIndexStore, fixture, procfs};
use std::{
	alloc::{GlobalAlloc, Layout, System},
	path::{Path, PathBuf},
	process::Command,
	sync::atomic::{AtomicUsize, Ordering},
	time::{Duration, Instant},
};

/// Counts live heap bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
	unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
		// SAFETY: forwarded unchanged to the system allocator.
		let ptr = unsafe { System.alloc(layout) };
		if !ptr.is_null() {
			grew(layout.size());
		}
		ptr
	}
	unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
		// SAFETY: forwarded unchanged to the system allocator.
		let ptr = unsafe { System.alloc_zeroed(layout) };
		if !ptr.is_null() {
			grew(layout.size());
		}
		ptr
	}
	unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
		// SAFETY: forwarded unchanged to the system allocator.
		unsafe { System.dealloc(ptr, layout) };
		LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
	}
	unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
		// SAFETY: forwarded unchanged to the system allocator.
		let new = unsafe { System.realloc(ptr, layout, new_size) };
		if !new.is_null() {
			LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
			grew(new_size);
		}
		new
	}
}

fn grew(size: usize) {
	let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
	PEAK.fetch_max(live, Ordering::Relaxed);
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: f64 = 1024.0 * 1024.0;

fn mib(bytes: usize) -> f64 {
	bytes as f64 / MIB
}

/// The kernel's peak resident set size of this process, in bytes.
fn peak_rss() -> usize {
	procfs::status_kib(procfs::SELF, "VmHWM") as usize * 1024
}

fn disk_size(path: &Path) -> u64 {
	let Ok(entries) = std::fs::read_dir(path) else { return 0 };
	entries
		.flatten()
		.map(|entry| match entry.metadata() {
			Ok(meta) if meta.is_dir() => disk_size(&entry.path()),
			Ok(meta) => meta.len(),
			Err(_) => 0,
		})
		.sum()
}

/// Take every file under `path` out of the page cache (written out first, so that its pages
/// are clean and can go): the next open reads what it needs from the disk, as the first open
/// after a reboot does. Needs no privileges, unlike dropping the whole cache. Linux only
/// (elsewhere the files stay cached and the row measures a warm open).
#[cfg(target_os = "linux")]
fn evict(path: &Path) {
	let Ok(entries) = std::fs::read_dir(path) else { return };
	for entry in entries.flatten() {
		let Ok(file) = std::fs::File::open(entry.path()) else { continue };
		if file.metadata().is_ok_and(|meta| meta.is_file()) {
			let _ = file.sync_all();
			rustix::fs::fadvise(&file, 0, None, rustix::fs::Advice::DontNeed)
				.expect("evict a fixture file from the page cache");
		}
	}
}

#[cfg(not(target_os = "linux"))]
fn evict(_path: &Path) {}

/// One store's figures, measured in a child process (`--measure <kind> <dir> <n>`).
#[derive(Debug, Default)]
struct Figures {
	reopen: Duration,
	steady_heap: usize,
	peak_heap: usize,
	warm_heap: usize,
	peak_rss: usize,
	disk: u64,
}

/// Changes since the newest snapshot in the "after a crash" case: half of
/// `Config::snapshot_changes` as removals, half as admissions.
const CRASH_CHANGES: u32 = 50_000;

/// Remove the first [`CRASH_CHANGES`] statements of the fixture and submit them again, then
/// exit without closing: as a crash leaves the store, with a snapshot that many changes old.
/// Waits for the background thread to write the changes to parity-db's log, so that the next
/// open finds them in the database rather than redoing them from the intent log.
fn crash_prep_child(dir: &Path, n: u32) {
	let path = dir.join("ours");
	let store = Store::open(fixture::config(&path), fixture::unlimited()).expect("open");
	assert!(store.reopened_from_snapshot(), "the fixture was not closed cleanly");
	let keys = fixture::keys();
	let changed: Vec<_> = (0..CRASH_CHANGES.min(n)).map(|i| fixture::statement(i, &keys)).collect();
	for statement in &changed {
		store.remove(&statement.hash()).expect("remove");
	}
	for statement in changed {
		assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
	}
	std::thread::sleep(Duration::from_secs(1));
	std::process::exit(0);
}

/// Fill a fresh store of our kind with statements 0..n (signed here, on every core, as the
/// fixture is built) and print what [`measure`] reads: the fill's time in the reopen field,
/// the heap held once it is filled, the peak heap while filling, no warm figure, peak RSS and
/// size on disk. Upstream's stage-2b store peaks at 2,830 MiB populating 4.19M.
fn populate_child(dir: &Path, n: u32) {
	let path = dir.join("populate");
	let _ = std::fs::remove_dir_all(&path);
	let keys = fixture::keys();
	let before = LIVE.load(Ordering::Relaxed);
	PEAK.store(before, Ordering::Relaxed);
	let store = Store::open(fixture::config(&path), fixture::unlimited()).expect("open");
	let filling = std::sync::atomic::AtomicBool::new(true);
	// The sample with the most heap, every 20 ms: (heap, caches, pending changes, statements).
	let (took, highest) = std::thread::scope(|scope| {
		let sampler = scope.spawn(|| {
			let mut highest = (0, 0, 0, 0);
			while filling.load(Ordering::Relaxed) {
				let heap = LIVE.load(Ordering::Relaxed).saturating_sub(before);
				if heap > highest.0 {
					let metrics = store.metrics();
					highest =
						(heap, metrics.cache_bytes, metrics.pending_bytes, metrics.statements);
				}
				std::thread::sleep(Duration::from_millis(20));
			}
			highest
		});
		let took = fixture::fill_in_parallel(
			"a fresh store",
			n,
			|i| {
				let outcome = store.submit(fixture::statement(i, &keys), StatementSource::Local);
				assert_eq!(outcome, SubmitResult::New, "statement {i} refused");
			},
			|| {
				store.maintain().expect("maintain");
			},
		);
		filling.store(false, Ordering::Relaxed);
		(took, sampler.join().expect("sampler"))
	});
	let filled_heap = LIVE.load(Ordering::Relaxed) - before;
	let peak_heap = PEAK.load(Ordering::Relaxed) - before;
	let peak_rss = peak_rss();
	drop(store);
	let disk = disk_size(&path);
	std::fs::remove_dir_all(&path).expect("remove the populated store");
	println!("{} {filled_heap} {peak_heap} 0 {peak_rss} {disk}", took.as_nanos());
	let (heap, caches, pending, statements) = highest;
	println!(
		"at the highest sampled heap ({:.1} MiB, {statements} statements stored): posting and \
		 body caches {:.1} MiB, changes not yet in parity-db's tables {:.1} MiB",
		mib(heap),
		mib(caches as usize),
		mib(pending as usize)
	);
	std::process::exit(0);
}

fn measure_child(kind: &str, dir: &Path, n: u32) {
	if kind == "ours-populate" {
		return populate_child(dir, n);
	}
	// "ours-journal": our store opened as after a crash, without its membership snapshot.
	// "ours-crash": after a crash, with a snapshot CRASH_CHANGES removals and admissions old.
	let after_crash = kind == "ours-journal" || kind == "ours-crash";
	let path = dir.join(if after_crash || kind == "ours-cold" { "ours" } else { kind });
	let disk = disk_size(&path);
	if kind == "ours-cold" {
		evict(&path);
	}
	if kind == "ours-journal" {
		std::fs::remove_file(path.join(statement_store::SNAPSHOT_FILE))
			.expect("the fixture has a snapshot");
	}
	let before = LIVE.load(Ordering::Relaxed);
	PEAK.store(before, Ordering::Relaxed);
	let started = Instant::now();
	let store: Box<dyn StatementStore> = match kind {
		"ours" | "ours-cold" | "ours-journal" | "ours-crash" => {
			let store = Store::open(fixture::config(&path), fixture::unlimited()).expect("open");
			assert_eq!(
				store.reopened_from_snapshot(),
				kind != "ours-journal",
				"the fixture was not closed cleanly"
			);
			if kind == "ours-crash" {
				let changed = u64::from(CRASH_CHANGES.min(n));
				assert_eq!(store.caught_up_while_opening(), (changed, changed));
			}
			Box::new(store)
		}
		_ => Box::new(RamIndexStore::open(&path).expect("open baseline")),
	};
	let reopen = started.elapsed();
	let steady_heap = LIVE.load(Ordering::Relaxed) - before;
	let peak_heap = PEAK.load(Ordering::Relaxed) - before;
	// Every non-empty 2-topic query once (100 of them, N/100 statements each); not after the
	// cold open, where they would read most of the fixture from the disk (a minute at 4.19M)
	// to tell what the warm row tells.
	let queries = if kind == "ours-cold" { 0 } else { 100u32 };
	for t in 0..queries {
		let topics = [fixture::topic(t % 10), fixture::topic(1000 + t)];
		let found = store.broadcasts(&topics).expect("query");
		assert_eq!(found.len() as u32, n / 100 + u32::from(t < n % 100), "query {t}");
	}
	let warm_heap = if queries == 0 { 0 } else { LIVE.load(Ordering::Relaxed) - before };
	let peak_rss = peak_rss();
	println!(
		"{} {} {} {} {} {}",
		reopen.as_nanos(),
		steady_heap,
		peak_heap,
		warm_heap,
		peak_rss,
		disk
	);
	if after_crash {
		// Close cleanly so that the fixture gets its snapshot back.
		drop(store);
	}
	// Otherwise leave without tearing down maps: the parent has what it needs.
	std::process::exit(0);
}

/// Run [`crash_prep_child`] in a child process.
fn crash_prep(dir: &Path, n: u32) {
	let output = Command::new(std::env::current_exe().expect("own path"))
		.arg("--crash-prep")
		.arg(dir)
		.arg(n.to_string())
		.output()
		.expect("run crash preparation");
	assert!(
		output.status.success(),
		"preparing the crash failed: {}",
		String::from_utf8_lossy(&output.stderr)
	);
}

fn measure(kind: &str, dir: &Path, n: u32) -> Figures {
	let exe = std::env::current_exe().expect("own path");
	let output = Command::new(exe)
		.args(["--measure", kind])
		.arg(dir)
		.arg(n.to_string())
		.output()
		.expect("run measuring child");
	let stdout = String::from_utf8_lossy(&output.stdout);
	let (text, more) = stdout.split_once('\n').unwrap_or((&stdout, ""));
	if !more.trim().is_empty() {
		eprintln!("  {}", more.trim());
	}
	assert!(
		output.status.success(),
		"measuring {kind} failed: {}",
		String::from_utf8_lossy(&output.stderr)
	);
	let fields: Vec<u128> =
		text.split_whitespace().map(|field| field.parse().expect("number")).collect();
	assert_eq!(fields.len(), 6, "child printed {text}");
	Figures {
		reopen: Duration::from_nanos(fields[0] as u64),
		steady_heap: fields[1] as usize,
		peak_heap: fields[2] as usize,
		warm_heap: fields[3] as usize,
		peak_rss: fields[4] as usize,
		disk: fields[5] as u64,
	}
}

/// Memory and reopen figures for our store and the RAM-index baseline at large sizes.
#[derive(Parser, Debug)]
#[command(name = "memory")]
struct Args {
	/// Store sizes to measure, in statements [default: 100000].
	#[arg(value_name = "N")]
	sizes: Vec<u32>,
	/// Where the fixtures are built and reused.
	#[arg(long, value_name = "PATH", default_value = "bench-fixtures")]
	dir: PathBuf,
	/// Print only the JSON summary.
	#[arg(long)]
	json: bool,
	/// Instead of the fixture's figures, fill a fresh store of ours of each size in a child
	/// process (signing as it goes) and report its peak heap while filling.
	#[arg(long)]
	populate: bool,
	/// Child process: prepare the "after a crash" case of a fixture.
	#[arg(long, hide = true, num_args = 2, value_names = ["DIR", "N"])]
	crash_prep: Option<Vec<String>>,
	/// Child process: measure one store of a fixture.
	#[arg(long, hide = true, num_args = 3, value_names = ["KIND", "DIR", "N"])]
	measure: Option<Vec<String>>,
}

fn main() {
	let args = Args::parse();
	if let Some([dir, n]) = args.crash_prep.as_deref() {
		crash_prep_child(Path::new(dir), n.parse().expect("n"));
		return;
	}
	if let Some([kind, dir, n]) = args.measure.as_deref() {
		measure_child(kind, Path::new(dir), n.parse().expect("n"));
		return;
	}
	let root = args.dir;
	let json_only = args.json;
	let sizes = if args.sizes.is_empty() { vec![100_000] } else { args.sizes };
	let mut rows = Vec::new();
	let mut populated = Vec::new();
	for &n in &sizes {
		let dir = root.join(n.to_string());
		if args.populate {
			std::fs::create_dir_all(&dir).expect("create the fixture directory");
			eprintln!("populating a fresh store of {n}...");
			populated.push((n, measure("ours-populate", &dir, n)));
			continue;
		}
		fixture::build_both(&dir, n, fixture::config(&dir.join("ours")), fixture::statement);
		eprintln!("measuring {n}...");
		let ours = measure("ours", &dir, n);
		let cold = measure("ours-cold", &dir, n);
		crash_prep(&dir, n);
		let crash = measure("ours-crash", &dir, n);
		let journal = measure("ours-journal", &dir, n);
		let base = measure("baseline", &dir, n);
		rows.push((n, ours, cold, crash, journal, base));
	}
	if !json_only && !rows.is_empty() {
		println!("| N | store | reopen | steady index heap | peak heap reopening | heap after 100 queries | peak RSS | on disk |");
		println!("|---|---|---|---|---|---|---|---|");
		for (n, ours, cold, crash, journal, base) in &rows {
			for (name, f) in [
				("ours", ours),
				("ours, its files out of the page cache", cold),
				("ours, after a crash (snapshot 100k changes old)", crash),
				("ours, after a crash without any snapshot", journal),
				("baseline", base),
			] {
				println!(
					"| {n} | {name} | {:.3} s | {:.1} MiB | {:.1} MiB | {} | {:.0} MiB | {:.0} MiB |",
					f.reopen.as_secs_f64(),
					mib(f.steady_heap),
					mib(f.peak_heap),
					// 0: no queries were run (the cold open).
					if f.warm_heap == 0 { "-".into() } else { format!("{:.1} MiB", mib(f.warm_heap)) },
					mib(f.peak_rss),
					f.disk as f64 / MIB,
				);
			}
		}
	}
	if !json_only && !populated.is_empty() {
		println!();
		println!("| N | populating ours: fill time | peak heap while filling | heap once filled | peak RSS | on disk |");
		println!("|---|---|---|---|---|---|");
		for (n, f) in &populated {
			println!(
				"| {n} | {:.0} s | {:.1} MiB | {:.1} MiB | {:.0} MiB | {:.0} MiB |",
				f.reopen.as_secs_f64(),
				mib(f.peak_heap),
				mib(f.steady_heap),
				mib(f.peak_rss),
				f.disk as f64 / MIB,
			);
		}
	}
	let populated_json = populated.iter().map(|(n, f)| {
		format!(
			"{{\"n\":{n},\"store\":\"ours-populate\",\"fill_s\":{:.1},\"peak_heap_bytes\":{},\"filled_heap_bytes\":{},\"peak_rss_bytes\":{},\"disk_bytes\":{}}}",
			f.reopen.as_secs_f64(),
			f.peak_heap,
			f.steady_heap,
			f.peak_rss,
			f.disk
		)
	});
	let json: Vec<String> = rows
		.iter()
		.flat_map(|(n, ours, cold, crash, journal, base)| {
			[
				("ours", ours),
				("ours-cold", cold),
				("ours-after-crash", crash),
				("ours-after-crash-no-snapshot", journal),
				("baseline", base),
			]
			.map(|(name, f)| {
				format!(
					"{{\"n\":{n},\"store\":\"{name}\",\"reopen_ms\":{:.1},\"steady_heap_bytes\":{},\"peak_heap_bytes\":{},\"warm_heap_bytes\":{},\"peak_rss_bytes\":{},\"disk_bytes\":{}}}",
					f.reopen.as_secs_f64() * 1000.0,
					f.steady_heap,
					f.peak_heap,
					f.warm_heap,
					f.peak_rss,
					f.disk
				)
			})
		})
		.chain(populated_json)
		.collect();
	println!("{{\"memory\":[{}]}}", json.join(","));
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"memory",
			"memory --dir /work/bench-fixtures 1000000 4194304",
			"memory --populate 4194304",
		]);
		let args: Args = parse_line("memory 100000 1000000 4194304").unwrap();
		assert_eq!(args.sizes, [100_000, 1_000_000, 4_194_304]);
		assert_eq!(args.dir, PathBuf::from("bench-fixtures"));
		let args: Args =
			parse_line("memory --dir /work/bench-fixtures 1000000 4194304 --json").unwrap();
		assert_eq!((args.sizes.len(), args.json, args.populate), (2, true, false));
		assert!(parse_line::<Args>("memory --populate 4194304").unwrap().populate);
		let child: Args = parse_line("memory --measure ours /f/10 10").unwrap();
		assert_eq!(child.measure.unwrap(), ["ours", "/f/10", "10"]);
		let child: Args = parse_line("memory --crash-prep /f/10 10").unwrap();
		assert_eq!(child.crash_prep.unwrap(), ["/f/10", "10"]);
		assert!(parse_line::<Args>("memory 1M").is_err());
	}
}
