//! The reference's side: `sc-network-statement` 0.44's `StatementHandler` on an `sc-network`
//! 0.61 litep2p backend in this process, with a sync service that reports whom we say.
//!
//! A stock upstream node opens statement streams only with peers its block sync reports
//! (`SyncEvent::PeerConnected`, after a block-announce handshake with the same genesis); the
//! statement protocol's own peer set refuses everyone else (`NonReservedPeerMode::Deny`).
//! [`FakeSync`] stands in for that sync, and nothing else of upstream's is changed.

use crate::chain::Block;
use futures::{stream, Stream, StreamExt};
use parking_lot::Mutex;
use prometheus_endpoint::Registry;
use sc_network::{
	config::{
		FullNetworkConfiguration, NetworkConfiguration, NonReservedPeerMode, Params, Role,
		SetConfig,
	},
	service::traits::{NetworkBackend, NetworkService, PeerStore},
	Litep2pNetworkBackend, Multiaddr, NetworkPeers, NetworkStateInfo, PeerId,
};
use sc_network_statement::StatementHandlerPrototype;
use sc_network_sync::{SyncEvent, SyncEventStream};
use sp_core::H256;
use std::{
	pin::Pin,
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc,
	},
};
use tokio::sync::mpsc;

type Net = Litep2pNetworkBackend;

/// Upstream's sync service as the statement handler sees it: the peers we report, and whether
/// the node is major-syncing.
#[derive(Clone)]
pub struct FakeSync {
	events: Arc<Mutex<Option<mpsc::UnboundedReceiver<SyncEvent>>>>,
	major_syncing: Arc<AtomicBool>,
}

impl SyncEventStream for FakeSync {
	fn event_stream(&self, _name: &'static str) -> Pin<Box<dyn Stream<Item = SyncEvent> + Send>> {
		// The handler stops when this stream ends, so after the events it never does.
		match self.events.lock().take() {
			Some(events) => {
				let events = stream::unfold(events, |mut events| async move {
					events.recv().await.map(|event| (event, events))
				});
				events.chain(stream::pending()).boxed()
			}
			None => stream::pending().boxed(),
		}
	}
}

impl sp_consensus::SyncOracle for FakeSync {
	fn is_major_syncing(&self) -> bool {
		self.major_syncing.load(Ordering::Relaxed)
	}

	fn is_offline(&self) -> bool {
		false
	}
}

/// How the upstream handler runs.
#[derive(Clone, Debug)]
pub struct Options {
	/// Its `statements_per_second` (the reference's rate limit per peer).
	pub rate_limit: u32,
}

impl Default for Options {
	fn default() -> Self {
		Options { rate_limit: 50_000 }
	}
}

/// Upstream's gossip handler over `store`, on a litep2p network listening on loopback.
pub struct UpstreamPeer {
	/// The network service.
	pub network: Arc<dyn NetworkService>,
	/// The store the handler gossips from and submits to.
	pub store: Arc<dyn sp_statement_store::StatementStore>,
	/// The handler's metrics (`substrate_sync_*`).
	pub registry: Registry,
	sync_events: mpsc::UnboundedSender<SyncEvent>,
	tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl UpstreamPeer {
	/// Start the network and the handler, on the chain with `genesis`.
	pub async fn start(
		genesis: [u8; 32],
		store: Arc<dyn sp_statement_store::StatementStore>,
		options: Options,
	) -> Result<UpstreamPeer, String> {
		let mut tasks = Vec::new();
		let network_config = NetworkConfiguration::new_local();
		let mut full = FullNetworkConfiguration::<Block, H256, Net>::new(&network_config, None);
		let peer_store = full.take_peer_store();
		tasks.push(tokio::spawn(peer_store.run()));
		let metrics = <Net as NetworkBackend<Block, H256>>::register_notification_metrics(None);
		let (prototype, statement_config) = StatementHandlerPrototype::new::<_, Block, Net>(
			genesis,
			None,
			metrics.clone(),
			full.peer_store_handle(),
		);
		full.add_notification_protocol(statement_config);
		// The backend requires a block-announce protocol; nobody is let into it.
		let (block_announces, block_announce_service) =
			<Net as NetworkBackend<Block, H256>>::notification_config(
				format!("/{}/block-announces/1", hex::encode(genesis)).into(),
				Vec::new(),
				1024,
				None,
				SetConfig {
					in_peers: 0,
					out_peers: 0,
					reserved_nodes: Vec::new(),
					non_reserved_mode: NonReservedPeerMode::Deny,
				},
				metrics.clone(),
				full.peer_store_handle(),
			);
		let backend = <Net as NetworkBackend<Block, H256>>::new(Params {
			role: Role::Full,
			executor: Box::new(|future| {
				tokio::spawn(future);
			}),
			network_config: full,
			protocol_id: sc_network::config::ProtocolId::from("statement-interop"),
			genesis_hash: H256(genesis),
			fork_id: None,
			metrics_registry: None,
			block_announce_config: block_announces,
			ipfs_config: None,
			notification_metrics: metrics,
		})
		.map_err(|err| format!("cannot start the upstream network: {err}"))?;
		let network = <Net as NetworkBackend<Block, H256>>::network_service(&backend);
		tasks.push(tokio::spawn(async move {
			// Kept for as long as the backend runs: dropping it unregisters the protocol.
			let _block_announces = block_announce_service;
			<Net as NetworkBackend<Block, H256>>::run(backend).await;
		}));
		let (sync_events, events) = mpsc::unbounded_channel();
		let sync = FakeSync {
			events: Arc::new(Mutex::new(Some(events))),
			major_syncing: Arc::new(AtomicBool::new(false)),
		};
		let registry = Registry::new();
		let handler = prototype
			.build(
				network.clone(),
				sync,
				store.clone(),
				Some(&registry),
				|future| {
					tokio::spawn(future);
				},
				2,
				options.rate_limit,
			)
			.map_err(|err| format!("cannot build the upstream handler: {err}"))?;
		tasks.push(tokio::spawn(handler.run()));
		Ok(UpstreamPeer { network, store, registry, sync_events, tasks })
	}

	/// Our PeerId on the network.
	pub fn peer_id(&self) -> PeerId {
		self.network.local_peer_id()
	}

	/// Where the network listens, with `/p2p/<PeerId>`.
	pub fn address(&self) -> Option<Multiaddr> {
		let address = self.network.listen_addresses().into_iter().next()?;
		Some(address.with(sc_network::multiaddr::Protocol::P2p(self.peer_id().into())))
	}

	/// Tell the network where `peer` is and report it connected, as block sync would: the
	/// handler then opens a statement stream to it.
	///
	/// Block sync also reports it gone once upstream's peer store bans it: the statement
	/// protocol's own peer set ignores disconnects of the reserved peers the handler made of
	/// its statement peers (`sc-network` 0.61, `litep2p/shim/notification/peerset.rs`,
	/// `DisconnectPeer` only for non-reserved peers), so on a stock node it is the ban closing
	/// the sync connection that ends the statement stream. A task here does what sync does.
	pub fn connect(&mut self, peer: PeerId, address: Multiaddr) {
		self.network.add_known_address(peer, address);
		// The handler lives as long as this peer; a send fails only after it stopped.
		let _ = self.sync_events.send(SyncEvent::PeerConnected(peer));
		let network = self.network.clone();
		let events = self.sync_events.clone();
		self.tasks.push(tokio::spawn(async move {
			loop {
				tokio::time::sleep(std::time::Duration::from_millis(100)).await;
				if network.peer_reputation(&peer) < sc_network::peer_store::BANNED_THRESHOLD {
					let _ = events.send(SyncEvent::PeerDisconnected(peer));
					return;
				}
			}
		}));
	}

	/// Report `peer` gone, as block sync would when it disconnects.
	pub fn disconnect(&self, peer: PeerId) {
		let _ = self.sync_events.send(SyncEvent::PeerDisconnected(peer));
	}

	/// The value of the handler's metric `name` (summed over its labels matching `label`, if
	/// given), 0 if it has none.
	pub fn metric(&self, name: &str, label: Option<(&str, &str)>) -> f64 {
		let mut total = 0.0;
		for family in self.registry.gather() {
			if family.get_name() != name {
				continue;
			}
			for sample in family.get_metric() {
				let matches = label.is_none_or(|(key, value)| {
					sample
						.get_label()
						.iter()
						.any(|pair| pair.get_name() == key && pair.get_value() == value)
				});
				if matches {
					total += sample.get_counter().get_value() + sample.get_gauge().get_value();
				}
			}
		}
		total
	}

	/// The reputation upstream's peer store gives `peer`.
	pub fn reputation(&self, peer: &PeerId) -> i32 {
		self.network.peer_reputation(peer)
	}
}

impl Drop for UpstreamPeer {
	fn drop(&mut self) {
		for task in &self.tasks {
			task.abort();
		}
	}
}
