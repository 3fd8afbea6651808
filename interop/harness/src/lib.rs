//! Upstream's own statement gossip against our node, over real sockets.
//!
//! [`upstream::UpstreamPeer`] runs the published `sc-network-statement` 0.44
//! `StatementHandler` on a real `sc-network` 0.61 litep2p backend, over either the reference
//! store (`sc-statement-store` 33) or ours behind the adapter; a fake sync service reports our
//! node as connected, which is what a stock upstream node's block sync would do.
//! [`node::OurNode`] is a `statement-node` process. `tests/gossip.rs` holds the scenarios.

pub mod chain;
pub mod node;
pub mod statements;
pub mod upstream;

use std::time::{Duration, Instant};

/// Wait until `check` holds, polling every 50 ms; fail after `within`, saying what was seen.
pub async fn eventually<F>(what: &str, within: Duration, mut check: F) -> Result<(), String>
where
	F: FnMut() -> Result<bool, String>,
{
	let deadline = Instant::now() + within;
	loop {
		let seen = check();
		match seen {
			Ok(true) => return Ok(()),
			Ok(false) if Instant::now() < deadline => {}
			Ok(false) => return Err(format!("{what}: not within {within:?}")),
			Err(err) if Instant::now() >= deadline => {
				return Err(format!("{what}: not within {within:?}; last: {err}"))
			}
			Err(_) => {}
		}
		tokio::time::sleep(Duration::from_millis(50)).await;
	}
}
