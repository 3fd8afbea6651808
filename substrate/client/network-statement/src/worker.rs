//! The gossip worker: one task owns litep2p and the statement protocol's handle and decides
//! what each peer is sent; sends run as tasks of their own (one per peer at a time);
//! received statements are checked and submitted on validation threads.

use crate::{
	identity,
	metrics::Metrics,
	rate::Bucket,
	wire::{self, MAX_NOTIFICATION_SIZE},
	Config, Error, Multiaddr, PeerId, Propagation, BANNED_STANDING, BAN_DURATION,
	INITIAL_SYNC_RESERVED_BYTES, MAX_IN_FLIGHT_BYTES, MAX_OUTBOX, SEND_TIMEOUT,
};
use codec::Decode;
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
use statement_primitives::{
	hash_encoded, Encoded, Hash, Statement, StatementStore, StatementSubscription, SubmitResult,
};
use std::{
	collections::{HashMap, HashSet, VecDeque},
	sync::Arc,
	time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};
use tokio::sync::mpsc;

/// Log target.
const LOG: &str = "statement-gossip";

/// How often unconnected boot and reserved nodes are dialled again, bans expire and
/// forgotten sources are purged.
const HOUSEKEEPING: Duration = Duration::from_secs(2);

/// Threads checking signatures and submitting received statements.
const VALIDATION_THREADS: usize = 2;

/// Longest a full validation queue holds back received notifications before dropping.
const VALIDATION_WAIT: Duration = Duration::from_secs(2);

/// How long the peers a statement came from are remembered, for it not to be sent back.
const SOURCES_KEPT: Duration = Duration::from_secs(60);

/// Standing changes, as upstream's reputation changes.
mod standing {
	pub const NEW: i64 = 256;
	pub const KNOWN: i64 = 16;
	pub const INVALID: i64 = -4096;
	pub const BAD_MESSAGE: i64 = -4096;
}

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

	let (validate_tx, validate_rx) = mpsc::channel(config.validation_queue.max(1));
	let (verdict_tx, verdict_rx) = mpsc::unbounded_channel();
	let validate_rx = Arc::new(std::sync::Mutex::new(validate_rx));
	let mut validators = Vec::with_capacity(VALIDATION_THREADS);
	for n in 0..VALIDATION_THREADS {
		let validate_rx = validate_rx.clone();
		let verdict_tx = verdict_tx.clone();
		let store = store.clone();
		let source = config.source;
		let thread = std::thread::Builder::new()
			.name(format!("statement-validate-{n}"))
			.spawn(move || loop {
				let job = match validate_rx.lock() {
					Ok(mut rx) => rx.blocking_recv(),
					Err(_) => return,
				};
				let Some(Pending { peer, hash, statement }) = job else { return };
				let result = store.submit(statement, source);
				if verdict_tx.send(Verdict { peer, hash, result }).is_err() {
					return;
				}
			})
			.map_err(|err| Error::Start(format!("cannot start a validation thread: {err}")))?;
		validators.push(thread);
	}

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
		validate_tx,
		verdict_rx,
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
		validators: Mutex::new(validators),
	})
}

/// A received statement waiting for its check.
struct Pending {
	peer: PeerId,
	hash: Hash,
	statement: Statement,
}

/// What the store said of a received statement.
struct Verdict {
	peer: PeerId,
	hash: Hash,
	result: SubmitResult,
}

/// A statement to propagate, shared by every outbox it waits in.
struct Item {
	encoding: Encoded,
	expires: u64,
}

/// What a send task reports when done.
enum Sent {
	Live { peer: PeerId, bytes: usize, ok: Result<(), SendFailure> },
	Sync { peer: PeerId, reserved: usize, outcome: Result<SyncStep, SendFailure> },
}

enum SendFailure {
	Network,
	Timeout,
	Store(String),
}

/// How far an initial-sync send got.
struct SyncStep {
	/// The cursor to go on from; `None` when the range is done.
	next: Option<u64>,
}

/// The initial sync of one peer: journal ranges `(after, upto]` left to send.
struct Sync {
	ranges: VecDeque<(u64, u64)>,
	started: Instant,
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

fn now_secs() -> u64 {
	SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
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

	async fn on_statements(&mut self, peer: PeerId, notification: &[u8]) {
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		metrics.bytes_received.add(notification.len() as u64);
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let statements = match wire::decode(notification) {
			Ok(statements) => statements,
			Err(err) => {
				metrics.bad_notifications.add(1);
				log::debug!(target: LOG, "Peer {peer} sent a notification that {err}");
				state.standing += standing::BAD_MESSAGE;
				if state.standing < BANNED_STANDING {
					self.ban(peer, "too many bad notifications").await;
				}
				return;
			}
		};
		metrics.received.add(statements.len() as u64);
		if !state.bucket.take(statements.len(), Instant::now()) {
			metrics.flooding_detected.add(1);
			let limit = self.config.rate_limit;
			self.ban(peer, &format!("statement flooding (over {limit} statements/s)")).await;
			return;
		}
		for (statement, encoding) in statements {
			let hash = hash_encoded(&encoding);
			if self.store.has_statement(&hash) {
				metrics.known_received.add(1);
				continue;
			}
			let sources = self.sources.entry(hash).or_insert_with(|| (Vec::new(), Instant::now()));
			if !sources.0.contains(&peer) {
				sources.0.push(peer);
			}
			if !self.pending.insert(hash) {
				continue;
			}
			let queued = match self.validate_tx.try_send(Pending { peer, hash, statement }) {
				Ok(()) => true,
				// Waiting holds back every peer's notifications, which slows honest senders
				// down through the transport's backpressure instead of losing statements.
				Err(mpsc::error::TrySendError::Full(job)) => {
					let room = tokio::time::timeout(VALIDATION_WAIT, self.validate_tx.send(job));
					matches!(room.await, Ok(Ok(())))
				}
				Err(mpsc::error::TrySendError::Closed(_)) => false,
			};
			if queued {
				metrics.pending_validations.set(self.pending.len() as u64);
			} else {
				self.pending.remove(&hash);
				metrics.ignored.add(1);
			}
		}
	}

	fn on_verdict(&mut self, verdict: Verdict) {
		let Verdict { peer, hash, result } = verdict;
		self.pending.remove(&hash);
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		metrics.pending_validations.set(self.pending.len() as u64);
		let change = match &result {
			SubmitResult::New => standing::NEW,
			SubmitResult::Known => standing::KNOWN,
			SubmitResult::Invalid(reason) => {
				metrics.invalid_received.add(1);
				log::debug!(target: LOG, "Peer {peer} sent an invalid statement: {reason:?}");
				standing::INVALID
			}
			_ => 0,
		};
		if !matches!(result, SubmitResult::New) {
			// Only admitted statements are propagated, so only they need their sources.
			self.sources.remove(&hash);
		}
		let Some(state) = self.peers.get_mut(&peer) else { return };
		state.standing = state.standing.saturating_add(change);
		if state.standing < BANNED_STANDING {
			// Dropped on the next housekeeping pass, which may wait on the handle.
			self.bans.insert(peer, Instant::now() + BAN_DURATION);
		}
	}

	/// Statements the store admitted: queue them for every peer they did not come from.
	/// False if the watch had fallen behind and was renewed.
	fn on_admitted(&mut self) -> bool {
		loop {
			let admitted = match self.watch.try_next_live(MAX_NOTIFICATION_SIZE) {
				Ok(admitted) => admitted,
				Err(err) => {
					self.renew_watch(err);
					return false;
				}
			};
			if admitted.is_empty() {
				break;
			}
			for encoding in admitted {
				let expires = Statement::decode(&mut &encoding[..])
					.map_or(0, |statement| u64::from(statement.expiration_timestamp_secs()));
				let hash = hash_encoded(&encoding);
				let item = Arc::new(Item { encoding, expires });
				let sources =
					self.sources.remove(&hash).map(|(peers, _)| peers).unwrap_or_default();
				match self.config.propagation {
					Propagation::Immediate(_) => self.queue(item, &sources),
					Propagation::Reference => self.recent.push((item, sources)),
				}
			}
		}
		if let Propagation::Immediate(window) = self.config.propagation {
			if self.flush_at.is_none() {
				self.flush_at = Some(tokio::time::Instant::now() + window);
			}
		}
		true
	}

	/// Queue a statement for every peer but its sources.
	fn queue(&mut self, item: Arc<Item>, sources: &[PeerId]) {
		for (peer, state) in self.peers.iter_mut() {
			if sources.contains(peer) {
				continue;
			}
			if state.outbox.len() >= MAX_OUTBOX {
				state.outbox.pop_front();
				self.shared.metrics.outbox_full.add(1);
			}
			state.outbox.push_back(item.clone());
		}
	}

	/// Reference propagation: queue what was admitted since the last tick, and send.
	fn tick(&mut self) {
		for (item, sources) in std::mem::take(&mut self.recent) {
			self.queue(item, &sources);
		}
		self.pump();
	}

	/// The store dropped gossip's watch for falling behind: watch again, and send every peer
	/// what was admitted since the old watch began, from the journal.
	fn renew_watch(&mut self, err: statement_primitives::Error) {
		log::warn!(target: LOG, "Propagation fell behind the store ({err}); catching peers up from the journal");
		match self.store.watch_admissions(self.config.watch_queue_bytes) {
			Ok(watch) => self.watch = watch,
			Err(err) => {
				log::error!(target: LOG, "Cannot watch the store for new statements: {err}");
				return;
			}
		}
		let upto = self.store.admission_watermark();
		let from = std::mem::replace(&mut self.live_since, upto);
		for state in self.peers.values_mut() {
			state.outbox.clear();
			let sync = state
				.sync
				.get_or_insert_with(|| Sync { ranges: VecDeque::new(), started: Instant::now() });
			sync.ranges.push_back((from, upto));
		}
		self.update_peer_gauges();
		self.pump();
	}

	fn on_sent(&mut self, sent: Sent) {
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		let (peer, result) = match sent {
			Sent::Live { peer, bytes, ok } => {
				self.in_flight_live -= bytes;
				metrics.propagation_in_flight.set(self.in_flight_live as u64);
				(peer, ok)
			}
			Sent::Sync { peer, reserved, outcome } => {
				self.in_flight_sync -= reserved;
				metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
				match outcome {
					Ok(step) => {
						self.sync_advanced(peer, step);
						(peer, Ok(()))
					}
					Err(failure) => (peer, Err(failure)),
				}
			}
		};
		if let Some(state) = self.peers.get_mut(&peer) {
			state.busy = false;
		}
		match result {
			Ok(()) => {}
			Err(SendFailure::Network) => metrics.failed_network.add(1),
			Err(SendFailure::Timeout) => {
				metrics.failed_timeout.add(1);
				log::warn!(target: LOG, "Peer {peer} took over {}s to take a notification; dropping it", SEND_TIMEOUT.as_secs());
				self.forget(peer);
				let _ = self.handle.try_close_substream_batch(std::iter::once(peer));
			}
			Err(SendFailure::Store(err)) => {
				// The cursor stays: the sync resumes from it on the next turn.
				log::warn!(target: LOG, "Cannot read statements for the initial sync of {peer}: {err}");
			}
		}
		self.pump();
	}

	fn sync_advanced(&mut self, peer: PeerId, step: SyncStep) {
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let Some(sync) = state.sync.as_mut() else { return };
		match step.next {
			Some(next) => {
				if let Some(range) = sync.ranges.front_mut() {
					range.0 = next;
				}
			}
			None => {
				sync.ranges.pop_front();
			}
		}
		if sync.ranges.is_empty() {
			let elapsed = sync.started.elapsed();
			state.sync = None;
			self.shared.metrics.initial_sync_completed.observe(elapsed.as_secs_f64());
			log::info!(target: LOG, "Initial sync of {peer} done in {:.1}s", elapsed.as_secs_f64());
			self.update_peer_gauges();
		}
	}

	/// Start a send to every idle peer with something to send, within the in-flight caps.
	fn pump(&mut self) {
		let peers: Vec<PeerId> = self.peers.keys().copied().collect();
		for peer in peers {
			let Some(state) = self.peers.get(&peer) else { continue };
			if state.busy {
				continue;
			}
			let has_live = !state.outbox.is_empty() && self.flush_at.is_none();
			let has_sync = state.sync.is_some();
			let sync_turn = has_sync && (!has_live || !state.last_was_sync);
			if sync_turn
				&& self.in_flight_live + self.in_flight_sync + MAX_NOTIFICATION_SIZE
					<= MAX_IN_FLIGHT_BYTES
			{
				self.send_sync(peer);
			} else if has_live {
				self.send_live(peer);
			}
		}
	}

	fn send_live(&mut self, peer: PeerId) {
		let shared = self.shared.clone();
		let metrics = &shared.metrics;
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let now = now_secs();
		let mut chunk: Vec<Arc<Item>> = Vec::new();
		let mut bytes = 5;
		while let Some(item) = state.outbox.front() {
			if item.expires <= now {
				state.outbox.pop_front();
				continue;
			}
			if !wire::fits_alone(item.encoding.len()) {
				metrics.skipped_oversized.add(1);
				state.outbox.pop_front();
				continue;
			}
			if bytes + item.encoding.len() > MAX_NOTIFICATION_SIZE {
				break;
			}
			bytes += item.encoding.len();
			chunk.extend(state.outbox.pop_front());
		}
		if chunk.is_empty() {
			return;
		}
		let live_cap = MAX_IN_FLIGHT_BYTES - INITIAL_SYNC_RESERVED_BYTES;
		if self.in_flight_live + bytes > live_cap {
			// Over the cap: put the chunk back and wait for a send to finish.
			for item in chunk.into_iter().rev() {
				state.outbox.push_front(item);
			}
			return;
		}
		let notification = wire::encode(chunk.iter().map(|item| &item.encoding[..]));
		state.busy = true;
		state.last_was_sync = false;
		self.in_flight_live += bytes;
		metrics.propagation_in_flight.set(self.in_flight_live as u64);
		metrics.propagated.add(chunk.len() as u64);
		metrics.chunks.observe(chunk.len() as f64);
		let sink = state.sink.clone();
		let report = self.sent_tx.clone();
		let shared = self.shared.clone();
		tokio::spawn(async move {
			let ok = send(&sink, notification, &shared.metrics).await;
			let _ = report.send(Sent::Live { peer, bytes, ok });
		});
	}

	fn send_sync(&mut self, peer: PeerId) {
		let Some(state) = self.peers.get_mut(&peer) else { return };
		let Some(sync) = state.sync.as_ref() else { return };
		let Some(&(after, upto)) = sync.ranges.front() else { return };
		state.busy = true;
		state.last_was_sync = true;
		let reserved = MAX_NOTIFICATION_SIZE;
		self.in_flight_sync += reserved;
		self.shared.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
		let sink = state.sink.clone();
		let store = self.store.clone();
		let report = self.sent_tx.clone();
		let shared = self.shared.clone();
		tokio::spawn(async move {
			let outcome = sync_step(store, sink, after, upto, &shared.metrics).await;
			let _ = report.send(Sent::Sync { peer, reserved, outcome });
		});
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

/// Hand one notification to a peer's connection, within [`SEND_TIMEOUT`].
async fn send(
	sink: &NotificationSink,
	notification: Vec<u8>,
	metrics: &Metrics,
) -> Result<(), SendFailure> {
	let len = notification.len();
	let started = Instant::now();
	match tokio::time::timeout(SEND_TIMEOUT, sink.send_async_notification(notification)).await {
		Ok(Ok(())) => {
			metrics.bytes_sent.add(len as u64);
			metrics.send_latency.observe(started.elapsed().as_secs_f64());
			Ok(())
		}
		Ok(Err(_)) => Err(SendFailure::Network),
		Err(_) => Err(SendFailure::Timeout),
	}
}

/// Read the next initial-sync page of `(after, upto]` and send it.
async fn sync_step(
	store: Arc<dyn StatementStore>,
	sink: NotificationSink,
	after: u64,
	upto: u64,
	metrics: &Metrics,
) -> Result<SyncStep, SendFailure> {
	let page = tokio::task::spawn_blocking(move || {
		store.admitted_page(after, upto, MAX_NOTIFICATION_SIZE - 5)
	})
	.await
	.map_err(|err| SendFailure::Store(err.to_string()))?
	.map_err(|err| SendFailure::Store(err.to_string()))?;
	let now = now_secs();
	let mut chunk = Vec::with_capacity(page.statements.len());
	for (_, encoding) in &page.statements {
		if !wire::fits_alone(encoding.len()) {
			metrics.skipped_oversized.add(1);
			continue;
		}
		let expired = Statement::decode(&mut &encoding[..])
			.map_or(true, |statement| u64::from(statement.expiration_timestamp_secs()) <= now);
		if !expired {
			chunk.push(encoding.as_slice());
		}
	}
	if !chunk.is_empty() {
		let count = chunk.len();
		send(&sink, wire::encode(chunk.into_iter()), metrics).await?;
		metrics.initial_sync_sent.add(count as u64);
		metrics.initial_sync_bursts.add(1);
		metrics.chunks.observe(count as f64);
	}
	// An empty page with a cursor skipped statements removed since their ids were taken.
	Ok(SyncStep { next: page.next })
}
