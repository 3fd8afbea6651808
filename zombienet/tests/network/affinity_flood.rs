//! A peer that changes its topic-affinity filter far past the bound (100 a second, bursts of
//! 500) is flagged as flooding and dropped. The peer is this test: a litep2p node that speaks
//! statement/2 as a light client and sends a thousand filters at once.

use crate::common::{
	node_binary, wait_metric, ChainSpec, NodePlan, TestNetwork, FLOODING_DETECTED, PEERS,
};
use anyhow::{anyhow, Context, Result};
use codec::Encode;
use futures::StreamExt;
use litep2p::{
	config::ConfigBuilder,
	protocol::notification::{
		Config as NotificationConfig, NotificationEvent, NotificationHandle, ValidationResult,
	},
	transport::websocket::config::Config as WsConfig,
	types::protocol::ProtocolName,
	Litep2p, PeerId,
};
use std::time::Duration;

/// Filters sent at once: twice the burst the bound allows.
const FILTERS: usize = 1000;

const CONNECT_WITHIN: Duration = Duration::from_secs(20);
const DETECTED_WITHIN: Duration = Duration::from_secs(10);

/// `ExplicitTopicAffinity` (variant 1) of a filter `{seed, num_hashes, bits}` with one word.
fn filter_message(seed: u128) -> Vec<u8> {
	let mut message = vec![1u8];
	message.extend((seed, 3u32, vec![seed as u64 | 1]).encode());
	message
}

/// Open the statement stream to `peer` and wait until it is open.
async fn open(handle: &mut NotificationHandle, peer: PeerId) -> Result<()> {
	handle.open_substream(peer).await.map_err(|err| anyhow!("cannot open the stream: {err:?}"))?;
	let deadline = tokio::time::Instant::now() + CONNECT_WITHIN;
	loop {
		let event = tokio::time::timeout_at(deadline, handle.next())
			.await
			.context("the statement stream did not open")?
			.ok_or_else(|| anyhow!("the notification handle closed"))?;
		match event {
			NotificationEvent::ValidateSubstream { peer, .. } => {
				handle.send_validation_result(peer, ValidationResult::Accept)
			}
			NotificationEvent::NotificationStreamOpened { .. } => return Ok(()),
			NotificationEvent::NotificationStreamOpenFailure { error, .. } => {
				return Err(anyhow!("the node refused the stream: {error:?}"))
			}
			_ => {}
		}
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_changing_its_filter_far_past_the_bound_is_flagged_and_dropped() -> Result<()> {
	let spec = ChainSpec::local(node_binary()?).await?;
	let network = TestNetwork::spawn("affinity-flood", &spec, vec![NodePlan::new("alice")]).await?;
	let alice = network.node("alice")?;
	let client = network.client("alice").await?;
	let genesis = client.genesis_hash().await?;
	let address = alice.multiaddr().to_string();
	let address = address.replace("/ip4/0.0.0.0/", "/ip4/127.0.0.1/");
	let target: PeerId = client.local_peer_id().await?.parse().context("alice's PeerId")?;

	let protocol = ProtocolName::from(format!("/{}/statement/2", genesis.trim_start_matches("0x")));
	let (notification, mut handle) =
		NotificationConfig::new(protocol, 1024 * 1024, vec![2], Vec::new(), false, 64, 64, true);
	let config = ConfigBuilder::new()
		.with_websocket(WsConfig {
			listen_addresses: vec!["/ip4/127.0.0.1/tcp/0/ws".parse()?],
			..Default::default()
		})
		.with_notification_protocol(notification)
		.build();
	let mut litep2p = Litep2p::new(config)?;
	litep2p
		.dial_address(address.parse()?)
		.await
		.map_err(|err| anyhow!("dial {address}: {err:?}"))?;
	let driver = tokio::spawn(async move { while litep2p.next_event().await.is_some() {} });
	open(&mut handle, target).await?;
	wait_metric(alice, PEERS, |peers| peers >= 1.0, CONNECT_WITHIN).await?;

	for seed in 0..FILTERS {
		// The node may close the stream before the last ones go: that is what is tested.
		if handle.send_async_notification(target, filter_message(seed as u128)).await.is_err() {
			break;
		}
	}
	wait_metric(alice, FLOODING_DETECTED, |flagged| flagged >= 1.0, DETECTED_WITHIN).await?;
	wait_metric(alice, PEERS, |peers| peers == 0.0, DETECTED_WITHIN).await?;
	driver.abort();
	network.finish().await
}
