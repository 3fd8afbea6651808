//! The route task: runs the [`Router`] over litep2p's request-response
//! (`/statement/route/1`) and the store. It encodes and decodes the wire, maps litep2p's
//! request ids to the router's, and runs store reads and submits on the blocking pool.

use super::pages::{read_key, read_topic, Cursors};
use crate::{
	core::LOG,
	interest::Interest,
	metrics::Metrics,
	routing::{
		key_of,
		router::{Action, Answer, Event, Reply, Router, QUERY_DEADLINE},
		wire::{self, PeerEntry, Response},
		RoutingConfig,
	},
	Multiaddr, PeerId,
};
use codec::Encode;
use futures::StreamExt;
use litep2p::{
	protocol::request_response::{DialOptions, RequestResponseEvent, RequestResponseHandle},
	types::RequestId,
};
use statement_primitives::{
	Encoded, Statement, StatementSource, StatementStore, StatementSubscription, Topic,
};
use std::{
	collections::HashMap,
	sync::Arc,
	time::{Duration, Instant},
};
use tokio::sync::{mpsc, oneshot};

/// How often the router's timers run.
const TICK: Duration = Duration::from_millis(250);

/// Longest a route request may take, dial included.
pub(super) const ROUTE_TIMEOUT: Duration = Duration::from_secs(5);

/// Store pages read at start, to decide on what the store already holds.
const EXISTING_PAGE: usize = 1_024;

/// What the worker tells the route task: a peer identified itself as a routed node, at
/// these addresses (already in litep2p's address book).
pub(super) struct Identified {
	pub peer: PeerId,
	pub addresses: Vec<Multiaddr>,
}

/// What the route task asks of the worker: put addresses in litep2p's address book (so that
/// a request can dial the peer), then say so.
pub(super) struct AddAddresses {
	pub peers: Vec<(PeerId, Vec<Multiaddr>)>,
	pub done: oneshot::Sender<()>,
}

/// A one-shot query's topics to fetch from their holders; `done` is sent once the store has
/// them (or they could not be had in time).
pub(super) struct Fetch {
	pub topics: Vec<Topic>,
	pub done: oneshot::Sender<()>,
}

/// Everything the route task starts from.
pub(super) struct Parts {
	pub config: RoutingConfig,
	pub local: PeerId,
	pub handle: RequestResponseHandle,
	pub store: Arc<dyn StatementStore>,
	pub metrics: Arc<Metrics>,
	pub interest: Interest,
	pub identified: mpsc::UnboundedReceiver<Identified>,
	pub addresses_tx: mpsc::UnboundedSender<AddAddresses>,
	pub admitted: Box<dyn StatementSubscription>,
	pub rate_limit: u32,
	pub fetches: mpsc::UnboundedReceiver<Fetch>,
}

pub(super) struct RouteTask {
	router: Router<PeerId, Multiaddr>,
	handle: RequestResponseHandle,
	store: Arc<dyn StatementStore>,
	interest: Interest,
	origin: Instant,
	identified: mpsc::UnboundedReceiver<Identified>,
	addresses_tx: mpsc::UnboundedSender<AddAddresses>,
	admitted: Box<dyn StatementSubscription>,
	/// Reports of blocking jobs and of addresses learnt, as router events.
	done_tx: mpsc::UnboundedSender<Event<PeerId, Multiaddr>>,
	done_rx: mpsc::UnboundedReceiver<Event<PeerId, Multiaddr>>,
	/// The router's query ids of litep2p's outbound requests, and when each was sent.
	queries: HashMap<RequestId, (u64, Instant)>,
	/// litep2p's ids of the inbound requests the router names.
	requests: HashMap<u64, RequestId>,
	next_request: u64,
	fetches: mpsc::UnboundedReceiver<Fetch>,
	/// Topic reads paused between pages.
	cursors: Cursors,
	/// Fetches the router was asked for, by its ids.
	waiting: HashMap<u64, oneshot::Sender<()>>,
	next_fetch: u64,
}

impl RouteTask {
	pub(super) fn new(parts: Parts) -> Self {
		let local_key = key_of(&parts.local.to_bytes());
		let router = Router::new(
			parts.config.clone(),
			parts.local,
			local_key,
			parts.metrics,
			parts.rate_limit,
		);
		let (done_tx, done_rx) = mpsc::unbounded_channel();
		RouteTask {
			router,
			handle: parts.handle,
			store: parts.store,
			interest: parts.interest,
			origin: Instant::now(),
			identified: parts.identified,
			addresses_tx: parts.addresses_tx,
			admitted: parts.admitted,
			done_tx,
			done_rx,
			queries: HashMap::new(),
			requests: HashMap::new(),
			next_request: 0,
			fetches: parts.fetches,
			cursors: Cursors::default(),
			waiting: HashMap::new(),
			next_fetch: 0,
		}
	}

	pub(super) async fn run(mut self, replication_factor: usize) {
		log::info!(
			target: LOG,
			"Topic-routed storage: each statement kept by the {replication_factor} nodes nearest its topics"
		);
		self.read_existing(None);
		let mut tick = tokio::time::interval(TICK);
		tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
		loop {
			tokio::select! {
				event = self.handle.next() => match event {
					Some(event) => self.on_transport(event),
					None => return,
				},
				_ = self.admitted.wait_live() => self.on_admitted(),
				Some(Identified { peer, addresses }) = self.identified.recv() => {
					let key = key_of(&peer.to_bytes());
					self.feed(Event::Peer { peer, key, addresses });
				}
				Some(event) = self.done_rx.recv() => self.feed(event),
				Some(Fetch { topics, done }) = self.fetches.recv() => {
					self.next_fetch += 1;
					let fetch = self.next_fetch;
					self.waiting.insert(fetch, done);
					self.feed(Event::Fetch { fetch, topics });
				}
				_ = tick.tick() => {
					// The router has counted these failed already; litep2p never reported them.
					let forgotten = QUERY_DEADLINE * 2;
					self.queries.retain(|_, (_, sent)| sent.elapsed() < forgotten);
					// Queries that stopped waiting (their deadline) need no report.
					self.waiting.retain(|_, done| !done.is_closed());
					let wanted = self.interest.topics();
					self.feed(Event::Tick { wanted });
				}
			}
			self.carry_out();
		}
	}

	fn feed(&mut self, event: Event<PeerId, Multiaddr>) {
		self.router.handle(self.origin.elapsed(), event);
	}

	fn on_transport(&mut self, event: RequestResponseEvent) {
		match event {
			RequestResponseEvent::RequestReceived { peer, request_id, request, .. } => {
				match wire::decode_request(&request) {
					Ok(body) => {
						self.next_request += 1;
						let request = self.next_request;
						self.requests.insert(request, request_id);
						self.feed(Event::Request { from: peer, request, body });
					}
					Err(err) => {
						log::debug!(target: LOG, "Undecodable route request from {peer}: {err}");
						self.handle.reject_request(request_id);
					}
				}
			}
			RequestResponseEvent::ResponseReceived { peer, request_id, response, .. } => {
				let Some((query, _)) = self.queries.remove(&request_id) else { return };
				match wire::decode_response(&response) {
					Ok(response) => {
						let answer = answer_of(response);
						self.feed(Event::Answer { query, answer });
					}
					Err(err) => {
						log::debug!(target: LOG, "Undecodable route answer from {peer}: {err}");
						self.feed(Event::Failed { query });
					}
				}
			}
			RequestResponseEvent::RequestFailed { peer, request_id, error } => {
				let Some((query, _)) = self.queries.remove(&request_id) else { return };
				log::debug!(target: LOG, "Route request to {peer} failed: {error:?}");
				self.feed(Event::Failed { query });
			}
		}
	}

	fn on_admitted(&mut self) {
		loop {
			match self.admitted.try_next_live(crate::MAX_NOTIFICATION_SIZE) {
				Ok(encodings) if encodings.is_empty() => return,
				Ok(encodings) => self.feed(Event::Admitted { encodings, forward: true }),
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

	/// Do what the router asked.
	fn carry_out(&mut self) {
		while let Some(action) = self.router.poll_action() {
			match action {
				Action::Query { query, peer, body } => {
					match self.handle.try_send_request(peer, body.encode(), DialOptions::Dial) {
						Ok(id) => {
							self.queries.insert(id, (query, Instant::now()));
						}
						Err(err) => {
							log::debug!(target: LOG, "Cannot send a route request to {peer}: {err:?}");
							let _ = self.done_tx.send(Event::Failed { query });
						}
					}
				}
				Action::Respond { request, reply } => {
					let Some(id) = self.requests.remove(&request) else { continue };
					match response_of(reply) {
						Some(response) => self.handle.send_response(id, response.encode()),
						None => self.handle.reject_request(id),
					}
				}
				Action::Learn { peers, then } => {
					let (done, added) = oneshot::channel();
					let _ = self.addresses_tx.send(AddAddresses { peers, done });
					let report = self.done_tx.clone();
					tokio::spawn(async move {
						// The worker gone means networking stopped: nothing to report to.
						if added.await.is_ok() {
							let _ = report.send(Event::Learnt { then });
						}
					});
				}
				Action::Submit { request, statements, fetched } => {
					self.submit(request, statements, fetched)
				}
				Action::Fetched { fetch } => {
					if let Some(done) = self.waiting.remove(&fetch) {
						let _ = done.send(());
					}
				}
				Action::ReadTopic { request, topic, skip } => {
					let (store, cursors) = (self.store.clone(), self.cursors.clone());
					let report = self.done_tx.clone();
					tokio::task::spawn_blocking(move || {
						let (statements, more) = read_topic(&*store, &cursors, topic, skip)
							.unwrap_or_else(|err| {
								log::warn!(target: LOG, "Cannot read a topic for a watch: {err}");
								(Vec::new(), false)
							});
						let _ = report.send(Event::TopicRead { request, statements, more });
					});
				}
				Action::ReadKey { key, skip } => {
					let (store, cursors) = (self.store.clone(), self.cursors.clone());
					let report = self.done_tx.clone();
					tokio::task::spawn_blocking(move || {
						let (statements, next) = read_key(&*store, &cursors, key, skip);
						let _ = report.send(Event::KeyRead { key, statements, next });
					});
				}
				Action::Release { hashes } => {
					let store = self.store.clone();
					tokio::task::spawn_blocking(move || {
						if let Err(err) = store.release(&hashes) {
							log::warn!(target: LOG, "Cannot drop {} statement(s) this node does not hold: {err}", hashes.len());
						}
					});
				}
			}
		}
	}

	fn submit(
		&mut self,
		request: Option<u64>,
		statements: Vec<Statement>,
		fetched: Option<(Topic, u64)>,
	) {
		let store = self.store.clone();
		let report = self.done_tx.clone();
		tokio::task::spawn_blocking(move || {
			let (mut accepted, mut refused) = (0, 0);
			for statement in statements {
				if store.has_statement(&statement.hash()) {
					continue;
				}
				match store.submit(statement, StatementSource::Network) {
					statement_primitives::SubmitResult::New => accepted += 1,
					statement_primitives::SubmitResult::Known
					| statement_primitives::SubmitResult::KnownExpired => {}
					_ => refused += 1,
				}
			}
			if let Some(request) = request {
				let _ = report.send(Event::Submitted { request, accepted, refused });
			}
			if let Some(fetched) = fetched {
				let _ = report.send(Event::FetchStored { fetched });
			}
		});
	}

	/// Walk the store page by page, handing the router what it holds (at start, and after
	/// the admission watch fell behind).
	fn read_existing(&mut self, after: Option<u64>) {
		let store = self.store.clone();
		let report = self.done_tx.clone();
		tokio::task::spawn_blocking(move || {
			let mut after = after;
			loop {
				match store.statements_page(after, EXISTING_PAGE, wire::MAX_ANSWER) {
					Ok(page) => {
						let encodings: Vec<Encoded> = page
							.statements
							.into_iter()
							.map(|(_, body)| Encoded::from(body))
							.collect();
						if report.send(Event::Admitted { encodings, forward: false }).is_err() {
							return;
						}
						match page.next {
							Some(next) => after = Some(next),
							None => return,
						}
					}
					Err(err) => {
						log::warn!(target: LOG, "Cannot read the store to route it: {err}");
						return;
					}
				}
			}
		});
	}
}

fn answer_of(response: Response) -> Answer<PeerId, Multiaddr> {
	match response {
		Response::Nearest { peers } => Answer::Nearest(
			peers
				.into_iter()
				.filter_map(|PeerEntry { peer, addresses }| {
					let peer = PeerId::from_bytes(&peer).ok()?;
					let addresses = addresses
						.into_iter()
						.filter_map(|bytes| Multiaddr::try_from(bytes).ok())
						.collect();
					Some((peer, key_of(&peer.to_bytes()), addresses))
				})
				.collect(),
		),
		Response::Stored { .. } => Answer::Stored,
		Response::Statements { statements, more } => Answer::Statements { statements, more },
		Response::Refused { reason } => Answer::Refused(reason),
	}
}

fn response_of(reply: Reply<PeerId, Multiaddr>) -> Option<Response> {
	Some(match reply {
		Reply::Nearest(peers) => Response::Nearest {
			peers: peers
				.into_iter()
				.map(|(peer, addresses)| PeerEntry {
					peer: peer.to_bytes(),
					addresses: addresses.iter().map(|address| address.to_vec()).collect(),
				})
				.collect(),
		},
		Reply::Stored(accepted) => Response::Stored { accepted },
		Reply::Statements { statements, more } => Response::Statements { statements, more },
		Reply::Refused(reason) => Response::Refused { reason },
		Reply::Reject => return None,
	})
}
