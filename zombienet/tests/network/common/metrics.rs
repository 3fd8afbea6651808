//! The node's Prometheus metrics these tests read, by their upstream names.

use super::{eventually, Check};
use anyhow::Result;
use std::time::Duration;
use zombienet_sdk::NetworkNode;

/// Peers with an open statement stream.
pub const PEERS: &str = "substrate_sub_libp2p_peers_count";
/// Times a peer sent statements faster than `--statement-rate-limit` allows.
pub const FLOODING_DETECTED: &str = "substrate_sync_statement_flooding_detected";
/// Statements the store admitted as new (from RPC or from peers), since the node started.
pub const SUBMITTED: &str = "substrate_sub_statement_store_submitted_statements";

/// Wait until `node`'s metric `name` satisfies `accept`, and return its value. A metric the
/// node does not report reads as 0; a node that does not answer (restarting) is waited for.
pub async fn wait_metric(
	node: &NetworkNode,
	name: &str,
	accept: impl Fn(f64) -> bool,
	within: Duration,
) -> Result<f64> {
	let what = format!("{}'s {name}", node.name());
	eventually(&what, within, || async {
		Ok(match node.reports(name).await {
			Ok(value) if accept(value) => Check::Met(value),
			Ok(value) => Check::Unmet(value.to_string()),
			Err(err) => Check::Unmet(format!("no metrics: {err}")),
		})
	})
	.await
}
