//! Runs the same workloads against our store and the RAM-index baseline in one process and
//! prints ours / baseline ratios, then a JSON summary.
//!
//! `cargo run --release -p statement-store-benches --bin compare -- [--quick] [--sizes LIST]
//! [--body-cache-mib N]` (`--help` says each)
//!
//! `--quick` measures 1k and 10k statements; the full run adds 50k. `--sizes 200k,1M` (numbers
//! with an optional `k` or `M`, comma separated) measures those store sizes instead; the
//! write-side figures always use 10k. A second table gives what each fill cost besides time:
//! bytes written to disk per statement from opening empty to closing, how long its background
//! writes ran on after the last submit, the peak of changes held in memory, RSS growth.
//! `--body-cache-mib` gives our store a body cache of that many MiB instead of its default
//! (16 MiB), as `--statement-store-body-cache-mib` does for the node.

use clap::{value_parser, Parser};
use statement_primitives::{Hash, Statement, StatementSource, StatementStore, SubmitResult};
use statement_store_benches::{
	fill, fixture,
	workload::{self, Pair, Shared},
};
use std::{
	sync::atomic::Ordering,
	time::{Duration, Instant},
};

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

/// A figure of the fills that is not a time: bytes, memory.
struct FillRow {
	figure: String,
	ours: String,
	baseline: String,
	ratio: Option<f64>,
}

fn run_size(n: u32, statements: &[Statement], rows: &mut Vec<Row>, fills: &mut Vec<FillRow>) {
	let pair = Pair::empty();
	let label = |what: &str| format!("{what} ({}k)", n / 1000);

	// One store fills and goes quiet before the other starts.
	let submit_all = |store: &Shared| {
		for statement in statements {
			assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		}
	};
	let ours_fill = fill::watch(|| submit_all(&pair.ours), || pair.ours.metrics().pending_bytes);
	let base_fill = fill::watch(|| submit_all(&pair.baseline), || 0);
	rows.push(Row {
		figure: label("submit"),
		ours: ours_fill.took / n,
		baseline: base_fill.took / n,
	});
	// Bytes written: each store on its own, from opening empty through filling to closing,
	// so that what one defers (the baseline applies its log only every 64 MiB) is counted;
	// ours runs maintenance once before closing, as a node does every few seconds (a
	// membership snapshot, and the journal entries it covers pruned).
	let written = |ours: bool| {
		let dir = tempfile::tempdir().expect("temp dir");
		fill::written_by(|| {
			if ours {
				let store = workload::open_ours(dir.path());
				submit_all(&store);
				store.maintain().expect("maintain our store");
			} else {
				submit_all(&workload::open_baseline(dir.path()));
			}
		})
	};
	let (ours_written, base_written) = (written(true), written(false));
	let per = |bytes: u64| bytes / u64::from(n);
	let mib = |bytes: u64| format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20));
	fills.push(FillRow {
		figure: label("bytes written per statement, open to close"),
		ours: format!("{} B", per(ours_written)),
		baseline: format!("{} B", per(base_written)),
		ratio: Some(ours_written as f64 / base_written.max(1) as f64),
	});
	fills.push(FillRow {
		figure: label("background writes after the last submit"),
		ours: format!("{:.2} s", ours_fill.quiet_after.as_secs_f64()),
		baseline: format!("{:.2} s", base_fill.quiet_after.as_secs_f64()),
		ratio: None,
	});
	fills.push(FillRow {
		figure: label("pending changes in memory, peak"),
		ours: mib(ours_fill.pending_peak),
		baseline: "-".into(),
		ratio: None,
	});
	fills.push(FillRow {
		figure: label("anonymous RSS growth while filling"),
		ours: mib(ours_fill.anon_growth),
		baseline: mib(base_fill.anon_growth),
		ratio: Some(ours_fill.anon_growth as f64 / base_fill.anon_growth.max(1) as f64),
	});
	let (ours, baseline): (&Shared, &Shared) = (&pair.ours, &pair.baseline);

	let hashes: Vec<Hash> = statements.iter().map(Statement::hash).collect();
	let per = hashes.len();
	let hit = |store: &Shared| measure(7, per, |i| assert!(store.has_statement(&hashes[i % per])));
	rows.push(Row { figure: label("has_statement hit"), ours: hit(ours), baseline: hit(baseline) });
	let miss = |store: &Shared| {
		measure(7, per, |i| {
			let mut h = hashes[i % per];
			h[5] ^= 0xff;
			assert!(!store.has_statement(&h))
		})
	};
	rows.push(Row {
		figure: label("has_statement miss"),
		ours: miss(ours),
		baseline: miss(baseline),
	});

	let two = workload::two_topics();
	let one = [fixture::topic(3)];
	let expected_two = (n / 100) as usize;
	let query = |store: &Shared, topics: &[statement_primitives::Topic], expect: usize| {
		measure(15, 40, |_| assert_eq!(store.broadcasts(topics).expect("query").len(), expect))
	};
	rows.push(Row {
		figure: label("broadcasts 2 topics, warm"),
		ours: query(ours, &two, expected_two),
		baseline: query(baseline, &two, expected_two),
	});
	let cold = measure(15, 40, |_| {
		pair.ours.clear_cache();
		assert_eq!(pair.ours.broadcasts(&two).expect("query").len(), expected_two);
	});
	rows.push(Row {
		figure: label("broadcasts 2 topics, cold"),
		ours: cold,
		baseline: query(baseline, &two, expected_two),
	});
	rows.push(Row {
		figure: label("broadcasts 1 topic, warm"),
		ours: query(ours, &one, (n / 10) as usize),
		baseline: query(baseline, &one, (n / 10) as usize),
	});
	let lookup = |store: &Shared| {
		measure(5, per.min(2000), |i| {
			assert!(store.statement(&hashes[i % per]).expect("get").is_some())
		})
	};
	rows.push(Row {
		figure: label("statement(hash)"),
		ours: lookup(ours),
		baseline: lookup(baseline),
	});
	let dump = |store: &Shared| {
		measure(3, 1, |_| assert_eq!(store.statements().expect("dump").len(), n as usize))
	};
	rows.push(Row {
		figure: label("statements() dump"),
		ours: dump(ours),
		baseline: dump(baseline),
	});
	if n == 1000 {
		pair.ours.broadcasts(&two).expect("warm up");
		let c_ours = (0..5).map(|_| workload::concurrent_broadcasts(ours, 640)).min();
		let c_base = (0..5).map(|_| workload::concurrent_broadcasts(baseline, 640)).min();
		rows.push(Row {
			figure: label("640 concurrent broadcasts"),
			ours: c_ours.unwrap_or_default(),
			baseline: c_base.unwrap_or_default(),
		});
	}
}

/// Workloads that change the stores, each on a fresh pair of 10k statements: posted,
/// remove, expiry maintenance, a mixed workload and reads under a continuous writer.
fn run_writes(statements: &[Statement], rows: &mut Vec<Row>, quick: bool) {
	let keys = fixture::keys();
	let base = statements.len() as u32;
	let batch = if quick { 500 } else { 2000 };
	let fresh = |count: u32| workload::fresh(count, &keys);

	let posted = Pair::filled(&workload::posted(0, base, &keys));
	let dest = fixture::destination(3);
	let two = workload::two_topics();
	let query = |store: &Shared| {
		measure(15, 40, |_| {
			assert_eq!(store.posted(&two, dest).expect("posted").len(), (base / 100) as usize)
		})
	};
	rows.push(Row {
		figure: "posted 2 topics (10k)".into(),
		ours: query(&posted.ours),
		baseline: query(&posted.baseline),
	});
	drop(posted);

	let pair = Pair::filled(statements);
	let per = |store: &Shared| {
		let added = fresh(batch);
		workload::submit_all(store, &added);
		let hashes: Vec<Hash> = added.iter().map(Statement::hash).collect();
		workload::remove_all(store, &hashes) / batch
	};
	rows.push(Row {
		figure: "remove (10k)".into(),
		ours: per(&pair.ours),
		baseline: per(&pair.baseline),
	});
	// Upstream's `remove_640`: 64 threads removing 10 each, in rounds of 640.
	let concurrent = |store: &Shared| {
		let rounds = (batch / 640).max(1);
		let mut took = std::time::Duration::ZERO;
		for _ in 0..rounds {
			let added = fresh(640);
			workload::submit_all(store, &added);
			let hashes: Vec<Hash> = added.iter().map(Statement::hash).collect();
			took += workload::remove_concurrently(store, &hashes, 64);
		}
		took / (640 * rounds)
	};
	rows.push(Row {
		figure: "remove, 64 threads of 10 (10k)".into(),
		ours: concurrent(&pair.ours),
		baseline: concurrent(&pair.baseline),
	});

	// The median of several rounds: one round is about 10 ms of wall time, which a
	// checkpoint of either store's background thread landing in it can double.
	let expire = |which: &str| {
		let store: &Shared = if which == "ours" { &pair.ours } else { &pair.baseline };
		let took = workload::median_batched(
			if quick { 3 } else { 5 },
			|| {
				let now = pair.clock.load(Ordering::Relaxed);
				let from = workload::fresh_indices(batch);
				let expiring = workload::expiring(from, from + batch, (now + 10) as u32, &keys);
				workload::submit_all(store, &expiring);
				pair.clock.store(now + 20, Ordering::Relaxed);
			},
			|()| {
				let (_, removed) = workload::expire(&pair, which);
				assert_eq!(removed, batch as usize);
			},
		);
		took / batch
	};
	rows.push(Row {
		figure: "maintenance: expire, per statement (10k)".into(),
		ours: expire("ours"),
		baseline: expire("baseline"),
	});

	let mixed = |store: &Shared, writes: Vec<Statement>| {
		workload::mixed(store, &writes, 4 * batch as usize) / batch
	};
	rows.push(Row {
		figure: "mixed: 1 submit + 4 reads (10k)".into(),
		ours: mixed(&pair.ours, fresh(batch)),
		baseline: mixed(&pair.baseline, fresh(batch)),
	});
	let reads = 4 * batch as usize;
	let under = |store: &Shared, writes: Vec<Statement>| {
		workload::reads_under_writer(store, &writes, reads) / reads as u32
	};
	rows.push(Row {
		figure: "broadcasts under a writer (10k)".into(),
		ours: under(&pair.ours, fresh(reads as u32 + 200)),
		baseline: under(&pair.baseline, fresh(reads as u32 + 200)),
	});
}

/// A store size as `--sizes` takes it: `50000`, `200k`, `1M`.
fn parse_size(text: &str) -> Result<u32, String> {
	statement_test_support::size::parse_count(text)
		// The data set's indices stay below a million; fresh statements are numbered above.
		.filter(|&size| size <= 1_000_000)
		.ok_or_else(|| {
			format!("--sizes: {text:?} is not a store size from 1 to 1M, such as 50000 or 200k")
		})
}

/// The same workloads against our store and the RAM-index baseline in one process: ours /
/// baseline ratios, then a JSON summary.
#[derive(Parser, Debug)]
#[command(name = "compare")]
struct Args {
	/// Measure 1k and 10k statements (the full run adds 50k); fewer rounds of the writes.
	#[arg(long)]
	quick: bool,
	/// Store sizes to measure instead, comma separated, each at most 1M (such as 200k,1M).
	#[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
	sizes: Option<Vec<u32>>,
	/// Give our store a body cache of this many MiB (1 to 65536) instead of its default.
	#[arg(long, value_name = "N", value_parser = value_parser!(u32).range(1..=65_536))]
	body_cache_mib: Option<u32>,
}

impl Args {
	/// The store sizes to measure, smallest first: `--sizes`, or the defaults for a quick or
	/// full run.
	fn sizes(&self) -> Vec<u32> {
		let Some(sizes) = &self.sizes else {
			return if self.quick { vec![1_000, 10_000] } else { vec![1_000, 10_000, 50_000] };
		};
		let mut sizes = sizes.clone();
		sizes.sort_unstable();
		sizes.dedup();
		sizes
	}
}

fn main() {
	let args = Args::parse();
	let quick = args.quick;
	if let Some(mib) = args.body_cache_mib {
		fixture::set_body_cache_bytes((mib as usize) << 20);
		println!("ours with a body cache of {mib} MiB");
	}
	let sizes = args.sizes();
	let keys = fixture::keys();
	// The write-side figures below use the first 10k.
	let largest = sizes.last().copied().unwrap_or(1_000).max(10_000);
	eprintln!("signing {largest} statements...");
	let statements = workload::signed(0, largest, &keys);
	let mut rows = Vec::new();
	let mut fills = Vec::new();
	for &n in &sizes {
		eprintln!("measuring {n} statements...");
		run_size(n, &statements[..n as usize], &mut rows, &mut fills);
	}
	eprintln!("measuring writes, maintenance and contention over 10k statements...");
	run_writes(&statements[..10_000], &mut rows, quick);
	println!("| figure | ours | baseline | ours / baseline |");
	println!("|---|---|---|---|");
	for row in &rows {
		let ratio = row.ours.as_secs_f64() / row.baseline.as_secs_f64().max(1e-12);
		println!("| {} | {:?} | {:?} | {ratio:.2}x |", row.figure, row.ours, row.baseline);
	}
	println!();
	println!("| filling the store | ours | baseline | ours / baseline |");
	println!("|---|---|---|---|");
	for row in &fills {
		let ratio = row.ratio.map_or("-".into(), |ratio| format!("{ratio:.2}x"));
		println!("| {} | {} | {} | {ratio} |", row.figure, row.ours, row.baseline);
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
	let fill_json: Vec<String> = fills
		.iter()
		.map(|row| {
			format!(
				"{{\"figure\":\"{}\",\"ours\":\"{}\",\"baseline\":\"{}\"}}",
				row.figure, row.ours, row.baseline
			)
		})
		.collect();
	println!(
		"{{\"quick\":{quick},\"results\":[{}],\"fills\":[{}]}}",
		json.join(","),
		fill_json.join(",")
	);
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store_benches::cli::{assert_parses, parse_line};

	#[test]
	fn every_documented_invocation_parses() {
		assert_parses::<Args>(&[
			"compare",
			"compare --quick",
			"compare --sizes 200k,1M",
			"compare --sizes 1M --body-cache-mib 128",
			"compare --sizes 200k",
			"compare --body-cache-mib 64",
		]);
	}

	#[test]
	fn sizes_take_plain_numbers_and_k_and_m_suffixes() {
		let sizes =
			|list: &str| parse_line::<Args>(&format!("compare --sizes {list}")).map(|a| a.sizes());
		assert_eq!(sizes("1M,200k,50000").unwrap(), [50_000, 200_000, 1_000_000]);
		assert!(sizes("200x").unwrap_err().to_string().contains("\"200x\""));
		assert!(sizes("0").is_err());
		assert!(sizes("2M").is_err());
		assert_eq!(parse_line::<Args>("compare --quick").unwrap().sizes(), [1_000, 10_000]);
		assert_eq!(parse_line::<Args>("compare").unwrap().sizes(), [1_000, 10_000, 50_000]);
	}

	#[test]
	fn the_body_cache_is_given_in_mib() {
		assert_eq!(
			parse_line::<Args>("compare --body-cache-mib 64").unwrap().body_cache_mib,
			Some(64)
		);
		assert!(parse_line::<Args>("compare --body-cache-mib 0").is_err());
		assert!(parse_line::<Args>("compare --body-cache-mib 65537").is_err());
		assert!(parse_line::<Args>("compare --body-cache-mib").is_err());
		assert_eq!(parse_line::<Args>("compare").unwrap().body_cache_mib, None);
	}
}
