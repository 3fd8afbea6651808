//! A node's Prometheus endpoint: `GET /metrics` on localhost, and one sample's value in the
//! text it answers.

use std::{
	io::{Read, Write},
	net::TcpStream,
	time::Duration,
};

/// Connected peers, as Substrate names the gauge.
pub const PEERS: &str = "substrate_sub_libp2p_peers_count";

/// Statements in the store.
pub const STATEMENTS: &str = "substrate_statement_store_statements";

/// Subscriptions the store holds open.
pub const SUBSCRIPTIONS: &str = "substrate_statement_store_subscriptions";

/// Statements gossip sent on to peers.
pub const PROPAGATED: &str = "substrate_sync_propagated_statements";

/// Statements received from peers that the store already had.
pub const KNOWN_RECEIVED: &str = "substrate_sync_known_statement_received";

/// Bytes of statements received from peers.
pub const BYTES_RECEIVED: &str = "substrate_sync_statement_bytes_received_total";

/// Statements received from peers.
pub const RECEIVED: &str = "substrate_sync_statements_received";

/// How long a scrape may wait for the answer.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The metrics text served on `127.0.0.1:port`, or why it could not be read.
pub fn scrape(port: u16) -> Result<String, String> {
	let fail = |err: std::io::Error| format!("metrics on port {port}: {err}");
	let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(fail)?;
	stream.set_read_timeout(Some(READ_TIMEOUT)).map_err(fail)?;
	// HTTP/1.0: the answer is the body up to the close, never chunked.
	stream.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").map_err(fail)?;
	let mut answer = String::new();
	stream.read_to_string(&mut answer).map_err(fail)?;
	match answer.split_once("\r\n\r\n") {
		Some((head, body)) if head.starts_with("HTTP/1.") && head.contains(" 200") => {
			Ok(body.to_string())
		}
		_ => Err(format!("metrics on port {port}: not an HTTP 200 answer: {answer:.200}")),
	}
}

/// The value of an unlabelled sample `name` in Prometheus text.
pub fn value(text: &str, name: &str) -> Option<f64> {
	text.lines()
		.filter(|line| !line.starts_with('#'))
		.find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.split_whitespace().next())
		.and_then(|value| value.parse().ok())
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn samples_are_read_by_exact_name() {
		let text = "# HELP substrate_sub_libp2p_peers_count Peers.\n\
			substrate_sub_libp2p_peers_count_max 9\n\
			substrate_sub_libp2p_peers_count 2\n\
			substrate_statement_store_statements 100000\n";
		assert_eq!(value(text, PEERS), Some(2.0));
		assert_eq!(value(text, STATEMENTS), Some(100_000.0));
		assert_eq!(value(text, "substrate_missing"), None);
	}

	#[test]
	fn a_closed_port_is_an_error_naming_it() {
		let port = std::net::TcpListener::bind("127.0.0.1:0")
			.and_then(|listener| listener.local_addr())
			.map(|addr| addr.port())
			.unwrap();
		assert!(scrape(port).unwrap_err().contains(&port.to_string()));
	}
}
