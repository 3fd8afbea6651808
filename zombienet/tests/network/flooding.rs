//! A peer that sends statements faster than `--statement-rate-limit` is flagged and
//! disconnected, while what it sent within the limit was accepted.

use crate::common::{
	encoded, node_binary, sign_all, wait_metric, ChainSpec, Draft, NodePlan, TestNetwork,
	FLOODING_DETECTED, PEERS, SUBMITTED,
};
use anyhow::{ensure, Result};
use std::time::Duration;

/// Bob's limit in statements per second from one peer; bursts of five times that pass.
const RATE_LIMIT: u32 = 50;
/// Statements submitted one at a time, well under the limit.
const SLOW: usize = 10;
/// Pause between the slow statements: ten a second.
const SLOW_PAUSE: Duration = Duration::from_millis(100);
/// Statements submitted at once: twice the burst allowance, so that the refill during the
/// burst cannot cover them.
const BURST: usize = 10 * RATE_LIMIT as usize;

const CONNECT_WITHIN: Duration = Duration::from_secs(10);
const PROPAGATED_WITHIN: Duration = Duration::from_secs(2);
/// From the end of the burst until bob flags alice, and until he drops her.
const DETECTED_WITHIN: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_the_rate_limit_disconnects_the_flooder_after_slow_statements_passed(
) -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let rate_limit = format!("--statement-rate-limit={RATE_LIMIT}");
	let plans = vec![NodePlan::new("alice"), NodePlan::new("bob").arg(rate_limit.as_str())];
	let network = TestNetwork::spawn("flooding", &spec, plans).await?;
	let bob = network.node("bob")?;
	wait_metric(bob, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;
	let alice = network.client("alice").await?;
	let bobs_client = network.client("bob").await?;

	let slow =
		sign_all((0..SLOW).map(|index| Draft::new("//Alice", "slow", format!("{index}")))).await?;
	let burst =
		sign_all((0..BURST).map(|index| Draft::new("//Alice", "burst", format!("{index}"))))
			.await?;

	for statement in &slow {
		alice.submit_new(statement).await?;
		tokio::time::sleep(SLOW_PAUSE).await;
	}
	let admitted = |count: f64| count >= SLOW as f64;
	wait_metric(bob, SUBMITTED, admitted, PROPAGATED_WITHIN).await?;
	let flagged = bob.reports(FLOODING_DETECTED).await?;
	ensure!(flagged == 0.0, "bob flagged alice {flagged} times for statements under the limit");

	alice.submit_all_new(&burst).await?;
	wait_metric(bob, FLOODING_DETECTED, |flagged| flagged >= 1.0, DETECTED_WITHIN).await?;
	wait_metric(bob, PEERS, |peers| peers == 0.0, DETECTED_WITHIN).await?;
	let held = bobs_client.dump().await?;
	ensure!(encoded(&slow).is_subset(&held), "bob lost statements that came under the limit");
	network.finish().await
}
