//! What every gossip test needs: real stores in temporary directories, real litep2p
//! connections over loopback TCP, real signatures, and hand-driven peers.

#![allow(dead_code)]

use futures::StreamExt;
use litep2p::{
	config::ConfigBuilder,
	protocol::notification::{
		ConfigBuilder as NotificationConfigBuilder, NotificationEvent, NotificationHandle,
		ValidationResult,
	},
	transport::tcp::config::Config as TcpConfig,
	types::protocol::ProtocolName,
	Litep2p,
};
use statement_network::{
	identity, parse_address, protocol_name, Config, Multiaddr, Network, PeerId, Role, Version,
};
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Statement, Topic};
use statement_store::Store;
use std::{
	sync::Arc,
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

pub const GENESIS: [u8; 32] = [7; 32];

pub fn open_store(dir: &std::path::Path) -> Store {
	statement_test_support::store::open_admitting(dir)
}

pub fn signed(n: u32, data_len: usize) -> Statement {
	signed_on(n, &[Topic([1; 32])], data_len)
}

pub struct Node {
	pub store: Store,
	pub network: Network,
	pub _dir: tempfile::TempDir,
}

impl Node {
	pub fn address(&self) -> Multiaddr {
		let listen = self.network.listen_addresses()[0].to_string();
		parse_address(&listen, true).unwrap()
	}
}

pub async fn node(n: u8, boot: &[&Node], tune: impl FnOnce(&mut Config)) -> Node {
	let dir = tempfile::tempdir().unwrap();
	node_in(dir, n, boot, tune).await
}

pub async fn node_in(
	dir: tempfile::TempDir,
	n: u8,
	boot: &[&Node],
	tune: impl FnOnce(&mut Config),
) -> Node {
	let store = open_store(dir.path());
	let mut config = Config::new(GENESIS, [n; 32]);
	config.listen_addresses = vec![parse_address("/ip4/127.0.0.1/tcp/0", false).unwrap()];
	config.boot_nodes = boot.iter().map(|node| node.address()).collect();
	tune(&mut config);
	let network = statement_network::start(config, Arc::new(store.clone())).await.unwrap();
	Node { store, network, _dir: dir }
}

/// Wait until `check` holds, `usually` being how long that takes on an idle machine; fails
/// only past the workspace's hang bound for it (six times that, never before a minute).
pub async fn eventually(what: &str, usually: Duration, mut check: impl FnMut() -> bool) {
	let within = statement_test_support::wait::hang_bound(usually);
	statement_test_support::eventually(what, within, || std::future::ready(check()))
		.await
		.unwrap_or_else(|err| panic!("{err} (usually within {usually:?})"));
}

/// A hand-driven litep2p peer on the statement protocol, for sending what a node never would.
pub async fn raw_peer(target: &Node) -> (NotificationHandle, PeerId) {
	raw_peer_on(target, Version::V1, Role::Full).await
}

/// [`raw_peer`] speaking `version` only, declaring `role`.
pub async fn raw_peer_on(
	target: &Node,
	version: Version,
	role: Role,
) -> (NotificationHandle, PeerId) {
	let (notification, handle) =
		NotificationConfigBuilder::new(ProtocolName::from(protocol_name(&GENESIS, None, version)))
			.with_max_size(2 * 1024 * 1024)
			.with_handshake(role.handshake())
			.with_auto_accept_inbound(true)
			.build();
	let config = ConfigBuilder::new()
		.with_keypair(identity::keypair(&[99; 32]).unwrap())
		.with_tcp(TcpConfig {
			listen_addresses: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
			..Default::default()
		})
		.with_notification_protocol(notification)
		.build();
	let mut litep2p = Litep2p::new(config).unwrap();
	litep2p.dial_address(target.address()).await.unwrap();
	let peer = target.network.local_peer_id();
	tokio::spawn(async move { while litep2p.next_event().await.is_some() {} });
	(handle, peer)
}

/// Open a raw peer's stream to `peer` and wait until it is open; what the node sends over it
/// afterwards is left in the handle.
pub async fn open_stream(handle: &mut NotificationHandle, peer: PeerId) {
	tokio::time::sleep(Duration::from_millis(300)).await;
	handle.open_substream(peer).await.unwrap();
	let deadline = Instant::now() + Duration::from_secs(20);
	loop {
		let event = tokio::time::timeout_at(deadline.into(), handle.next())
			.await
			.expect("the stream to open within 20 s")
			.expect("the handle to live");
		match event {
			NotificationEvent::ValidateSubstream { peer, .. } => {
				handle.send_validation_result(peer, ValidationResult::Accept)
			}
			NotificationEvent::NotificationStreamOpened { .. } => return,
			_ => {}
		}
	}
}

/// A statement on these topics, signed by the `n`th account.
pub fn signed_on(n: u32, topics: &[Topic], data_len: usize) -> Statement {
	let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as u32;
	TestStatement::new()
		.expiry(now + 3600, n)
		.topics(topics)
		.data(vec![(n % 251) as u8; data_len])
		.signed_ed25519(&ed25519_pair(n))
}
