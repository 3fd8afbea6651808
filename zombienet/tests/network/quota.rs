//! Four nodes: concurrent submissions reach every subscriber exactly once, and an account's
//! allowance is enforced the same way on every node, evictions included.

use crate::common::{
	account_of, diff, encoded, eventually, node_binary, sign, sign_all, topic, wait_metric,
	Allowance, ChainSpec, Check, Client, Draft, Encoded, NodePlan, Statement, TestNetwork, PEERS,
};
use anyhow::{ensure, Result};
use serde_json::json;
use std::time::Duration;

const NODES: [&str; 4] = ["alice", "bob", "charlie", "dave"];
/// Accounts signing the concurrent statements, one each in turn.
const SIGNERS: [&str; 4] = ["//Alice", "//Bob", "//Charlie", "//Eve"];
/// Statements submitted at once, round-robin over the nodes.
const CONCURRENT: usize = 8;
/// //Dave's statement count limit in this network.
const DAVE_MAX_COUNT: u32 = 3;

const CONNECT_WITHIN: Duration = Duration::from_secs(10);
const DELIVERED_WITHIN: Duration = Duration::from_secs(2);
const QUIET_FOR: Duration = Duration::from_secs(1);
/// Every node reflects an eviction made on another within this.
const AGREE_WITHIN: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_nodes_deliver_concurrent_statements_once_and_agree_on_quota_evictions() -> Result<()>
{
	let mut spec = ChainSpec::local(node_binary()?).await?;
	let dave_account = account_of("//Dave").await?;
	let lowered = Allowance { max_count: DAVE_MAX_COUNT, max_size: 1_000_000 };
	ensure!(spec.allowance(&dave_account)?.is_some(), "the local spec gives //Dave no allowance");
	spec.set_allowance(&dave_account, lowered)?;
	let stranger = account_of("//Stranger").await?;
	ensure!(spec.allowance(&stranger)?.is_none(), "//Stranger must have no allowance");

	let plans = NODES.iter().map(|name| NodePlan::new(*name)).collect();
	let network = TestNetwork::spawn("quota", &spec, plans).await?;
	for name in NODES {
		wait_metric(network.node(name)?, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;
	}
	let clients = network.clients(&NODES).await?;

	// Eight at once, round-robin over the nodes: every subscriber gets each exactly once.
	let drafts = (0..CONCURRENT).map(|index| {
		Draft::new(SIGNERS[index % SIGNERS.len()], "concurrent", format!("statement {index}"))
	});
	let statements = sign_all(drafts).await?;
	let mut subscriptions = Vec::new();
	for client in &clients {
		subscriptions.push(client.subscribe(json!({ "matchAll": [topic("concurrent")] })).await?);
	}
	let submissions = statements
		.iter()
		.enumerate()
		.map(|(index, statement)| clients[index % clients.len()].submit_new(statement));
	futures::future::try_join_all(submissions).await?;
	let expected = encoded(&statements);
	futures::future::try_join_all(subscriptions.iter_mut().map(|subscription| async {
		subscription.expect_exactly(&expected, DELIVERED_WITHIN).await?;
		subscription.expect_silence(QUIET_FOR).await
	}))
	.await?;

	// //Dave may keep three; the lowest expiry goes first, and a statement that would be the
	// lowest is refused. Expiries hundreds of seconds apart keep the order fixed.
	let dave_statement = |expires_in: u64| async move {
		let data = format!("expires in {expires_in}");
		sign(&Draft::new("//Dave", "dave", data).expires_in(expires_in)).await
	};
	let first = dave_statement(1000).await?;
	let second = dave_statement(2000).await?;
	let third = dave_statement(3000).await?;
	let (alice, bob, charlie, dave) = (&clients[0], &clients[1], &clients[2], &clients[3]);
	alice.submit_all_new(&[first.clone(), second.clone(), third.clone()]).await?;
	all_hold(&clients, &encoded([&first, &second, &third])).await?;

	let lower = dave_statement(500).await?;
	expect_rejection(bob, &lower, "accountFull").await?;
	let strangers = sign(&Draft::new("//Stranger", "dave", "no allowance")).await?;
	expect_rejection(charlie, &strangers, "noAllowance").await?;

	// Submitted on dave, it evicts `first` there; gossip must evict it everywhere.
	let fourth = dave_statement(1500).await?;
	dave.submit_new(&fourth).await?;
	all_hold(&clients, &encoded([&second, &third, &fourth])).await?;
	let fifth = dave_statement(2500).await?;
	bob.submit_new(&fifth).await?;
	all_hold(&clients, &encoded([&second, &third, &fifth])).await?;
	let too_low = dave_statement(1200).await?;
	expect_rejection(alice, &too_low, "accountFull").await?;
	all_hold(&clients, &encoded([&second, &third, &fifth])).await?;
	network.finish().await
}

/// Require `client` to refuse `statement` with `{"status": "rejected", "reason": reason}`.
async fn expect_rejection(client: &Client, statement: &Statement, reason: &str) -> Result<()> {
	let result = client.submit(statement).await?;
	ensure!(
		result["status"] == "rejected" && result["reason"] == reason,
		"{} answered {result} to {}, not a {reason} rejection",
		client.name(),
		statement.hash
	);
	Ok(())
}

/// Wait until every node's //Dave statements (topic `dave`) are exactly `expected`.
async fn all_hold(clients: &[Client], expected: &Encoded) -> Result<()> {
	eventually("every node holds the same //Dave statements", AGREE_WITHIN, || async {
		for client in clients {
			let held = client.broadcasts(&[topic("dave")]).await?;
			if &held != expected {
				return Ok(Check::Unmet(format!("{}: {}", client.name(), diff(&held, expected))));
			}
		}
		Ok(Check::Met(()))
	})
	.await
}
