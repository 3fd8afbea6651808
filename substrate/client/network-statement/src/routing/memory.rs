//! Routers in one process: every node's [`Router`] unchanged, its store a map, queries
//! answered at once, time advanced by hand. A departed node fails every query sent to it;
//! a node asked learns of the asker, as identify tells a node of every connection. The
//! router's tests and `simulate routed` run on it.

use super::{
	key_of,
	router::{Action, Answer, Event, Reply, Router, Time},
	Key, RoutingConfig,
};
use crate::metrics::Metrics;
use codec::Decode;
use statement_primitives::{Encoded, Hash, Statement, Topic};
use std::{
	collections::{BTreeMap, HashMap},
	sync::Arc,
	time::Duration,
};

/// How often every live router is ticked.
pub const TICK: Duration = Duration::from_millis(250);

/// One node: its router, its store, whether it is up, what its subscriptions name.
pub struct Node {
	/// The router, as the node runs it.
	pub router: Router<u32, u32>,
	/// What the node stores, by hash.
	pub store: BTreeMap<Hash, Encoded>,
	/// Up, or gone without a word.
	pub alive: bool,
	/// Topics its subscriptions name.
	pub wanted: Vec<Topic>,
}

/// The nodes, named by their index; each node's key is `key_of` its index's bytes.
pub struct Network {
	/// Every node that ever joined.
	pub nodes: Vec<Node>,
	config: RoutingConfig,
	now: Time,
	/// Requests in flight: (answerer, its request id) -> (asker, its query id).
	open: HashMap<(u32, u64), (u32, u64)>,
	next_request: u64,
	queries: u64,
	/// Nodes whose incoming `Store` requests fail, as a node still starting up may.
	pub refusing_stores: Vec<u32>,
	/// Fetches reported done: (node, fetch).
	pub fetched: Vec<(u32, u64)>,
	/// What each of those nodes stored when it reported, in the same order.
	pub stored_when_fetched: Vec<Vec<Hash>>,
	/// Statements in one page of a key read for a hand-over (a real store's page is up to
	/// 1 MiB of them; tests make it small so that hand-overs page).
	pub key_page: usize,
}

impl Network {
	/// No nodes yet; each that joins runs with `config`.
	pub fn new(config: RoutingConfig) -> Self {
		Network {
			nodes: Vec::new(),
			config,
			now: Time::ZERO,
			open: HashMap::new(),
			next_request: 0,
			queries: 0,
			refusing_stores: Vec::new(),
			fetched: Vec::new(),
			stored_when_fetched: Vec::new(),
			key_page: 4096,
		}
	}

	/// The key of node `id`.
	pub fn key(id: u32) -> Key {
		key_of(&id.to_le_bytes())
	}

	/// A new node, knowing nobody yet; its id.
	pub fn join(&mut self) -> u32 {
		let id = self.nodes.len() as u32;
		let metrics = Arc::new(Metrics::default());
		let router = Router::new(self.config.clone(), id, Self::key(id), metrics, u32::MAX);
		self.nodes.push(Node { router, store: BTreeMap::new(), alive: true, wanted: Vec::new() });
		id
	}

	/// `who` learns of `peer`, as identify tells it.
	pub fn introduce(&mut self, who: u32, peer: u32) {
		if who != peer {
			let event = Event::Peer { peer, key: Self::key(peer), addresses: vec![peer] };
			self.feed(who, event);
		}
	}

	/// Feed node `id` an event now.
	pub fn feed(&mut self, id: u32, event: Event<u32, u32>) {
		let now = self.now;
		self.nodes[id as usize].router.handle(now, event);
	}

	/// The nodes up.
	pub fn live(&self) -> Vec<u32> {
		(0..self.nodes.len() as u32).filter(|id| self.nodes[*id as usize].alive).collect()
	}

	/// Queries sent so far, by all nodes.
	pub fn queries(&self) -> u64 {
		self.queries
	}

	/// Store on node `id` as an RPC submission would, tell its router, and settle.
	pub fn submit(&mut self, id: u32, hash: Hash, encoding: Encoded) {
		self.nodes[id as usize].store.insert(hash, encoding.clone());
		self.feed(id, Event::Admitted { encodings: vec![encoding], forward: true });
		self.settle();
	}

	/// Carry out every action until all live routers are quiet.
	pub fn settle(&mut self) {
		loop {
			let mut busy = false;
			for id in self.live() {
				while let Some(action) = self.nodes[id as usize].router.poll_action() {
					busy = true;
					self.carry_out(id, action);
				}
			}
			if !busy {
				return;
			}
		}
	}

	/// Let `by` pass, a tick every [`TICK`].
	pub fn advance(&mut self, by: Duration) {
		let end = self.now + by;
		while self.now < end {
			self.now += TICK;
			for id in self.live() {
				let wanted = self.nodes[id as usize].wanted.clone();
				self.feed(id, Event::Tick { wanted });
			}
			self.settle();
		}
	}

	fn carry_out(&mut self, id: u32, action: Action<u32, u32>) {
		match action {
			Action::Query { query, peer, body } => {
				self.queries += 1;
				let refused = matches!(body, super::wire::Request::Store { .. })
					&& self.refusing_stores.contains(&peer);
				if !self.nodes[peer as usize].alive || refused {
					return self.feed(id, Event::Failed { query });
				}
				self.introduce(peer, id);
				self.next_request += 1;
				let request = self.next_request;
				self.open.insert((peer, request), (id, query));
				self.feed(peer, Event::Request { from: id, request, body });
			}
			Action::Respond { request, reply } => {
				let Some((asker, query)) = self.open.remove(&(id, request)) else { return };
				let answer = match reply {
					Reply::Nearest(peers) => Answer::Nearest(
						peers.into_iter().map(|(peer, a)| (peer, Self::key(peer), a)).collect(),
					),
					Reply::Stored(_) => Answer::Stored,
					Reply::Statements { statements, more } => {
						Answer::Statements { statements, more }
					}
					Reply::Refused(reason) => Answer::Refused(reason),
					Reply::Reject => return self.feed(asker, Event::Failed { query }),
				};
				self.feed(asker, Event::Answer { query, answer });
			}
			Action::Learn { then, .. } => self.feed(id, Event::Learnt { then }),
			Action::Submit { request, statements, fetched } => {
				let mut admitted = Vec::new();
				for statement in statements {
					let encoding = Encoded::from(statement.encode());
					let store = &mut self.nodes[id as usize].store;
					if store.insert(statement.hash(), encoding.clone()).is_none() {
						admitted.push(encoding);
					}
				}
				let accepted = admitted.len() as u32;
				if !admitted.is_empty() {
					self.feed(id, Event::Admitted { encodings: admitted, forward: true });
				}
				if let Some(request) = request {
					self.feed(id, Event::Submitted { request, accepted, refused: 0 });
				}
				if let Some(fetched) = fetched {
					self.feed(id, Event::FetchStored { fetched });
				}
			}
			Action::ReadTopic { request, topic, skip } => {
				let statements: Vec<Encoded> =
					self.on_key(id, topic.0).into_iter().skip(skip as usize).collect();
				self.feed(id, Event::TopicRead { request, statements, more: false });
			}
			Action::ReadKey { key, skip } => {
				let all = self.on_key(id, key);
				let end = (skip as usize + self.key_page).min(all.len());
				let statements = all[(skip as usize).min(end)..end].to_vec();
				let next = (end < all.len()).then_some(end as u32);
				self.feed(id, Event::KeyRead { key, statements, next });
			}
			Action::Fetched { fetch } => {
				self.fetched.push((id, fetch));
				let stored = self.nodes[id as usize].store.keys().copied().collect();
				self.stored_when_fetched.push(stored);
			}
			Action::Release { hashes } => {
				for hash in hashes {
					self.nodes[id as usize].store.remove(&hash);
				}
			}
		}
	}

	/// What node `id` stores under `key`: a topic's statements, or the one without topics
	/// of that hash.
	fn on_key(&self, id: u32, key: Key) -> Vec<Encoded> {
		self.nodes[id as usize]
			.store
			.iter()
			.filter(|(hash, encoding)| {
				Statement::decode(&mut &encoding[..]).is_ok_and(|statement| {
					statement.topics().contains(&Topic(key))
						|| (statement.topics().is_empty() && **hash == key)
				})
			})
			.map(|(_, encoding)| encoding.clone())
			.collect()
	}
}
