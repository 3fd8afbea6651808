//! statement/2 between real nodes: topic affinity, light nodes, the statement/1 fallback, and
//! a peer that changes its filter too often.

mod common;

use common::*;
use statement_network::{affinity::AffinityFilter, wire::v2, Role, Version};
use statement_primitives::{
	Statement, StatementSource, StatementStore, SubmitResult, Topic, TopicFilter,
};
use std::time::Duration;

const A: Topic = Topic([0xA; 32]);
const B: Topic = Topic([0xB; 32]);
const C: Topic = Topic([0xC; 32]);

fn submit_all<'a>(node: &Node, statements: impl IntoIterator<Item = &'a Statement>) {
	for statement in statements {
		assert_eq!(node.store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_light_node_gets_only_its_topics_and_its_subscriptions_widen_them() {
	let full = node(1, &[], |_| {}).await;
	let stored_a: Vec<_> = (0..50).map(|n| signed_on(n, &[A], 64)).collect();
	let stored_b: Vec<_> = (50..100).map(|n| signed_on(n, &[B], 64)).collect();
	submit_all(&full, &stored_a);
	submit_all(&full, &stored_b);
	// A fixed seed: which topics a bloom filter confuses is then fixed too (B and C are not
	// among them for this one).
	let light = node(2, &[&full], |config| {
		config.light_topics = Some(vec![A]);
		config.affinity_seed = Some(11);
	})
	.await;
	eventually("the light node's initial sync of A", Duration::from_secs(60), || {
		stored_a.iter().all(|s| light.store.has_statement(&s.hash()))
	})
	.await;
	// The full node sees a light peer on statement/2 with a filter.
	let peers = full.network.peers();
	assert_eq!(
		peers.iter().filter_map(|peer| peer.statement_stream).collect::<Vec<_>>(),
		[(Version::V2, Role::Light)]
	);
	let live_a = signed_on(100, &[A], 64);
	let live_b = signed_on(101, &[B], 64);
	submit_all(&full, [&live_b, &live_a]);
	eventually("the light node to get the live A", Duration::from_secs(60), || {
		light.store.has_statement(&live_a.hash())
	})
	.await;
	// A subscription on C opened on the light node widens its filter.
	let watching = light.network.interest().watch(&TopicFilter::MatchAll(vec![C]));
	let stored_c = signed_on(102, &[C], 64);
	submit_all(&full, [&stored_c]);
	eventually("the light node to get C once subscribed", Duration::from_secs(60), || {
		light.store.has_statement(&stored_c.hash())
	})
	.await;
	drop(watching);
	tokio::time::sleep(Duration::from_millis(500)).await;
	assert!(
		stored_b.iter().chain([&live_b]).all(|s| !light.store.has_statement(&s.hash())),
		"the light node got statements on B"
	);
	assert_eq!(light.store.len(), 52, "A's 51 and one C");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_1_node_and_a_statement_2_node_exchange_everything_both_ways() {
	let new = node(1, &[], |_| {}).await;
	let old = node(2, &[&new], |config| config.version = Version::V1).await;
	eventually("the two to connect", Duration::from_secs(30), || {
		new.network.statement_peers() == 1 && old.network.statement_peers() == 1
	})
	.await;
	let versions: Vec<_> =
		new.network.peers().iter().filter_map(|peer| peer.statement_stream).collect();
	assert_eq!(versions, [(Version::V1, Role::Full)], "statement/1 was the fallback");
	let one = signed_on(1, &[A], 32);
	let two = signed_on(2, &[B], 32);
	submit_all(&new, [&one]);
	submit_all(&old, [&two]);
	eventually("both statements on both nodes", Duration::from_secs(30), || {
		[&new, &old].iter().all(|node| {
			node.store.has_statement(&one.hash()) && node.store.has_statement(&two.hash())
		})
	})
	.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_changes_its_filter_far_past_the_bound_is_flagged_and_dropped() {
	let target = node(1, &[], |_| {}).await;
	let (mut handle, target_id) = raw_peer_on(&target, Version::V2, Role::Light).await;
	open_stream(&mut handle, target_id).await;
	eventually("the node to count the light peer", Duration::from_secs(20), || {
		target.network.statement_peers() == 1
	})
	.await;
	let mut refused = 0;
	for n in 0..(statement_network::FILTER_CHANGES_PER_SECOND * 5 + 100) {
		let filter = AffinityFilter::of_topics(n as u128, [Topic([n as u8; 32])].iter());
		if handle.send_async_notification(target_id, v2::encode_affinity(&filter)).await.is_err() {
			refused += 1;
		}
	}
	eventually("the node to flag the flood and drop the peer", Duration::from_secs(30), || {
		target.network.metrics().flooding_detected.get() >= 1
			&& target.network.statement_peers() == 0
	})
	.await;
	assert_eq!(target.network.metrics().peers_banned.get(), 1, "{refused} sends refused");
}
