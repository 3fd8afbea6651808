//! Two nodes: a statement submitted on one reaches the other's subscription at once.

use crate::common::{
	encoded, node_binary, sign, topic, wait_metric, ChainSpec, Draft, NodePlan, TestNetwork, PEERS,
};
use anyhow::{ensure, Result};
use serde_json::json;
use std::time::Duration;

/// Nodes on one machine open their statement streams well within this.
const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// Propagation is immediate (no blocks); this leaves room for a debug build.
const DELIVERED_WITHIN: Duration = Duration::from_secs(2);
/// How long nothing more may arrive.
const QUIET_FOR: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_submitted_on_alice_reaches_bobs_subscription_within_two_seconds() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	// As a validator, alice also gets `--validator --insecure-validator-i-know-what-i-do`.
	let nodes = vec![NodePlan::new("alice").validator(), NodePlan::new("bob")];
	let network = TestNetwork::spawn("propagation", &spec, nodes).await?;
	let (alice, bob) = (network.client("alice").await?, network.client("bob").await?);
	wait_metric(network.node("bob")?, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;

	// The node key zombienet derives from the name must give the PeerId it dials.
	for name in ["alice", "bob"] {
		let node = network.node(name)?;
		let peer_id = network.client(name).await?.local_peer_id().await?;
		ensure!(
			node.multiaddr().ends_with(&format!("/p2p/{peer_id}")),
			"{name} is {peer_id}, but zombienet dials {}",
			node.multiaddr()
		);
		let identity = format!("Local node identity is: {peer_id}");
		ensure!(node.logs().await?.contains(&identity), "{name}'s log lacks {identity:?}");
	}
	ensure!(bob.health_peers().await? == 1, "bob's system_health does not count alice");

	let mut subscription = bob.subscribe(json!({ "matchAll": [topic("propagation")] })).await?;
	let statement = sign(&Draft::new("//Alice", "propagation", "hello bob")).await?;
	alice.submit_new(&statement).await?;
	subscription.expect_exactly(&encoded([&statement]), DELIVERED_WITHIN).await?;
	subscription.expect_silence(QUIET_FOR).await?;
	network.finish().await
}
