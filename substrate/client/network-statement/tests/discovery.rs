//! Nodes that know only a boot node find each other through Kademlia and fill their slots.

mod common;

use common::*;
use statement_primitives::{StatementSource, StatementStore, SubmitResult};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_that_know_one_boot_node_find_each_other_and_gossip() {
	const NODES: u8 = 6;
	let boot = node(1, &[], |_| {}).await;
	let mut others = Vec::new();
	for n in 2..=NODES {
		// Three outbound slots each: the boot node alone would not fill them.
		others.push(node(n, &[&boot], |config| config.out_peers = 3).await);
	}
	let all: Vec<&Node> = std::iter::once(&boot).chain(others.iter()).collect();
	eventually("every node to have at least 3 statement peers", Duration::from_secs(90), || {
		all.iter().all(|node| node.network.statement_peers() >= 3)
	})
	.await;
	// Some node besides the boot node has a peer it was never told of.
	let boot_id = boot.network.local_peer_id();
	let strangers = others.iter().any(|node| {
		node.network
			.peers()
			.iter()
			.any(|peer| peer.peer_id != boot_id && peer.statement_stream.is_some())
	});
	assert!(strangers, "no node found a peer other than the boot node");
	let statement = signed(1, 64);
	let origin = &others[others.len() - 1];
	assert_eq!(origin.store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	eventually("the statement on every node", Duration::from_secs(30), || {
		all.iter().all(|node| node.store.has_statement(&statement.hash()))
	})
	.await;
	let families = boot.network.metrics().families();
	assert!(families.iter().any(|family| family.name == "statement_network_discovered_peers"));
}
