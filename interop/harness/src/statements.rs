//! Signed statements as the reference builds them.

use sp_core::{sr25519, Pair};
use sp_statement_store::{Statement, Topic};
use std::time::{SystemTime, UNIX_EPOCH};

/// The topic `name` stands for, by the workspace's one rule (blake2-256 of the name), as
/// upstream's type.
pub fn topic(name: &str) -> Topic {
	Topic(statement_test_support::topic::named(name).0)
}

/// Statement `n` on `topics` with `data_len` bytes of data, signed (sr25519) by dev account
/// `n % 6`, expiring in an hour.
pub fn signed(n: u32, topics: &[Topic], data_len: usize) -> Statement {
	let suris = statement_test_support::accounts::suris();
	let pair =
		sr25519::Pair::from_string(&suris[n as usize % suris.len()], None).expect("a dev account");
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
	let mut statement = Statement::new();
	statement.set_expiry_from_parts(now as u32 + 3600, n);
	for (index, topic) in topics.iter().enumerate() {
		statement.set_topic(index, *topic);
	}
	let mut data = n.to_le_bytes().to_vec();
	data.resize(data_len.max(4), (n % 251) as u8);
	statement.set_plain_data(data);
	statement.sign_sr25519_private(&pair);
	statement
}

/// [`signed`], then its signature spoiled: upstream and ours must both refuse it.
pub fn badly_signed(n: u32, topics: &[Topic]) -> Statement {
	let mut statement = signed(n, topics, 16);
	let mut data = statement.data().cloned().unwrap_or_default();
	data[0] ^= 0xff;
	statement.set_plain_data(data);
	statement
}
