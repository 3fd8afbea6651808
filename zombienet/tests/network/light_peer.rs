//! A light node (`--statement-topics`) next to full nodes holding statements on two topics
//! gets every statement on its topic, those stored before it came included, and none on the
//! other; a subscription opened on it for a third topic makes that topic's statements come.

use crate::common::{
	encoded, node_binary, sign_all, topic, wait_metric, wait_until_all_store, ChainSpec, Draft,
	NodePlan, TestNetwork, PEERS,
};
use anyhow::{ensure, Result};
use serde_json::json;
use std::time::Duration;
use zombienet_sdk::AddNodeOptions;

/// Statements on each of the two topics before the light node comes, and after.
const STORED: usize = 20;
const LIVE: usize = 5;

const CONNECT_WITHIN: Duration = Duration::from_secs(30);
const PROPAGATED_WITHIN: Duration = Duration::from_secs(10);
/// Long enough for anything unwanted to have arrived too.
const QUIET: Duration = Duration::from_secs(2);

fn drafts(topic_name: &'static str, from: usize, count: usize) -> impl Iterator<Item = Draft> {
	(from..from + count).map(move |index| {
		let signer = if index % 2 == 0 { "//Alice" } else { "//Bob" };
		Draft::new(signer, topic_name, format!("{topic_name} {index}"))
	})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_light_node_gets_its_topics_only_and_its_subscriptions_widen_them() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let plans = vec![NodePlan::new("alice"), NodePlan::new("bob")];
	let mut network = TestNetwork::spawn("light-peer", &spec, plans).await?;
	wait_metric(network.node("bob")?, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;
	let full = network.clients(&["alice", "bob"]).await?;
	let stored_apples = sign_all(drafts("apples", 0, STORED)).await?;
	let stored_pears = sign_all(drafts("pears", 0, STORED)).await?;
	full[0].submit_all_new(&stored_apples).await?;
	full[1].submit_all_new(&stored_pears).await?;
	let everything = encoded(stored_apples.iter().chain(&stored_pears));
	wait_until_all_store(&full, &everything, PROPAGATED_WITHIN).await?;

	// The light node comes after, and wants apples only (the topic as the statements carry
	// it: `0x`-hex, not text, which the node would hash).
	let apples = topic("apples");
	let options = AddNodeOptions {
		args: vec![("--statement-topics", apples.as_str()).into()],
		..AddNodeOptions::default()
	};
	network.network_mut().add_node("light", options).await?;
	let light = network.client("light").await?;
	wait_metric(network.node("light")?, PEERS, |peers| peers >= 2.0, CONNECT_WITHIN).await?;
	light.wait_for_store(&encoded(&stored_apples), PROPAGATED_WITHIN).await?;

	let live_apples = sign_all(drafts("apples", STORED, LIVE)).await?;
	let live_pears = sign_all(drafts("pears", STORED, LIVE)).await?;
	full[1].submit_all_new(&live_pears).await?;
	full[0].submit_all_new(&live_apples).await?;
	let apples = encoded(stored_apples.iter().chain(&live_apples));
	light.wait_for_store(&apples, PROPAGATED_WITHIN).await?;

	// A subscription for plums on the light node: plums submitted on a full node arrive.
	let mut plums_subscription = light.subscribe(json!({ "matchAll": [topic("plums")] })).await?;
	tokio::time::sleep(QUIET).await;
	let plums = sign_all(drafts("plums", 0, LIVE)).await?;
	full[1].submit_all_new(&plums).await?;
	plums_subscription.expect_exactly(&encoded(&plums), PROPAGATED_WITHIN).await?;

	tokio::time::sleep(QUIET).await;
	let held = light.dump().await?;
	let wanted = encoded(stored_apples.iter().chain(&live_apples).chain(&plums));
	ensure!(
		held == wanted,
		"the light node holds {} statements, wants {}: pears came",
		held.len(),
		wanted.len()
	);
	network.finish().await
}
