//! The gossip network at 100 to 10,000 nodes in one process: a deterministic simulation that
//! drives `statement-network`'s gossip core and peer slots, unchanged, under a virtual clock.
//! A research tool: it measures designs, not the product (`benches/` measures the product).
//!
//! ```sh
//! cargo build --release -p statement-simulate
//! target/release/simulate gossip --nodes 1000 --rate 1000 --seconds 5           # one run
//! target/release/simulate gossip --nodes 1000 --rate 1000 --propagation reference
//! target/release/simulate gossip --nodes 1000 --churn 0.1 --light-share 0.2
//! target/release/simulate routing --nodes 100,1000,10000                         # topic routing
//! target/release/simulate routed --nodes 100,1000                                # as built
//! ```
//!
//! `gossip` prints one markdown row per propagation mode asked for: latency until every node
//! that should have a statement has it, per-delivery latency, loss, bytes and duplicates, peak
//! queues, and (with churn) how long joining nodes take to catch up. The same seed gives the
//! same figures. `routing` models topic-routed storage (the reference's gated "v2 DHT" path)
//! and prints storage, bandwidth and loss against full replication; `routed` runs the node's
//! own router (`statement_network::routing::router`) on every node and counts the same
//! copies and losses; see `docs/scaling.md`.

mod gossip;
mod random;
mod routed;
mod routing;
mod stats;

use clap::{Parser, Subcommand, ValueEnum};
use gossip::{Outcome, Params, Sim};
use statement_network::Propagation;
use stats::ms;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "Deterministic simulation of the statement gossip network")]
struct Cli {
	#[command(subcommand)]
	command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
	/// Ours: sent within a 20 ms coalescing window.
	Immediate,
	/// Upstream's: once a second.
	Reference,
	/// Both, on the same topology and load.
	Both,
}

#[derive(Subcommand)]
enum Command {
	/// Full replication by gossip: every node gets every statement it wants.
	Gossip(GossipArgs),
	/// Topic-routed storage, modelled: each topic kept by the K nodes nearest it.
	Routing(routing::Args),
	/// Topic-routed storage as built: the node's router on every node, unchanged.
	Routed(routed::Args),
}

#[derive(clap::Args)]
struct GossipArgs {
	/// Nodes (a comma-separated list runs each).
	#[arg(long, value_delimiter = ',', default_value = "100")]
	nodes: Vec<usize>,
	/// Statements a second (a list runs each).
	#[arg(long, value_delimiter = ',', default_value = "100")]
	rate: Vec<f64>,
	/// Seconds of load.
	#[arg(long, default_value_t = 10.0)]
	seconds: f64,
	#[arg(long, default_value_t = 1)]
	seed: u64,
	/// One-way link latency range, milliseconds: `LOW,HIGH`.
	#[arg(long, value_delimiter = ',', default_values_t = [20.0, 200.0])]
	latency_ms: Vec<f64>,
	/// Upload bandwidth of each node, Mbit/s (0: unlimited).
	#[arg(long, default_value_t = 1000.0)]
	upload_mbit: f64,
	/// Bytes per statement.
	#[arg(long, default_value_t = 1024)]
	size: usize,
	#[arg(long, default_value_t = 1000)]
	topics: usize,
	/// Zipf exponent of topic popularity.
	#[arg(long, default_value_t = 1.0)]
	zipf: f64,
	/// Share of nodes that are light, each wanting `--light-topics` topics.
	#[arg(long, default_value_t = 0.0)]
	light_share: f64,
	#[arg(long, default_value_t = 10)]
	light_topics: usize,
	/// Share of nodes replaced a minute during the load.
	#[arg(long, default_value_t = 0.0)]
	churn: f64,
	/// Microseconds a node spends checking and storing one statement.
	#[arg(long, default_value_t = 100.0)]
	validate_us: f64,
	/// All nodes share this many cores for their checks, as the `propagation` bench's
	/// processes share the machine (0: a processor per node).
	#[arg(long, default_value_t = 0)]
	shared_cores: usize,
	#[arg(long, value_enum, default_value_t = Mode::Immediate)]
	propagation: Mode,
	/// Seconds for discovery before the load, and after it for stragglers.
	#[arg(long, default_value_t = 30.0)]
	warmup: f64,
	#[arg(long, default_value_t = 10.0)]
	drain: f64,
	#[arg(long, default_value_t = statement_network::DEFAULT_OUT_PEERS)]
	out_peers: usize,
	#[arg(long, default_value_t = statement_network::DEFAULT_IN_PEERS)]
	in_peers: usize,
	/// Boot nodes: every node is told of the first this many, which never leave.
	#[arg(long, default_value_t = 3)]
	boot_nodes: u32,
	/// Publish everything at this node (else at a random live full node).
	#[arg(long)]
	origin: Option<u32>,
	/// Also report the latency to the last of these nodes (comma-separated ids).
	#[arg(long, value_delimiter = ',')]
	watch: Vec<u32>,
}

fn main() {
	let cli = Cli::parse();
	match cli.command {
		Command::Gossip(args) => gossip_runs(args),
		Command::Routing(args) => routing::run(args),
		Command::Routed(args) => routed::run(args),
	}
}

fn gossip_runs(args: GossipArgs) {
	let [low, high] = args.latency_ms[..] else {
		eprintln!("--latency-ms takes two values, LOW,HIGH");
		std::process::exit(2);
	};
	let modes: Vec<Propagation> = match args.propagation {
		Mode::Immediate => vec![Propagation::default()],
		Mode::Reference => vec![Propagation::Reference],
		Mode::Both => vec![Propagation::default(), Propagation::Reference],
	};
	println!("{}", HEADER);
	for &nodes in &args.nodes {
		for &rate in &args.rate {
			for &propagation in &modes {
				let params = Params {
					nodes,
					seed: args.seed,
					latency_ms: (low, high),
					upload_mbit: args.upload_mbit,
					rate,
					seconds: args.seconds,
					warmup: args.warmup,
					drain: args.drain,
					size: args.size,
					topics: args.topics,
					zipf: args.zipf,
					light_share: args.light_share,
					light_topics: args.light_topics,
					churn_per_minute: args.churn,
					validate_us: args.validate_us,
					shared_cores: args.shared_cores,
					propagation,
					out_peers: args.out_peers,
					in_peers: args.in_peers,
					boot_nodes: args.boot_nodes,
					origin: args.origin,
					watched: args.watch.clone(),
				};
				let label = format!("{nodes} nodes, {rate}/s, {}", mode_name(propagation));
				eprintln!("{label}: running ...");
				let (outcome, wall) =
					Sim::new(params).run_reporting(&label, Some(Duration::from_secs(30)));
				println!("{}", row(propagation, rate, &outcome, wall));
			}
		}
	}
}

fn mode_name(propagation: Propagation) -> &'static str {
	match propagation {
		Propagation::Reference => "reference",
		Propagation::Immediate(_) => "immediate",
	}
}

const HEADER: &str = "| nodes | rate/s | propagation | statements | degree min/mean/max | reach all p50 | p99 | max | per delivery p50 | p99 | watched p50 | p99 | missing (pairs / statements) | KiB sent per node per statement | sends per delivery | duplicates per delivery | peak outbox entries | peak uplink backlog | joined / left | caught up p50 / max (not) | events | wall |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

fn row(propagation: Propagation, rate: f64, o: &Outcome, wall: Duration) -> String {
	format!(
		"| {} | {rate} | {} | {} | {}/{:.1}/{} | {} | {} | {} | {} | {} | {} | {} | {} / {} of {} | {:.2} | {:.2} | {:.2} | {} | {:.0} KiB | {} / {} | {} / {} ({}) | {} | {:.0} s |",
		o.nodes,
		mode_name(propagation),
		o.statements,
		o.degree.0,
		o.degree.1,
		o.degree.2,
		ms(o.reach_all.percentile(0.5)),
		ms(o.reach_all.percentile(0.99)),
		ms(o.reach_all.max()),
		ms(o.delivery.percentile(0.5)),
		ms(o.delivery.percentile(0.99)),
		ms(o.watched.percentile(0.5)),
		ms(o.watched.percentile(0.99)),
		o.missing,
		o.statements_missing,
		o.expected,
		o.bytes_per_node_statement / 1024.0,
		o.sends_per_delivery,
		o.duplicates_per_delivery,
		o.peak_queued,
		o.peak_uplink_bytes as f64 / 1024.0,
		o.joined,
		o.left,
		ms(o.converged.percentile(0.5)),
		ms(o.converged.max()),
		o.not_converged,
		o.events,
		wall.as_secs_f64(),
	)
}

#[cfg(test)]
mod tests {
	use super::*;

	fn small(seed: u64, propagation: Propagation) -> Params {
		Params {
			nodes: 30,
			seed,
			rate: 50.0,
			seconds: 2.0,
			warmup: 12.0,
			drain: 5.0,
			size: 300,
			topics: 20,
			light_share: 0.2,
			light_topics: 3,
			churn_per_minute: 3.0,
			propagation,
			..Params::default()
		}
	}

	#[test]
	fn every_documented_invocation_parses() {
		statement_test_support::cli::assert_parses::<Cli>(&[
			"simulate gossip --nodes 1000 --rate 1000 --seconds 5",
			"simulate gossip --nodes 1000 --rate 1000 --propagation reference",
			"simulate gossip --nodes 1000 --churn 0.1 --light-share 0.2",
			"simulate gossip --nodes 1000 --rate 1000 --seconds 5 --propagation both",
			"simulate gossip --nodes 1000 --rate 100 --seconds 10 --churn 0.1 --light-share 0.2",
			"simulate gossip --nodes 100,1000 --rate 100,1000 --seconds 5 --propagation both",
			"simulate gossip --seed 1 --boot-nodes 1 --shared-cores 2 --nodes 20 --rate 250 \
			 --seconds 10 --latency-ms 0.05,0.2 --upload-mbit 0 --size 400 --validate-us 347 \
			 --origin 1 --watch 0,5,10,15,19 --propagation immediate",
			"simulate routing --nodes 100,1000,10000",
			"simulate routed --nodes 100,1000",
			"simulate routed --nodes 100,1000 --statements 2000 --churn 0.1,0.3",
			"simulate routed --nodes 10000 --statements 2000 --churn 0.1",
			"simulate routed --nodes 30 --k 5 --statements 24 --topics 24 --churn 0.2 --refresh 3",
		]);
	}

	#[test]
	fn the_same_seed_gives_the_same_figures_and_another_seed_others() {
		let first = Sim::new(small(7, Propagation::default())).run();
		let again = Sim::new(small(7, Propagation::default())).run();
		assert_eq!(first, again, "same seed, same run");
		let other = Sim::new(small(8, Propagation::default())).run();
		assert_ne!(first, other, "another seed forms another network");
		// The run did something: statements went round, and nodes came and went.
		assert_eq!(first.statements, 100);
		assert!(first.delivery.count() > 20 * 100 / 2, "deliveries: {}", first.delivery.count());
		assert!(first.joined > 0 && first.left > 0, "churn: {first:?}");
	}

	#[test]
	fn every_node_gets_every_statement_it_wants_and_the_tick_is_slower() {
		let mut params = small(3, Propagation::default());
		params.churn_per_minute = 0.0;
		let ours = Sim::new(params.clone()).run();
		assert_eq!(ours.missing, 0, "{ours:?}");
		assert!(ours.expected > 0);
		params.propagation = Propagation::Reference;
		let reference = Sim::new(params).run();
		assert_eq!(reference.missing, 0, "{reference:?}");
		let p50 = |o: &Outcome| o.reach_all.percentile(0.5).unwrap();
		assert!(
			p50(&reference) > p50(&ours),
			"the one-second tick delays: reference p50 {:?}, ours {:?}",
			p50(&reference),
			p50(&ours)
		);
	}

	#[test]
	fn a_node_that_joins_catches_up_on_what_was_published_before() {
		let mut params = small(5, Propagation::default());
		params.light_share = 0.0;
		params.churn_per_minute = 6.0;
		let outcome = Sim::new(params).run();
		assert!(outcome.joined >= 3, "{outcome:?}");
		assert_eq!(outcome.not_converged, 0, "{outcome:?}");
		assert!(outcome.converged.count() as usize >= outcome.joined / 2, "{outcome:?}");
	}
}
