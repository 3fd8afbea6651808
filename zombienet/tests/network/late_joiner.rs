//! A node added to a running network learns its peers from the chain spec's `bootNodes` and
//! receives everything stored before it came.

use crate::common::{
	encoded, node_binary, sign_all, wait_metric, wait_until_all_store, ChainSpec, Draft, NodePlan,
	TestNetwork, PEERS,
};
use anyhow::Result;
use std::time::Duration;
use zombienet_sdk::AddNodeOptions;

/// Statements stored before the late node joins.
const BACKLOG: usize = 1000;
/// Statements submitted at once while building the backlog.
const SUBMIT_BATCH: usize = 50;

const CONNECT_WITHIN: Duration = Duration::from_secs(10);
const PROPAGATED_WITHIN: Duration = Duration::from_secs(10);
/// From the late node serving metrics until it holds the whole backlog.
const BACKLOG_WITHIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_joiner_receives_the_thousand_statements_stored_before_it_came() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let plans = vec![NodePlan::new("alice"), NodePlan::new("bob")];
	let mut network = TestNetwork::spawn("late-joiner", &spec, plans).await?;
	wait_metric(network.node("bob")?, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;
	let clients = network.clients(&["alice", "bob"]).await?;

	let drafts = (0..BACKLOG).map(|index| {
		let signer = if index % 2 == 0 { "//Alice" } else { "//Bob" };
		Draft::new(signer, "backlog", format!("backlog statement {index}"))
	});
	let backlog = sign_all(drafts).await?;
	for (index, batch) in backlog.chunks(SUBMIT_BATCH).enumerate() {
		clients[index % clients.len()].submit_all_new(batch).await?;
	}
	let expected = encoded(&backlog);
	wait_until_all_store(&clients, &expected, PROPAGATED_WITHIN).await?;

	// No `--bootnodes`: charlie finds alice only in the spec's `bootNodes`.
	network.network_mut().add_node("charlie", AddNodeOptions::default()).await?;
	let charlie = network.client("charlie").await?;
	wait_metric(network.node("charlie")?, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;
	charlie.wait_for_store(&expected, BACKLOG_WITHIN).await?;
	network.finish().await
}
