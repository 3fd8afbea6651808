//! Ten nodes in a line, each knowing only the one before it and not looking for more
//! (`--no-discovery`): statements submitted at both ends reach every node, hop by hop.

use crate::common::{
	encoded, node_binary, sign_all, wait_metric, wait_until_all_store, ChainSpec, Draft, NodePlan,
	TestNetwork, PEERS,
};
use anyhow::Result;
use std::time::Duration;

const NODES: usize = 10;
/// Statements submitted at each end of the line.
const PER_END: usize = 5;

const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// Nine hops each way.
const CONVERGED_WITHIN: Duration = Duration::from_secs(5);

fn name(index: usize) -> String {
	format!("node-{index}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_from_both_ends_of_a_ten_node_line_reach_every_node() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	// Every node a bootnode, so that zombienet hands none of them the first node's address;
	// each dials only its predecessor (which zombienet therefore spawns first).
	let plans = (0..NODES)
		.map(|index| {
			let plan = NodePlan::new(name(index)).bootnode().arg("--no-discovery");
			match index {
				0 => plan,
				_ => {
					let previous = format!("{{{{ZOMBIE:{}:multiaddr}}}}", name(index - 1));
					plan.arg(("--bootnodes", previous.as_str()))
				}
			}
		})
		.collect();
	let network = TestNetwork::spawn("sparse-topology", &spec, plans).await?;
	let names: Vec<String> = (0..NODES).map(name).collect();
	for (index, name) in names.iter().enumerate() {
		let neighbours = if index == 0 || index == NODES - 1 { 1.0 } else { 2.0 };
		wait_metric(network.node(name)?, PEERS, |peers| peers >= neighbours, CONNECT_WITHIN)
			.await?;
	}
	let clients = network.clients(&names).await?;

	let drafts = (0..2 * PER_END).map(|index| {
		let (signer, end) = if index < PER_END { ("//Alice", "first") } else { ("//Bob", "last") };
		Draft::new(signer, "line", format!("from the {end} node, {index}"))
	});
	let statements = sign_all(drafts).await?;
	let (from_first, from_last) = statements.split_at(PER_END);
	let (first, last) = (&clients[0], &clients[NODES - 1]);
	futures::future::try_join(first.submit_all_new(from_first), last.submit_all_new(from_last))
		.await?;
	wait_until_all_store(&clients, &encoded(&statements), CONVERGED_WITHIN).await?;
	network.finish().await
}
