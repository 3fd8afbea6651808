//! Three nodes: bob is killed while his initial sync of large statements is flowing, and is
//! down while more are submitted elsewhere; afterwards every statement any node acknowledged
//! is on every node.

use crate::common::{
	encoded, node_binary, sign_all, wait_metric, wait_until_all_store, ChainSpec, Draft, NodePlan,
	TestNetwork, MAX_DATA_BYTES, PEERS, SUBMITTED,
};
use anyhow::Result;
use std::time::Duration;

const NODES: [&str; 3] = ["alice", "bob", "charlie"];
/// Small statements bob submits himself before any trouble.
const BOBS_OWN: usize = 10;
/// Large statements on alice that bob has to sync: about 6 MiB, one statement per
/// notification.
const LARGE: usize = 50;
/// Statements submitted on charlie while bob is down.
const WHILE_DOWN: usize = 50;

const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// Propagation of a few MiB between running nodes.
const PROPAGATED_WITHIN: Duration = Duration::from_secs(10);
/// Bob's restart, until his sync has admitted its first statement.
const SYNC_STARTS_WITHIN: Duration = Duration::from_secs(30);
/// Seconds bob may take to serve metrics again after his last restart.
const UP_WITHIN_SECS: u64 = 30;
/// Bob's second restart until all three hold everything.
const CONVERGED_WITHIN: Duration = Duration::from_secs(15);

/// `bytes` of data that differ for each `index`.
fn data(index: usize, bytes: usize) -> String {
	let mut data = format!("{index} ");
	data.extend(std::iter::repeat_n('x', bytes.saturating_sub(data.len())));
	data
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_sync_ends_with_every_acknowledged_statement() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let plans = NODES.iter().map(|name| NodePlan::new(*name)).collect();
	let network = TestNetwork::spawn("restart", &spec, plans).await?;
	let bob = network.node("bob")?;
	wait_metric(network.node("alice")?, PEERS, |peers| peers >= 2.0, CONNECT_WITHIN).await?;
	for name in NODES {
		wait_metric(network.node(name)?, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;
	}
	let clients = network.clients(&NODES).await?;
	let (alice, bob_client, charlie) = (&clients[0], &clients[1], &clients[2]);

	let bobs_own =
		sign_all((0..BOBS_OWN).map(|index| Draft::new("//Bob", "restart", data(index, 1024))))
			.await?;
	let large = sign_all(
		(0..LARGE).map(|index| Draft::new("//Alice", "restart", data(index, MAX_DATA_BYTES))),
	)
	.await?;
	let while_down = sign_all(
		(0..WHILE_DOWN).map(|index| Draft::new("//Charlie", "restart", data(index, 8 * 1024))),
	)
	.await?;

	bob_client.submit_all_new(&bobs_own).await?;
	let mut expected = encoded(&bobs_own);
	wait_until_all_store(&clients, &expected, PROPAGATED_WITHIN).await?;

	// Frozen, bob cannot take alice's large statements as they are submitted: they reach him
	// only by the initial sync after he restarts. A frozen peer must not hold up charlie.
	bob.pause().await?;
	alice.submit_all_new(&large).await?;
	expected.extend(encoded(&large));
	charlie.wait_for_store(&expected, PROPAGATED_WITHIN).await?;

	bob.restart(None).await?;
	let synced =
		wait_metric(bob, SUBMITTED, |admitted| admitted >= 1.0, SYNC_STARTS_WITHIN).await?;
	bob.pause().await?;
	eprintln!("bob was frozen after admitting {synced} of {LARGE} synced statements");

	charlie.submit_all_new(&while_down).await?;
	expected.extend(encoded(&while_down));
	alice.wait_for_store(&expected, PROPAGATED_WITHIN).await?;

	// Killed while frozen, then started on the same database.
	bob.restart(None).await?;
	bob.wait_until_is_up(UP_WITHIN_SECS).await?;
	// Bob's old connection died with him.
	let clients = network.clients(&NODES).await?;
	wait_until_all_store(&clients, &expected, CONVERGED_WITHIN).await?;
	network.finish().await
}
