//! The gossip worker: one task owns litep2p and the statement protocol's handle and decides
//! what each peer is sent; sends run as tasks of their own (one per peer at a time);
//! received statements are checked and submitted on validation threads.

use crate::{
	identity,
	metrics::Metrics,
	rate::Bucket,
	wire::{self, MAX_NOTIFICATION_SIZE},
	Config, Error, Multiaddr, PeerId, Propagation, BANNED_STANDING, BAN_DURATION,
};
use futures::StreamExt;
use litep2p::{
	config::ConfigBuilder,
	protocol::notification::{
		ConfigBuilder as NotificationConfigBuilder, NotificationEvent, NotificationHandle,
		NotificationSink, ValidationResult,
	},
	transport::{tcp::config::Config as TcpConfig, websocket::config::Config as WsConfig},
	types::{multiaddr::Protocol, protocol::ProtocolName},
	Litep2p, Litep2pEvent,
};
use parking_lot::Mutex;
use statement_primitives::{Hash, StatementStore, StatementSubscription};
use std::{
	collections::{HashMap, HashSet, VecDeque},
	sync::Arc,
	time::{Duration, Instant},
};
use tokio::sync::mpsc;

mod receive;
mod send;

use receive::{Pending, Verdict};
use send::{Item, Sent, Sync};

/// Log target.
const LOG: &str = "statement-gossip";

/// How often unconnected boot and reserved nodes are dialled again, bans expire and
/// forgotten sources are purged.
const HOUSEKEEPING: Duration = Duration::from_secs(2);

/// How long the peers a statement came from are remembered, for it not to be sent back.
const SOURCES_KEPT: Duration = Duration::from_secs(60);

/// A connected peer, as `system_peers` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerInfo {
	/// Its PeerId.
	pub peer_id: PeerId,
	/// Whether we dialled it.
	pub dialed: bool,
	/// The address of the connection.
	pub address: Multiaddr,
	/// Whether its statement stream is open.
	pub statement_stream: bool,
}

/// What the node sees of the running network.
pub struct Network {
	local_peer_id: PeerId,
	listen_addresses: Vec<Multiaddr>,
	shared: Arc<Shared>,
	task: Mutex<Option<tokio::task::JoinHandle<()>>>,
	/// Validation threads: they hold the store until they end.
	validators: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

struct Shared {
	metrics: Metrics,
	peers: Mutex<HashMap<PeerId, PeerInfo>>,
}

impl Network {
	/// This node's PeerId.
	pub fn local_peer_id(&self) -> PeerId {
		self.local_peer_id
	}

	/// The addresses litep2p listens on (ports resolved), each ending in `/p2p/<PeerId>`.
	pub fn listen_addresses(&self) -> &[Multiaddr] {
		&self.listen_addresses
	}

	/// The connected peers.
	pub fn peers(&self) -> Vec<PeerInfo> {
		let mut peers: Vec<PeerInfo> = self.shared.peers.lock().values().cloned().collect();
		peers.sort_by_key(|peer| peer.peer_id);
		peers
	}

	/// Peers with an open statement stream.
	pub fn statement_peers(&self) -> usize {
		self.shared.metrics.peers.get() as usize
	}

	/// The gossip metrics.
	pub fn metrics(&self) -> &Metrics {
		&self.shared.metrics
	}
}

impl Network {
	/// Stop networking and wait until nothing of it holds the store any more (the worker and
	/// the validation threads, which end once the worker's queue to them is gone).
	pub async fn stop(&self) {
		let task = self.task.lock().take();
		if let Some(task) = task {
			task.abort();
			let _ = task.await;
		}
		let validators = std::mem::take(&mut *self.validators.lock());
		let joined = tokio::task::spawn_blocking(move || {
			for thread in validators {
				let _ = thread.join();
			}
		});
		let _ = joined.await;
	}
}

impl Drop for Network {
	/// Without [`Network::stop`], the worker ends on its own soon after; the validation
	/// threads then end too.
	fn drop(&mut self) {
		if let Some(task) = self.task.lock().take() {
			task.abort();
		}
	}
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
	let (notification, handle) = NotificationConfigBuilder::new(ProtocolName::from(
		wire::protocol_name(&config.genesis_hash),
	))
	.with_max_size(MAX_NOTIFICATION_SIZE)
	.with_handshake(vec![1])
	.with_auto_accept_inbound(false)
	.with_async_channel_size(2)
	.with_sync_channel_size(2)
	.build();
	let litep2p_config = ConfigBuilder::new()
		.with_keypair(keypair)
		.with_tcp(TcpConfig { listen_addresses: tcp, nodelay: true, ..Default::default() })
		.with_websocket(WsConfig { listen_addresses: ws, nodelay: true, ..Default::default() })
		.with_notification_protocol(notification)
		.build();
	let litep2p = Litep2p::new(litep2p_config).map_err(|err| Error::Start(err.to_string()))?;
	let listen_addresses: Vec<Multiaddr> = litep2p.listen_addresses().cloned().collect();
	for address in &listen_addresses {
		log::info!(target: LOG, "Listening for peers on {address}");
	}
	let shared =
		Arc::new(Shared { metrics: Metrics::default(), peers: Mutex::new(HashMap::new()) });
	let watch = store.watch_admissions(config.watch_queue_bytes)?;
	let live_since = store.admission_watermark();
	let validation = receive::start_validation(&store, config.validation_queue, config.source)?;

	let mut known = HashSet::new();
	for address in config.boot_nodes.iter().chain(&config.reserved_nodes) {
		if let Some(peer) = PeerId::try_from_multiaddr(address) {
			if peer != local_peer_id {
				known.insert(peer);
			}
		}
	}
	let (sent_tx, sent_rx) = mpsc::unbounded_channel();
	let worker = Worker {
		litep2p,
		handle,
		store,
		config,
		shared: shared.clone(),
		watch,
		live_since,
		peers: HashMap::new(),
		bans: HashMap::new(),
		sources: HashMap::new(),
		pending: HashSet::new(),
		validate_tx: validation.queue,
		verdict_rx: validation.verdicts,
		sent_tx,
		sent_rx,
		in_flight_live: 0,
		in_flight_sync: 0,
		recent: Vec::new(),
		flush_at: None,
		known_peers: known,
	};
	let task = tokio::spawn(worker.run());
	Ok(Network {
		local_peer_id,
		listen_addresses,
		shared,
		task: Mutex::new(Some(task)),
		validators: Mutex::new(validation.threads),
	})
}

struct Peer {
	sink: NotificationSink,
	outbox: VecDeque<Arc<Item>>,
	/// A notification is being sent.
	busy: bool,
	/// Live and sync take turns: whether the last send was a sync one.
	last_was_sync: bool,
	sync: Option<Sync>,
	bucket: Bucket,
	standing: i64,
}

struct Worker {
	litep2p: Litep2p,
	handle: NotificationHandle,
	store: Arc<dyn StatementStore>,
	config: Config,
	shared: Arc<Shared>,
	watch: Box<dyn StatementSubscription>,
	/// A watermark up to which every admission was queued for peers: after a lag, peers are
	/// caught up from here.
	live_since: u64,
	peers: HashMap<PeerId, Peer>,
	bans: HashMap<PeerId, Instant>,
	/// Peers each recently received statement came from, and when.
	sources: HashMap<Hash, (Vec<PeerId>, Instant)>,
	/// Received statements queued for validation.
	pending: HashSet<Hash>,
	validate_tx: mpsc::Sender<Pending>,
	verdict_rx: mpsc::UnboundedReceiver<Verdict>,
	sent_tx: mpsc::UnboundedSender<Sent>,
	sent_rx: mpsc::UnboundedReceiver<Sent>,
	in_flight_live: usize,
	in_flight_sync: usize,
	/// Reference propagation: what was admitted since the last tick, with its sources.
	recent: Vec<(Arc<Item>, Vec<PeerId>)>,
	/// When the coalescing window ends (immediate propagation).
	flush_at: Option<tokio::time::Instant>,
	/// Boot and reserved nodes: dialled while not connected.
	known_peers: HashSet<PeerId>,
}

impl Worker {
	async fn run(mut self) {
		self.dial_known().await;
		let mut housekeeping = tokio::time::interval(HOUSEKEEPING);
		housekeeping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
		let mut tick = tokio::time::interval(Duration::from_secs(1));
		tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
		let reference = self.config.propagation == Propagation::Reference;
		loop {
			let flush_at = self.flush_at;
			tokio::select! {
				event = self.litep2p.next_event() => match event {
					Some(event) => self.on_litep2p(event),
					None => return,
				},
				event = self.handle.next() => match event {
					Some(event) => self.on_notification(event).await,
					None => return,
				},
				_ = self.watch.wait_live() => {
					self.on_admitted();
				}
				Some(verdict) = self.verdict_rx.recv() => self.on_verdict(verdict),
				Some(sent) = self.sent_rx.recv() => self.on_sent(sent),
				_ = async { tokio::time::sleep_until(flush_at.unwrap_or_else(tokio::time::Instant::now)).await }, if flush_at.is_some() => {
					self.flush_at = None;
					self.pump();
				}
				_ = tick.tick(), if reference => self.tick(),
				_ = housekeeping.tick() => self.housekeeping().await,
			}
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
					PeerInfo { peer_id: peer, dialed, address, statement_stream: false },
				);
				if self.may_connect(&peer) {
					// Both sides open; litep2p settles on one stream either way.
					let _ = self.handle.try_open_substream_batch(std::iter::once(peer));
				}
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

	fn may_connect(&self, peer: &PeerId) -> bool {
		if self.bans.get(peer).is_some_and(|until| *until > Instant::now()) {
			return false;
		}
		!self.config.reserved_only || self.known_peers.contains(peer)
	}

	async fn on_notification(&mut self, event: NotificationEvent) {
		match event {
			NotificationEvent::ValidateSubstream { peer, handshake, .. } => {
				let result = if self.may_connect(&peer) && handshake.len() == 1 {
					ValidationResult::Accept
				} else {
					ValidationResult::Reject
				};
				self.handle.send_validation_result(peer, result);
			}
			NotificationEvent::NotificationStreamOpened { peer, .. } => {
				let Some(sink) = self.handle.notification_sink(peer) else { return };
				if !self.may_connect(&peer) {
					self.handle.close_substream(peer).await;
					return;
				}
				// The peer gets what is stored up to now by initial sync, and what is admitted
				// from now on by propagation; a statement admitted in between comes twice at
				// worst, and the peer skips it as known.
				let upto = self.store.admission_watermark();
				let sync = Sync { ranges: VecDeque::from([(0, upto)]), started: Instant::now() };
				log::info!(target: LOG, "Statement stream open with {peer}; initial sync of up to #{upto}");
				self.peers.insert(
					peer,
					Peer {
						sink,
						outbox: VecDeque::new(),
						busy: false,
						last_was_sync: false,
						sync: Some(sync),
						bucket: Bucket::new(self.config.rate_limit, Instant::now()),
						standing: 0,
					},
				);
				if let Some(info) = self.shared.peers.lock().get_mut(&peer) {
					info.statement_stream = true;
				}
				self.update_peer_gauges();
				self.pump();
			}
			NotificationEvent::NotificationStreamClosed { peer } => self.forget(peer),
			NotificationEvent::NotificationStreamOpenFailure { peer, error } => {
				log::debug!(target: LOG, "Cannot open the statement stream with {peer}: {error:?}");
			}
			NotificationEvent::NotificationReceived { peer, notification } => {
				self.on_statements(peer, &notification).await;
			}
		}
	}

	fn forget(&mut self, peer: PeerId) {
		if let Some(gone) = self.peers.remove(&peer) {
			log::info!(target: LOG, "Statement stream closed with {peer}");
			if let Some(sync) = gone.sync {
				self.shared
					.metrics
					.initial_sync_abandoned
					.observe(sync.started.elapsed().as_secs_f64());
			}
		}
		if let Some(info) = self.shared.peers.lock().get_mut(&peer) {
			info.statement_stream = false;
		}
		self.update_peer_gauges();
	}

	fn update_peer_gauges(&self) {
		let metrics = &self.shared.metrics;
		metrics.peers.set(self.peers.len() as u64);
		metrics
			.initial_sync_peers
			.set(self.peers.values().filter(|p| p.sync.is_some()).count() as u64);
	}

	/// Drop a peer for misbehaving, and refuse it for [`BAN_DURATION`].
	async fn ban(&mut self, peer: PeerId, why: &str) {
		log::warn!(target: LOG, "Dropping peer {peer} for {}s: {why}", BAN_DURATION.as_secs());
		self.bans.insert(peer, Instant::now() + BAN_DURATION);
		self.shared.metrics.peers_banned.add(1);
		self.forget(peer);
		self.handle.close_substream(peer).await;
	}

	async fn housekeeping(&mut self) {
		// Every statement up to the watermark was queued before it was read: once the queue
		// is drained, a later lag needs to catch peers up only from here.
		let upto = self.store.admission_watermark();
		if self.on_admitted() {
			self.live_since = upto;
		}
		let now = Instant::now();
		self.bans.retain(|_, until| *until > now);
		self.sources.retain(|_, (_, since)| now.duration_since(*since) < SOURCES_KEPT);
		let to_ban: Vec<PeerId> = self
			.peers
			.iter()
			.filter(|(peer, state)| {
				state.standing < BANNED_STANDING || self.bans.contains_key(peer)
			})
			.map(|(peer, _)| *peer)
			.collect();
		for peer in to_ban {
			self.ban(peer, "too many invalid statements").await;
		}
		self.dial_known().await;
	}

	/// Dial the boot and reserved nodes that are not connected (nor banned).
	async fn dial_known(&mut self) {
		let connected: HashSet<PeerId> = self.shared.peers.lock().keys().copied().collect();
		let addresses: Vec<Multiaddr> = self
			.config
			.boot_nodes
			.iter()
			.chain(&self.config.reserved_nodes)
			.filter(|address| {
				PeerId::try_from_multiaddr(address).is_some_and(|peer| {
					!connected.contains(&peer)
						&& !self.bans.contains_key(&peer)
						&& self.known_peers.contains(&peer)
				})
			})
			.cloned()
			.collect();
		for address in addresses {
			if let Err(err) = self.litep2p.dial_address(address.clone()).await {
				log::debug!(target: LOG, "Cannot dial {address}: {err}");
			}
		}
	}
}
