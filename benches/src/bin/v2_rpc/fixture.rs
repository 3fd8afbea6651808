//! `replay`'s data: the benchmarks' statements (64 ed25519 accounts, topics `(i % 10,
//! 1000 + i % 100)`, 256-byte data) with a third topic that every 8 consecutive statements
//! share, so that a filter on it has 8 matches. A store of them is built in process, once per
//! size, where the node opens it, with a chain spec that lets the 64 accounts keep any
//! amount.

use sp_core::Pair;
use statement_primitives::{
	testing::TestStatement, Statement, StatementSource, StatementStore, SubmitResult, Topic,
};
use statement_store::Store;
use statement_store_benches::{
	chain_spec,
	fixture::{self, topic, ACCOUNTS},
};
use std::path::{Path, PathBuf};

/// Statements sharing a group topic.
pub const GROUP: u32 = 8;

/// The chain spec's id (`chain_spec::write`'s), under which the node keeps its database.
const CHAIN_ID: &str = "load_harness";

/// The group topic of statements `GROUP * g` to `GROUP * g + GROUP - 1`.
pub fn group_topic(g: u32) -> Topic {
	topic(100_000 + g)
}

/// Statement `i`.
pub fn statement(i: u32, keys: &[sp_core::ed25519::Pair]) -> Statement {
	let mut data = vec![0u8; 256];
	data[..4].copy_from_slice(&i.to_le_bytes());
	TestStatement::new()
		.expiry(u32::MAX - 1, i)
		.topic(0, topic(i % 10))
		.topic(1, topic(1000 + i % 100))
		.topic(2, group_topic(i / GROUP))
		.data(data)
		.signed_ed25519(&keys[(i % ACCOUNTS) as usize])
}

/// A store of `n` statements for the node: its base path and chain spec.
pub struct Fixture {
	/// The node's `-d`.
	pub base: PathBuf,
	/// The node's `--chain`.
	pub spec: PathBuf,
	/// Statements stored.
	pub n: u32,
}

impl Fixture {
	/// A copy of the fixture's base path for one run, removed when dropped: the node stores
	/// what the benchmark submits, and the fixture stays as it was built.
	pub fn working_copy(&self) -> Result<tempfile::TempDir, String> {
		let parent = self.base.parent().unwrap_or(&self.base);
		let copy = tempfile::tempdir_in(parent).map_err(|err| format!("a working copy: {err}"))?;
		copy_tree(&self.base, copy.path())
			.map_err(|err| format!("copying {} for the run: {err}", self.base.display()))?;
		Ok(copy)
	}
}

/// Copy the files and folders under `from` into `to`.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
	for entry in std::fs::read_dir(from)? {
		let entry = entry?;
		let target = to.join(entry.file_name());
		if entry.file_type()?.is_dir() {
			std::fs::create_dir_all(&target)?;
			copy_tree(&entry.path(), &target)?;
		} else {
			std::fs::copy(entry.path(), &target)?;
		}
	}
	Ok(())
}

/// The fixture of `n` statements under `dir`, built if it is not there whole.
pub fn prepare(dir: &Path, n: u32) -> Result<Fixture, String> {
	let dir = dir.join(format!("v2-{n}"));
	let fixture = Fixture { base: dir.join("base"), spec: dir.join("spec.json"), n };
	if fixture::reusable(&dir) {
		return Ok(fixture);
	}
	std::fs::create_dir_all(&dir).map_err(|err| format!("{}: {err}", dir.display()))?;
	let keys = fixture::keys();
	let accounts: Vec<[u8; 32]> = keys.iter().map(|key| key.public().0).collect();
	chain_spec::write(&fixture.spec, &accounts)?;
	let db = fixture.base.join("chains").join(CHAIN_ID).join("statements");
	eprintln!("building fixture {} ({n} statements) ...", db.display());
	let mut config = fixture::config(&db);
	config.max_total_statements = u64::from(n) * 2;
	config.max_total_size = u64::from(n) * 1024;
	let store = Store::open(config, fixture::unlimited())
		.map_err(|err| format!("cannot open {}: {err}", db.display()))?;
	let took = fixture::fill_in_parallel(
		"fixture",
		n,
		|i| {
			let outcome = store.submit(statement(i, &keys), StatementSource::Local);
			assert_eq!(outcome, SubmitResult::New, "the store refused statement {i}");
		},
		|| {
			store.maintain().expect("maintain the store");
		},
	);
	drop(store);
	fixture::mark_complete(&dir, n);
	eprintln!("fixture built in {:.0} s", took.as_secs_f64());
	Ok(fixture)
}
