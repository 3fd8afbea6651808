//! What is submitted: statements signed by the dev accounts (which the dev chain spec gives
//! allowances) encoded as hex, in JSON-RPC batches sent from a few kept-alive connections
//! (`statement_store_benches::client`).

use sp_core::{sr25519, Pair};
use statement_primitives::{
	dev::{self, DEV_ACCOUNTS},
	testing::TestStatement,
	Topic,
};
use statement_store_benches::{fixture::topic, workload::on_every_core};
use std::time::{SystemTime, UNIX_EPOCH};

pub use statement_store_benches::client::submit_all;
pub use statement_test_support::hex::encode as hex;

/// `statements` as JSON-RPC batch bodies of `statement_submit` calls.
pub fn batches(statements: &[String]) -> Vec<String> {
	statement_store_benches::client::batches("statement_submit", statements)
}

/// A `matchAll` filter on `topic`.
pub fn match_all(topic: &Topic) -> String {
	format!(r#"{{"matchAll":["{}"]}}"#, hex(&topic.0))
}

/// `count` statements signed by the dev accounts in turn on every core, each encoded as
/// `0x`-hex; `shape` gives statement `i` its topics and data.
pub fn signed(
	count: usize,
	shape: impl Fn(u32, TestStatement) -> TestStatement + Sync,
) -> Vec<String> {
	let pairs: Vec<sr25519::Pair> = DEV_ACCOUNTS
		.iter()
		.map(|name| sr25519::Pair::from_string(&dev::suri(name), None).expect("dev account"))
		.collect();
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
	let expiry = (now + 24 * 3600) as u32;
	on_every_core(0, count as u32, |i| {
		let statement = shape(i, TestStatement::new().expiry(expiry, i));
		hex(&statement.signed_sr25519(&pairs[i as usize % pairs.len()]).encode())
	})
}

/// `submit`'s statements: two topics of the benchmarks' usual spread, 256 bytes of data.
pub fn submit_statements(count: usize) -> Vec<String> {
	signed(count, |i, statement| {
		let mut data = vec![0u8; 256];
		data[..4].copy_from_slice(&i.to_le_bytes());
		statement.topic(0, topic(i % 10)).topic(1, topic(1000 + i % 100)).data(data)
	})
}
