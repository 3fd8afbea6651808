//! Topic-routed storage as built: `statement-network`'s
//! [`Router`](statement_network::routing::router::Router), unchanged, on every node,
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
use statement_network::routing::{
	key_of,
	memory::{Network, TICK},
	nearest, Key, RoutingConfig,
};
use statement_primitives::{Encoded, Hash, Statement, Topic};
use std::time::Duration;

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

fn count(net: &Network, placed: &[(Hash, Key)], k: usize) -> Count {
	let live = net.live();
	let live_keys: Vec<(u32, Key)> = live.iter().map(|id| (*id, Network::key(*id))).collect();
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
	let mut net = Network::new(config);
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
	let queries_before = net.queries();
	for index in 0..args.statements {
		let topic = Topic(key_of(&(zipf.draw(&mut rng) as u64).to_le_bytes()));
		let mut statement = Statement::new();
		statement.set_topic(0, topic);
		statement.set_plain_data((index as u64).to_le_bytes().to_vec());
		let hash = statement.hash();
		let writer = rng.below(n) as u32;
		net.submit(writer, hash, Encoded::from(statement.encode()));
		placed.push((hash, topic.0));
	}
	let writes = (net.queries() - queries_before) as f64 / n as f64 / args.statements as f64;
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
