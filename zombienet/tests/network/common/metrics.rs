//! The node's Prometheus metrics these tests read, by their upstream names.

use super::{eventually, Check};
use anyhow::Result;
use std::time::Duration;
use zombienet_sdk::NetworkNode;

pub use statement_test_support::metrics::names::{FLOODING_DETECTED, PEERS, SUBMITTED};

/// Wait until `node`'s metric `name` satisfies `accept`, and return its value. A node that
/// does not answer (restarting), or does not report the metric yet, is waited for, and what
/// it said is what the failure shows.
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
