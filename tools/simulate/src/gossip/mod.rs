//! A network of nodes in one process under a virtual clock. Each node runs the gossip core
//! ([`Core`]) and peer slots ([`Peerset`](statement_network::peerset::Peerset)) exactly as the
//! litep2p driver does; this file is the driver: it carries their sends over links with a
//! latency and an upload bandwidth, answers their store reads and validations from an
//! in-memory store, and runs discovery.
//!
//! What is modelled, and how:
//! - **Links**: each pair of nodes has a one-way latency drawn once (uniform in
//!   [`Params::latency_ms`]); a send waits for its node's upload link (one per node, first come
//!   first served, [`Params::upload_mbit`]), then travels for the latency. A send that would
//!   take longer than [`SEND_TIMEOUT`](statement_network::SEND_TIMEOUT) times out, as the
//!   driver's does. Download is not limited.
//! - **Streams**: opening one takes two link latencies to reach the peer (connection, noise and
//!   yamux, substream), and its answer one more; the peer's
//!   [`Peerset::accept_inbound`](statement_network::peerset::Peerset::accept_inbound) decides.
//!   A node that leaves closes its streams: each peer notices one latency later.
//! - **Discovery**: every node is told the first [`Params::boot_nodes`] nodes (3). Random walks run
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

mod churn;
mod links;
mod measure;
mod node;

use crate::random::{pair_unit, Rng, Zipf};
use crate::stats::Histogram;
use node::{Node, Published};
use statement_network::{
	core::{Action, Core, Event, SendOutcome},
	Propagation,
};
use statement_primitives::{hash_encoded, Encoded, Hash, Statement, StatementsPage, Topic};
use std::{
	cmp::Reverse,
	collections::{BTreeMap, BinaryHeap, HashMap},
	sync::Arc,
	time::{Duration, Instant},
};

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

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
	/// All nodes share this many cores for their checks, as processes on one machine do; 0
	/// gives each node a processor of its own.
	pub shared_cores: usize,
	pub propagation: Propagation,
	pub out_peers: usize,
	pub in_peers: usize,
	/// Boot nodes every node is told of: the first ones, which never leave.
	pub boot_nodes: u32,
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
			shared_cores: 0,
			propagation: Propagation::default(),
			out_peers: statement_network::DEFAULT_OUT_PEERS,
			in_peers: statement_network::DEFAULT_IN_PEERS,
			boot_nodes: 3,
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
	/// joined that it should have (but those no live node holds at the end); and how many
	/// never did.
	pub converged: Histogram,
	pub not_converged: usize,
	/// Simulated seconds, and events handled.
	pub simulated: Duration,
	pub events: u64,
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
		payload: Payload,
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

/// A notification on its way. Tens of thousands of links each carry a tenth of a second of
/// statements, gigabytes in all: a notification of this run's statements travels as their
/// indices and is rebuilt byte for byte on arrival (see `links`); anything else travels as it
/// is.
enum Payload {
	Statements(Vec<u32>),
	Bytes(Vec<u8>),
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
	/// Topic popularity, for the load and for light nodes' topics.
	zipf: Zipf,
	/// Every statement's encoding length and where its index lies in it (see [`Payload`]).
	layout: Option<(usize, usize)>,
	/// When each shared core comes free (empty: a processor per node).
	cores: Vec<u64>,
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
		// About `size` bytes encoded: the data, and ~60 bytes of expiry, topic and lengths.
		let data_len = params.size.saturating_sub(60).max(8);
		let statements: Vec<Published> = (0..count)
			.map(|k| {
				let topic = zipf.draw(&mut load) as u32;
				let mut statement = Statement::new();
				statement.set_topic(0, crate::gossip::topic(topic));
				statement.set_expiry_from_parts(u32::MAX, k as u32);
				let mut data = vec![0u8; data_len];
				data[..8].copy_from_slice(&(k as u64).to_le_bytes());
				statement.set_plain_data(data);
				let encoding: Encoded = codec::Encode::encode(&statement).into();
				let at = load_start + (k as f64 * SECOND as f64 / params.rate) as u64;
				Published { at, topic, hash: hash_encoded(&encoding), encoding }
			})
			.collect();
		// Data is the last field: each statement's index sits `data_len` bytes from its end.
		let len = statements.first().map_or(0, |s| s.encoding.len());
		let layout = statements
			.iter()
			.enumerate()
			.all(|(k, s)| {
				s.encoding.len() == len
					&& s.encoding[len - data_len..len - data_len + 8] == (k as u64).to_le_bytes()
			})
			.then_some((len, len - data_len));
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
			zipf,
			layout,
			cores: vec![0; params.shared_cores],
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
				if self.events.is_multiple_of(4096) && Instant::now() >= *at {
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
			Ev::Arrive { to, from, payload } => {
				let node = &self.nodes[to as usize];
				if !node.alive || !node.streams.contains(&from) {
					return;
				}
				let bytes = self.unpack(payload);
				let node = &mut self.nodes[to as usize];
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

	/// When a check started now on node `n` ends: on the node's own processor, or with
	/// [`Params::shared_cores`] on the first of the machine's cores to come free.
	fn occupy_cpu(&mut self, n: u32) -> u64 {
		let cost = (self.params.validate_us * 1_000.0) as u64;
		let free = match self.cores.iter_mut().min() {
			Some(core) => core,
			None => &mut self.nodes[n as usize].cpu_free,
		};
		*free = (*free).max(self.now) + cost;
		*free
	}
}

fn time(ns: u64) -> Duration {
	Duration::from_nanos(ns)
}
