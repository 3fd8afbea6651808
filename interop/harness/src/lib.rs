//! Upstream's own statement gossip against our node, over real sockets.
//!
//! [`upstream::UpstreamPeer`] runs the published `sc-network-statement` 0.44
//! `StatementHandler` on a real `sc-network` 0.61 litep2p backend, over either the reference
//! store (`sc-statement-store` 33) or ours behind the adapter; a fake sync service reports our
//! node as connected, which is what a stock upstream node's block sync would do.
//! [`node::OurNode`] is a `statement-node` process. `tests/gossip.rs` holds the scenarios.

pub use statement_interop_chain as chain;
pub mod node;
pub mod statements;
pub mod upstream;

use std::time::Duration;

/// Wait until `check` holds, failing after `within` with what was last seen (the workspace's
/// `eventually`, for the checks these tests write as `Result<bool, String>`).
pub async fn eventually<F>(what: &str, within: Duration, mut check: F) -> Result<(), String>
where
	F: FnMut() -> Result<bool, String>,
{
	statement_test_support::eventually(what, within, || std::future::ready(check()))
		.await
		.map_err(String::from)
}
