//! Topic-routed storage, modelled: instead of every node keeping every statement, each topic is
//! kept by the K nodes whose keys are nearest it by XOR distance. Not in the node: this is the
//! model behind `docs/scaling.md`.
//!
//! Two rules for "am I one of the K nearest?" are compared:
//! - `local`, the reference's gated v2 DHT path (polkadot-sdk master, `v2dht/`): a node decides
//!   from its own list of confirmed peers (those it has been connected to; departed ones stay
//!   listed for two hours), keeping a statement when fewer than K of them are nearer its topic.
//!   A node sends each statement to the connected peers it judges among the K nearest and to up
//!   to 3 connected peers nearer the topic than itself ("gossip target 3"); those forward the same
//!   way. A reader asks the K nearest peers it knows of.
//! - `lookup`, the proposal: the K nearest are found by an iterative Kademlia lookup on the
//!   topic's key, which converges on the true K nearest live nodes; writers store there, readers
//!   read there, and holders hand statements over when the K nearest change.
//!
//! The model is static: a network of N nodes with random keys and a random gossip topology
//! (each node's connections: [`Args::out_peers`] it opened and those opened to it), views of
//! [`Args::view`] confirmed peers, statements on topics of Zipf popularity, and readers drawn at
//! random. Churn replaces a share of the nodes after the statements are stored: their copies
//! go, new nodes (with a view of their connections and one walk) join, and the old nodes' views
//! keep the departed.

use crate::random::{Rng, Zipf};
use std::collections::{HashMap, HashSet, VecDeque};

#[derive(clap::Args)]
pub struct Args {
	/// Network sizes (comma-separated).
	#[arg(long, value_delimiter = ',', default_value = "100,1000,10000")]
	nodes: Vec<usize>,
	/// Peers each node has confirmed, for the `local` rule (comma-separated: each is a row).
	#[arg(long, value_delimiter = ',', default_value = "100,1000,8192")]
	view: Vec<usize>,
	/// Nodes that keep each topic.
	#[arg(long, default_value_t = 20)]
	k: usize,
	/// Connected peers nearer the topic a node forwards to beside the K nearest it knows.
	#[arg(long, default_value_t = 3)]
	gossip_target: usize,
	#[arg(long, default_value_t = 8)]
	out_peers: usize,
	#[arg(long, default_value_t = 5000)]
	statements: usize,
	#[arg(long, default_value_t = 1000)]
	topics: usize,
	#[arg(long, default_value_t = 1.0)]
	zipf: f64,
	/// Readers asked for each statement.
	#[arg(long, default_value_t = 20)]
	readers: usize,
	/// Shares of the nodes replaced after the statements are stored (comma-separated).
	#[arg(long, value_delimiter = ',', default_value = "0,0.1,0.3")]
	churn: Vec<f64>,
	/// Statements a second, for the bandwidth column.
	#[arg(long, default_value_t = 1000.0)]
	rate: f64,
	/// Bytes per statement, for the bandwidth and storage columns.
	#[arg(long, default_value_t = 1024)]
	size: usize,
	#[arg(long, default_value_t = 1)]
	seed: u64,
}

/// How nodes decide they are among a topic's K nearest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
	/// From their own list of confirmed peers (the reference's), statements travelling over
	/// the gossip connections only.
	Local,
	/// The same lists, but the writer sends straight to the K nearest peers it knows (dialling
	/// them), each keeping it if it counts itself among the K nearest.
	LocalDial,
	/// From a lookup that finds the true K nearest live nodes (the proposal).
	Lookup,
}

/// What a configuration measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
	/// Copies of a statement on live nodes (after churn: those left and those handed over):
	/// mean, and the share of statements with fewer than K.
	pub copies_mean: f64,
	pub under_k: f64,
	/// Statements stored on a node as a share of all statements: mean and largest.
	pub stored_mean: f64,
	pub stored_max: f64,
	/// Messages sent per statement, per node.
	pub messages_per_node: f64,
	/// Mean forwarding hops to the last holder.
	pub hops: f64,
	/// (statement, reader) pairs whose reader found no holder, before and after churn.
	pub read_loss: f64,
	pub read_loss_churned: f64,
	/// Statements no live node holds after churn.
	pub gone_after_churn: f64,
}

struct Network {
	keys: Vec<u64>,
	alive: Vec<bool>,
	links: Vec<Vec<u32>>,
	/// Confirmed peers, the `local` rule's view (may hold departed nodes).
	views: Vec<Vec<u32>>,
}

fn distance(a: u64, b: u64) -> u64 {
	a ^ b
}

impl Network {
	fn new(n: usize, out_peers: usize, view: usize, rng: &mut Rng) -> Self {
		let keys: Vec<u64> = (0..n).map(|_| rng.next()).collect();
		let mut links: Vec<HashSet<u32>> = vec![HashSet::new(); n];
		for a in 0..n {
			let mut tries = 0;
			while links[a].len() < out_peers.min(n - 1) && tries < 10 * out_peers {
				tries += 1;
				let b = rng.below(n);
				if b != a && links[b].len() < out_peers + 32 {
					links[a].insert(b as u32);
					links[b].insert(a as u32);
				}
			}
		}
		let links: Vec<Vec<u32>> = links
			.into_iter()
			.map(|set| {
				let mut peers: Vec<u32> = set.into_iter().collect();
				peers.sort_unstable();
				peers
			})
			.collect();
		let views = (0..n).map(|a| Self::view_of(a, &links[a], n, view, rng)).collect();
		Network { keys, alive: vec![true; n], links, views }
	}

	/// Its connections and `size` others at random, as a node that has been connected to that
	/// many over time knows them.
	fn view_of(a: usize, links: &[u32], n: usize, size: usize, rng: &mut Rng) -> Vec<u32> {
		let mut view: HashSet<u32> = links.iter().copied().collect();
		if size >= n - 1 {
			view.extend((0..n as u32).filter(|b| *b as usize != a));
		} else {
			while view.len() < size.max(links.len()) {
				let b = rng.below(n) as u32;
				if b as usize != a {
					view.insert(b);
				}
			}
		}
		let mut view: Vec<u32> = view.into_iter().collect();
		view.sort_unstable();
		view
	}

	/// How far from `topic` the K-th nearest of the nodes `me` knows (itself included) is: a
	/// node at most this far is, as far as `me` can tell, among the topic's K nearest.
	fn kth_known(&self, me: u32, topic: u64, k: usize) -> u64 {
		let mut distances: Vec<u64> = self.views[me as usize]
			.iter()
			.chain(std::iter::once(&me))
			.map(|node| distance(self.keys[*node as usize], topic))
			.collect();
		let k = k.min(distances.len());
		*distances.select_nth_unstable(k - 1).1
	}

	/// The true K nearest live nodes.
	fn nearest_live(&self, topic: u64, k: usize) -> Vec<u32> {
		let mut live: Vec<u32> =
			(0..self.keys.len() as u32).filter(|n| self.alive[*n as usize]).collect();
		let k = k.min(live.len());
		if k == 0 {
			return Vec::new();
		}
		live.select_nth_unstable_by_key(k - 1, |n| distance(self.keys[*n as usize], topic));
		live.truncate(k);
		live
	}

	/// [`Network::nearest_live`], kept in `memo` while the network does not change: every
	/// statement and reader of a topic asks the same.
	fn nearest_live_memo<'m>(
		&self,
		memo: &'m mut HashMap<u64, Vec<u32>>,
		topic: u64,
		k: usize,
	) -> &'m [u32] {
		memo.entry(topic).or_insert_with(|| self.nearest_live(topic, k))
	}

	/// The K nearest of a node's view (itself included), as its reader asks.
	fn nearest_known(&self, me: u32, topic: u64, k: usize) -> Vec<u32> {
		let mut known = self.views[me as usize].clone();
		known.push(me);
		let k = k.min(known.len());
		known.select_nth_unstable_by_key(k - 1, |n| distance(self.keys[*n as usize], topic));
		known.truncate(k);
		known
	}
}

/// Where the `local` rule sends and keeps, memoised per (node, topic).
struct LocalRouting<'a> {
	net: &'a Network,
	k: usize,
	gossip_target: usize,
	/// Per (node, topic): [`Network::kth_known`].
	reach: HashMap<(u32, u64), u64>,
	targets: HashMap<(u32, u64), Vec<u32>>,
}

impl<'a> LocalRouting<'a> {
	fn new(net: &'a Network, k: usize, gossip_target: usize) -> Self {
		LocalRouting { net, k, gossip_target, reach: HashMap::new(), targets: HashMap::new() }
	}

	fn reach(&mut self, node: u32, topic: u64) -> u64 {
		let (net, k) = (self.net, self.k);
		*self.reach.entry((node, topic)).or_insert_with(|| net.kth_known(node, topic, k))
	}

	/// Whether the node keeps statements on the topic: it knows fewer than K nodes nearer.
	fn keeps(&mut self, node: u32, topic: u64) -> bool {
		distance(self.net.keys[node as usize], topic) <= self.reach(node, topic)
	}

	/// Connected peers it judges among the K nearest, and up to `gossip_target` connected peers
	/// nearer than itself (nearest first).
	fn targets(&mut self, node: u32, topic: u64) -> Vec<u32> {
		let reach = self.reach(node, topic);
		let (net, extra) = (self.net, self.gossip_target);
		self.targets
			.entry((node, topic))
			.or_insert_with(|| {
				let own = distance(net.keys[node as usize], topic);
				let mut replicas = Vec::new();
				let mut nearer = Vec::new();
				for peer in &net.links[node as usize] {
					if !net.alive[*peer as usize] {
						continue;
					}
					let d = distance(net.keys[*peer as usize], topic);
					if d <= reach {
						replicas.push(*peer);
					} else if d < own {
						nearer.push(*peer);
					}
				}
				nearer.sort_by_key(|peer| distance(net.keys[*peer as usize], topic));
				nearer.truncate(extra);
				replicas.extend(nearer);
				replicas
			})
			.clone()
	}

	/// Route one statement from `origin`: the nodes that keep it, messages sent, hops to the
	/// last holder.
	fn route(&mut self, origin: u32, topic: u64) -> (Vec<u32>, usize, usize) {
		let mut seen = HashSet::from([origin]);
		let mut queue = VecDeque::from([(origin, 0usize)]);
		let (mut holders, mut messages, mut hops) = (Vec::new(), 0, 0);
		while let Some((node, depth)) = queue.pop_front() {
			if self.keeps(node, topic) {
				holders.push(node);
				hops = hops.max(depth);
			}
			for peer in self.targets(node, topic) {
				messages += 1;
				if seen.insert(peer) {
					queue.push_back((peer, depth + 1));
				}
			}
		}
		(holders, messages, hops)
	}
}

/// What every configuration shares.
#[derive(Clone, Debug)]
pub struct Model {
	pub k: usize,
	pub gossip_target: usize,
	pub out_peers: usize,
	pub statements: usize,
	pub topics: usize,
	pub zipf: f64,
	pub readers: usize,
	pub seed: u64,
}

/// One configuration: `view` is the `local` rule's confirmed peers (ignored for `lookup`).
pub fn measure(model: &Model, n: usize, rule: Rule, view: usize, churn: f64) -> Figures {
	let Model { k: args_k, gossip_target, out_peers, statements, topics, zipf, readers, seed } =
		model.clone();
	let mut rng = Rng::new(seed ^ n as u64);
	let mut net = Network::new(n, out_peers, view, &mut rng.fork(1));
	let zipf = Zipf::new(topics, zipf);
	let topic_keys: Vec<u64> = {
		let mut keys = rng.fork(2);
		(0..topics).map(|_| keys.next()).collect()
	};
	let mut draws = rng.fork(3);
	let mut holders: Vec<Vec<u32>> = Vec::with_capacity(statements);
	let mut topic_of = Vec::with_capacity(statements);
	let (mut messages, mut hops) = (0usize, 0usize);
	{
		let mut local = LocalRouting::new(&net, args_k, gossip_target);
		let mut nearest = HashMap::new();
		for _ in 0..statements {
			let topic = topic_keys[zipf.draw(&mut draws)];
			let origin = draws.below(n) as u32;
			let (kept, sent, depth) = match rule {
				Rule::Local => local.route(origin, topic),
				Rule::LocalDial => {
					let asked = net.nearest_known(origin, topic, args_k);
					let kept: Vec<u32> =
						asked.iter().copied().filter(|node| local.keeps(*node, topic)).collect();
					(kept, asked.len(), 1)
				}
				// A lookup walks about log2(n / K) hops, each a message; then one store each.
				Rule::Lookup => {
					let steps = ((n as f64 / args_k as f64).log2().ceil().max(0.0)) as usize;
					let found = net.nearest_live_memo(&mut nearest, topic, args_k).to_vec();
					(found, steps * 3 + args_k, steps + 1)
				}
			};
			messages += sent;
			hops += depth;
			holders.push(kept);
			topic_of.push(topic);
		}
	}
	let mut stored = vec![0usize; n];
	for kept in &holders {
		for node in kept {
			stored[*node as usize] += 1;
		}
	}
	let read = |net: &Network, holders: &[Vec<u32>], rng: &mut Rng| {
		let (mut asked, mut missed) = (0usize, 0usize);
		let mut nearest = HashMap::new();
		for (s, kept) in holders.iter().enumerate() {
			let live: HashSet<u32> =
				kept.iter().copied().filter(|h| net.alive[*h as usize]).collect();
			for _ in 0..readers {
				let reader = loop {
					let pick = rng.below(net.keys.len()) as u32;
					if net.alive[pick as usize] {
						break pick;
					}
				};
				let asks = match rule {
					Rule::Local | Rule::LocalDial => net.nearest_known(reader, topic_of[s], args_k),
					Rule::Lookup => {
						net.nearest_live_memo(&mut nearest, topic_of[s], args_k).to_vec()
					}
				};
				asked += 1;
				if !asks.iter().any(|node| live.contains(node)) {
					missed += 1;
				}
			}
		}
		missed as f64 / asked.max(1) as f64
	};
	let read_loss = read(&net, &holders, &mut draws);
	// Churn: a share of the nodes leave with their copies; as many join with fresh keys.
	let leaving = (churn * n as f64).round() as usize;
	let mut gone = 0.0;
	let mut read_loss_churned = read_loss;
	if leaving > 0 {
		let mut order: Vec<u32> = (0..n as u32).collect();
		for i in 0..leaving {
			let j = i + draws.below(n - i);
			order.swap(i, j);
			net.alive[order[i] as usize] = false;
		}
		let first_new = net.keys.len();
		for _ in 0..leaving {
			let id = net.keys.len() as u32;
			net.keys.push(draws.next());
			net.alive.push(true);
			let mut links = Vec::new();
			while links.len() < out_peers {
				let peer = draws.below(id as usize) as u32;
				if net.alive[peer as usize] && !links.contains(&peer) {
					links.push(peer);
					net.links[peer as usize].push(id);
				}
			}
			net.links.push(links.clone());
			// A newcomer knows its connections and what one walk found.
			let mut view = links;
			while view.len() < out_peers + 20 {
				let peer = draws.below(id as usize) as u32;
				if !view.contains(&peer) {
					view.push(peer);
				}
			}
			net.views.push(view);
		}
		// Old nodes learn of some newcomers (in proportion to their view), and keep the departed.
		for node in 0..first_new {
			let learn = ((view.min(n) as f64 / n as f64) * leaving as f64).round() as usize;
			// Its view holds no newcomer yet: only those learned here can repeat.
			let mut learned = HashSet::new();
			for _ in 0..learn {
				let newcomer = (first_new + draws.below(leaving)) as u32;
				if learned.insert(newcomer) {
					net.views[node].push(newcomer);
				}
			}
		}
		match rule {
			Rule::Local | Rule::LocalDial => {
				// The reference's replay: a holder connected to a newcomer sends it what the
				// newcomer keeps (by the newcomer's own rule).
				let mut local = LocalRouting::new(&net, args_k, gossip_target);
				for (s, kept) in holders.iter_mut().enumerate() {
					let mut received = Vec::new();
					for holder in kept.iter().filter(|h| net.alive[**h as usize]) {
						for peer in &net.links[*holder as usize] {
							if *peer as usize >= first_new
								&& !received.contains(peer)
								&& local.keeps(*peer, topic_of[s])
							{
								received.push(*peer);
							}
						}
					}
					kept.extend(received);
				}
			}
			Rule::Lookup => {
				// Holders hand over to the new K nearest; a statement whose K holders all left
				// is gone.
				let mut nearest = HashMap::new();
				for (s, kept) in holders.iter_mut().enumerate() {
					if kept.iter().any(|h| net.alive[*h as usize]) {
						*kept = net.nearest_live_memo(&mut nearest, topic_of[s], args_k).to_vec();
					}
				}
			}
		}
		gone = holders.iter().filter(|kept| !kept.iter().any(|h| net.alive[*h as usize])).count()
			as f64 / statements.max(1) as f64;
		read_loss_churned = read(&net, &holders, &mut draws);
	}
	// Copies held by live nodes: after churn, those that stayed and those handed over.
	let copies: Vec<usize> = holders
		.iter()
		.map(|kept| {
			let live: HashSet<u32> =
				kept.iter().copied().filter(|h| net.alive[*h as usize]).collect();
			live.len()
		})
		.collect();
	Figures {
		copies_mean: copies.iter().sum::<usize>() as f64 / statements.max(1) as f64,
		under_k: copies.iter().filter(|c| **c < args_k.min(n)).count() as f64
			/ statements.max(1) as f64,
		stored_mean: stored.iter().sum::<usize>() as f64 / (n * statements.max(1)) as f64,
		stored_max: *stored.iter().max().unwrap_or(&0) as f64 / statements.max(1) as f64,
		messages_per_node: messages as f64 / (statements.max(1) * n) as f64,
		hops: hops as f64 / statements.max(1) as f64,
		read_loss,
		read_loss_churned,
		gone_after_churn: gone,
	}
}

pub fn run(args: Args) {
	let model = Model {
		k: args.k,
		gossip_target: args.gossip_target,
		out_peers: args.out_peers,
		statements: args.statements,
		topics: args.topics,
		zipf: args.zipf,
		readers: args.readers,
		seed: args.seed,
	};
	println!(
		"| nodes | rule | confirmed peers | churn | live copies mean | statements under K live copies | stored per node mean / max (share of all) | messages per node per statement | hops | read loss | read loss after churn | statements gone after churn | per-node storage at {} B, 1 h at {}/s, mean / max | per-node upload at {}/s |",
		args.size, args.rate, args.rate
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
	// Full replication, for scale: every node keeps everything and sends it to its peers.
	for &n in &args.nodes {
		let hour = args.rate * 3600.0 * args.size as f64;
		println!(
			"| {n} | full replication | - | - | {n} | 0 | 100% / 100% | ~{:.0} (degree - 1) | - | 0 | 0 | 0 | {} / {} | {} |",
			2.0 * args.out_peers as f64 - 1.0,
			bytes(hour),
			bytes(hour),
			rate(args.rate * args.size as f64 * (2.0 * args.out_peers as f64 - 1.0)),
		);
		// A view as large as the network is the whole network.
		let views = args.view.iter().map(|v| (*v).min(n - 1));
		let mut configs: Vec<(Rule, usize)> = views
			.clone()
			.map(|v| (Rule::Local, v))
			.chain(views.map(|v| (Rule::LocalDial, v)))
			.collect();
		configs.dedup();
		configs.push((Rule::Lookup, n));
		for (rule, view) in configs {
			for &churn in &args.churn {
				let started = std::time::Instant::now();
				let f = measure(&model, n, rule, view, churn);
				let hour = args.rate * 3600.0 * args.size as f64;
				println!(
					"| {n} | {} | {} | {:.0}% | {:.1} | {:.1}% | {:.2}% / {:.2}% | {:.3} | {:.1} | {:.2}% | {:.2}% | {:.2}% | {} / {} | {} |",
					match rule {
						Rule::Local => "local view (reference)",
						Rule::LocalDial => "local view, writer dials",
						Rule::Lookup => "lookup (proposal)",
					},
					if rule == Rule::Lookup { "-".into() } else { view.to_string() },
					churn * 100.0,
					f.copies_mean,
					f.under_k * 100.0,
					f.stored_mean * 100.0,
					f.stored_max * 100.0,
					f.messages_per_node,
					f.hops,
					f.read_loss * 100.0,
					f.read_loss_churned * 100.0,
					f.gone_after_churn * 100.0,
					bytes(hour * f.stored_mean),
					bytes(hour * f.stored_max),
					rate(args.rate * args.size as f64 * f.messages_per_node),
				);
				eprintln!(
					"  {n} nodes, {rule:?}, view {view}, churn {churn}: {:.1} s",
					started.elapsed().as_secs_f64()
				);
			}
		}
	}
}

fn bytes(value: f64) -> String {
	if value >= 1e9 {
		format!("{:.1} GB", value / 1e9)
	} else if value >= 1e6 {
		format!("{:.1} MB", value / 1e6)
	} else {
		format!("{:.0} kB", value / 1e3)
	}
}

fn rate(bytes_per_second: f64) -> String {
	format!("{:.2} Mbit/s", bytes_per_second * 8.0 / 1e6)
}

#[cfg(test)]
mod tests {
	use super::*;

	fn figures(rule: Rule, view: usize, churn: f64) -> Figures {
		let model = Model {
			k: 20,
			gossip_target: 3,
			out_peers: 8,
			statements: 300,
			topics: 50,
			zipf: 1.0,
			readers: 5,
			seed: 9,
		};
		measure(&model, 200, rule, view, churn)
	}

	#[test]
	fn a_lookup_keeps_k_copies_and_readers_find_them() {
		let f = figures(Rule::Lookup, 200, 0.0);
		assert_eq!(f.copies_mean, 20.0);
		assert_eq!(f.read_loss, 0.0);
		// Churn of a third leaves almost every statement a holder to hand over from.
		let churned = figures(Rule::Lookup, 200, 0.3);
		assert!(churned.gone_after_churn < 0.01, "{churned:?}");
	}

	#[test]
	fn nodes_that_know_few_peers_claim_topics_beyond_the_k_nearest() {
		let full = figures(Rule::Local, 199, 0.0);
		assert!(full.copies_mean <= 20.0, "{full:?}");
		// Knowing 20 of 200, a node sees fewer than K nearer peers for almost every topic.
		let partial = figures(Rule::Local, 20, 0.0);
		assert!(partial.copies_mean > 5.0 * full.copies_mean, "partial {partial:?}, full {full:?}");
		assert_eq!(figures(Rule::Local, 20, 0.0), partial, "the same seed, the same figures");
	}
}
