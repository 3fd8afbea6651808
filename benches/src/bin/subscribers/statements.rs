//! What is submitted: statements signed by the dev accounts (which the dev chain spec gives
//! allowances) encoded as hex, in JSON-RPC batches sent from a few kept-alive connections.

use sp_core::{sr25519, Pair};
use statement_primitives::{
	dev::{self, DEV_ACCOUNTS},
	testing::TestStatement,
	Topic,
};
use statement_store_benches::{fixture::topic, workload::on_every_core};
use statement_test_support::http::exchange_on;
use std::{
	net::TcpStream,
	time::{SystemTime, UNIX_EPOCH},
};

pub use statement_test_support::hex::encode as hex;
/// Submits per HTTP request (one JSON-RPC batch).
const BATCH: usize = 250;
/// Connections submitting at once.
const SUBMITTERS: usize = 2;

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

/// `statements` as JSON-RPC batch bodies of [`BATCH`] submits.
pub fn batches(statements: &[String]) -> Vec<String> {
	statements
		.chunks(BATCH)
		.map(|chunk| {
			let calls: Vec<String> = chunk
				.iter()
				.enumerate()
				.map(|(id, s)| {
					format!(
						r#"{{"jsonrpc":"2.0","id":{id},"method":"statement_submit","params":["{s}"]}}"#
					)
				})
				.collect();
			format!("[{}]", calls.join(","))
		})
		.collect()
}

/// Submit `batches` from [`SUBMITTERS`] kept-alive connections; how many were new.
pub fn submit_all(port: u16, batches: &[String]) -> Result<usize, String> {
	std::thread::scope(|scope| {
		let workers: Vec<_> = (0..SUBMITTERS)
			.map(|worker| {
				scope.spawn(move || -> Result<usize, String> {
					let mut stream =
						TcpStream::connect(("127.0.0.1", port)).map_err(|err| err.to_string())?;
					let mut accepted = 0;
					for body in batches.iter().skip(worker).step_by(SUBMITTERS) {
						let answer = exchange_on(&mut stream, "POST", "/", body, false)?;
						accepted += answer.matches(r#""status":"new""#).count();
					}
					Ok(accepted)
				})
			})
			.collect();
		workers.into_iter().map(|worker| worker.join().unwrap_or(Ok(0))).sum()
	})
}
