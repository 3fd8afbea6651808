//! A full disk that another process fills: the node on a real tmpfs while a second process
//! takes every byte the moment it is free. The node must stay up, answer reads, refuse
//! submits, and take submits again once the other process lets go.
//!
//! parity-db writes its tables through memory maps; a page of a file grown sparse has no block
//! behind it, and writing one on a full file system is a SIGBUS. The vendored parity-db
//! allocates the blocks before it writes through the map, which this test holds.
//!
//! Needs root (to mount the tmpfs): the test is in `needs_root`, ignored unless asked for
//! (`cargo test -- --ignored needs_root::`), and fails where it cannot mount.

mod common;

use jsonrpsee::{
	core::client::ClientT,
	http_client::{HttpClient, HttpClientBuilder},
	rpc_params,
};
use serde_json::Value;
use sp_core::{sr25519, Pair};
use statement_primitives::testing::TestStatement;
use statement_primitives::{Statement, Topic};
use statement_test_support::privileged::{free_bytes, Tmpfs};
use std::{
	path::{Path, PathBuf},
	process::Command,
	time::{Duration, Instant},
};

const FILLER_DIR: &str = "STATEMENT_NODE_TEST_FILLER_DIR";

/// Whether `dir` is on a tmpfs: the filler only ever fills one, so that it can never take a
/// real disk (if the mount went away under it, say).
fn on_tmpfs(dir: &Path) -> bool {
	const TMPFS_MAGIC: i64 = 0x0102_1994;
	let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
		return false;
	};
	let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
	unsafe { libc::statfs(path.as_ptr(), &mut stat) == 0 && stat.f_type as i64 == TMPFS_MAGIC }
}

/// Never more than this in all, whatever the file system says.
const FILLER_CAP: u64 = 1 << 30;

/// The other process: takes every free byte of the tmpfs under `$FILLER_DIR` as soon as it is
/// free, in files of its own, until `$FILLER_DIR/stop` appears; then deletes them all. It stops
/// at once if the directory is not on a tmpfs any more.
#[test]
#[ignore = "entry point of the disk-filling process that the full-disk test starts"]
fn filler_child() {
	let Some(dir) = std::env::var_os(FILLER_DIR).map(PathBuf::from) else { return };
	let mut files = Vec::new();
	let mut taken = 0u64;
	while !dir.join("stop").exists() && on_tmpfs(&dir) {
		let free = free_bytes(&dir).min(FILLER_CAP.saturating_sub(taken));
		if free == 0 {
			std::thread::sleep(Duration::from_micros(200));
			continue;
		}
		let path = dir.join(format!("fill-{}", files.len()));
		let Ok(file) = std::fs::File::create(&path) else { break };
		use std::os::unix::io::AsRawFd;
		// Ask for all of it; whatever is left after a race is taken by the next round.
		let got = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, free as libc::off_t) };
		if got == 0 {
			taken += free;
		}
		files.push(path);
	}
	for path in &files {
		let _ = std::fs::remove_file(path);
	}
	println!("FILLER {} MiB in {} files", taken >> 20, files.len());
}

/// The filler process, killed (and its files removed) if the test ends before it is told to
/// stop. Declared after the tmpfs, so that it goes first.
struct Filler {
	child: Option<std::process::Child>,
	dir: PathBuf,
}

impl Filler {
	fn start(dir: &Path) -> Filler {
		let child = Command::new(std::env::current_exe().unwrap())
			.args(["--exact", "filler_child", "--ignored", "--nocapture", "--test-threads", "1"])
			.env(FILLER_DIR, dir)
			.stdout(std::process::Stdio::piped())
			.spawn()
			.unwrap();
		Filler { child: Some(child), dir: dir.to_path_buf() }
	}

	/// Tell it to stop; returns its report once it has deleted its files.
	fn stop(mut self) -> String {
		std::fs::write(self.dir.join("stop"), b"").unwrap();
		let output = self.child.take().unwrap().wait_with_output().unwrap();
		let _ = std::fs::remove_file(self.dir.join("stop"));
		assert!(output.status.success(), "the filler failed");
		String::from_utf8_lossy(&output.stdout)
			.lines()
			.find_map(|line| line.split_once("FILLER ").map(|(_, report)| report.to_string()))
			.unwrap_or_else(|| "no report".into())
	}
}

impl Drop for Filler {
	fn drop(&mut self) {
		if let Some(mut child) = self.child.take() {
			let _ = child.kill();
			let _ = child.wait();
			for entry in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
				if entry.file_name().to_string_lossy().starts_with("fill-") {
					let _ = std::fs::remove_file(entry.path());
				}
			}
		}
	}
}

fn submit_json(statement: &Statement) -> String {
	format!("0x{}", hex::encode(codec::Encode::encode(statement)))
}

/// Statement `n` of a run: 256 bytes, on the test's topic, from one of the dev accounts.
fn statement(n: u32, keys: &[sr25519::Pair], topic: Topic) -> Statement {
	TestStatement::new()
		.expiring_in(3600, n)
		.topic(0, topic)
		.data(n.to_le_bytes().repeat(64))
		.signed_sr25519(&keys[n as usize % keys.len()])
}

async fn submit(client: &HttpClient, statement: &Statement) -> Result<String, String> {
	let answer: Result<Value, _> =
		client.request("statement_submit", rpc_params![submit_json(statement)]).await;
	match answer {
		Ok(value) if value["status"] == "new" => Ok("new".to_string()),
		Ok(value) => Err(value.to_string()),
		Err(err) => Err(err.to_string()),
	}
}

async fn count_on(client: &HttpClient, topic: Topic) -> usize {
	let topics = serde_json::json!([format!("0x{}", hex::encode(topic.0))]);
	let found: Value =
		client.request("statement_broadcasts", rpc_params![topics]).await.expect("reads answer");
	found.as_array().unwrap().len()
}

/// One run: returns what it saw, for the log.
async fn one_run(run: usize, keys: &[sr25519::Pair]) -> String {
	let tmpfs = Tmpfs::mount(160);
	let base = tmpfs.path().join("node");
	let mut node = common::start(&[
		"--chain",
		"dev",
		"-d",
		base.to_str().unwrap(),
		"--no-prometheus",
		"--statement-store-min-free-mib",
		"8",
	]);
	let client = HttpClientBuilder::default()
		.request_timeout(Duration::from_secs(60))
		.build(node.http_url())
		.unwrap();
	let topic = Topic::from_name(&format!("disk-{run}"));
	let mut n = 0u32;
	let mut accepted = 0usize;
	// Some statements in before the other process arrives.
	while accepted < 200 {
		assert_eq!(submit(&client, &statement(n, keys, topic)).await, Ok("new".into()));
		accepted += 1;
		n += 1;
	}

	// The other process takes the disk while statements keep coming on four connections.
	let filler = Filler::start(tmpfs.path());
	let started = Instant::now();
	let mut refusals = Vec::new();
	while started.elapsed() < Duration::from_secs(4) {
		let mut batch = tokio::task::JoinSet::new();
		for m in n..n + 4 {
			let (client, statement) = (client.clone(), statement(m, keys, topic));
			batch.spawn(async move { submit(&client, &statement).await });
		}
		n += 4;
		for answer in batch.join_all().await {
			match answer {
				Ok(_) => accepted += 1,
				Err(refusal) => refusals.push(refusal),
			}
		}
		if let Some(status) = node.child_mut().try_wait().unwrap() {
			panic!(
				"run {run}: the node died ({status}) while the disk was full; refusals so far: {:?}",
				refusals.iter().take(3).collect::<Vec<_>>()
			);
		}
	}
	assert!(!refusals.is_empty(), "run {run}: no submit was refused with the disk full");
	assert!(
		refusals.iter().all(|r| r.contains("nearly full") || r.contains("No space")),
		"run {run}: refusals should name the full disk: {:?}",
		refusals.iter().take(3).collect::<Vec<_>>()
	);
	// Reads answer while the disk is full, with everything acknowledged.
	assert_eq!(count_on(&client, topic).await, accepted, "run {run}: reads while full");

	// The other process lets go: submits come back without a restart.
	let took = filler.stop();
	let deadline = Instant::now() + Duration::from_secs(60);
	let late = statement(n, keys, topic);
	let mut last = Err(String::new());
	while Instant::now() < deadline {
		last = submit(&client, &late).await;
		if last == Ok("new".into()) {
			break;
		}
		tokio::time::sleep(Duration::from_millis(50)).await;
	}
	assert_eq!(last, Ok("new".into()), "run {run}: submits never resumed after space returned");
	accepted += 1;
	assert_eq!(count_on(&client, topic).await, accepted, "run {run}: reads after");
	assert!(node.child_mut().try_wait().unwrap().is_none(), "run {run}: the node died");
	// And a restart finds every acknowledged statement.
	let (status, logs) = node.stop_logged().unwrap();
	assert!(status.success(), "run {run}: the node did not stop cleanly");
	for line in logs.iter().filter(|line| line.contains("WARN") || line.contains("ERROR")) {
		eprintln!("run {run} node: {line}");
	}
	let node = common::start(&["--chain", "dev", "-d", base.to_str().unwrap(), "--no-prometheus"]);
	let client = HttpClientBuilder::default().build(node.http_url()).unwrap();
	assert_eq!(count_on(&client, topic).await, accepted, "run {run}: after a restart");
	format!(
		"run {run}: {accepted} accepted, {} refused while full; the filler took {took}",
		refusals.len()
	)
}

mod needs_root {
	use super::*;

	/// `STATEMENT_NODE_DISK_FULL_RUNS` runs (3 by default).
	#[tokio::test]
	#[ignore = "needs root: mounts a tmpfs; run with --ignored needs_root::"]
	async fn another_process_filling_the_disk_neither_kills_the_node_nor_loses_a_statement() {
		let keys: Vec<sr25519::Pair> = ["//Alice", "//Bob", "//Charlie", "//Dave"]
			.iter()
			.map(|suri| sr25519::Pair::from_string(suri, None).unwrap())
			.collect();
		let runs: usize = std::env::var("STATEMENT_NODE_DISK_FULL_RUNS")
			.ok()
			.and_then(|runs| runs.parse().ok())
			.unwrap_or(3);
		for run in 0..runs {
			eprintln!("{}", one_run(run, &keys).await);
		}
	}
}
