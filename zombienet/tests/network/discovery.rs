//! Twenty nodes that each know only the first as their boot node find each other: every node
//! fills its outbound slots, and statements submitted on any three reach all twenty.

use crate::common::{
	encoded, node_binary, sign_all, wait_metric, wait_until_all_store, ChainSpec, Draft, NodePlan,
	TestNetwork, PEERS,
};
use anyhow::Result;
use std::time::Duration;

const NODES: usize = 20;
/// Peers every node must reach: `min(8, NODES - 1)`, 8 being the default `--out-peers`.
const MIN_PEERS: f64 = 8.0;
/// Statements submitted on each of three nodes.
const PER_NODE: usize = 10;

/// From the last node serving metrics until every node has its peers: Kademlia's random
/// walks start a second apart and double, and the boot node answers all twenty.
const PEERS_WITHIN: Duration = Duration::from_secs(90);
const CONVERGED_WITHIN: Duration = Duration::from_secs(15);

fn name(index: usize) -> String {
	format!("node-{index:02}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_nodes_that_know_one_boot_node_find_each_other_and_gossip() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	// zombienet gives every node but the boot node `--bootnodes` with the boot node's
	// address, and nothing else.
	let plans = (0..NODES)
		.map(|index| match index {
			0 => NodePlan::new(name(index)).bootnode(),
			_ => NodePlan::new(name(index)),
		})
		.collect();
	let network = TestNetwork::spawn("discovery", &spec, plans).await?;
	let names: Vec<String> = (0..NODES).map(name).collect();
	for name in &names {
		wait_metric(network.node(name)?, PEERS, |peers| peers >= MIN_PEERS, PEERS_WITHIN).await?;
	}
	let origins = [3, 11, 19];
	let signers = ["//Alice", "//Bob", "//Charlie"];
	let drafts = origins.iter().zip(signers).flat_map(|(origin, signer)| {
		(0..PER_NODE).map(move |index| {
			Draft::new(signer, "discovered", format!("from node {origin}, {index}"))
		})
	});
	let statements = sign_all(drafts).await?;
	let clients = network.clients(&names).await?;
	for (batch, origin) in statements.chunks(PER_NODE).zip(origins) {
		clients[origin].submit_all_new(batch).await?;
	}
	wait_until_all_store(&clients, &encoded(&statements), CONVERGED_WITHIN).await?;
	network.finish().await
}
