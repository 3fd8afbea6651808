use crate::{allowance::MapAllowances, config::Config, store::Store};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{
	Statement, StatementAllowance, StatementSource, StatementStore, SubmitResult, Topic,
};
use std::sync::{
	atomic::{AtomicBool, Ordering},
	Arc,
};

fn statement(n: u32) -> Statement {
	TestStatement::new()
		.expiry(u32::MAX, n)
		.topic(0, Topic([(n % 7) as u8; 32]))
		.data(n.to_le_bytes().repeat(64))
		.signed_ed25519(&ed25519_pair(n % 5))
}

/// parity-db log files holding records: the one being written, and any closed and not
/// yet applied (applied ones are emptied at once: see `schema::db_options`).
fn log_files(dir: &std::path::Path) -> usize {
	std::fs::read_dir(dir)
		.unwrap()
		.map(|entry| entry.unwrap())
		.filter(|entry| entry.file_name().to_string_lossy().starts_with("log"))
		.filter(|entry| entry.metadata().unwrap().len() > 0)
		.count()
}

#[test]
fn checkpoints_keep_up_with_writes_that_run_while_they_apply() {
	let dir = tempfile::tempdir().unwrap();
	let allowances = MapAllowances::new().with_default(StatementAllowance::new(1 << 20, 1 << 30));
	let store = Arc::new(Store::open(Config::new(dir.path()), Arc::new(allowances)).unwrap());
	let writing = Arc::new(AtomicBool::new(true));
	// A submitter and a drainer run while this thread checkpoints, so that every
	// checkpoint finds new log records written while it applied the previous ones.
	let submitter = {
		let (store, writing) = (store.clone(), writing.clone());
		std::thread::spawn(move || {
			let mut n = 0u32;
			while writing.load(Ordering::Relaxed) {
				assert_eq!(store.submit(statement(n), StatementSource::Local), SubmitResult::New);
				n += 1;
			}
			u64::from(n)
		})
	};
	let drainer = {
		let (store, writing) = (store.clone(), writing.clone());
		std::thread::spawn(move || {
			while writing.load(Ordering::Relaxed) {
				store.inner.writes.writeback.drain().unwrap();
			}
		})
	};
	for _ in 0..60 {
		store.inner.writes.writeback.checkpoint().unwrap();
	}
	writing.store(false, Ordering::Relaxed);
	let submitted = submitter.join().unwrap();
	drainer.join().unwrap();
	// Each checkpoint closes one log file and applies at least one: none pile up (closing
	// two and applying one would grow them by one a checkpoint under a stream, each held
	// in memory by parity-db). Nor are applied ones kept: a crash would replay them all
	// (parity-db keeps 16 by default).
	let files = log_files(dir.path());
	assert!(files <= 3, "{files} log files after 60 checkpoints");
	store.inner.writes.writeback.checkpoint().unwrap();
	assert_eq!(store.inner.writes.writeback.pending_bytes(), 0);
	assert_eq!(store.len(), submitted);
}

/// Nice values of this process's threads called `name`, from `/proc/self/task`.
#[cfg(target_os = "linux")]
fn nice_of_threads(name: &str) -> Vec<i32> {
	let mut nices = Vec::new();
	for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
		let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
		if comm.trim_end() != name {
			continue;
		}
		let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
		// Fields after the name (which may hold spaces): state is field 3, nice field 19.
		let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
		if let Some(nice) = after_name.split_whitespace().nth(16) {
			nices.push(nice.parse().unwrap());
		}
	}
	nices
}

#[cfg(target_os = "linux")]
#[test]
fn the_writeback_threads_run_below_the_process_priority() {
	let dir = tempfile::tempdir().unwrap();
	let allowances = MapAllowances::new().with_default(StatementAllowance::new(10, 1 << 20));
	let _store = Store::open(Config::new(dir.path()), Arc::new(allowances)).unwrap();
	let process = rustix::process::getpriority_process(None).unwrap();
	let wanted = (process + super::BACKGROUND_NICE).min(19);
	// Other tests' stores run threads of the same names: every one must be lowered.
	let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
	for name in ["stmt-store-log", "stmt-store-ckpt"] {
		loop {
			let nices = nice_of_threads(name);
			if !nices.is_empty() && nices.iter().all(|nice| *nice == wanted) {
				break;
			}
			assert!(
				std::time::Instant::now() < deadline,
				"{name} threads at nice {nices:?}, want {wanted} (process at {process})"
			);
			std::thread::sleep(std::time::Duration::from_millis(10));
		}
	}
}
