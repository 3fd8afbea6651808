//! Discovery as a Substrate node does it: Kademlia under the chain's protocol name
//! (`/{genesis}/kad`, or `/{genesis}/{fork id}/kad`), identify (`/ipfs/id/1.0.0`, protocol
//! version `/substrate/1.0`) and ping (`/ipfs/ping/1.0.0`).
//!
//! Boot nodes seed the routing table. Random walks (a `FIND_NODE` for a random key) every 1 s at
//! first, the interval doubling up to 60 s (10 s while the node has fewer streams than its
//! outbound slots), find the rest. Every peer found becomes a candidate for the peerset's
//! outbound slots; a peer that identifies itself as speaking our Kademlia protocol enters the
//! routing table with the listen addresses it reports.

use crate::{
	core::{Time, LOG},
	peerset::Peerset,
	wire::{self, Version},
	Config, PeerId,
};
use futures::{Stream, StreamExt};
use litep2p::{
	protocol::libp2p::{
		identify::{Config as IdentifyConfig, IdentifyEvent},
		kademlia::{ConfigBuilder as KademliaConfigBuilder, KademliaEvent, KademliaHandle},
		ping::{Config as PingConfig, PingEvent},
	},
	types::protocol::ProtocolName,
	Litep2p,
};
use std::{collections::HashMap, time::Duration};

/// First interval between random walks.
const FIRST_WALK: Duration = Duration::from_secs(1);

/// Longest interval between random walks once the node has all its outbound peers.
const LONGEST_WALK: Duration = Duration::from_secs(60);

/// Longest interval while it has fewer.
const LONGEST_WALK_WANTING: Duration = Duration::from_secs(10);

/// Longest a walk may hold back the next.
const WALK_TIMEOUT: Duration = Duration::from_secs(30);

/// The protocols' configurations, for litep2p's builder.
pub(super) struct DiscoveryConfig {
	pub ping: PingConfig,
	pub identify: IdentifyConfig,
	pub kademlia: Option<litep2p::protocol::libp2p::kademlia::Config>,
}

/// Something discovery's protocols reported.
pub(super) enum DiscoveryEvent {
	Kademlia(KademliaEvent),
	Identify(IdentifyEvent),
	Ping,
}

type Events<T> = Box<dyn Stream<Item = T> + Send + Unpin>;

/// Discovery's state: the Kademlia handle and when to walk.
pub(super) struct Discovery {
	kademlia: Option<KademliaHandle>,
	kademlia_protocol: ProtocolName,
	statement_protocols: [ProtocolName; 2],
	identify: Events<IdentifyEvent>,
	ping: Events<PingEvent>,
	local: PeerId,
	/// When the walk under way began.
	walking: Option<Time>,
	next_walk: Time,
	interval: Duration,
	out_peers: usize,
}

impl Discovery {
	pub(super) fn new(config: &Config, local: PeerId) -> (Self, DiscoveryConfig) {
		let hex = hex::encode(config.genesis_hash);
		let kademlia_protocol = ProtocolName::from(match &config.fork_id {
			Some(fork) => format!("/{hex}/{fork}/kad"),
			None => format!("/{hex}/kad"),
		});
		let fork = config.fork_id.as_deref();
		let statement_protocols = [Version::V1, Version::V2].map(|version| {
			ProtocolName::from(wire::protocol_name(&config.genesis_hash, fork, version))
		});
		let (ping, ping_events) = PingConfig::default();
		let agent = format!("{} ({})", config.node_name, env!("CARGO_PKG_NAME"));
		let (identify, identify_events) = IdentifyConfig::new("/substrate/1.0".into(), Some(agent));
		let (kademlia_config, kademlia) = if config.discovery {
			let mut known: HashMap<PeerId, Vec<litep2p::types::multiaddr::Multiaddr>> =
				HashMap::new();
			for address in &config.boot_nodes {
				if let Some(peer) =
					PeerId::try_from_multiaddr(address).filter(|peer| *peer != local)
				{
					known.entry(peer).or_default().push(address.clone());
				}
			}
			let (kademlia_config, handle) = KademliaConfigBuilder::new()
				.with_protocol_names(vec![kademlia_protocol.clone()])
				.with_known_peers(known)
				.build();
			(Some(kademlia_config), Some(handle))
		} else {
			(None, None)
		};
		let discovery = Discovery {
			kademlia,
			kademlia_protocol,
			statement_protocols,
			identify: identify_events,
			ping: ping_events,
			local,
			walking: None,
			next_walk: Duration::ZERO,
			interval: FIRST_WALK,
			out_peers: config.out_peers,
		};
		(discovery, DiscoveryConfig { ping, identify, kademlia: kademlia_config })
	}

	/// The statement protocols' names on this chain.
	pub(super) fn statement_protocols(&self) -> &[ProtocolName] {
		&self.statement_protocols
	}

	/// The next event of any of the protocols (cancel-safe).
	pub(super) async fn next_event(&mut self) -> DiscoveryEvent {
		let kademlia = async {
			match self.kademlia.as_mut() {
				Some(handle) => match handle.next().await {
					Some(event) => event,
					None => std::future::pending().await,
				},
				None => std::future::pending().await,
			}
		};
		tokio::select! {
			event = kademlia => DiscoveryEvent::Kademlia(event),
			Some(event) = self.identify.next() => DiscoveryEvent::Identify(event),
			Some(_) = self.ping.next() => DiscoveryEvent::Ping,
		}
	}

	pub(super) async fn on_event(
		&mut self,
		event: DiscoveryEvent,
		litep2p: &mut Litep2p,
		peerset: &mut Peerset<PeerId>,
		_now: Time,
	) {
		match event {
			DiscoveryEvent::Kademlia(KademliaEvent::FindNodeSuccess { peers, .. }) => {
				self.walking = None;
				log::debug!(target: LOG, "Random walk found {} peers", peers.len());
				for (peer, addresses) in peers {
					if peer != self.local && !addresses.is_empty() {
						litep2p.add_known_address(peer, addresses.into_iter());
						peerset.discovered(peer);
					}
				}
			}
			DiscoveryEvent::Kademlia(KademliaEvent::QueryFailed { .. }) => self.walking = None,
			DiscoveryEvent::Kademlia(
				KademliaEvent::RoutingTableUpdate { peers }
				| KademliaEvent::PeersDiscovered { peers },
			) => {
				for peer in peers.into_iter().filter(|peer| *peer != self.local) {
					peerset.discovered(peer);
				}
			}
			DiscoveryEvent::Kademlia(_) | DiscoveryEvent::Ping => {}
			DiscoveryEvent::Identify(IdentifyEvent::PeerIdentified {
				peer,
				supported_protocols,
				listen_addresses,
				..
			}) => {
				if peer == self.local || listen_addresses.is_empty() {
					return;
				}
				if supported_protocols.contains(&self.kademlia_protocol) {
					if let Some(kademlia) = &self.kademlia {
						kademlia.add_known_peer(peer, listen_addresses.clone()).await;
					}
				}
				if self.statement_protocols.iter().any(|name| supported_protocols.contains(name)) {
					litep2p.add_known_address(peer, listen_addresses.into_iter());
					peerset.discovered(peer);
				}
			}
		}
	}

	/// Walk when it is time; `streams` is how many statement streams the node has.
	pub(super) async fn tick(&mut self, now: Time, streams: usize) {
		let Some(kademlia) = self.kademlia.as_mut() else { return };
		// A walk that never ends stops holding the next one back after a while.
		let under_way = self.walking.is_some_and(|since| now.saturating_sub(since) < WALK_TIMEOUT);
		if under_way || now < self.next_walk {
			return;
		}
		self.walking = Some(now);
		kademlia.find_node(PeerId::random()).await;
		let longest = if streams < self.out_peers { LONGEST_WALK_WANTING } else { LONGEST_WALK };
		self.next_walk = now + self.interval;
		self.interval = (self.interval * 2).min(longest);
	}
}
