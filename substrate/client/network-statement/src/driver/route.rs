//! The route task: topic-routed storage ([`crate::routing`]) over litep2p's request-response.
//!
//! It owns the `/statement/route/1` handle and:
//! - answers `Nearest` from its [`Known`] table, checks and submits what `Store` brings, and
//!   serves `Watch`es (a page of a topic's statements, then its new ones for the lease);
//! - watches what the store admits: a statement that did not come by `Store` is sent to the
//!   holders of each of its keys (found by [`Lookup`]s, whose answers are reused for
//!   [`RoutingConfig::refresh`]); a statement this node does not hold, and no subscription
//!   here names, is released after [`RoutingConfig::drop_after`];
//! - every `refresh`, looks each key it holds up again and pushes the key's statements to
//!   holders that were not holders before (hand-over); a key it no longer holds it pushes on
//!   and lets go;
//! - watches, on their holders, the topics subscriptions here name, unless it holds them.
//!
//! Store reads and submits run on the blocking pool and report back through a channel.

use crate::{
	core::LOG,
	interest::Interest,
	metrics::Metrics,
	rate::Bucket,
	routing::{
		self,
		wire::{self, PeerEntry, Request, Response},
		Key, Known, Lookup, RoutingConfig, ALPHA, LOOKUPS_AT_ONCE,
	},
	Multiaddr, PeerId,
};
use codec::{Decode, Encode};
use futures::StreamExt;
use litep2p::{
	protocol::request_response::{DialOptions, RequestResponseEvent, RequestResponseHandle},
	types::RequestId,
};
use statement_primitives::{
	Encoded, Hash, Statement, StatementSource, StatementStore, StatementSubscription, SubmitResult,
	Topic, TopicFilter,
};
use std::{
	collections::{BTreeMap, HashMap, HashSet, VecDeque},
	sync::Arc,
	time::{Duration, Instant},
};
use tokio::sync::{mpsc, oneshot};

/// How often the task looks at its timers.
const TICK: Duration = Duration::from_millis(250);

/// Most statements one `Store` request carries is bounded by bytes: one notification's worth.
const STORE_BYTES: usize = crate::MAX_NOTIFICATION_SIZE;

/// Hashes remembered as having come by `Store` (not forwarded again).
const MAX_ARRIVED: usize = 1 << 16;

/// Topics one peer may watch here at once, and watches in all.
const MAX_WATCHES_PER_PEER: usize = 64;
const MAX_WATCHES: usize = 1 << 16;

/// How long a peer that did not answer a lookup query is left out of lookups (unless it
/// connects and identifies itself again): other nodes keep naming a departed node until
/// they fail on it too, and asking it again would cost a timeout each time.
const FAILED_FOR: Duration = Duration::from_secs(120);

/// Keys whose hand-over this node tracks; past it, new ones are held but not handed over.
pub const MAX_HELD_KEYS: usize = 1 << 20;

/// Admitted statements waiting for their keys' lookups; past it, the oldest is decided
/// without them (kept until the next sweep).
const MAX_PARKED: usize = 1 << 16;

/// What the worker tells the route task.
pub(super) enum Input {
	/// A peer identified itself as speaking the route protocol, at these addresses (already
	/// in litep2p's address book).
	Peer { peer: PeerId, addresses: Vec<Multiaddr> },
}

/// What the route task asks of the worker: put addresses in litep2p's address book (so that
/// a request can dial the peer), then say so.
pub(super) struct AddAddresses {
	pub peers: Vec<(PeerId, Vec<Multiaddr>)>,
	pub done: oneshot::Sender<()>,
}

/// What a blocking job reports.
enum Done {
	/// A `Store` request's statements were submitted.
	Submitted { request: RequestId, accepted: u32, refused: u32 },
	/// A `Watch` page was read.
	Page { request: RequestId, statements: Vec<Vec<u8>>, more: bool },
	/// A `Watch` answer's statements were submitted here.
	Fetched,
	/// A key's statements were read, to push to these peers.
	Push { peers: Vec<PeerId>, statements: Vec<Encoded>, release: bool },
	/// Released.
	Released,
	/// The store's statements at start, to decide again.
	Existing { statements: Vec<(Hash, Encoded)>, next: Option<u64> },
}

/// What an outbound request was for.
enum Purpose {
	Nearest { key: Key },
	Store,
	Watch { topic: Topic, skip: u32 },
}

/// An answer to a lookup query that named peers new to litep2p, waiting for their addresses.
struct Answer {
	key: Key,
	from: PeerId,
	peers: Vec<(PeerId, Key)>,
}

/// An admitted statement waiting for the lookups of its keys.
struct Parked {
	hash: Hash,
	encoding: Encoded,
	topics: Vec<Topic>,
	keys: Vec<Key>,
	forward: bool,
	waiting: usize,
}

/// A key this node holds.
struct Held {
	holders: Vec<PeerId>,
	refresh_at: Instant,
}

/// A topic a subscription here names, watched on its holders.
struct Watching {
	renew_at: Instant,
}

pub(super) struct Router {
	config: RoutingConfig,
	local: PeerId,
	local_key: Key,
	handle: RequestResponseHandle,
	store: Arc<dyn StatementStore>,
	metrics: Arc<Metrics>,
	interest: Interest,
	known: Known<PeerId, Multiaddr>,
	/// Peers that failed a query, and until when they are left out.
	failed: HashMap<PeerId, Instant>,
	origin: Instant,
	input_rx: mpsc::UnboundedReceiver<Input>,
	addresses_tx: mpsc::UnboundedSender<AddAddresses>,
	admitted: Box<dyn StatementSubscription>,
	done_tx: mpsc::UnboundedSender<Done>,
	done_rx: mpsc::UnboundedReceiver<Done>,
	answers: futures::stream::FuturesUnordered<futures::future::BoxFuture<'static, Answer>>,
	pending: HashMap<RequestId, (PeerId, Purpose, Instant)>,
	lookups: HashMap<Key, Lookup<PeerId>>,
	queued_lookups: VecDeque<Key>,
	cache: HashMap<Key, (Vec<PeerId>, Instant)>,
	parked: BTreeMap<u64, Parked>,
	parked_on: HashMap<Key, Vec<u64>>,
	next_parked: u64,
	retention: VecDeque<(Instant, Hash, Vec<Topic>, Vec<Key>)>,
	releasing: Vec<Hash>,
	held: HashMap<Key, Held>,
	watching: HashMap<Topic, Watching>,
	watchers: HashMap<Topic, HashMap<PeerId, Instant>>,
	outgoing: HashMap<PeerId, Vec<Encoded>>,
	arrived: HashSet<Hash>,
	arrived_order: VecDeque<Hash>,
	buckets: HashMap<PeerId, Bucket>,
	rate_limit: u32,
}

/// Everything the route task starts from.
pub(super) struct Parts {
	pub config: RoutingConfig,
	pub local: PeerId,
	pub handle: RequestResponseHandle,
	pub store: Arc<dyn StatementStore>,
	pub metrics: Arc<Metrics>,
	pub interest: Interest,
	pub input_rx: mpsc::UnboundedReceiver<Input>,
	pub addresses_tx: mpsc::UnboundedSender<AddAddresses>,
	pub admitted: Box<dyn StatementSubscription>,
	pub rate_limit: u32,
}

impl Router {
	pub(super) fn new(parts: Parts) -> Self {
		let (done_tx, done_rx) = mpsc::unbounded_channel();
		parts.metrics.routing_enabled.set(1);
		Router {
			local_key: routing::key_of(&parts.local.to_bytes()),
			config: parts.config,
			local: parts.local,
			handle: parts.handle,
			store: parts.store,
			metrics: parts.metrics,
			interest: parts.interest,
			known: Known::new(),
			failed: HashMap::new(),
			origin: Instant::now(),
			input_rx: parts.input_rx,
			addresses_tx: parts.addresses_tx,
			admitted: parts.admitted,
			done_tx,
			done_rx,
			answers: futures::stream::FuturesUnordered::new(),
			pending: HashMap::new(),
			lookups: HashMap::new(),
			queued_lookups: VecDeque::new(),
			cache: HashMap::new(),
			parked: BTreeMap::new(),
			parked_on: HashMap::new(),
			next_parked: 0,
			retention: VecDeque::new(),
			releasing: Vec::new(),
			held: HashMap::new(),
			watching: HashMap::new(),
			watchers: HashMap::new(),
			outgoing: HashMap::new(),
			arrived: HashSet::new(),
			arrived_order: VecDeque::new(),
			buckets: HashMap::new(),
			rate_limit: parts.rate_limit,
		}
	}

	pub(super) async fn run(mut self) {
		log::info!(
			target: LOG,
			"Topic-routed storage: each statement kept by the {} nodes nearest its topics",
			self.config.replication_factor
		);
		self.read_existing(None);
		let mut tick = tokio::time::interval(TICK);
		tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
		loop {
			tokio::select! {
				event = self.handle.next() => match event {
					Some(event) => self.on_event(event),
					None => return,
				},
				_ = self.admitted.wait_live() => self.on_admitted(),
				Some(input) = self.input_rx.recv() => match input {
					Input::Peer { peer, addresses } => {
						self.failed.remove(&peer);
						let now = self.origin.elapsed();
						self.known.learn(peer, routing::key_of(&peer.to_bytes()), addresses, now);
					}
				},
				Some(done) = self.done_rx.recv() => self.on_done(done),
				Some(answer) = self.answers.next(), if !self.answers.is_empty() => {
					self.on_answer(answer.key, answer.from, answer.peers);
				}
				_ = tick.tick() => self.on_tick(),
			}
			self.flush();
		}
	}

	// ---- inbound requests ----

	fn on_event(&mut self, event: RequestResponseEvent) {
		match event {
			RequestResponseEvent::RequestReceived { peer, request_id, request, .. } => {
				match wire::decode_request(&request) {
					Ok(request) => self.on_request(peer, request_id, request),
					Err(err) => {
						log::debug!(target: LOG, "Undecodable route request from {peer}: {err}");
						self.handle.reject_request(request_id);
					}
				}
			}
			RequestResponseEvent::ResponseReceived { peer, request_id, response, .. } => {
				let Some((_, purpose, _)) = self.pending.remove(&request_id) else { return };
				match wire::decode_response(&response) {
					Ok(response) => self.on_response(peer, purpose, response),
					Err(err) => {
						log::debug!(target: LOG, "Undecodable route answer from {peer}: {err}");
						self.on_failure(peer, purpose);
					}
				}
			}
			RequestResponseEvent::RequestFailed { peer, request_id, error } => {
				let Some((_, purpose, _)) = self.pending.remove(&request_id) else { return };
				log::debug!(target: LOG, "Route request to {peer} failed: {error:?}");
				self.on_failure(peer, purpose);
			}
		}
	}

	fn respond(&mut self, request: RequestId, response: Response) {
		self.handle.send_response(request, response.encode());
	}

	fn on_request(&mut self, peer: PeerId, request_id: RequestId, request: Request) {
		match request {
			Request::Nearest { key } => {
				let k = self.config.width().min(wire::MAX_PEERS);
				let peers = self
					.known
					.nearest(&key, k, Some(&peer))
					.into_iter()
					.filter_map(|(near, _)| {
						let (_, addresses) = self.known.get(&near)?;
						Some(PeerEntry {
							peer: near.to_bytes(),
							addresses: addresses
								.iter()
								.take(wire::MAX_ADDRESSES)
								.map(|address| address.to_vec())
								.collect(),
						})
					})
					.collect();
				self.respond(request_id, Response::Nearest { peers });
			}
			Request::Store { statements } => {
				let now = self.origin.elapsed();
				let rate = self.rate_limit;
				if self.buckets.len() > 4 * 1024 && !self.buckets.contains_key(&peer) {
					self.buckets.clear();
				}
				let bucket = self.buckets.entry(peer).or_insert_with(|| Bucket::new(rate, now));
				if !bucket.take(statements.len(), now) {
					self.metrics.flooding_detected.add(1);
					let reason = "over the rate limit".to_string();
					self.respond(request_id, Response::Refused { reason });
					return;
				}
				let mut decoded = Vec::with_capacity(statements.len());
				for bytes in statements {
					match Statement::decode(&mut &bytes[..]) {
						Ok(statement) => decoded.push(statement),
						Err(_) => {
							self.metrics.bad_notifications.add(1);
							let reason = "an undecodable statement".to_string();
							self.respond(request_id, Response::Refused { reason });
							return;
						}
					}
				}
				for statement in &decoded {
					self.mark_arrived(statement.hash());
				}
				self.metrics.received.add(decoded.len() as u64);
				let store = self.store.clone();
				let done = self.done_tx.clone();
				tokio::task::spawn_blocking(move || {
					let (mut accepted, mut refused) = (0, 0);
					for statement in decoded {
						if store.has_statement(&statement.hash()) {
							continue;
						}
						match store.submit(statement, StatementSource::Network) {
							SubmitResult::New => accepted += 1,
							SubmitResult::Known | SubmitResult::KnownExpired => {}
							_ => refused += 1,
						}
					}
					let _ = done.send(Done::Submitted { request: request_id, accepted, refused });
				});
			}
			Request::Watch { topic, lease_secs, skip } => {
				let topic = Topic(topic);
				let lease = Duration::from_secs(u64::from(lease_secs))
					.min(self.config.refresh.saturating_mul(3));
				let watched_by_peer =
					self.watchers.values().filter(|peers| peers.contains_key(&peer)).count();
				let total: usize = self.watchers.values().map(HashMap::len).sum();
				let already = self.watchers.get(&topic).is_some_and(|p| p.contains_key(&peer));
				if !already && (watched_by_peer >= MAX_WATCHES_PER_PEER || total >= MAX_WATCHES) {
					let reason = "too many watches".to_string();
					self.respond(request_id, Response::Refused { reason });
					return;
				}
				self.watchers.entry(topic).or_default().insert(peer, Instant::now() + lease);
				let store = self.store.clone();
				let done = self.done_tx.clone();
				tokio::task::spawn_blocking(move || {
					let (statements, more) = match read_topic(&*store, topic, skip as usize) {
						Ok(page) => page,
						Err(err) => {
							log::warn!(target: LOG, "Cannot read topic {} for a watch: {err}", hex::encode(topic.0));
							(Vec::new(), false)
						}
					};
					let statements = statements.iter().map(|s| s.to_vec()).collect();
					let _ = done.send(Done::Page { request: request_id, statements, more });
				});
			}
		}
	}

	fn mark_arrived(&mut self, hash: Hash) {
		if self.arrived.insert(hash) {
			self.arrived_order.push_back(hash);
			if self.arrived_order.len() > MAX_ARRIVED {
				if let Some(old) = self.arrived_order.pop_front() {
					self.arrived.remove(&old);
				}
			}
		}
	}

	// ---- answers ----

	fn on_response(&mut self, peer: PeerId, purpose: Purpose, response: Response) {
		match (purpose, response) {
			(Purpose::Nearest { key }, Response::Nearest { peers }) => {
				let mut entries = Vec::new();
				let mut unknown = Vec::new();
				for entry in peers {
					let Ok(near) = PeerId::from_bytes(&entry.peer) else { continue };
					if near == self.local
						|| self.failed.get(&near).is_some_and(|until| *until > Instant::now())
					{
						continue;
					}
					let addresses: Vec<Multiaddr> = entry
						.addresses
						.into_iter()
						.filter_map(|bytes| Multiaddr::try_from(bytes).ok())
						.collect();
					let near_key = routing::key_of(&near.to_bytes());
					if !self.known.contains(&near) {
						if addresses.is_empty() {
							continue;
						}
						unknown.push((near, addresses.clone()));
					}
					let now = self.origin.elapsed();
					self.known.learn(near, near_key, addresses, now);
					entries.push((near, near_key));
				}
				if unknown.is_empty() {
					self.on_answer(key, peer, entries);
				} else {
					// Dial them only once litep2p has their addresses.
					let (done, added) = oneshot::channel();
					let _ = self.addresses_tx.send(AddAddresses { peers: unknown, done });
					self.answers.push(Box::pin(async move {
						let _ = added.await;
						Answer { key, from: peer, peers: entries }
					}));
				}
			}
			(Purpose::Store, Response::Stored { .. }) => {}
			(Purpose::Watch { topic, skip }, Response::Statements { statements, more }) => {
				let count = statements.len() as u32;
				if more && count > 0 {
					self.request(
						peer,
						Request::Watch {
							topic: topic.0,
							lease_secs: self.lease_secs(),
							skip: skip + count,
						},
						Purpose::Watch { topic, skip: skip + count },
					);
				}
				let mut decoded = Vec::new();
				for bytes in statements {
					if let Ok(statement) = Statement::decode(&mut &bytes[..]) {
						self.mark_arrived(statement.hash());
						decoded.push(statement);
					}
				}
				if decoded.is_empty() {
					return;
				}
				let store = self.store.clone();
				let done = self.done_tx.clone();
				tokio::task::spawn_blocking(move || {
					for statement in decoded {
						if !store.has_statement(&statement.hash()) {
							let _ = store.submit(statement, StatementSource::Network);
						}
					}
					let _ = done.send(Done::Fetched);
				});
			}
			(purpose, Response::Refused { reason }) => {
				log::debug!(target: LOG, "{peer} refused a route request: {reason}");
				self.on_failure(peer, purpose);
			}
			(purpose, _) => {
				log::debug!(target: LOG, "{peer} answered a route request with the wrong kind");
				self.on_failure(peer, purpose);
			}
		}
	}

	fn on_failure(&mut self, peer: PeerId, purpose: Purpose) {
		match purpose {
			Purpose::Nearest { key } => {
				self.known.forget(&peer);
				if self.failed.len() < MAX_ARRIVED {
					self.failed.insert(peer, Instant::now() + FAILED_FOR);
				}
				if let Some(lookup) = self.lookups.get_mut(&key) {
					lookup.failed(&peer);
				}
				self.drive(key);
			}
			Purpose::Store => {}
			Purpose::Watch { topic, .. } => {
				// Renewed, with a fresh lookup, at the next tick.
				self.watching.remove(&topic);
				self.cache.remove(&topic.0);
			}
		}
	}

	fn on_answer(&mut self, key: Key, from: PeerId, peers: Vec<(PeerId, Key)>) {
		if let Some(lookup) = self.lookups.get_mut(&key) {
			lookup.answered(&from, peers);
		}
		self.drive(key);
	}

	fn lease_secs(&self) -> u32 {
		(self.config.refresh.as_secs().saturating_mul(2).max(1)).min(u64::from(u32::MAX)) as u32
	}

	fn request(&mut self, peer: PeerId, request: Request, purpose: Purpose) {
		match self.handle.try_send_request(peer, request.encode(), DialOptions::Dial) {
			Ok(id) => {
				self.pending.insert(id, (peer, purpose, Instant::now()));
			}
			Err(err) => {
				log::debug!(target: LOG, "Cannot send a route request to {peer}: {err:?}");
				self.on_failure(peer, purpose);
			}
		}
	}

	// ---- lookups ----

	/// The holders of `key`, if a lookup answered within `refresh`; otherwise start one.
	fn holders(&mut self, key: Key, fresh: bool) -> Option<Vec<PeerId>> {
		if !fresh {
			if let Some((holders, at)) = self.cache.get(&key) {
				if at.elapsed() < self.config.refresh {
					return Some(holders.clone());
				}
			}
		}
		self.start_lookup(key);
		None
	}

	fn start_lookup(&mut self, key: Key) {
		if self.lookups.contains_key(&key) || self.queued_lookups.contains(&key) {
			return;
		}
		if self.lookups.len() >= LOOKUPS_AT_ONCE {
			self.queued_lookups.push_back(key);
			return;
		}
		let k = self.config.width();
		let lookup = Lookup::new(
			key,
			k,
			ALPHA,
			(self.local, self.local_key),
			self.known.nearest(&key, k, None),
		);
		log::trace!(target: LOG, "Looking up {}", hex::encode(key));
		self.lookups.insert(key, lookup);
		self.metrics.routing_lookups.add(1);
		self.drive(key);
	}

	fn drive(&mut self, key: Key) {
		let Some(lookup) = self.lookups.get_mut(&key) else { return };
		let queries = lookup.next_queries();
		let done = queries.is_empty() && lookup.is_done();
		for peer in queries {
			self.request(peer, Request::Nearest { key }, Purpose::Nearest { key });
		}
		if !done {
			return;
		}
		let Some(lookup) = self.lookups.remove(&key) else { return };
		for peer in lookup.failures() {
			self.known.forget(peer);
		}
		log::trace!(target: LOG, "Lookup of {} done after {} queries", hex::encode(key), lookup.queries());
		let mut holders = lookup.nearest();
		holders.truncate(self.config.replication_factor);
		self.cache.insert(key, (holders.clone(), Instant::now()));
		self.on_holders(key, holders);
		while self.lookups.len() < LOOKUPS_AT_ONCE {
			let Some(next) = self.queued_lookups.pop_front() else { break };
			self.start_lookup(next);
		}
	}

	/// A lookup of `key` ended with these holders.
	fn on_holders(&mut self, key: Key, holders: Vec<PeerId>) {
		// Hand-over: a key held here, looked up again.
		if let Some(held) = self.held.get_mut(&key) {
			let before = std::mem::replace(&mut held.holders, holders.clone());
			held.refresh_at = Instant::now() + self.config.refresh;
			let still = holders.contains(&self.local);
			let new: Vec<PeerId> = holders
				.iter()
				.filter(|peer| **peer != self.local && !before.contains(peer))
				.copied()
				.collect();
			if !still {
				self.held.remove(&key);
				self.metrics.routing_held_keys.set(self.held.len() as u64);
			}
			if !new.is_empty() || !still {
				log::debug!(target: LOG, "Key {} has {} new holder(s){}", hex::encode(key), new.len(), if still { "" } else { "; no longer held here" });
				self.read_key(key, new, !still);
			}
		}
		self.renew_watch(Topic(key), &holders);
		// Statements waiting for this key.
		let Some(ids) = self.parked_on.remove(&key) else { return };
		for id in ids {
			let ready = match self.parked.get_mut(&id) {
				Some(parked) => {
					parked.waiting -= 1;
					parked.waiting == 0
				}
				None => false,
			};
			if ready {
				if let Some(parked) = self.parked.remove(&id) {
					self.decide(parked);
				}
			}
		}
	}

	/// Watch a topic a subscription here names on its holders, when the watch is due and
	/// this node is not a holder itself.
	fn renew_watch(&mut self, topic: Topic, holders: &[PeerId]) {
		let now = Instant::now();
		let refresh = self.config.refresh;
		let Some(watching) = self.watching.get_mut(&topic) else { return };
		if watching.renew_at > now || holders.contains(&self.local) {
			return;
		}
		watching.renew_at = now + refresh;
		let lease_secs = self.lease_secs();
		for peer in holders.iter().copied() {
			let request = Request::Watch { topic: topic.0, lease_secs, skip: 0 };
			self.request(peer, request, Purpose::Watch { topic, skip: 0 });
		}
	}

	// ---- admissions and retention ----

	fn on_admitted(&mut self) {
		loop {
			match self.admitted.try_next_live(crate::MAX_NOTIFICATION_SIZE) {
				Ok(batch) if batch.is_empty() => return,
				Ok(batch) => {
					for encoding in batch {
						let forward = true;
						self.admit(encoding, forward);
					}
				}
				Err(err) => {
					log::warn!(target: LOG, "Routing fell behind the store ({err}); reading it again");
					match self.store.watch_admissions(crate::DEFAULT_WATCH_QUEUE_BYTES) {
						Ok(watch) => self.admitted = watch,
						Err(err) => {
							log::error!(target: LOG, "Cannot watch the store for routing: {err}");
							return;
						}
					}
					self.read_existing(None);
					return;
				}
			}
		}
	}

	/// Route and decide on one admitted statement; `forward` unless it came from the store
	/// itself (at start).
	fn admit(&mut self, encoding: Encoded, forward: bool) {
		let Ok(statement) = Statement::decode(&mut &encoding[..]) else { return };
		let hash = statement.hash();
		let forward = forward && !self.arrived.contains(&hash);
		for topic in statement.topics() {
			self.send_to_watchers(*topic, &encoding);
		}
		let topics = statement.topics().to_vec();
		let keys = routing::keys_of(&topics, &hash);
		let mut parked = Parked { hash, encoding, topics, keys: keys.clone(), forward, waiting: 0 };
		let id = self.next_parked;
		self.next_parked += 1;
		for key in keys {
			if self.holders(key, false).is_none() {
				parked.waiting += 1;
				self.parked_on.entry(key).or_default().push(id);
			}
		}
		if parked.waiting == 0 {
			self.decide(parked);
			return;
		}
		self.parked.insert(id, parked);
		if self.parked.len() > MAX_PARKED {
			if let Some((_, oldest)) = self.parked.pop_first() {
				// Decided later, by the sweep.
				let due = Instant::now() + self.config.drop_after;
				self.retention.push_back((due, oldest.hash, oldest.topics, oldest.keys));
			}
		}
	}

	fn cached(&self, key: &Key) -> Option<&Vec<PeerId>> {
		self.cache.get(key).map(|(holders, _)| holders)
	}

	/// Forward to the holders, and keep, watch or schedule the release.
	fn decide(&mut self, parked: Parked) {
		let Parked { hash, encoding, topics, keys, forward, .. } = parked;
		let mut holder = false;
		for key in &keys {
			let Some(holders) = self.cached(key).cloned() else { continue };
			if forward {
				for peer in holders.iter().filter(|peer| **peer != self.local) {
					let queue = self.outgoing.entry(*peer).or_default();
					if !queue.iter().any(|queued| Arc::ptr_eq(queued, &encoding)) {
						queue.push(encoding.clone());
					}
				}
			}
			if holders.contains(&self.local) {
				holder = true;
				self.hold(*key, holders);
			}
		}
		let track = if holder {
			"holder"
		} else if self.wanted_here(&topics) {
			"interest"
		} else {
			"transient"
		};
		self.metrics.routing_decision(track);
		if !holder {
			let due = Instant::now() + self.config.drop_after;
			self.retention.push_back((due, hash, topics, keys));
		}
	}

	fn hold(&mut self, key: Key, holders: Vec<PeerId>) {
		if self.held.contains_key(&key) || self.held.len() >= MAX_HELD_KEYS {
			return;
		}
		let refresh_at = Instant::now() + self.config.refresh;
		self.held.insert(key, Held { holders, refresh_at });
		self.metrics.routing_held_keys.set(self.held.len() as u64);
	}

	fn wanted_here(&self, topics: &[Topic]) -> bool {
		let wanted = self.interest.topics();
		topics.iter().any(|topic| wanted.contains(topic))
	}

	/// Release what is due and neither held nor wanted here.
	fn sweep(&mut self) {
		let now = Instant::now();
		while self.retention.front().is_some_and(|(due, ..)| *due <= now) {
			let Some((_, hash, topics, keys)) = self.retention.pop_front() else { break };
			let mut holder = false;
			let mut unknown = false;
			for key in &keys {
				match self.holders(*key, false) {
					Some(holders) => holder |= holders.contains(&self.local),
					None => unknown = true,
				}
			}
			if holder {
				for key in &keys {
					if let Some(holders) = self.cached(key).cloned() {
						if holders.contains(&self.local) {
							self.hold(*key, holders);
						}
					}
				}
				continue;
			}
			if unknown || self.wanted_here(&topics) {
				let due = now + if unknown { TICK * 4 } else { self.config.drop_after };
				self.retention.push_back((due, hash, topics, keys));
				continue;
			}
			self.releasing.push(hash);
		}
		if self.releasing.is_empty() {
			return;
		}
		let hashes = std::mem::take(&mut self.releasing);
		self.metrics.routing_released.add(hashes.len() as u64);
		let store = self.store.clone();
		let done = self.done_tx.clone();
		tokio::task::spawn_blocking(move || {
			if let Err(err) = store.release(&hashes) {
				log::warn!(target: LOG, "Cannot drop {} statement(s) this node does not hold: {err}", hashes.len());
			}
			let _ = done.send(Done::Released);
		});
	}

	// ---- timers ----

	fn on_tick(&mut self) {
		let now = Instant::now();
		// A request litep2p never reported on counts as failed (it should time out by itself).
		let overdue: Vec<RequestId> = self
			.pending
			.iter()
			.filter(|(_, (_, _, sent))| now.duration_since(*sent) > super::ROUTE_TIMEOUT * 2)
			.map(|(id, _)| *id)
			.collect();
		for id in overdue {
			if let Some((peer, purpose, _)) = self.pending.remove(&id) {
				log::debug!(target: LOG, "Route request {id:?} to {peer} never ended; counted as failed");
				self.on_failure(peer, purpose);
			}
		}
		for (key, lookup) in &self.lookups {
			log::trace!(target: LOG, "Lookup of {} under way: {} queries", hex::encode(key), lookup.queries());
		}
		// Hand-over: look held keys up again.
		let due: Vec<Key> = self
			.held
			.iter()
			.filter(|(_, held)| held.refresh_at <= now)
			.map(|(key, _)| *key)
			.take(LOOKUPS_AT_ONCE * 4)
			.collect();
		for key in due {
			if let Some(held) = self.held.get_mut(&key) {
				held.refresh_at = now + self.config.refresh;
			}
			self.start_lookup(key);
		}
		// Readers: watch the topics subscriptions here name on their holders.
		let wanted = self.interest.topics();
		self.watching.retain(|topic, _| wanted.contains(topic));
		for topic in wanted {
			let renew = self.watching.get(&topic).is_none_or(|w| w.renew_at <= now);
			if !renew {
				continue;
			}
			self.watching.entry(topic).or_insert(Watching { renew_at: now });
			if let Some(holders) = self.holders(topic.0, false) {
				self.renew_watch(topic, &holders);
			}
		}
		self.failed.retain(|_, until| *until > now);
		for peers in self.watchers.values_mut() {
			peers.retain(|_, until| *until > now);
		}
		self.watchers.retain(|_, peers| !peers.is_empty());
		self.sweep();
		let known = self.known.len() as u64;
		self.metrics.routing_known_peers.set(known);
		self.metrics.routing_eligible_peers.set(known);
		self.cache.retain(|_, (_, at)| at.elapsed() < self.config.refresh * 2);
	}

	fn send_to_watchers(&mut self, topic: Topic, encoding: &Encoded) {
		let Some(peers) = self.watchers.get(&topic) else { return };
		let now = Instant::now();
		let peers: Vec<PeerId> =
			peers.iter().filter(|(_, until)| **until > now).map(|(peer, _)| *peer).collect();
		for peer in peers {
			let queue = self.outgoing.entry(peer).or_default();
			if !queue.iter().any(|queued| Arc::ptr_eq(queued, encoding)) {
				queue.push(encoding.clone());
			}
		}
	}

	/// Send what waits for each peer, a `Store` of at most [`STORE_BYTES`] at a time.
	fn flush(&mut self) {
		if self.outgoing.is_empty() {
			return;
		}
		for (peer, statements) in std::mem::take(&mut self.outgoing) {
			let mut batch = Vec::new();
			let mut bytes = 0;
			for encoding in statements {
				if bytes + encoding.len() > STORE_BYTES && !batch.is_empty() {
					self.send_store(peer, std::mem::take(&mut batch));
					bytes = 0;
				}
				bytes += encoding.len();
				batch.push(encoding.to_vec());
			}
			if !batch.is_empty() {
				self.send_store(peer, batch);
			}
		}
	}

	fn send_store(&mut self, peer: PeerId, statements: Vec<Vec<u8>>) {
		self.metrics.routing_forwarded.add(statements.len() as u64);
		self.request(peer, Request::Store { statements }, Purpose::Store);
	}

	// ---- store reads ----

	/// Read a key's statements, to push them to `peers`; `release` when this node no longer
	/// holds the key (each is then decided again by the sweep).
	fn read_key(&mut self, key: Key, peers: Vec<PeerId>, release: bool) {
		let store = self.store.clone();
		let done = self.done_tx.clone();
		tokio::task::spawn_blocking(move || {
			let statements = match store.statement(&key) {
				Ok(Some(statement)) if statement.topics().is_empty() => {
					vec![Encoded::from(statement.encode())]
				}
				_ => {
					let mut all = Vec::new();
					let mut skip = 0;
					loop {
						match read_topic(&*store, Topic(key), skip) {
							Ok((page, more)) => {
								skip += page.len();
								all.extend(page);
								if !more {
									break;
								}
							}
							Err(err) => {
								log::warn!(target: LOG, "Cannot read key {} to hand it over: {err}", hex::encode(key));
								break;
							}
						}
					}
					all
				}
			};
			let _ = done.send(Done::Push { peers, statements, release });
		});
	}

	/// Walk the store page by page, deciding on each statement as if just admitted (at start,
	/// and after the admission watch fell behind).
	fn read_existing(&mut self, after: Option<u64>) {
		let store = self.store.clone();
		let done = self.done_tx.clone();
		tokio::task::spawn_blocking(move || {
			match store.statements_page(after, 1_024, wire::MAX_ANSWER) {
				Ok(page) => {
					let statements = page
						.statements
						.into_iter()
						.map(|(hash, body)| (hash, Encoded::from(body)))
						.collect();
					let _ = done.send(Done::Existing { statements, next: page.next });
				}
				Err(err) => log::warn!(target: LOG, "Cannot read the store to route it: {err}"),
			}
		});
	}

	fn on_done(&mut self, done: Done) {
		match done {
			Done::Submitted { request, accepted, refused } => {
				if refused > 0 {
					self.metrics.invalid_received.add(u64::from(refused));
				}
				self.respond(request, Response::Stored { accepted });
			}
			Done::Page { request, statements, more } => {
				self.respond(request, Response::Statements { statements, more });
			}
			Done::Fetched | Done::Released => {}
			Done::Push { peers, statements, release } => {
				self.metrics.routing_handed_over.add((statements.len() * peers.len()) as u64);
				for peer in peers {
					self.outgoing.entry(peer).or_default().extend(statements.iter().cloned());
				}
				if release {
					let due = Instant::now() + self.config.drop_after;
					for encoding in statements {
						let Ok(statement) = Statement::decode(&mut &encoding[..]) else { continue };
						let hash = statement.hash();
						let topics = statement.topics().to_vec();
						let keys = routing::keys_of(&topics, &hash);
						self.retention.push_back((due, hash, topics, keys));
					}
				}
			}
			Done::Existing { statements, next } => {
				for (_, encoding) in statements {
					self.admit(encoding, false);
				}
				if next.is_some() {
					self.read_existing(next);
				}
			}
		}
	}
}

/// A page of the statements on `topic` past the first `skip`: at most [`wire::MAX_ANSWER`]
/// bytes, and whether more follow.
fn read_topic(
	store: &dyn StatementStore,
	topic: Topic,
	skip: usize,
) -> statement_primitives::Result<(Vec<Encoded>, bool)> {
	let mut subscription = store.subscribe_with_queue(TopicFilter::MatchAll(vec![topic]), 1024)?;
	let mut skipped = 0;
	let mut out = Vec::new();
	let mut bytes = 0;
	while let Some(page) = subscription.next_replay_page(wire::MAX_ANSWER)? {
		for encoding in page {
			if skipped < skip {
				skipped += 1;
				continue;
			}
			if bytes + encoding.len() > wire::MAX_ANSWER && !out.is_empty() {
				return Ok((out, true));
			}
			bytes += encoding.len();
			out.push(Encoded::from(encoding));
		}
	}
	Ok((out, false))
}
