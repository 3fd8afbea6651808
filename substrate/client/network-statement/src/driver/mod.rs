//! The litep2p driver: runs the gossip [`Core`] and the [`Peerset`] over real connections.
//!
//! One task owns litep2p, the statement protocol's handle, Kademlia, identify and ping, feeds
//! what happens to the core and the peerset, and carries out what they ask: sends run as tasks
//! of their own (one per peer at a time, the core sees to that), store reads on the blocking
//! pool, and received statements are checked and submitted on validation threads.

mod discovery;
mod handle;
mod pages;
mod route;
mod validate;

use crate::{
	core::{Action, Core, CoreConfig, Event, SendOutcome, Time, LOG},
	identity,
	interest::Interest,
	metrics::Metrics,
	peerset::{Direction, Peerset, PeersetAction, PeersetConfig},
	wire::{self, Role, Version, MAX_NOTIFICATION_SIZE},
	Config, Error, Multiaddr, PeerId, SEND_TIMEOUT,
};
use discovery::Discovery;
use futures::StreamExt;
use handle::Shared;
pub use handle::{Network, PeerInfo, FETCHES_AT_ONCE, FETCH_WAIT};
use litep2p::{
	config::ConfigBuilder,
	protocol::notification::{
		ConfigBuilder as NotificationConfigBuilder, NotificationEvent, NotificationHandle,
		NotificationSink, ValidationResult,
	},
	transport::{
		inbound::InboundLimits, tcp::config::Config as TcpConfig,
		websocket::config::Config as WsConfig,
	},
	types::{multiaddr::Protocol, protocol::ProtocolName},
	Litep2p, Litep2pEvent,
};
use parking_lot::Mutex;
use statement_primitives::{StatementStore, StatementSubscription, StatementsPage};
use std::{
	collections::{BTreeMap, HashMap},
	sync::Arc,
	time::{Duration, Instant},
};
use tokio::sync::mpsc;

/// How often the peerset fills its slots and discovery considers a walk.
const SLOTS_TICK: Duration = Duration::from_secs(1);

/// A random `u128`, from the standard library's per-process hash keys.
fn random_u128() -> u128 {
	use std::hash::{BuildHasher, Hasher};
	let half = || {
		let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
		hasher.write_u128(Instant::now().elapsed().as_nanos());
		hasher.finish() as u128
	};
	(half() << 64) | half()
}

/// Start networking on the current tokio runtime.
pub async fn start(config: Config, store: Arc<dyn StatementStore>) -> Result<Network, Error> {
	let keypair = identity::keypair(&config.node_key)?;
	let local_peer_id = keypair.public().to_peer_id();
	let (tcp, ws): (Vec<Multiaddr>, Vec<Multiaddr>) = config
		.listen_addresses
		.iter()
		.cloned()
		.partition(|address| !address.iter().any(|p| matches!(p, Protocol::Ws(_))));
	let fork = config.fork_id.as_deref();
	let main = ProtocolName::from(wire::protocol_name(&config.genesis_hash, fork, config.version));
	let fallbacks = match config.version {
		Version::V2 => {
			vec![ProtocolName::from(wire::protocol_name(&config.genesis_hash, fork, Version::V1))]
		}
		Version::V1 => Vec::new(),
	};
	// A routed node takes from its gossip peers only what its subscriptions name: it gets
	// what it holds by the route protocol.
	let routed = config.routing.is_some();
	let role = if config.light_topics.is_some() || routed { Role::Light } else { Role::Full };
	let (notification, handle) = NotificationConfigBuilder::new(main)
		.with_fallback_names(fallbacks)
		.with_max_size(MAX_NOTIFICATION_SIZE)
		.with_handshake(role.handshake())
		.with_auto_accept_inbound(false)
		.with_async_channel_size(2)
		.with_sync_channel_size(2)
		.build();
	let (discovery, discovery_config) = Discovery::new(&config, local_peer_id);
	let route_protocol = ProtocolName::from(crate::routing::wire::protocol_name(
		&config.genesis_hash,
		config.fork_id.as_deref(),
	));
	let route_handle = config.routing.as_ref().map(|_| {
		litep2p::protocol::request_response::ConfigBuilder::new(route_protocol.clone())
			.with_max_size(crate::routing::wire::MAX_RESPONSE)
			.with_timeout(route::ROUTE_TIMEOUT)
			.build()
	});
	// One set of bounds for both transports: a connection takes a descriptor from accept on.
	let inbound = InboundLimits::new(config.max_connections_per_ip, config.max_inbound_connections);
	let mut litep2p_config = ConfigBuilder::new()
		.with_keypair(keypair)
		.with_tcp(TcpConfig {
			listen_addresses: tcp,
			nodelay: true,
			inbound_limits: Some(inbound.clone()),
			..Default::default()
		})
		.with_websocket(WsConfig {
			listen_addresses: ws,
			nodelay: true,
			inbound_limits: Some(inbound.clone()),
			..Default::default()
		})
		.with_notification_protocol(notification)
		.with_libp2p_ping(discovery_config.ping)
		.with_libp2p_identify(discovery_config.identify);
	let route_handle = match route_handle {
		Some((route_config, handle)) => {
			litep2p_config = litep2p_config.with_request_response_protocol(route_config);
			Some(handle)
		}
		None => None,
	};
	if let Some(kademlia) = discovery_config.kademlia {
		litep2p_config = litep2p_config.with_libp2p_kademlia(kademlia);
	}
	let mut litep2p =
		Litep2p::new(litep2p_config.build()).map_err(|err| Error::Start(err.to_string()))?;
	let listen_addresses: Vec<Multiaddr> = litep2p.listen_addresses().cloned().collect();
	for address in &listen_addresses {
		log::info!(target: LOG, "Listening for peers on {address}");
	}
	let metrics = Arc::new(Metrics::default());
	let shared = Arc::new(Shared { metrics: metrics.clone(), peers: Mutex::new(HashMap::new()) });
	let watch = store.watch_admissions(config.watch_queue_bytes)?;
	let validation = validate::start(&store, config.source)?;

	let origin = Instant::now();
	let unix_at_start = std::time::SystemTime::now()
		.duration_since(std::time::UNIX_EPOCH)
		.map_or(0, |since| since.as_secs());
	let core_config = CoreConfig {
		rate_limit: config.rate_limit,
		propagation: config.propagation,
		validation_queue: config.validation_queue,
		unix_at_start,
		..CoreConfig::default()
	};
	let view: Arc<dyn crate::core::StoreView> = Arc::new(ViewOf(store.clone()));
	let mut core = Core::new(core_config, view, metrics.clone(), Duration::ZERO);
	let (interest, interest_rx) = match (&config.light_topics, routed) {
		(None, false) => (Interest::full(), None),
		(topics, routed) => {
			let topics = topics.clone().unwrap_or_default();
			let seed = config.affinity_seed.unwrap_or_else(random_u128);
			if !routed {
				log::info!(target: LOG, "Light node: asking peers for {} topic(s) and those of open subscriptions", topics.len());
			}
			let (interest, first, changes) =
				if routed { Interest::routed(topics, seed) } else { Interest::light(topics, seed) };
			core.handle(Duration::ZERO, Event::Interest(first));
			(interest, Some(changes))
		}
	};

	// Boot nodes are where discovery starts; reserved nodes are kept connected. With
	// `--reserved-only`, boot nodes are kept as reserved ones too, or nobody would be taken.
	let mut reserved: Vec<PeerId> =
		config.reserved_nodes.iter().filter_map(PeerId::try_from_multiaddr).collect();
	let boot: Vec<PeerId> =
		config.boot_nodes.iter().filter_map(PeerId::try_from_multiaddr).collect();
	if config.reserved_only {
		reserved.extend(&boot);
	}
	reserved.retain(|peer| *peer != local_peer_id);
	let peerset_config = PeersetConfig {
		in_peers: config.in_peers,
		out_peers: config.out_peers,
		reserved_only: config.reserved_only,
	};
	let mut peerset = Peerset::new(peerset_config, reserved, random_u128() as u64);
	for address in config.boot_nodes.iter().chain(&config.reserved_nodes) {
		let Some(peer) = PeerId::try_from_multiaddr(address) else { continue };
		if peer == local_peer_id {
			continue;
		}
		litep2p.add_known_address(peer, std::iter::once(address.clone()));
		peerset.discovered(peer);
	}

	let (done_tx, done_rx) = mpsc::unbounded_channel();
	let (route_tx, addresses_rx, route_task, fetcher) = match (route_handle, &config.routing) {
		(Some(handle), Some(routing)) => {
			let (route_tx, identified) = mpsc::unbounded_channel();
			let (addresses_tx, addresses_rx) = mpsc::unbounded_channel();
			let (fetch_tx, fetches) = mpsc::unbounded_channel();
			let task = route::RouteTask::new(route::Parts {
				config: routing.clone(),
				local: local_peer_id,
				handle,
				store: store.clone(),
				metrics: metrics.clone(),
				interest: interest.clone(),
				identified,
				addresses_tx,
				admitted: store.watch_admissions(config.watch_queue_bytes)?,
				rate_limit: config.rate_limit,
				fetches,
			});
			let task = tokio::spawn(task.run(routing.replication_factor));
			(Some(route_tx), Some(addresses_rx), Some(task), Some(handle::Fetcher::new(fetch_tx)))
		}
		_ => (None, None, None, None),
	};
	let worker = Worker {
		litep2p,
		handle,
		store,
		version: config.version,
		shared: shared.clone(),
		watch,
		watch_queue_bytes: config.watch_queue_bytes,
		core,
		peerset,
		discovery,
		origin,
		sinks: BTreeMap::new(),
		validate_tx: validation.queue,
		verdict_rx: validation.verdicts,
		done_tx,
		done_rx,
		interest_rx,
		inbound,
		route_protocol,
		route_tx,
		addresses_rx,
	};
	let task = tokio::spawn(worker.run());
	Ok(Network {
		local_peer_id,
		listen_addresses,
		shared,
		interest,
		task: Mutex::new(Some(task)),
		route_task: Mutex::new(route_task),
		fetcher,
		validators: Mutex::new(validation.threads),
	})
}

/// The store as the core sees it.
struct ViewOf(Arc<dyn StatementStore>);

impl crate::core::StoreView for ViewOf {
	fn has_statement(&self, hash: &statement_primitives::Hash) -> bool {
		self.0.has_statement(hash)
	}

	fn admission_watermark(&self) -> u64 {
		self.0.admission_watermark()
	}
}

/// What a send or read task reports.
enum Done {
	Sent { peer: PeerId, id: u64, outcome: SendOutcome },
	Page { peer: PeerId, id: u64, page: Result<StatementsPage, String> },
}

struct Worker {
	litep2p: Litep2p,
	handle: NotificationHandle,
	store: Arc<dyn StatementStore>,
	/// The highest version offered: the main protocol's.
	version: Version,
	shared: Arc<Shared>,
	watch: Box<dyn StatementSubscription>,
	watch_queue_bytes: usize,
	core: Core<PeerId>,
	peerset: Peerset<PeerId>,
	discovery: Discovery,
	origin: Instant,
	sinks: BTreeMap<PeerId, NotificationSink>,
	validate_tx: mpsc::UnboundedSender<validate::Pending>,
	verdict_rx: mpsc::UnboundedReceiver<validate::Verdict>,
	done_tx: mpsc::UnboundedSender<Done>,
	done_rx: mpsc::UnboundedReceiver<Done>,
	interest_rx: Option<mpsc::UnboundedReceiver<crate::affinity::AffinityFilter>>,
	/// The transports' bounds on accepted connections, read into the metrics each tick.
	inbound: Arc<InboundLimits>,
	/// The route protocol's name: identify tells which peers are routed nodes.
	route_protocol: ProtocolName,
	/// To the route task, when this node routes.
	route_tx: Option<mpsc::UnboundedSender<route::Identified>>,
	/// Addresses the route task needs litep2p to know before it dials.
	addresses_rx: Option<mpsc::UnboundedReceiver<route::AddAddresses>>,
}

impl Worker {
	fn now(&self) -> Time {
		self.origin.elapsed()
	}

	async fn run(mut self) {
		let mut slots = tokio::time::interval(SLOTS_TICK);
		slots.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
		loop {
			let wakeup = tokio::time::Instant::from_std(self.origin + self.core.next_wakeup());
			let accepting = self.core.accepts_notifications();
			tokio::select! {
				event = self.litep2p.next_event() => match event {
					Some(event) => self.on_litep2p(event),
					None => return,
				},
				event = self.handle.next(), if accepting => match event {
					Some(event) => self.on_notification(event),
					None => return,
				},
				_ = self.watch.wait_live() => {
					self.on_admitted();
				}
				Some(verdict) = self.verdict_rx.recv() => {
					let validate::Verdict { peer, hash, result } = verdict;
					self.feed(Event::Verdict { peer, hash, result });
				}
				Some(done) = self.done_rx.recv() => match done {
					Done::Sent { peer, id, outcome } => self.feed(Event::Sent { peer, id, outcome }),
					Done::Page { peer, id, page } => self.feed(Event::Page { peer, id, page }),
				},
				Some(filter) = async { match self.interest_rx.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
					self.feed(Event::Interest(filter));
				}
				Some(add) = async { match self.addresses_rx.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
					for (peer, addresses) in add.peers {
						self.litep2p.add_known_address(peer, addresses.into_iter());
					}
					let _ = add.done.send(());
				}
				event = self.discovery.next_event() => {
					self.on_identified(&event);
					let now = self.now();
					self.discovery.on_event(event, &mut self.litep2p, &mut self.peerset, now).await;
				}
				_ = tokio::time::sleep_until(wakeup) => self.feed(Event::Tick),
				_ = slots.tick() => self.on_slots_tick().await,
			}
			self.carry_out().await;
		}
	}

	/// With routing: tell the route task of a peer that identified itself as a routed node,
	/// and the core of one that keeps everything (a full node without routing).
	fn on_identified(&mut self, event: &discovery::DiscoveryEvent) {
		if self.route_tx.is_none() {
			return;
		}
		let discovery::DiscoveryEvent::Identify(
			litep2p::protocol::libp2p::identify::IdentifyEvent::PeerIdentified {
				peer,
				supported_protocols,
				listen_addresses,
				..
			},
		) = event
		else {
			return;
		};
		if !supported_protocols.contains(&self.route_protocol) {
			// Ask it for everything, so that what it was given reaches the holders, and
			// what they hold reaches it.
			let gossips = self
				.discovery
				.statement_protocols()
				.iter()
				.any(|name| supported_protocols.contains(name));
			if gossips {
				self.feed(Event::KeepsEverything { peer: *peer });
			}
			return;
		}
		if listen_addresses.is_empty() {
			return;
		}
		self.litep2p.add_known_address(*peer, listen_addresses.iter().cloned());
		let input = route::Identified { peer: *peer, addresses: listen_addresses.clone() };
		if let Some(route_tx) = &self.route_tx {
			let _ = route_tx.send(input);
		}
	}

	fn feed(&mut self, event: Event<PeerId>) {
		let now = self.now();
		self.core.handle(now, event);
	}

	/// Do what the core and the peerset asked.
	async fn carry_out(&mut self) {
		while let Some(action) = self.core.poll_action() {
			match action {
				Action::Send { peer, id, notification } => self.send(peer, id, notification),
				Action::Read { peer, id, after, upto, max_bytes } => {
					let store = self.store.clone();
					let done = self.done_tx.clone();
					tokio::spawn(async move {
						let read = tokio::task::spawn_blocking(move || {
							store.admitted_page(after, upto, max_bytes)
						})
						.await;
						let page = match read {
							Ok(Ok(page)) => Ok(page),
							Ok(Err(err)) => Err(err.to_string()),
							Err(err) => Err(err.to_string()),
						};
						let _ = done.send(Done::Page { peer, id, page });
					});
				}
				Action::Validate { peer, hash, statement } => {
					// The threads end only with the worker.
					let _ = self.validate_tx.send(validate::Pending { peer, hash, statement });
				}
				Action::Close { peer } => {
					self.sinks.remove(&peer);
					self.set_stream(peer, None);
					self.handle.close_substream(peer).await;
				}
				Action::Ban { peer, until, reason: _ } => {
					self.sinks.remove(&peer);
					self.set_stream(peer, None);
					self.peerset.banned(peer, until);
					self.handle.close_substream(peer).await;
				}
			}
		}
		while let Some(PeersetAction::Open(peer)) = self.peerset.poll_action() {
			log::debug!(target: LOG, "Opening a statement stream to {peer}");
			if self.handle.try_open_substream_batch(std::iter::once(peer)).is_err() {
				let _ = self.handle.open_substream(peer).await;
			}
		}
	}

	fn send(&mut self, peer: PeerId, id: u64, notification: Vec<u8>) {
		let Some(sink) = self.sinks.get(&peer).cloned() else {
			let _ = self.done_tx.send(Done::Sent { peer, id, outcome: SendOutcome::Failed });
			return;
		};
		let done = self.done_tx.clone();
		let metrics = self.shared.metrics.clone();
		tokio::spawn(async move {
			let len = notification.len();
			let started = Instant::now();
			let sent =
				tokio::time::timeout(SEND_TIMEOUT, sink.send_async_notification(notification))
					.await;
			let outcome = match sent {
				Ok(Ok(())) => {
					metrics.bytes_sent.add(len as u64);
					metrics.send_latency.observe(started.elapsed().as_secs_f64());
					SendOutcome::Delivered
				}
				Ok(Err(_)) => SendOutcome::Failed,
				Err(_) => SendOutcome::TimedOut,
			};
			let _ = done.send(Done::Sent { peer, id, outcome });
		});
	}

	/// Hand the core what the store admitted; renew the watch if it fell behind.
	fn on_admitted(&mut self) -> bool {
		loop {
			match self.watch.try_next_live(MAX_NOTIFICATION_SIZE) {
				Ok(admitted) if admitted.is_empty() => return true,
				Ok(admitted) => self.feed(Event::Admitted(admitted)),
				Err(err) => {
					log::warn!(target: LOG, "Propagation fell behind the store ({err})");
					match self.store.watch_admissions(self.watch_queue_bytes) {
						Ok(watch) => self.watch = watch,
						Err(err) => {
							log::error!(target: LOG, "Cannot watch the store for new statements: {err}");
							return false;
						}
					}
					let upto = self.store.admission_watermark();
					self.feed(Event::WatchRenewed { upto });
					return false;
				}
			}
		}
	}

	async fn on_slots_tick(&mut self) {
		// Every statement up to the watermark was admitted before it was read: once the watch
		// is drained, a later lag needs to catch peers up only from here.
		let upto = self.store.admission_watermark();
		if self.on_admitted() {
			self.feed(Event::CaughtUp { upto });
		}
		let now = self.now();
		self.peerset.tick(now);
		let (inbound, outbound) = self.peerset.open_streams();
		let metrics = &self.shared.metrics;
		metrics.discovered_peers.set(self.peerset.known() as u64);
		metrics.routing_connected_peers.set((outbound + inbound) as u64);
		metrics.inbound_connections.set(self.inbound.open() as u64);
		metrics.inbound_refused_address.set(self.inbound.refused_per_address());
		metrics.inbound_refused_total.set(self.inbound.refused_total());
		metrics.accept_errors.set(self.inbound.accept_errors());
		self.discovery.tick(now, outbound + inbound).await;
	}

	fn set_stream(&self, peer: PeerId, stream: Option<(Version, Role)>) {
		if let Some(info) = self.shared.peers.lock().get_mut(&peer) {
			info.statement_stream = stream;
		}
	}

	fn on_litep2p(&mut self, event: Litep2pEvent) {
		match event {
			Litep2pEvent::ConnectionEstablished { peer, endpoint } => {
				let dialed = matches!(endpoint, litep2p::transport::Endpoint::Dialer { .. });
				let address = endpoint.address().clone();
				log::debug!(target: LOG, "Connected to {peer} at {address}");
				self.shared.peers.lock().insert(
					peer,
					PeerInfo { peer_id: peer, dialed, address, statement_stream: None },
				);
			}
			Litep2pEvent::ConnectionClosed { peer, .. } => {
				log::debug!(target: LOG, "Disconnected from {peer}");
				self.shared.peers.lock().remove(&peer);
			}
			Litep2pEvent::DialFailure { address, error } => {
				log::debug!(target: LOG, "Cannot dial {address}: {error:?}");
			}
			Litep2pEvent::ListDialFailures { errors } => {
				for (address, error) in errors {
					log::debug!(target: LOG, "Cannot dial {address}: {error:?}");
				}
			}
		}
	}

	fn on_notification(&mut self, event: NotificationEvent) {
		let now = self.now();
		match event {
			NotificationEvent::ValidateSubstream { peer, handshake, .. } => {
				let accept = Role::from_handshake(&handshake).is_some()
					&& !self.core.is_banned(&peer, now)
					&& self.peerset.accept_inbound(now, peer);
				let result =
					if accept { ValidationResult::Accept } else { ValidationResult::Reject };
				self.handle.send_validation_result(peer, result);
			}
			NotificationEvent::NotificationStreamOpened {
				peer,
				fallback,
				direction,
				handshake,
				..
			} => {
				let Some(sink) = self.handle.notification_sink(peer) else { return };
				let version = if fallback.is_some() { Version::V1 } else { self.version };
				let Some(role) = Role::from_handshake(&handshake) else {
					log::debug!(target: LOG, "Peer {peer} opened a statement stream with handshake {handshake:?}, no role; closing it");
					let _ = self.handle.try_close_substream_batch(std::iter::once(peer));
					return;
				};
				let direction = match direction {
					litep2p::protocol::notification::Direction::Inbound => Direction::Inbound,
					litep2p::protocol::notification::Direction::Outbound => Direction::Outbound,
				};
				self.peerset.opened(now, peer, direction);
				self.sinks.insert(peer, sink);
				self.set_stream(peer, Some((version, role)));
				self.core.handle(now, Event::Opened { peer, version, role });
			}
			NotificationEvent::NotificationStreamClosed { peer } => {
				self.sinks.remove(&peer);
				self.set_stream(peer, None);
				self.peerset.closed(now, peer);
				self.core.handle(now, Event::Closed { peer });
			}
			NotificationEvent::NotificationStreamOpenFailure { peer, error } => {
				log::debug!(target: LOG, "Cannot open the statement stream with {peer}: {error:?}");
				self.peerset.open_failed(now, peer);
			}
			NotificationEvent::NotificationReceived { peer, notification } => {
				self.core.handle(now, Event::Notification { peer, bytes: notification.to_vec() });
			}
		}
	}
}
