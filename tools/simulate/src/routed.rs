//! Topic-routed storage as built: `statement-network`'s [`Router`], unchanged, on every node,
//! under a virtual clock, with queries answered at once (no latency, no loss but departed
//! nodes). The measure of the model in [`crate::routing`], taken of the real code.
//!
//! Each node starts knowing the first node (its boot node) and [`Args::known`] random others,
//! as identify tells a node of those it connects to; a node asked learns the asker the same
//! way. Statements on Zipf topics go in at random live nodes. Once they have settled (the
//! writers let go), copies and reads are counted; then a share of the nodes leaves without a
//! word, as many fresh ones join, and after a few refreshes everything is counted again.
//!
//! A read is lost when none of a statement's K live holders by the rule holds it: every
//! node's lookups converge on those (the router's own tests check it), and a subscription
//! watches them.

use crate::random::{Rng, Zipf};
use codec::Decode;
use statement_network::{
	metrics::Metrics,
	routing::{
		key_of, nearest,
		router::{Action, Answer, Event, Reply, Router, Time},
		Key, RoutingConfig,
	},
};
use statement_primitives::{Encoded, Hash, Statement, Topic};
use std::{
	collections::{BTreeMap, HashMap},
	sync::Arc,
	time::Duration,
};

#[derive(clap::Args)]
pub struct Args {
	/// Network sizes (comma-separated).
	#[arg(long, value_delimiter = ',', default_value = "100,1000")]
	nodes: Vec<usize>,
	/// Nodes that keep each topic.
	#[arg(long, default_value_t = 20)]
	k: usize,
	/// Random peers each node knows at start, beside its boot node.
	#[arg(long, default_value_t = 8)]
	known: usize,
	#[arg(long, default_value_t = 2000)]
	statements: usize,
	#[arg(long, default_value_t = 1000)]
	topics: usize,
	#[arg(long, default_value_t = 1.0)]
	zipf: f64,
	/// Shares of the nodes replaced after the statements are stored (comma-separated).
	#[arg(long, value_delimiter = ',', default_value = "0.1,0.3")]
	churn: Vec<f64>,
	/// Seconds between hand-over lookups (the nodes' `--statement-routing-refresh`).
	#[arg(long, default_value_t = 60)]
	refresh: u64,
	#[arg(long, default_value_t = 1)]
	seed: u64,
}

const TICK: Duration = Duration::from_millis(250);

struct Node {
	router: Router<u32, u32>,
	store: BTreeMap<Hash, Encoded>,
	alive: bool,
}

struct Net {
	nodes: Vec<Node>,
	keys: Vec<Key>,
	now: Time,
	config: RoutingConfig,
	open: HashMap<(u32, u64), (u32, u64)>,
	next_request: u64,
	queries: u64,
}

impl Net {
	fn join(&mut self) -> u32 {
		let id = self.nodes.len() as u32;
		let key = key_of(&id.to_le_bytes());
		let router =
			Router::new(self.config.clone(), id, key, Arc::new(Metrics::default()), u32::MAX);
		self.nodes.push(Node { router, store: BTreeMap::new(), alive: true });
		self.keys.push(key);
		id
	}

	fn introduce(&mut self, who: u32, peer: u32) {
		if who == peer {
			return;
		}
		let event = Event::Peer { peer, key: self.keys[peer as usize], addresses: vec![peer] };
		let now = self.now;
		self.nodes[who as usize].router.handle(now, event);
	}

	fn feed(&mut self, id: u32, event: Event<u32, u32>) {
		let now = self.now;
		self.nodes[id as usize].router.handle(now, event);
	}

	fn live(&self) -> Vec<u32> {
		(0..self.nodes.len() as u32).filter(|id| self.nodes[*id as usize].alive).collect()
	}

	fn settle(&mut self) {
		loop {
			let mut busy = false;
			for id in 0..self.nodes.len() as u32 {
				if !self.nodes[id as usize].alive {
					continue;
				}
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

	fn carry_out(&mut self, id: u32, action: Action<u32, u32>) {
		match action {
			Action::Query { query, peer, body } => {
				self.queries += 1;
				if !self.nodes[peer as usize].alive {
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
				let keys = &self.keys;
				let answer = match reply {
					Reply::Nearest(peers) => Answer::Nearest(
						peers.into_iter().map(|(p, a)| (p, keys[p as usize], a)).collect(),
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

	fn on_key(&self, id: u32, key: Key) -> Vec<Encoded> {
		self.nodes[id as usize]
			.store
			.values()
			.filter(|encoding| {
				Statement::decode(&mut &encoding[..])
					.is_ok_and(|statement| statement.topics().contains(&Topic(key)))
			})
			.cloned()
			.collect()
	}

	fn advance(&mut self, by: Duration) {
		let end = self.now + by;
		while self.now < end {
			self.now += TICK;
			for id in self.live() {
				self.feed(id, Event::Tick { wanted: Vec::new() });
			}
			self.settle();
		}
	}
}

/// What one count found.
struct Count {
	copies_mean: f64,
	under_k: f64,
	gone: f64,
	read_loss: f64,
	extra_mean: f64,
	stored_mean: f64,
	stored_max: f64,
}

fn count(net: &Net, placed: &[(Hash, Key)], k: usize) -> Count {
	let live = net.live();
	let live_keys: Vec<(u32, Key)> = live.iter().map(|id| (*id, net.keys[*id as usize])).collect();
	let (mut copies, mut under, mut gone, mut lost, mut extra) = (0, 0, 0, 0, 0);
	for (hash, key) in placed {
		let holding: Vec<u32> = live
			.iter()
			.copied()
			.filter(|id| net.nodes[*id as usize].store.contains_key(hash))
			.collect();
		let holders = nearest(key, live_keys.iter().copied(), k);
		copies += holding.len();
		under += usize::from(holding.len() < k);
		gone += usize::from(holding.is_empty());
		lost += usize::from(!holders.iter().any(|h| holding.contains(h)));
		extra += holding.iter().filter(|id| !holders.contains(id)).count();
	}
	let per_node: Vec<usize> = live.iter().map(|id| net.nodes[*id as usize].store.len()).collect();
	let all = placed.len() as f64;
	Count {
		copies_mean: copies as f64 / all,
		under_k: under as f64 / all,
		gone: gone as f64 / all,
		read_loss: lost as f64 / all,
		extra_mean: extra as f64 / all,
		stored_mean: per_node.iter().sum::<usize>() as f64 / live.len() as f64 / all,
		stored_max: per_node.iter().copied().max().unwrap_or(0) as f64 / all,
	}
}

/// One network of `n` nodes: the counts once the statements settled, after `churn`, and the
/// queries per node per statement while they were written.
fn measure(args: &Args, n: usize, churn: f64) -> (Count, Count, f64) {
	let mut rng = Rng::new(args.seed ^ (n as u64) << 20);
	let mut config = RoutingConfig::new(args.k);
	config.refresh = Duration::from_secs(args.refresh);
	config.drop_after = Duration::from_secs(args.refresh);
	let mut net = Net {
		nodes: Vec::new(),
		keys: Vec::new(),
		now: Time::ZERO,
		config,
		open: HashMap::new(),
		next_request: 0,
		queries: 0,
	};
	for _ in 0..n {
		net.join();
	}
	for id in 1..n as u32 {
		net.introduce(0, id);
		net.introduce(id, 0);
		for _ in 0..args.known {
			let other = rng.below(n) as u32;
			net.introduce(id, other);
		}
	}
	// Every node looks its own key up first: its neighbourhood learns of it.
	net.advance(TICK * 4);
	let zipf = Zipf::new(args.topics, args.zipf);
	let mut placed = Vec::with_capacity(args.statements);
	let queries_before = net.queries;
	for index in 0..args.statements {
		let topic = Topic(key_of(&(zipf.draw(&mut rng) as u64).to_le_bytes()));
		let mut statement = Statement::new();
		statement.set_topic(0, topic);
		statement.set_plain_data((index as u64).to_le_bytes().to_vec());
		let hash = statement.hash();
		let writer = rng.below(n) as u32;
		let encoding = Encoded::from(statement.encode());
		net.nodes[writer as usize].store.insert(hash, encoding.clone());
		net.feed(writer, Event::Admitted { encodings: vec![encoding], forward: true });
		net.settle();
		placed.push((hash, topic.0));
	}
	let writes = (net.queries - queries_before) as f64 / n as f64 / args.statements as f64;
	net.advance(Duration::from_secs(args.refresh * 2 + 1));
	let before = count(&net, &placed, args.k);
	// Churn: a share leaves without a word, as many join, knowing live nodes.
	let leaving = (n as f64 * churn).round() as usize;
	for _ in 0..leaving {
		let live = net.live();
		let id = live[rng.below(live.len())];
		net.nodes[id as usize].alive = false;
	}
	for _ in 0..leaving {
		let id = net.join();
		let live = net.live();
		for _ in 0..=args.known {
			let other = live[rng.below(live.len())];
			net.introduce(id, other);
			net.introduce(other, id);
		}
	}
	net.advance(Duration::from_secs(args.refresh * 4 + 1));
	let after = count(&net, &placed, args.k);
	(before, after, writes)
}

pub fn run(args: Args) {
	println!("| nodes | churn | live copies mean (K = {}) | statements under K live copies | statements gone | read loss | extra copies mean | stored per node mean / max (share of all) | queries per node per statement written | wall |", args.k);
	println!("|---|---|---|---|---|---|---|---|---|---|");
	for &n in &args.nodes {
		for &churn in &args.churn {
			let started = std::time::Instant::now();
			let (before, after, writes) = measure(&args, n, churn);
			for (label, c) in
				[("0%".to_string(), &before), (format!("{:.0}%", churn * 100.0), &after)]
			{
				println!(
					"| {n} | {label} | {:.1} | {:.1}% | {:.2}% | {:.2}% | {:.2} | {:.2}% / {:.2}% | {:.3} | {:.0} s |",
					c.copies_mean,
					c.under_k * 100.0,
					c.gone * 100.0,
					c.read_loss * 100.0,
					c.extra_mean,
					c.stored_mean * 100.0,
					c.stored_max * 100.0,
					writes,
					started.elapsed().as_secs_f64(),
				);
			}
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_nodes_router_keeps_k_live_copies_and_loses_no_read_through_churn() {
		let args = Args {
			nodes: vec![60],
			k: 5,
			known: 4,
			statements: 150,
			topics: 50,
			zipf: 1.0,
			churn: vec![0.2],
			refresh: 5,
			seed: 3,
		};
		let (before, after, writes) = measure(&args, 60, 0.2);
		for (when, c) in [("before churn", &before), ("after churn", &after)] {
			assert_eq!(c.copies_mean, 5.0, "{when}");
			assert_eq!(
				(c.under_k, c.gone, c.read_loss, c.extra_mean),
				(0.0, 0.0, 0.0, 0.0),
				"{when}"
			);
		}
		assert!(writes > 0.0);
	}
}
