//! What the soak samples of each node, and the slope of each figure over the run: a
//! least-squares line through the samples after the first 10% of the run (the store filling
//! to its steady state, caches warming), in units an hour.
//!
//! RSS is reported, not judged: besides the heap it counts the pages of the database files
//! parity-db maps, which the kernel keeps in RAM while it can spare them and takes back when
//! it cannot, up to the files' size. The judged figures are those a leak moves: the
//! allocator's heap, anonymous memory, descriptors other than the database's, threads and
//! queued subscription bytes. The database's own descriptors and mappings (one per file it
//! uses, up to 256 size tiers a column, opened as a tier is first used) are held to a rule
//! instead of a slope: every file open and mapped at most once, and none deleted while held.

use statement_store_benches::{
	metrics::{Metrics, STATEMENTS},
	procfs,
};
use std::{collections::BTreeMap, fmt::Write as _, path::Path, time::Duration};

/// The part of the run before which samples are not in a slope.
pub const WARM_UP_SHARE: f64 = 0.10;

/// Subscription bytes queued in the node, waiting for slow readers.
const QUEUED: &str = "substrate_statement_store_subscription_queued_bytes";

/// Bytes in live allocations, by the node's allocator.
const HEAP: &str = "substrate_statement_store_heap_allocated_bytes";

/// One figure a node is sampled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
	/// `VmRSS`, MiB.
	Rss,
	/// `RssAnon` (heap, stacks, anonymous maps), MiB.
	Anon,
	/// The allocator's live allocations, MiB.
	Heap,
	/// Pages of the database's mapped files in RAM, MiB.
	Mapped,
	/// Open file descriptors other than the database's.
	Descriptors,
	/// Open descriptors of the database's files.
	DatabaseFiles,
	/// Threads.
	Threads,
	/// Subscription bytes queued, KiB.
	Queued,
	/// Statements stored.
	Statements,
}

/// Every figure, in the report's order.
pub const FIGURES: [Figure; 9] = [
	Figure::Rss,
	Figure::Anon,
	Figure::Heap,
	Figure::Mapped,
	Figure::Descriptors,
	Figure::DatabaseFiles,
	Figure::Threads,
	Figure::Queued,
	Figure::Statements,
];

impl Figure {
	/// Its name and unit, for the report.
	pub fn label(self) -> &'static str {
		match self {
			Figure::Rss => "RSS (MiB)",
			Figure::Anon => "RssAnon (MiB)",
			Figure::Heap => "heap allocated (MiB)",
			Figure::Mapped => "database pages in RAM (MiB)",
			Figure::Descriptors => "descriptors, not the database's",
			Figure::DatabaseFiles => "database files open",
			Figure::Threads => "threads",
			Figure::Queued => "queued subscription KiB",
			Figure::Statements => "statements stored",
		}
	}
}

/// The figures of one node at one moment.
#[derive(Clone, Debug)]
pub struct Sample {
	/// Since the load started.
	pub at: Duration,
	/// By [`FIGURES`]' order.
	pub values: [f64; FIGURES.len()],
	/// Breaches of the rule on database files seen in this sample.
	pub faults: Vec<String>,
}

impl Sample {
	/// Take one of the process `pid`, whose database is under `base` and whose metrics are
	/// `metrics` (missing ones read as 0).
	pub fn take(at: Duration, pid: u32, base: &Path, metrics: Option<&Metrics>) -> Sample {
		let mib = |kib: u64| kib as f64 / 1024.0;
		let status = procfs::status(pid);
		let field = |name: &str| status.as_ref().and_then(|s| s.kib(name)).unwrap_or(0);
		let metric = |name: &str| metrics.and_then(|m| m.sum(name).ok()).unwrap_or(0.0);
		let open = procfs::open_files(pid);
		let (database, others): (Vec<_>, Vec<_>) =
			open.iter().partition(|file| file.starts_with(base));
		let mapped = procfs::mapped(pid, base);
		let mut faults = breaches("open", database.iter().copied());
		faults.extend(breaches("mapped", mapped.files.iter()));
		Sample {
			at,
			values: [
				mib(field("VmRSS")),
				mib(field("RssAnon")),
				metric(HEAP) / (1024.0 * 1024.0),
				mib(mapped.resident_kib),
				others.len() as f64,
				database.len() as f64,
				field("Threads") as f64,
				metric(QUEUED) / 1024.0,
				metric(STATEMENTS),
			],
			faults,
		}
	}

	/// The value of `figure`.
	pub fn get(&self, figure: Figure) -> f64 {
		self.values[FIGURES.iter().position(|f| *f == figure).unwrap_or(0)]
	}
}

/// Breaches of the database-file rule among `files` (held as `how`): a file held twice, or
/// one held after it was deleted.
fn breaches<'a>(how: &str, files: impl Iterator<Item = &'a std::path::PathBuf>) -> Vec<String> {
	let mut times: BTreeMap<&Path, usize> = BTreeMap::new();
	for file in files {
		*times.entry(file.as_path()).or_default() += 1;
	}
	times
		.into_iter()
		.filter_map(|(file, times)| {
			let name = file.display();
			if file.to_string_lossy().ends_with(" (deleted)") {
				Some(format!("{name} {how} after it was deleted"))
			} else {
				(times > 1).then(|| format!("{name} {how} {times} times"))
			}
		})
		.collect()
}

/// The slope of `points` (hours, value) by least squares, per hour; `None` under two
/// distinct times.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
	let n = points.len() as f64;
	let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
	let mean_v = points.iter().map(|p| p.1).sum::<f64>() / n;
	let spread: f64 = points.iter().map(|p| (p.0 - mean_t).powi(2)).sum();
	if points.len() < 2 || spread <= f64::EPSILON {
		return None;
	}
	let covariance: f64 = points.iter().map(|p| (p.0 - mean_t) * (p.1 - mean_v)).sum();
	Some(covariance / spread)
}

/// The samples of one figure after the warm-up share of `run`, as (hours, value).
pub fn after_warm_up(samples: &[Sample], figure: Figure, run: Duration) -> Vec<(f64, f64)> {
	let from = run.mul_f64(WARM_UP_SHARE);
	let hours = |at: Duration| at.as_secs_f64() / 3600.0;
	samples.iter().filter(|s| s.at >= from).map(|s| (hours(s.at), s.get(figure))).collect()
}

/// The bound a figure's slope is held to, per hour (`None`: reported, not judged).
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
	/// RssAnon and the heap, MiB an hour.
	pub mib_per_hour: f64,
	/// Descriptors an hour.
	pub descriptors_per_hour: f64,
	/// Threads an hour.
	pub threads_per_hour: f64,
	/// Queued subscription KiB an hour.
	pub queued_kib_per_hour: f64,
}

impl Bounds {
	/// The bound on `figure`'s slope. The stored statements follow the load; RSS, the
	/// database's pages and its files are bounded by the database's size and files, and held
	/// to the rule on database files instead (the module's doc).
	pub fn of(&self, figure: Figure) -> Option<f64> {
		match figure {
			Figure::Anon | Figure::Heap => Some(self.mib_per_hour),
			Figure::Descriptors => Some(self.descriptors_per_hour),
			Figure::Threads => Some(self.threads_per_hour),
			Figure::Queued => Some(self.queued_kib_per_hour),
			Figure::Rss | Figure::Mapped | Figure::DatabaseFiles | Figure::Statements => None,
		}
	}
}

/// A node's row for each figure: the report's Markdown lines, and the slopes above bound with
/// the first breach of the database-file rule, if any (judged on any run: a breach is a
/// fact, not a trend).
pub fn report(
	node: &str,
	samples: &[Sample],
	run: Duration,
	bounds: &Bounds,
	judged: bool,
) -> (String, Vec<String>) {
	let mut table = String::new();
	let mut over = Vec::new();
	for figure in FIGURES {
		let points = after_warm_up(samples, figure, run);
		let first = points.first().map_or(0.0, |p| p.1);
		let last = points.last().map_or(0.0, |p| p.1);
		let peak = samples.iter().map(|s| s.get(figure)).fold(0.0, f64::max);
		let slope = slope(&points);
		let bound = bounds.of(figure);
		let verdict = match (slope, bound) {
			(_, None) => "-".to_string(),
			(None, Some(_)) => "too few samples".to_string(),
			(Some(_), Some(_)) if !judged => "not judged (short run)".to_string(),
			(Some(slope), Some(bound)) if slope > bound => {
				over.push(format!("{node} {}: {slope:+.2}/h over {bound}/h", figure.label()));
				"**over**".to_string()
			}
			(Some(_), Some(_)) => "within".to_string(),
		};
		let _ = writeln!(
			table,
			"| {node} | {} | {first:.1} | {last:.1} | {peak:.1} | {} | {} | {verdict} |",
			figure.label(),
			slope.map_or("-".into(), |s| format!("{s:+.2}")),
			bound.map_or("-".into(), |b| format!("{b}")),
		);
	}
	if let Some(sample) = samples.iter().find(|sample| !sample.faults.is_empty()) {
		over.push(format!(
			"{node} at {:.0} s: {} (database files, {} samples with breaches)",
			sample.at.as_secs_f64(),
			sample.faults.join("; "),
			samples.iter().filter(|sample| !sample.faults.is_empty()).count()
		));
	}
	(table, over)
}

/// The report's table header.
pub const HEADER: &str = "| node | figure | after warm-up | end | peak | slope /h | bound /h | |\n\
	|---|---|---|---|---|---|---|---|";

#[cfg(test)]
mod tests {
	use super::*;

	fn series(values: &[(u64, f64)]) -> Vec<Sample> {
		values
			.iter()
			.map(|(secs, rss)| Sample {
				at: Duration::from_secs(*secs),
				values: [*rss, *rss, *rss, 5.0, 10.0, 30.0, 20.0, 0.0, 100.0],
				faults: Vec::new(),
			})
			.collect()
	}

	const BOUNDS: Bounds = Bounds {
		mib_per_hour: 8.0,
		descriptors_per_hour: 10.0,
		threads_per_hour: 10.0,
		queued_kib_per_hour: 1024.0,
	};

	#[test]
	fn a_straight_line_has_its_slope_and_a_flat_one_none_to_speak_of() {
		let line: Vec<(f64, f64)> = (0..10).map(|k| (k as f64, 3.0 * k as f64 + 5.0)).collect();
		assert!((slope(&line).unwrap() - 3.0).abs() < 1e-9);
		assert_eq!(slope(&[(1.0, 4.0), (1.0, 9.0)]), None);
		assert_eq!(slope(&[(1.0, 4.0)]), None);
	}

	#[test]
	fn the_warm_up_is_left_out_of_the_slope() {
		// Fast growth in the first 10% (6 of 60 minutes), flat after it.
		let mut values = vec![(0, 10.0), (180, 60.0)];
		values.extend((6..=60).map(|minute| (minute * 60, 100.0)));
		let samples = series(&values);
		let run = Duration::from_secs(3600);
		let (_, over) = report("node 0", &samples, run, &BOUNDS, true);
		assert!(over.is_empty(), "{over:?}");
		assert_eq!(after_warm_up(&samples, Figure::Rss, run).len(), 55);
	}

	#[test]
	fn growth_past_the_bound_fails_only_when_judged() {
		// 12 MiB an hour, steadily, over a bound of 8.
		let values: Vec<(u64, f64)> =
			(0..=60).map(|minute| (minute * 60, 100.0 + minute as f64 * 0.2)).collect();
		let samples = series(&values);
		let run = Duration::from_secs(3600);
		let (table, over) = report("node 1", &samples, run, &BOUNDS, true);
		assert_eq!(over.len(), 2, "RssAnon and the heap, not RSS: {over:?}");
		assert!(table.contains("+12.00"), "{table}");
		let (table, over) = report("node 1", &samples, run, &BOUNDS, false);
		assert!(over.is_empty());
		assert!(table.contains("not judged"), "{table}");
	}

	#[test]
	fn a_database_file_held_twice_or_after_deletion_fails_any_run() {
		let files: Vec<std::path::PathBuf> =
			["/db/table_04_10", "/db/index_01_16", "/db/table_04_10"]
				.iter()
				.map(Into::into)
				.collect();
		assert_eq!(breaches("open", files.iter()), ["/db/table_04_10 open 2 times"]);
		let deleted: std::path::PathBuf = "/db/index_01_16 (deleted)".into();
		assert_eq!(
			breaches("mapped", std::iter::once(&deleted)),
			["/db/index_01_16 (deleted) mapped after it was deleted"]
		);
		assert!(breaches("open", files[..2].iter()).is_empty());
		let mut samples = series(&[(0, 100.0), (60, 100.0)]);
		let (_, over) = report("node 2", &samples, Duration::from_secs(60), &BOUNDS, false);
		assert!(over.is_empty(), "{over:?}");
		samples[1].faults = breaches("open", files.iter());
		let (_, over) = report("node 2", &samples, Duration::from_secs(60), &BOUNDS, false);
		assert_eq!(over.len(), 1, "{over:?}");
		assert!(over[0].contains("table_04_10 open 2 times"), "{over:?}");
	}

	#[test]
	fn a_running_process_holds_each_file_once() {
		let dir = tempfile::tempdir().unwrap();
		std::fs::write(dir.path().join("table"), b"x").unwrap();
		let once = std::fs::File::open(dir.path().join("table")).unwrap();
		let take = || Sample::take(Duration::ZERO, std::process::id(), dir.path(), None);
		let sample = take();
		assert_eq!(sample.get(Figure::DatabaseFiles), 1.0);
		assert!(sample.get(Figure::Descriptors) >= 1.0, "stdin, stdout, stderr at least");
		assert!(sample.faults.is_empty(), "{:?}", sample.faults);
		let twice = std::fs::File::open(dir.path().join("table")).unwrap();
		assert_eq!(take().faults.len(), 1, "{:?}", take().faults);
		drop((once, twice));
		assert_eq!(take().get(Figure::DatabaseFiles), 0.0);
	}
}
