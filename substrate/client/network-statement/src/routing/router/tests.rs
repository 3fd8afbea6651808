//! Routers in one process: each with a store of its own, queries delivered at once, time
//! advanced by hand. Holders are checked against the placement rule as the test support
//! crate writes it, apart from the code under test.

use super::*;
use crate::routing::{key_of, RoutingConfig};
use codec::Decode;
use statement_test_support::routing::holders as rule;
use std::collections::BTreeMap;

const K: usize = 3;
const REFRESH: Duration = Duration::from_secs(3);
const DROP_AFTER: Duration = Duration::from_secs(5);

struct Node {
	router: Router<u32, u32>,
	store: BTreeMap<Hash, Encoded>,
	alive: bool,
	wanted: Vec<Topic>,
}

struct Net {
	nodes: Vec<Node>,
	now: Time,
	/// Requests in flight: (answerer, its request id) -> (asker, its query id).
	open: HashMap<(u32, u64), (u32, u64)>,
	next_request: u64,
}

fn key(id: u32) -> Key {
	key_of(&id.to_le_bytes())
}

fn statement(n: u32, topic: Option<Topic>) -> (Hash, Encoded) {
	let mut statement = Statement::new();
	if let Some(topic) = topic {
		statement.set_topic(0, topic);
	}
	statement.set_plain_data(n.to_le_bytes().to_vec());
	(statement.hash(), Encoded::from(statement.encode()))
}

fn topic(n: u8) -> Topic {
	Topic(sp_crypto_hashing::blake2_256(&[n, 0x70]))
}

impl Net {
	/// `n` nodes; node 0 knows everyone (as a boot node learns them), the others node 0 and
	/// two more.
	fn new(n: u32) -> Self {
		let mut net =
			Net { nodes: Vec::new(), now: Time::ZERO, open: HashMap::new(), next_request: 0 };
		for _ in 0..n {
			net.join(&[]);
		}
		for id in 1..n {
			net.introduce(0, id);
			net.introduce(id, 0);
			net.introduce(id, (id * 7 + 3) % n);
		}
		net
	}

	/// A new node, known to node 0 and to `also`; returns its id.
	fn join(&mut self, also: &[u32]) -> u32 {
		let id = self.nodes.len() as u32;
		let mut config = RoutingConfig::new(K);
		config.refresh = REFRESH;
		config.drop_after = DROP_AFTER;
		let router = Router::new(config, id, key(id), Arc::new(Metrics::default()), 1_000);
		self.nodes.push(Node { router, store: BTreeMap::new(), alive: true, wanted: Vec::new() });
		if id > 0 {
			self.introduce(0, id);
			self.introduce(id, 0);
		}
		for other in also {
			self.introduce(*other, id);
		}
		id
	}

	/// `who` learns of `peer`, as identify tells it.
	fn introduce(&mut self, who: u32, peer: u32) {
		let event = Event::Peer { peer, key: key(peer), addresses: vec![peer] };
		self.nodes[who as usize].router.handle(self.now, event);
	}

	fn feed(&mut self, id: u32, event: Event<u32, u32>) {
		let now = self.now;
		self.nodes[id as usize].router.handle(now, event);
	}

	/// Store on `id` as an RPC submission would, and tell its router.
	fn submit(&mut self, id: u32, (hash, encoding): (Hash, Encoded)) {
		self.nodes[id as usize].store.insert(hash, encoding.clone());
		self.feed(id, Event::Admitted { encodings: vec![encoding], forward: true });
		self.settle();
	}

	/// Carry out every action until all routers are quiet.
	fn settle(&mut self) {
		for _ in 0..100_000 {
			let mut busy = false;
			for id in 0..self.nodes.len() as u32 {
				while let Some(action) = self.nodes[id as usize].router.poll_action() {
					busy = true;
					self.carry_out(id, action);
				}
			}
			if !busy {
				return;
			}
		}
		panic!("the routers never went quiet");
	}

	fn carry_out(&mut self, id: u32, action: Action<u32, u32>) {
		match action {
			Action::Query { query, peer, body } => {
				if !self.nodes[peer as usize].alive {
					return self.feed(id, Event::Failed { query });
				}
				// Identify runs on every connection: the asked learns of the asker.
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
						peers
							.into_iter()
							.map(|(peer, addresses)| (peer, key(peer), addresses))
							.collect(),
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
			Action::Submit { request, statements } => {
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
			}
			Action::ReadTopic { request, topic, skip } => {
				let statements: Vec<Encoded> =
					self.on_key(id, topic.0).into_iter().skip(skip as usize).collect();
				self.feed(id, Event::TopicRead { request, statements, more: false });
			}
			Action::ReadKey { key, peers, release } => {
				let statements = self.on_key(id, key);
				self.feed(id, Event::KeyRead { peers, statements, release });
			}
			Action::Release { hashes } => {
				for hash in hashes {
					self.nodes[id as usize].store.remove(&hash);
				}
			}
		}
	}

	/// What `id` stores under `key`: a topic's statements, or the one without topics of
	/// that hash.
	fn on_key(&self, id: u32, key: Key) -> Vec<Encoded> {
		self.nodes[id as usize]
			.store
			.iter()
			.filter(|(hash, encoding)| {
				let statement = Statement::decode(&mut &encoding[..]).unwrap();
				statement.topics().contains(&Topic(key))
					|| (statement.topics().is_empty() && **hash == key)
			})
			.map(|(_, encoding)| encoding.clone())
			.collect()
	}

	/// Let `by` pass, a tick every 250 ms.
	fn advance(&mut self, by: Duration) {
		let end = self.now + by;
		while self.now < end {
			self.now += Duration::from_millis(250);
			for id in 0..self.nodes.len() as u32 {
				if self.nodes[id as usize].alive {
					let wanted = self.nodes[id as usize].wanted.clone();
					self.feed(id, Event::Tick { wanted });
				}
			}
			self.settle();
		}
	}

	/// The live nodes holding `hash`, and those the rule says should.
	fn holding(&self, hash: &Hash, key: &Key) -> (Vec<u32>, Vec<u32>) {
		let live: Vec<u32> =
			(0..self.nodes.len() as u32).filter(|id| self.nodes[*id as usize].alive).collect();
		let peers: Vec<Vec<u8>> = live.iter().map(|id| id.to_le_bytes().to_vec()).collect();
		let mut expected: Vec<u32> = rule(key, &peers, K).into_iter().map(|i| live[i]).collect();
		expected.sort_unstable();
		let holding = live
			.into_iter()
			.filter(|id| self.nodes[*id as usize].store.contains_key(hash))
			.collect();
		(holding, expected)
	}
}

/// Statements on topics 0..n (and one without topics), submitted through node `from(n)`.
fn submit_all(net: &mut Net, n: u8, from: impl Fn(u8) -> u32) -> Vec<(Hash, Key)> {
	let mut placed = Vec::new();
	for index in 0..n {
		let (hash, encoding) = statement(u32::from(index), Some(topic(index)));
		net.submit(from(index), (hash, encoding));
		placed.push((hash, topic(index).0));
	}
	let (hash, encoding) = statement(999, None);
	net.submit(from(n), (hash, encoding));
	placed.push((hash, hash));
	placed
}

fn assert_placed(net: &Net, placed: &[(Hash, Key)], when: &str) {
	for (hash, key) in placed {
		let (holding, expected) = net.holding(hash, key);
		assert_eq!(
			holding,
			expected,
			"{when}: statement {} is held by the wrong nodes",
			hex::encode(&hash[..4])
		);
	}
}

#[test]
fn every_statement_ends_on_exactly_its_k_holders_and_the_writers_let_go() {
	let mut net = Net::new(40);
	let placed = submit_all(&mut net, 30, |index| u32::from(index) * 13 % 40);
	// Nodes still learn of each other at first (each looks its own key up): a holder may
	// push to a node that, by its own later lookup, is not one, and lets go after
	// `drop_after`.
	net.advance(REFRESH + DROP_AFTER + Duration::from_secs(2));
	assert_placed(&net, &placed, "after the writers' drop time");
	let held: usize = net.nodes.iter().map(|node| node.store.len()).sum();
	assert_eq!(held, placed.len() * K, "exactly K copies of each");
}

#[test]
fn holders_hand_over_to_a_node_that_joins_and_replace_one_that_leaves() {
	let mut net = Net::new(30);
	let placed = submit_all(&mut net, 24, |index| u32::from(index) * 7 % 30);
	net.advance(REFRESH + DROP_AFTER + Duration::from_secs(2));
	assert_placed(&net, &placed, "before churn");
	// The nodes that hold most leave without a word; six new ones join.
	let mut by_load: Vec<(usize, u32)> =
		net.nodes.iter().enumerate().map(|(id, node)| (node.store.len(), id as u32)).collect();
	by_load.sort_unstable_by(|a, b| b.cmp(a));
	for (_, id) in by_load.iter().take(5) {
		net.nodes[*id as usize].alive = false;
	}
	for n in 0..6 {
		net.join(&[n + 1, n + 7]);
	}
	net.advance(REFRESH * 4 + DROP_AFTER);
	assert_placed(&net, &placed, "after churn and hand-over");
}

#[test]
fn a_node_that_does_not_hold_a_topic_gets_it_while_a_subscription_names_it() {
	let mut net = Net::new(20);
	let placed = submit_all(&mut net, 3, |_| 5);
	net.advance(DROP_AFTER + Duration::from_secs(1));
	let (hash, key) = placed[0];
	let (holding, _) = net.holding(&hash, &key);
	let reader = (0..20).find(|id| !holding.contains(id)).unwrap();
	net.nodes[reader as usize].wanted = vec![Topic(key)];
	net.advance(Duration::from_secs(1));
	assert!(net.nodes[reader as usize].store.contains_key(&hash), "the stored statement came");
	// A new one on the topic, through another non-holder, reaches the reader too.
	let writer = (0..20).find(|id| !holding.contains(id) && *id != reader).unwrap();
	let later = statement(500, Some(Topic(key)));
	net.submit(writer, later.clone());
	assert!(net.nodes[reader as usize].store.contains_key(&later.0), "the new one came");
	// Once nothing here names the topic, the reader lets both go.
	net.nodes[reader as usize].wanted.clear();
	net.advance(DROP_AFTER * 2 + REFRESH);
	let store = &net.nodes[reader as usize].store;
	assert!(
		!store.contains_key(&hash) && !store.contains_key(&later.0),
		"kept after the subscription"
	);
}

#[test]
fn a_node_that_knew_nobody_looks_again_within_a_second_of_meeting_peers() {
	let mut net = Net::new(1);
	let (hash, encoding) = statement(1, Some(topic(1)));
	net.submit(0, (hash, encoding));
	assert!(net.nodes[0].store.contains_key(&hash), "alone, it holds what it takes");
	assert_eq!(net.nodes[0].router.held_keys(), 1, "and knows it holds it");
	net.join(&[]);
	// With K = 3, both nodes are holders; the lonely answer is not trusted for a refresh.
	net.advance(Duration::from_millis(1_500));
	assert!(REFRESH > Duration::from_millis(1_500));
	assert!(net.nodes[1].store.contains_key(&hash), "the newcomer got it before a refresh");
}
