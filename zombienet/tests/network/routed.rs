//! Topic-routed storage (`--statement-replication-factor`), checked the way upstream's
//! `statement-replication-check` checks its own: learn every node's PeerId, submit probes
//! through the node farthest from each probe's topic, compute each topic's K holders over
//! the live nodes by the placement rule (`statement_test_support::routing`), and poll every
//! node's store until each probe is held by exactly its K holders.
//!
//! Thirty nodes, K = 5. Then a reader on a node that holds none of a topic gets its stored
//! statement and a new one, and a one-shot query on another such node gets both; then six nodes stop (frozen, as a crashed host) and six fresh
//! ones join, and every probe is back on its K live holders with nothing lost.

use crate::common::{
	encoded, eventually, node_binary, sign_all, topic, wait_until_all_store, ChainSpec, Check,
	Client, Draft, NodePlan, Statement, TestNetwork,
};
use anyhow::{ensure, Context, Result};
use serde_json::json;
use statement_test_support::{
	routing::{holders, peer_id_bytes},
	topic::named,
};
use std::time::{Duration, Instant};
use zombienet_sdk::AddNodeOptions;

const NODES: usize = 30;
const K: usize = 5;
const PROBES: usize = 24;
/// Nodes stopped, and fresh nodes started, for the churn half.
const CHURN: usize = 6;
/// The routing intervals the nodes run with: hand-over lookups every 3 s, a non-holder keeps
/// what it forwarded for 5 s.
const REFRESH_SECS: &str = "3";
const DROP_AFTER_SECS: &str = "5";

/// From the probes' submission until each is on exactly its K holders (lookups, forwarding,
/// and the writers' drop after 5 s).
const CONVERGED_WITHIN: Duration = Duration::from_secs(60);
/// From the subscription until the reader has what is stored, and from a submission until
/// the reader has the new statement.
const READ_WITHIN: Duration = Duration::from_secs(20);
/// From the last fresh node's start until every probe is back on its K live holders: a few
/// hand-over rounds, each slowed by queries to frozen nodes that time out.
const HANDED_OVER_WITHIN: Duration = Duration::from_secs(120);

fn name(index: usize) -> String {
	format!("node-{index:02}")
}

/// The routing flags every node of this network runs with.
fn routing_args() -> Vec<(&'static str, &'static str)> {
	vec![
		("--statement-replication-factor", "5"),
		("--statement-routing-refresh", REFRESH_SECS),
		("--statement-routing-drop-after", DROP_AFTER_SECS),
		// Every node is on 127.0.0.1: lookups connect each node to many others.
		("--max-connections-per-ip", "512"),
		("-l", "statement-gossip=debug"),
	]
}

/// The mixed network: routed nodes, and full nodes without the flag among them.
const MIXED_ROUTED: usize = 8;
const MIXED_FULL: usize = 3;
/// Probes submitted on routed nodes, and as many on full ones.
const MIXED_PROBES: usize = 6;

/// A live node: its name, RPC client and PeerId's bytes.
struct Live {
	name: String,
	client: Client,
	peer: Vec<u8>,
}

async fn live(network: &TestNetwork, name: String) -> Result<Live> {
	let client = network.client(&name).await?;
	let base58 = client.local_peer_id().await?;
	let peer = peer_id_bytes(&base58).with_context(|| format!("{name}'s PeerId {base58}"))?;
	Ok(Live { name, client, peer })
}

/// What the network holds of the probes, against the rule.
#[derive(Debug)]
struct Recall {
	/// Expected holders seen holding, over K, averaged over the probes.
	mean: f64,
	/// Nodes holding a probe they are not a holder of, summed over the probes.
	extra: usize,
	/// Which: (probe, node).
	extras: Vec<(usize, String)>,
	/// Expected holders not holding: (probe, node).
	missing: Vec<(usize, String)>,
	/// Probes on fewer than K live nodes.
	short: usize,
	/// Statements each node holds, most first.
	per_node: Vec<usize>,
}

async fn recall(nodes: &[Live], probes: &[([u8; 32], Statement)]) -> Result<Recall> {
	let mut dumps = Vec::with_capacity(nodes.len());
	for node in nodes {
		dumps.push(node.client.dump().await?);
	}
	let peers: Vec<Vec<u8>> = nodes.iter().map(|node| node.peer.clone()).collect();
	let (mut sum, mut extra, mut short) = (0.0, 0, 0);
	let (mut extras, mut missing) = (Vec::new(), Vec::new());
	for (at, (topic, probe)) in probes.iter().enumerate() {
		let expected = holders(topic, &peers, K);
		let holding: Vec<usize> =
			(0..nodes.len()).filter(|index| dumps[*index].contains(&probe.hex)).collect();
		let seen = expected.iter().filter(|index| holding.contains(index)).count();
		sum += seen as f64 / K as f64;
		extra += holding.iter().filter(|index| !expected.contains(index)).count();
		for index in holding.iter().filter(|index| !expected.contains(index)) {
			extras.push((at, nodes[*index].name.clone()));
		}
		for index in expected.iter().filter(|index| !holding.contains(index)) {
			missing.push((at, nodes[*index].name.clone()));
		}
		short += usize::from(holding.len() < K);
	}
	let mut per_node: Vec<usize> = dumps.iter().map(|dump| dump.len()).collect();
	per_node.sort_unstable_by(|a, b| b.cmp(a));
	Ok(Recall { mean: sum / probes.len() as f64, extra, extras, missing, short, per_node })
}

/// Wait until every probe is held by exactly its K holders among `nodes`.
async fn converged(
	what: &str,
	nodes: &[Live],
	probes: &[([u8; 32], Statement)],
	within: Duration,
) -> Result<Recall> {
	let started = Instant::now();
	let seen = eventually(what, within, || async {
		let seen = recall(nodes, probes).await?;
		Ok(if seen.mean == 1.0 && seen.extra == 0 {
			Check::Met(seen)
		} else {
			Check::Unmet(format!(
				"mean recall {}, held but not holders (probe, node) {:?}, holders without \
				 it {:?}, statements per node {:?}",
				seen.mean, seen.extras, seen.missing, seen.per_node
			))
		})
	})
	.await?;
	println!("{what}: converged in {:.1} s: {seen:?}", started.elapsed().as_secs_f64());
	Ok(seen)
}

/// Submit each probe through the node farthest from its topic.
async fn submit_from_farthest(nodes: &[Live], probes: &[([u8; 32], Statement)]) -> Result<()> {
	let peers: Vec<Vec<u8>> = nodes.iter().map(|node| node.peer.clone()).collect();
	for (topic, probe) in probes {
		let farthest = *holders(topic, &peers, nodes.len()).last().context("no nodes")?;
		nodes[farthest].client.submit_new(probe).await?;
	}
	Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_network_keeps_each_probe_on_its_k_holders_through_churn() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let plans = (0..NODES)
		.map(|index| {
			let plan = routing_args()
				.into_iter()
				.fold(NodePlan::new(name(index)), |plan, arg| plan.arg(arg));
			if index == 0 {
				plan.bootnode()
			} else {
				plan
			}
		})
		.collect();
	let mut network = TestNetwork::spawn("routed", &spec, plans).await?;
	let mut nodes = Vec::with_capacity(NODES);
	for index in 0..NODES {
		nodes.push(live(&network, name(index)).await?);
	}

	let signers = ["//Alice", "//Bob", "//Charlie", "//Dave"];
	let drafts = (0..PROBES).map(|index| {
		Draft::new(
			signers[index % signers.len()],
			&format!("probe-{index}"),
			format!("probe {index}"),
		)
	});
	let statements = sign_all(drafts).await?;
	let probes: Vec<([u8; 32], Statement)> = statements
		.into_iter()
		.enumerate()
		.map(|(index, statement)| (named(&format!("probe-{index}")).0, statement))
		.collect();
	submit_from_farthest(&nodes, &probes).await?;
	let seen =
		converged("every probe on its 5 holders of 30", &nodes, &probes, CONVERGED_WITHIN).await?;
	// Exactly K copies of each: a node holds K/N of what full replication would keep on
	// average, and no node more than half.
	let copies: usize = seen.per_node.iter().sum();
	ensure!(copies == PROBES * K, "{copies} copies of {PROBES} probes, K = {K}");
	ensure!(seen.per_node[0] <= PROBES / 2, "a node holds {} of {PROBES}", seen.per_node[0]);

	// A reader on a node that holds none of probe 0's topic: a subscription replays what the
	// holders have, then brings a new statement submitted on yet another non-holder.
	let (topic_bytes, first) = probes[0].clone();
	let topic_hex = topic("probe-0");
	let peers: Vec<Vec<u8>> = nodes.iter().map(|node| node.peer.clone()).collect();
	let order = holders(&topic_bytes, &peers, NODES);
	let (reader, writer) = (&nodes[order[NODES - 2]], &nodes[order[NODES - 3]]);
	let mut subscription = reader.client.subscribe(json!({ "matchAll": [topic_hex] })).await?;
	subscription.expect_exactly(&encoded([&first]), READ_WITHIN).await?;
	let later = sign_all([Draft::new("//Eve", "probe-0", "probe 0, later")]).await?;
	writer.client.submit_new(&later[0]).await?;
	subscription.expect_exactly(&encoded(&later), READ_WITHIN).await?;
	drop(subscription);
	println!("the reader {} got probe-0's stored and new statements", reader.name);
	// A one-shot query on another node that holds none of it is answered with both, at once:
	// the node fetches the topic from its holders before it answers.
	let asker = &nodes[order[NODES - 4]];
	let answered = Instant::now();
	let answer = asker.client.broadcasts(std::slice::from_ref(&topic_hex)).await?;
	ensure!(
		answer == encoded([&first, &later[0]]),
		"statement_broadcastsStatement on {}, which holds none of probe-0's topic: {answer:?}",
		asker.name
	);
	println!("a query on {} was answered from the holders in {:?}", asker.name, answered.elapsed());
	let mut probes = probes;
	probes.push((topic_bytes, later[0].clone()));

	// Churn: the six nodes holding the most probes stop (frozen); six fresh ones join.
	let mut ranked: Vec<(usize, usize)> = Vec::new();
	for (index, node) in nodes.iter().enumerate() {
		ranked.push((node.client.dump().await?.len(), index));
	}
	ranked.sort_unstable_by(|a, b| b.cmp(a));
	let stopped: Vec<usize> = ranked.iter().take(CHURN).map(|(_, index)| *index).collect();
	for index in &stopped {
		network.node(&nodes[*index].name)?.pause().await?;
	}
	let mut remaining: Vec<Live> = nodes
		.into_iter()
		.enumerate()
		.filter(|(index, _)| !stopped.contains(index))
		.map(|(_, node)| node)
		.collect();
	for fresh in NODES..NODES + CHURN {
		let options = AddNodeOptions {
			args: routing_args().into_iter().map(Into::into).collect(),
			..AddNodeOptions::default()
		};
		network.network_mut().add_node(name(fresh), options).await?;
		remaining.push(live(&network, name(fresh)).await?);
	}
	let seen = converged(
		"every probe back on its 5 live holders after 6 of 30 stopped and 6 joined",
		&remaining,
		&probes,
		HANDED_OVER_WITHIN,
	)
	.await?;
	ensure!(seen.short == 0, "probes on fewer than {K} live nodes: {seen:?}");
	network.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_nodes_among_routed_ones_converge_as_full_replicas() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let plans = (0..MIXED_ROUTED + MIXED_FULL)
		.map(|index| {
			let plan = if index < MIXED_ROUTED {
				routing_args()
					.into_iter()
					.fold(NodePlan::new(name(index)), |plan, arg| plan.arg(arg))
			} else {
				NodePlan::new(name(index)).arg(("--max-connections-per-ip", "512"))
			};
			if index == 0 {
				plan.bootnode()
			} else {
				plan
			}
		})
		.collect();
	let network = TestNetwork::spawn("routed-mixed", &spec, plans).await?;
	let mut routed = Vec::new();
	for index in 0..MIXED_ROUTED {
		routed.push(live(&network, name(index)).await?);
	}
	let full_names: Vec<String> = (MIXED_ROUTED..MIXED_ROUTED + MIXED_FULL).map(name).collect();
	let full = network.clients(&full_names).await?;
	let drafts = (0..2 * MIXED_PROBES).map(|index| {
		Draft::new(
			["//Alice", "//Bob"][index % 2],
			&format!("mixed-{index}"),
			format!("mixed {index}"),
		)
	});
	let probes: Vec<([u8; 32], Statement)> = sign_all(drafts)
		.await?
		.into_iter()
		.enumerate()
		.map(|(index, statement)| (named(&format!("mixed-{index}")).0, statement))
		.collect();
	let (on_routed, on_full) = probes.split_at(MIXED_PROBES);
	submit_from_farthest(&routed, on_routed).await?;
	for (index, (_, probe)) in on_full.iter().enumerate() {
		full[index % MIXED_FULL].submit_new(probe).await?;
	}
	// The full nodes hold everything, whoever took it; the routed ones hold exactly what
	// they are holders of (over the routed nodes: only they take part in the placement).
	let everything = encoded(probes.iter().map(|(_, probe)| probe));
	wait_until_all_store(&full, &everything, CONVERGED_WITHIN).await?;
	converged("each probe on its 5 routed holders of 8", &routed, &probes, CONVERGED_WITHIN)
		.await?;
	network.finish().await
}
