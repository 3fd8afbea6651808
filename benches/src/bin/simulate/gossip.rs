//! A network of nodes in one process under a virtual clock. Each node runs the crate's gossip
//! core ([`Core`]) and peer slots ([`Peerset`]) exactly as the litep2p driver does; this file is
//! the driver: it carries their sends over links with a latency and an upload bandwidth, answers
//! their store reads and validations from an in-memory store, and runs discovery.
//!
//! What is modelled, and how:
//! - **Links**: each pair of nodes has a one-way latency drawn once (uniform in
//!   [`Params::latency_ms`]); a send waits for its node's upload link (one per node, first come
//!   first served, [`Params::upload_mbit`]), then travels for the latency. A send that would
//!   take longer than [`SEND_TIMEOUT`] times out, as the driver's does. Download is not limited.
//! - **Streams**: opening one takes two link latencies to reach the peer (connection, noise and
//!   yamux, substream), and its answer one more; the peer's [`Peerset::accept_inbound`] decides.
//!   A node that leaves closes its streams: each peer notices one latency later.
//! - **Discovery**: every node is told the first three nodes (its boot nodes). Random walks run
//!   on the driver's schedule (1 s, doubling up to 60 s, 10 s while outbound slots are free),
//!   take six link latencies, and find the 20 live nodes whose random Kademlia keys lie nearest
//!   the walk's random key: a converged DHT, where a walk finds peers spread over the network.
//! - **Validation**: each node checks one statement at a time, [`Params::validate_us`] each
//!   (the signature check and the store write of a real node); a submit takes the same. Store
//!   reads for initial sync take 0.2 ms. Decoding duplicates costs nothing here.
//! - **Statements**: [`Params::size`] bytes each, one topic drawn from a Zipf distribution over
//!   [`Params::topics`], published at a steady rate at a random live full node. Every statement
//!   is valid: the simulation measures propagation, not verification.
//! - **Light nodes**: a share of nodes declares the light role and sends its peers an affinity
//!   filter of [`Params::light_topics`] topics (drawn by popularity); they should get exactly
//!   the statements on those topics.
//! - **Churn**: during the load, nodes leave at random (never the boot nodes) and as many fresh
//!   ones join, empty, and catch up by initial sync.

use crate::{
	random::{pair_unit, Rng, Zipf},
	stats::Histogram,
};
use parking_lot::Mutex;
use statement_network::{
	affinity::AffinityFilter,
	core::{Action, Core, CoreConfig, Event, SendOutcome, StoreView},
	peerset::{Direction, Peerset, PeersetAction, PeersetConfig},
	wire::{Role, Version},
	Metrics, Propagation, SEND_TIMEOUT,
};
use statement_primitives::{
	hash_encoded, Encoded, Hash, Statement, StatementsPage, SubmitResult, Topic,
};
use std::{
	cmp::Reverse,
	collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque},
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
	time::{Duration, Instant},
};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

/// Boot nodes every node is told of: the first ones, which never leave.
const BOOT_NODES: u32 = 3;
/// Peers a random walk finds, Kademlia's bucket size.
const WALK_FINDS: usize = 20;
/// The driver's walk schedule (`driver/discovery.rs`).
const FIRST_WALK: u64 = SECOND;
const LONGEST_WALK: u64 = 60 * SECOND;
const LONGEST_WALK_WANTING: u64 = 10 * SECOND;
/// The driver's slot tick (`driver/mod.rs`, `SLOTS_TICK`).
const SLOTS_TICK: u64 = SECOND;
/// A store read for initial sync.
const READ_TIME: u64 = MS / 5;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Params {
	pub nodes: usize,
	pub seed: u64,
	/// One-way link latency, uniform between the two, in milliseconds.
	pub latency_ms: (f64, f64),
	/// Each node's upload bandwidth, megabits a second; 0 for unlimited.
	pub upload_mbit: f64,
	/// Statements published a second.
	pub rate: f64,
	/// How long statements are published, seconds.
	pub seconds: f64,
	/// Seconds before the load, for discovery to form the topology.
	pub warmup: f64,
	/// Seconds after the load for the last statements to arrive.
	pub drain: f64,
	/// Bytes of each statement's encoding.
	pub size: usize,
	/// Distinct topics, and the Zipf exponent of their popularity.
	pub topics: usize,
	pub zipf: f64,
	/// Share of nodes that are light, and how many topics each wants.
	pub light_share: f64,
	pub light_topics: usize,
	/// Share of the nodes replaced a minute during the load.
	pub churn_per_minute: f64,
	/// Time a node spends validating and storing one statement, microseconds.
	pub validate_us: f64,
	pub propagation: Propagation,
	pub out_peers: usize,
	pub in_peers: usize,
	/// Publish every statement at this node instead of a random one.
	pub origin: Option<u32>,
	/// Nodes whose latency is also reported on its own (the `propagation` bench watches five).
	pub watched: Vec<u32>,
}

impl Default for Params {
	fn default() -> Self {
		Params {
			nodes: 100,
			seed: 1,
			latency_ms: (20.0, 200.0),
			upload_mbit: 1000.0,
			rate: 100.0,
			seconds: 10.0,
			warmup: 30.0,
			drain: 10.0,
			size: 1024,
			topics: 1000,
			zipf: 1.0,
			light_share: 0.0,
			light_topics: 10,
			churn_per_minute: 0.0,
			validate_us: 100.0,
			propagation: Propagation::default(),
			out_peers: statement_network::DEFAULT_OUT_PEERS,
			in_peers: statement_network::DEFAULT_IN_PEERS,
			origin: None,
			watched: Vec::new(),
		}
	}
}

/// What a run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
	/// Nodes at the start, joined and left during the load.
	pub nodes: usize,
	pub joined: usize,
	pub left: usize,
	pub statements: usize,
	/// Statement streams per live node when the load began: min, mean, max.
	pub degree: (usize, f64, usize),
	/// Per statement, from its submit until the last node that should have it (live when it
	/// was published, and wanting it) has it.
	pub reach_all: Histogram,
	/// Per delivery: from the submit until one node has it (the origin not counted).
	pub delivery: Histogram,
	/// Per statement, until the last of [`Params::watched`] has it.
	pub watched: Histogram,
	/// (node, statement) pairs that should have been delivered, and those missing at the end.
	pub expected: u64,
	pub missing: u64,
	/// Statements missing at one node or more.
	pub statements_missing: u64,
	/// Notification bytes sent, per node and statement.
	pub bytes_per_node_statement: f64,
	/// Statements sent per delivery, and received copies a node already had or was checking
	/// per delivery.
	pub sends_per_delivery: f64,
	pub duplicates_per_delivery: f64,
	/// Most statements waiting in one node's outboxes at once (entries; they share encodings),
	/// and most bytes waiting for one node's upload link.
	pub peak_queued: usize,
	pub peak_uplink_bytes: u64,
	/// For each node that joined: time until it held every statement published before it
	/// joined that it should have; and how many never did.
	pub converged: Histogram,
	pub not_converged: usize,
	/// Simulated seconds, and events handled.
	pub simulated: Duration,
	pub events: u64,
}

/// The store a simulated node has: which statements it holds, and in what order it admitted
/// them (the journal initial sync walks).
struct SimStore {
	index: Arc<HashMap<Hash, u32>>,
	held: Vec<AtomicU64>,
	journal: Mutex<Vec<u32>>,
}

impl SimStore {
	fn new(index: Arc<HashMap<Hash, u32>>, statements: usize) -> Self {
		let words = statements.div_ceil(64);
		SimStore {
			index,
			held: (0..words).map(|_| AtomicU64::new(0)).collect(),
			journal: Mutex::new(Vec::new()),
		}
	}

	fn has(&self, statement: u32) -> bool {
		self.held[statement as usize / 64].load(Ordering::Relaxed) & (1 << (statement % 64)) != 0
	}

	/// Store it; false if it was there.
	fn admit(&self, statement: u32) -> bool {
		let bit = 1 << (statement % 64);
		let had = self.held[statement as usize / 64].fetch_or(bit, Ordering::Relaxed);
		if had & bit != 0 {
			return false;
		}
		self.journal.lock().push(statement);
		true
	}
}

impl StoreView for SimStore {
	fn has_statement(&self, hash: &Hash) -> bool {
		self.index.get(hash).is_some_and(|statement| self.has(*statement))
	}

	fn admission_watermark(&self) -> u64 {
		self.journal.lock().len() as u64
	}
}

/// A statement of the load.
struct Published {
	at: u64,
	topic: u32,
	hash: Hash,
	encoding: Encoded,
}

struct Node {
	alive: bool,
	role: Role,
	/// Topics a light node wants (sorted).
	wants: Vec<u32>,
	joined_at: u64,
	core: Option<Core<u32>>,
	peerset: Peerset<u32>,
	store: Arc<SimStore>,
	metrics: Arc<Metrics>,
	streams: BTreeSet<u32>,
	cpu_free: u64,
	uplink_free: u64,
	tick_at: u64,
	next_walk: u64,
	walk_interval: u64,
	walking: bool,
	/// Notifications the core is not ready for (its validation queue is full).
	held_back: VecDeque<(u32, Vec<u8>)>,
	kad_key: u64,
	/// Statements published before it joined, and how many of those it wants and holds.
	published_before: u32,
	wanted_before: u32,
	held_before: u32,
	converged_at: Option<u64>,
	bytes_sent: u64,
	peak_queued: usize,
	peak_uplink: u64,
}

impl Node {
	fn core(&mut self) -> &mut Core<u32> {
		self.core.as_mut().expect("only live nodes are driven")
	}

	fn wants(&self, topic: u32) -> bool {
		self.role != Role::Light || self.wants.binary_search(&topic).is_ok()
	}
}

enum Ev {
	/// The core's wake-up.
	Tick(u32),
	/// The driver's slot tick: peerset, and discovery when due.
	Slots(u32),
	WalkDone(u32),
	Dial {
		from: u32,
		to: u32,
	},
	DialAnswer {
		from: u32,
		to: u32,
		accepted: bool,
	},
	Arrive {
		to: u32,
		from: u32,
		bytes: Vec<u8>,
	},
	Sent {
		node: u32,
		peer: u32,
		id: u64,
		outcome: SendOutcome,
	},
	Page {
		node: u32,
		peer: u32,
		id: u64,
		page: StatementsPage,
	},
	/// A validation (from a peer) or a submit (`peer` none) is done.
	Checked {
		node: u32,
		peer: Option<u32>,
		statement: u32,
	},
	CloseArrive {
		to: u32,
		from: u32,
	},
	Publish(u32),
	Churn,
}

struct Scheduled {
	at: u64,
	seq: u64,
	ev: Ev,
}

impl PartialEq for Scheduled {
	fn eq(&self, other: &Self) -> bool {
		(self.at, self.seq) == (other.at, other.seq)
	}
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
	fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
		Some(self.cmp(other))
	}
}
impl Ord for Scheduled {
	fn cmp(&self, other: &Self) -> std::cmp::Ordering {
		Reverse((self.at, self.seq)).cmp(&Reverse((other.at, other.seq)))
	}
}

pub struct Sim {
	params: Params,
	now: u64,
	seq: u64,
	events: u64,
	queue: BinaryHeap<Scheduled>,
	nodes: Vec<Node>,
	statements: Vec<Published>,
	index: Arc<HashMap<Hash, u32>>,
	kad: BTreeMap<u64, u32>,
	rng: Rng,
	link_seed: u64,
	/// Per statement: its origin, and the last delivery to a node live when it was published.
	origin: Vec<u32>,
	last: Vec<u64>,
	watched_last: Vec<u64>,
	delivery: Histogram,
	deliveries_by_peers: u64,
	degree: Option<(usize, f64, usize)>,
	left: usize,
	joined: usize,
	load_start: u64,
	load_end: u64,
}

/// The topic a topic index stands for.
pub fn topic(index: u32) -> Topic {
	Topic(hash_encoded(&index.to_le_bytes()))
}

impl Sim {
	pub fn new(params: Params) -> Self {
		let mut rng = Rng::new(params.seed);
		let mut load = rng.fork(1);
		let zipf = Zipf::new(params.topics, params.zipf);
		let load_start = (params.warmup * SECOND as f64) as u64;
		let count = (params.rate * params.seconds).round() as usize;
		let statements: Vec<Published> = (0..count)
			.map(|k| {
				let topic = zipf.draw(&mut load) as u32;
				let mut statement = Statement::new();
				statement.set_topic(0, crate::gossip::topic(topic));
				statement.set_expiry_from_parts(u32::MAX, k as u32);
				let mut data = vec![0u8; params.size.saturating_sub(60).max(8)];
				data[..8].copy_from_slice(&(k as u64).to_le_bytes());
				statement.set_plain_data(data);
				let encoding: Encoded = codec::Encode::encode(&statement).into();
				let at = load_start + (k as f64 * SECOND as f64 / params.rate) as u64;
				Published { at, topic, hash: hash_encoded(&encoding), encoding }
			})
			.collect();
		let index: Arc<HashMap<Hash, u32>> =
			Arc::new(statements.iter().enumerate().map(|(k, s)| (s.hash, k as u32)).collect());
		let load_end = load_start + (params.seconds * SECOND as f64) as u64;
		let mut sim = Sim {
			now: 0,
			seq: 0,
			events: 0,
			queue: BinaryHeap::new(),
			nodes: Vec::new(),
			origin: vec![u32::MAX; count],
			last: vec![0; count],
			watched_last: vec![0; count],
			index,
			statements,
			kad: BTreeMap::new(),
			link_seed: rng.next(),
			rng,
			delivery: Histogram::default(),
			deliveries_by_peers: 0,
			degree: None,
			left: 0,
			joined: 0,
			load_start,
			load_end,
			params,
		};
		for _ in 0..sim.params.nodes {
			// Started over the first two seconds, as nodes brought up one after another.
			let start = sim.rng.below(2_000) as u64 * MS;
			sim.add_node(start);
		}
		for k in 0..count as u32 {
			let at = sim.statements[k as usize].at;
			sim.schedule(at, Ev::Publish(k));
		}
		if sim.params.churn_per_minute > 0.0 {
			let at = load_start + sim.churn_gap();
			sim.schedule(at, Ev::Churn);
		}
		sim
	}

	/// Run to the end and measure.
	#[cfg(test)]
	pub fn run(self) -> Outcome {
		self.run_reporting("", None).0
	}

	/// Run to the end and measure, printing progress to stderr every `every` of wall time.
	pub fn run_reporting(mut self, label: &str, every: Option<Duration>) -> (Outcome, Duration) {
		let started = Instant::now();
		let end = self.load_end + (self.params.drain * SECOND as f64) as u64;
		let mut report_at = every.map(|every| started + every);
		while let Some(next) = self.queue.pop() {
			if next.at > end {
				break;
			}
			self.now = next.at;
			self.events += 1;
			if self.degree.is_none() && self.now >= self.load_start {
				self.degree = Some(self.degree_now());
			}
			self.handle(next.ev);
			if let (Some(at), Some(every)) = (report_at.as_mut(), every) {
				if self.events % 4096 == 0 && Instant::now() >= *at {
					*at += every;
					eprintln!(
						"  {label}: simulated {:.1} s of {:.1} s, {} events, {:.0} s wall",
						self.now as f64 / SECOND as f64,
						end as f64 / SECOND as f64,
						self.events,
						started.elapsed().as_secs_f64()
					);
				}
			}
		}
		self.now = end;
		(self.outcome(), started.elapsed())
	}

	fn schedule(&mut self, at: u64, ev: Ev) {
		self.seq += 1;
		self.queue.push(Scheduled { at, seq: self.seq, ev });
	}

	fn latency(&self, a: u32, b: u32) -> u64 {
		let (low, high) = self.params.latency_ms;
		let ms = low + (high - low) * pair_unit(self.link_seed, a, b);
		(ms * MS as f64) as u64
	}

	fn churn_gap(&mut self) -> u64 {
		let per_second = self.params.churn_per_minute * self.params.nodes as f64 / 60.0;
		(self.rng.exponential(1.0 / per_second) * SECOND as f64) as u64
	}

	fn add_node(&mut self, start: u64) -> u32 {
		let id = self.nodes.len() as u32;
		let mut rng = self.rng.fork(u64::from(id));
		let light = id >= BOOT_NODES && rng.unit() < self.params.light_share;
		let mut wants = Vec::new();
		if light {
			let zipf = Zipf::new(self.params.topics, self.params.zipf);
			while wants.len() < self.params.light_topics.min(self.params.topics) {
				let topic = zipf.draw(&mut rng) as u32;
				if !wants.contains(&topic) {
					wants.push(topic);
				}
			}
			wants.sort_unstable();
		}
		let store = Arc::new(SimStore::new(self.index.clone(), self.statements.len()));
		let metrics = Arc::new(Metrics::default());
		let config = CoreConfig { propagation: self.params.propagation, ..CoreConfig::default() };
		let mut core = Core::new(config, store.clone(), metrics.clone(), time(start));
		if light {
			let topics: Vec<Topic> = wants.iter().map(|t| topic(*t)).collect();
			core.handle(
				time(start),
				Event::Interest(AffinityFilter::of_topics(rng.next().into(), topics.iter())),
			);
		}
		let peerset_config = PeersetConfig {
			in_peers: self.params.in_peers,
			out_peers: self.params.out_peers,
			reserved_only: false,
		};
		let mut peerset = Peerset::new(peerset_config, [], rng.next());
		for boot in 0..BOOT_NODES.min(self.params.nodes as u32) {
			if boot != id {
				peerset.discovered(boot);
			}
		}
		let published_before = self.statements.partition_point(|s| s.at < start) as u32;
		let node = Node {
			alive: true,
			role: if light { Role::Light } else { Role::Full },
			wanted_before: 0,
			wants,
			joined_at: start,
			core: Some(core),
			peerset,
			store,
			metrics,
			streams: BTreeSet::new(),
			cpu_free: 0,
			uplink_free: 0,
			tick_at: u64::MAX,
			next_walk: start,
			walk_interval: FIRST_WALK,
			walking: false,
			held_back: VecDeque::new(),
			kad_key: rng.next(),
			published_before,
			held_before: 0,
			converged_at: None,
			bytes_sent: 0,
			peak_queued: 0,
			peak_uplink: 0,
		};
		let wanted_before = (0..published_before)
			.filter(|k| node.wants(self.statements[*k as usize].topic))
			.count();
		let mut node = node;
		node.wanted_before = wanted_before as u32;
		if node.wanted_before == 0 {
			node.converged_at = Some(start);
		}
		self.kad.insert(node.kad_key, id);
		self.nodes.push(node);
		self.schedule(start, Ev::Slots(id));
		id
	}

	fn handle(&mut self, ev: Ev) {
		let now = self.now;
		match ev {
			Ev::Tick(n) => {
				let node = &mut self.nodes[n as usize];
				if !node.alive || node.tick_at != now {
					return;
				}
				node.tick_at = u64::MAX;
				node.peak_queued = node.peak_queued.max(node.core().queued());
				self.drive(n, Event::Tick);
			}
			Ev::Slots(n) => self.slots(n),
			Ev::WalkDone(n) => self.walk_done(n),
			Ev::Dial { from, to } => self.dial(from, to),
			Ev::DialAnswer { from, to, accepted } => self.dial_answer(from, to, accepted),
			Ev::Arrive { to, from, bytes } => {
				let node = &mut self.nodes[to as usize];
				if !node.alive || !node.streams.contains(&from) {
					return;
				}
				if !node.held_back.is_empty() || !node.core().accepts_notifications() {
					node.held_back.push_back((from, bytes));
					return;
				}
				self.drive(to, Event::Notification { peer: from, bytes });
			}
			Ev::Sent { node, peer, id, outcome } => {
				if self.nodes[node as usize].alive {
					self.drive(node, Event::Sent { peer, id, outcome });
				}
			}
			Ev::Page { node, peer, id, page } => {
				if self.nodes[node as usize].alive {
					self.drive(node, Event::Page { peer, id, page: Ok(page) });
				}
			}
			Ev::Checked { node, peer, statement } => self.checked(node, peer, statement),
			Ev::CloseArrive { to, from } => {
				let node = &mut self.nodes[to as usize];
				if node.alive && node.streams.remove(&from) {
					node.peerset.closed(time(now), from);
					self.drive(to, Event::Closed { peer: from });
				}
			}
			Ev::Publish(k) => self.publish(k),
			Ev::Churn => self.churn(),
		}
	}

	/// Hand the core an event and carry out what it asks.
	fn drive(&mut self, n: u32, event: Event<u32>) {
		let now = self.now;
		self.nodes[n as usize].core().handle(time(now), event);
		self.carry_out(n);
		// Notifications held back go in as soon as the core takes them.
		loop {
			let node = &mut self.nodes[n as usize];
			if node.held_back.is_empty() || !node.alive || !node.core().accepts_notifications() {
				break;
			}
			let (from, bytes) = node.held_back.pop_front().expect("not empty");
			if !node.streams.contains(&from) {
				continue;
			}
			node.core().handle(time(now), Event::Notification { peer: from, bytes });
			self.carry_out(n);
		}
		let node = &mut self.nodes[n as usize];
		if node.alive {
			let wakeup = (node.core().next_wakeup().as_nanos() as u64).max(now + 1_000);
			if wakeup < node.tick_at {
				node.tick_at = wakeup;
				self.schedule(wakeup, Ev::Tick(n));
			}
		}
	}

	fn carry_out(&mut self, n: u32) {
		let now = self.now;
		while let Some(action) = self.nodes[n as usize].core.as_mut().and_then(Core::poll_action) {
			match action {
				Action::Send { peer, id, notification } => self.send(n, peer, id, notification),
				Action::Read { peer, id, after, upto, max_bytes } => {
					let page = self.page(n, after, upto, max_bytes);
					self.schedule(now + READ_TIME, Ev::Page { node: n, peer, id, page });
				}
				Action::Validate { peer, hash, .. } => {
					let statement = self.index[&hash];
					let done = self.occupy_cpu(n);
					self.schedule(done, Ev::Checked { node: n, peer: Some(peer), statement });
				}
				Action::Close { peer } => self.close(n, peer, None),
				Action::Ban { peer, until, .. } => self.close(n, peer, Some(until)),
			}
		}
	}

	fn occupy_cpu(&mut self, n: u32) -> u64 {
		let cost = (self.params.validate_us * 1_000.0) as u64;
		let node = &mut self.nodes[n as usize];
		node.cpu_free = node.cpu_free.max(self.now) + cost;
		node.cpu_free
	}

	fn send(&mut self, n: u32, peer: u32, id: u64, notification: Vec<u8>) {
		let now = self.now;
		let latency = self.latency(n, peer);
		let bandwidth = self.params.upload_mbit;
		let node = &mut self.nodes[n as usize];
		if !node.streams.contains(&peer) {
			self.schedule(now, Ev::Sent { node: n, peer, id, outcome: SendOutcome::Failed });
			return;
		}
		let transmit = if bandwidth > 0.0 {
			(notification.len() as f64 * 8.0 / bandwidth * 1e3) as u64
		} else {
			0
		};
		let start = node.uplink_free.max(now);
		let done = start + transmit;
		if done - now > SEND_TIMEOUT.as_nanos() as u64 {
			let at = now + SEND_TIMEOUT.as_nanos() as u64;
			self.schedule(at, Ev::Sent { node: n, peer, id, outcome: SendOutcome::TimedOut });
			return;
		}
		node.uplink_free = done;
		node.bytes_sent += notification.len() as u64;
		if bandwidth > 0.0 {
			let waiting = ((done - now) as f64 * bandwidth / 8e3) as u64;
			node.peak_uplink = node.peak_uplink.max(waiting);
		}
		self.schedule(done, Ev::Sent { node: n, peer, id, outcome: SendOutcome::Delivered });
		self.schedule(done + latency, Ev::Arrive { to: peer, from: n, bytes: notification });
	}

	fn page(&self, n: u32, after: u64, upto: u64, max_bytes: usize) -> StatementsPage {
		let journal = self.nodes[n as usize].store.journal.lock();
		let upto = (upto as usize).min(journal.len());
		let mut statements = Vec::new();
		let mut bytes = 0;
		let mut next = None;
		for seq in (after as usize + 1)..=upto {
			let published = &self.statements[journal[seq - 1] as usize];
			if !statements.is_empty() && bytes + published.encoding.len() > max_bytes {
				next = Some(seq as u64 - 1);
				break;
			}
			bytes += published.encoding.len();
			statements.push((published.hash, published.encoding.to_vec()));
		}
		StatementsPage { statements, next }
	}

	/// Our side closes (or bans); the peer notices a latency later.
	fn close(&mut self, n: u32, peer: u32, ban_until: Option<std::time::Duration>) {
		let now = self.now;
		let latency = self.latency(n, peer);
		let node = &mut self.nodes[n as usize];
		if node.streams.remove(&peer) {
			node.peerset.closed(time(now), peer);
			self.schedule(now + latency, Ev::CloseArrive { to: peer, from: n });
		}
		if let Some(until) = ban_until {
			self.nodes[n as usize].peerset.banned(peer, until);
		}
	}

	fn slots(&mut self, n: u32) {
		let now = self.now;
		let out_peers = self.params.out_peers;
		let node = &mut self.nodes[n as usize];
		if !node.alive {
			return;
		}
		node.peerset.tick(time(now));
		let mut dials = Vec::new();
		while let Some(PeersetAction::Open(peer)) = node.peerset.poll_action() {
			dials.push(peer);
		}
		let walk = !node.walking && now >= node.next_walk;
		if walk {
			node.walking = true;
			let longest =
				if node.streams.len() < out_peers { LONGEST_WALK_WANTING } else { LONGEST_WALK };
			node.next_walk = now + node.walk_interval;
			node.walk_interval = (node.walk_interval * 2).min(longest);
		}
		for peer in dials {
			let at = now + 2 * self.latency(n, peer);
			self.schedule(at, Ev::Dial { from: n, to: peer });
		}
		if walk {
			let via = self.rng.below(self.nodes.len()) as u32;
			let at = now + 6 * self.latency(n, via);
			self.schedule(at, Ev::WalkDone(n));
		}
		self.schedule(now + SLOTS_TICK, Ev::Slots(n));
	}

	fn walk_done(&mut self, n: u32) {
		if !self.nodes[n as usize].alive {
			return;
		}
		let key = self.rng.next();
		let mut found = Vec::with_capacity(WALK_FINDS);
		found.extend(self.kad.range(key..).take(WALK_FINDS / 2).map(|(_, id)| *id));
		let before = WALK_FINDS - found.len();
		found.extend(self.kad.range(..key).rev().take(before).map(|(_, id)| *id));
		let node = &mut self.nodes[n as usize];
		node.walking = false;
		for peer in found {
			if peer != n {
				node.peerset.discovered(peer);
			}
		}
		self.nodes[n as usize]
			.metrics
			.discovered_peers
			.set(self.nodes[n as usize].peerset.known() as u64);
	}

	fn dial(&mut self, from: u32, to: u32) {
		let now = self.now;
		let latency = self.latency(from, to);
		let answer_at = now + latency;
		let from_role = self.nodes[from as usize].role;
		let node = &mut self.nodes[to as usize];
		if !node.alive {
			self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: false });
			return;
		}
		if node.streams.contains(&from) {
			self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: true });
			return;
		}
		if node.core().is_banned(&from, time(now)) || !node.peerset.accept_inbound(time(now), from)
		{
			self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: false });
			return;
		}
		node.peerset.opened(time(now), from, Direction::Inbound);
		node.streams.insert(from);
		// The answer is on its way before anything the stream carries.
		self.schedule(answer_at, Ev::DialAnswer { from, to, accepted: true });
		self.drive(to, Event::Opened { peer: from, version: Version::V2, role: from_role });
	}

	fn dial_answer(&mut self, from: u32, to: u32, accepted: bool) {
		let now = self.now;
		let to_role = self.nodes[to as usize].role;
		let open_there =
			self.nodes[to as usize].alive && self.nodes[to as usize].streams.contains(&from);
		let node = &mut self.nodes[from as usize];
		if !node.alive || node.streams.contains(&to) {
			return;
		}
		if accepted && open_there {
			node.peerset.opened(time(now), to, Direction::Outbound);
			node.streams.insert(to);
			self.drive(from, Event::Opened { peer: to, version: Version::V2, role: to_role });
		} else {
			node.peerset.open_failed(time(now), to);
		}
	}

	fn publish(&mut self, k: u32) {
		let origin = match self.params.origin {
			Some(origin) if self.nodes[origin as usize].alive => origin,
			_ => loop {
				let pick = self.rng.below(self.nodes.len()) as u32;
				let node = &self.nodes[pick as usize];
				if node.alive && node.role != Role::Light {
					break pick;
				}
			},
		};
		self.origin[k as usize] = origin;
		let done = self.occupy_cpu(origin);
		self.schedule(done, Ev::Checked { node: origin, peer: None, statement: k });
	}

	fn checked(&mut self, n: u32, peer: Option<u32>, statement: u32) {
		if !self.nodes[n as usize].alive {
			return;
		}
		let new = self.nodes[n as usize].store.admit(statement);
		let published = &self.statements[statement as usize];
		let hash = published.hash;
		let encoding = published.encoding.clone();
		if new {
			self.delivered(n, statement, peer.is_some());
		}
		if let Some(peer) = peer {
			let result = if new { SubmitResult::New } else { SubmitResult::Known };
			self.drive(n, Event::Verdict { peer, hash, result });
		}
		if new {
			self.drive(n, Event::Admitted(vec![encoding]));
		}
	}

	fn delivered(&mut self, n: u32, statement: u32, by_peer: bool) {
		let now = self.now;
		let published = &self.statements[statement as usize];
		let node = &mut self.nodes[n as usize];
		if by_peer {
			self.deliveries_by_peers += 1;
		}
		if node.joined_at <= published.at {
			let latency = now - published.at;
			if self.origin[statement as usize] != n {
				self.delivery.record(Duration::from_nanos(latency));
			}
			let last = &mut self.last[statement as usize];
			*last = (*last).max(now);
			if self.params.watched.contains(&n) {
				let last = &mut self.watched_last[statement as usize];
				*last = (*last).max(now);
			}
		} else if statement < node.published_before && node.wants(published.topic) {
			node.held_before += 1;
			if node.held_before == node.wanted_before && node.converged_at.is_none() {
				node.converged_at = Some(now);
			}
		}
	}

	fn churn(&mut self) {
		let now = self.now;
		if now >= self.load_end {
			return;
		}
		let live: Vec<u32> = (BOOT_NODES..self.nodes.len() as u32)
			.filter(|n| self.nodes[*n as usize].alive)
			.collect();
		if let Some(leaving) = (!live.is_empty()).then(|| live[self.rng.below(live.len())]) {
			self.leave(leaving);
		}
		self.add_node(now);
		self.joined += 1;
		let at = now + self.churn_gap();
		self.schedule(at, Ev::Churn);
	}

	fn leave(&mut self, n: u32) {
		let now = self.now;
		let node = &mut self.nodes[n as usize];
		node.alive = false;
		node.core = None;
		node.held_back.clear();
		self.kad.remove(&node.kad_key);
		let peers: Vec<u32> = std::mem::take(&mut node.streams).into_iter().collect();
		for peer in peers {
			let at = now + self.latency(n, peer);
			self.schedule(at, Ev::CloseArrive { to: peer, from: n });
		}
		self.left += 1;
	}

	fn degree_now(&self) -> (usize, f64, usize) {
		let degrees: Vec<usize> =
			self.nodes.iter().filter(|node| node.alive).map(|node| node.streams.len()).collect();
		let mean = degrees.iter().sum::<usize>() as f64 / degrees.len().max(1) as f64;
		(
			degrees.iter().copied().min().unwrap_or(0),
			mean,
			degrees.iter().copied().max().unwrap_or(0),
		)
	}

	fn outcome(self) -> Outcome {
		let mut reach_all = Histogram::default();
		let mut watched = Histogram::default();
		let (mut expected, mut missing, mut statements_missing) = (0u64, 0u64, 0u64);
		for (k, published) in self.statements.iter().enumerate() {
			if self.origin[k] == u32::MAX {
				continue;
			}
			let mut missed = false;
			for node in self.nodes.iter().filter(|node| node.alive) {
				if node.joined_at > published.at || !node.wants(published.topic) {
					continue;
				}
				expected += 1;
				if !node.store.has(k as u32) {
					missing += 1;
					missed = true;
				}
			}
			statements_missing += u64::from(missed);
			if self.last[k] > 0 {
				reach_all.record(Duration::from_nanos(self.last[k] - published.at));
			}
			if self.watched_last[k] > 0 {
				watched.record(Duration::from_nanos(self.watched_last[k] - published.at));
			}
		}
		let published = self.origin.iter().filter(|origin| **origin != u32::MAX).count();
		let node_count = self.nodes.len() as f64;
		let bytes: u64 = self.nodes.iter().map(|node| node.bytes_sent).sum();
		let sent: u64 = self
			.nodes
			.iter()
			.map(|node| node.metrics.propagated.get() + node.metrics.initial_sync_sent.get())
			.sum();
		let received: u64 = self.nodes.iter().map(|node| node.metrics.received.get()).sum();
		let deliveries = self.deliveries_by_peers.max(1) as f64;
		let mut converged = Histogram::default();
		let mut not_converged = 0;
		for node in self.nodes.iter().skip(self.params.nodes).filter(|node| node.alive) {
			match node.converged_at {
				Some(at) => converged.record(Duration::from_nanos(at - node.joined_at)),
				None => not_converged += 1,
			}
		}
		Outcome {
			nodes: self.params.nodes,
			joined: self.joined,
			left: self.left,
			statements: published,
			degree: self.degree.unwrap_or((0, 0.0, 0)),
			reach_all,
			delivery: self.delivery,
			watched,
			expected,
			missing,
			statements_missing,
			bytes_per_node_statement: bytes as f64 / (node_count * published.max(1) as f64),
			sends_per_delivery: sent as f64 / deliveries,
			duplicates_per_delivery: (received as f64 - deliveries).max(0.0) / deliveries,
			peak_queued: self.nodes.iter().map(|node| node.peak_queued).max().unwrap_or(0),
			peak_uplink_bytes: self.nodes.iter().map(|node| node.peak_uplink).max().unwrap_or(0),
			converged,
			not_converged,
			simulated: Duration::from_nanos(self.now),
			events: self.events,
		}
	}
}

fn time(ns: u64) -> Duration {
	Duration::from_nanos(ns)
}
