//! Nodes limited to statement/1 among statement/2 nodes: each pair speaks the highest version
//! both have, and every statement reaches every node whichever version it starts on.

use crate::common::{
	encoded, node_binary, sign_all, wait_metric, wait_until_all_store, ChainSpec, Draft, NodePlan,
	TestNetwork, PEERS,
};
use anyhow::{ensure, Result};
use std::time::Duration;

/// Nodes `old-*` speak statement/1 only, `new-*` statement/2 with statement/1 as fallback.
const NAMES: [&str; 6] = ["new-0", "old-1", "new-2", "old-3", "new-4", "old-5"];
const PER_NODE: usize = 5;

const CONNECT_WITHIN: Duration = Duration::from_secs(30);
const CONVERGED_WITHIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_1_nodes_among_statement_2_nodes_converge() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let plans = NAMES
		.iter()
		.map(|name| {
			let plan = NodePlan::new(*name);
			let plan = if *name == "new-0" { plan.bootnode() } else { plan };
			if name.starts_with("old") {
				plan.arg(("--statement-protocol-version", "1"))
			} else {
				plan
			}
		})
		.collect();
	let network = TestNetwork::spawn("mixed-versions", &spec, plans).await?;
	for name in NAMES {
		wait_metric(network.node(name)?, PEERS, |peers| peers >= 2.0, CONNECT_WITHIN).await?;
	}
	let clients = network.clients(&NAMES).await?;
	let signers = statement_test_support::accounts::suris();
	let drafts = NAMES.iter().zip(signers).flat_map(|(name, signer)| {
		(0..PER_NODE)
			.map(move |index| Draft::new(&signer, "mixed", format!("from {name}, {index}")))
	});
	let statements = sign_all(drafts).await?;
	for (batch, client) in statements.chunks(PER_NODE).zip(&clients) {
		client.submit_all_new(batch).await?;
	}
	wait_until_all_store(&clients, &encoded(&statements), CONVERGED_WITHIN).await?;
	// Each stream's version is logged as it opens: the new nodes spoke statement/2 among
	// themselves and statement/1 with the old ones, which never spoke statement/2.
	for name in NAMES {
		let log = network.node(name)?.logs().await?;
		let opened = |version: &str| {
			log.lines()
				.filter(|line| {
					line.contains("Statement stream open with") && line.contains(version)
				})
				.count()
		};
		let (v1, v2) = (opened("(V1,"), opened("(V2,"));
		if name.starts_with("old") {
			ensure!(
				v1 >= 1 && v2 == 0,
				"{name} opened {v1} statement/1 and {v2} statement/2 streams"
			);
		} else {
			ensure!(
				v1 >= 1 && v2 >= 1,
				"{name} opened {v1} statement/1 and {v2} statement/2 streams"
			);
		}
	}
	network.finish().await
}
