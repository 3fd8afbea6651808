//! `mesh20`: nodes that find each other from one boot node, loaded through one of them and
//! read on five spread over the mesh: latency, loss, duplicates, and who ends up with all.

use crate::{
	scenario::{latency_cells, print_footer, Plan, SETTLE},
	traffic::{deliver, Delivery, Pool},
};
use statement_store_benches::{
	metrics::{KNOWN_RECEIVED, PROPAGATED, STATEMENTS},
	procfs::cpu_time,
	topology::{NodeSettings, Nodes, Propagation},
};
use std::time::Duration;
use tokio::runtime::Runtime;

/// A metric summed over `nodes`.
fn total(nodes: &Nodes, name: &str) -> Result<f64, String> {
	let mut sum = 0.0;
	for node in &nodes.nodes {
		sum += node.metric(name)?;
	}
	Ok(sum)
}

/// One run over a mesh.
struct MeshRun {
	propagation: Propagation,
	peers: Vec<Option<u64>>,
	delivery: Delivery,
	/// Statements sent to peers, over statements admitted times the other nodes.
	sends_per_delivery: f64,
	/// Received statements the receiver already had, per statement admitted.
	known_per_statement: f64,
	/// Nodes holding every admitted statement at the end.
	holding_all: usize,
	/// CPU the nodes used during the load and drain, all together, per statement admitted.
	cpu_per_statement: Duration,
}

fn mesh_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<MeshRun, String> {
	let count = plan.latency_statements();
	let n = plan.mesh_nodes;
	eprintln!(
		"mesh of {n}, {} propagation: starting, each knowing the first ...",
		settings.propagation.flag()
	);
	let nodes = Nodes::mesh(settings, n)?;
	let peers = nodes.peers()?;
	std::thread::sleep(SETTLE);
	let (sent_before, known_before) = (total(&nodes, PROPAGATED)?, total(&nodes, KNOWN_RECEIVED)?);
	let cpu = || nodes.nodes.iter().map(|node| cpu_time(node.pid())).sum::<Duration>();
	let cpu_before = cpu();
	// Submitted to the second node; read on five others spread over the mesh.
	let from = nodes.nodes[1].rpc_port();
	let mut watched: Vec<usize> = vec![0, n / 4, n / 2, 3 * n / 4, n - 1];
	watched.retain(|k| *k != 1);
	watched.dedup();
	let to: Vec<u16> = watched.iter().map(|k| nodes.nodes[*k].rpc_port()).collect();
	eprintln!(
		"mesh of {n}: {count} statements at {}/s into node 1, read on nodes {watched:?} ...",
		plan.rate
	);
	let delivery = runtime.block_on(deliver(from, &to, pool, count, plan.rate, plan.drain))?;
	// Gossip goes on after the watched nodes have everything: let it finish before counting.
	std::thread::sleep(Duration::from_secs(2));
	let accepted = delivery.accepted.max(1) as f64;
	let cpu_per_statement = (cpu() - cpu_before).div_f64(accepted);
	let sent = total(&nodes, PROPAGATED)? - sent_before;
	let known = total(&nodes, KNOWN_RECEIVED)? - known_before;
	let mut holding_all = 0;
	for node in &nodes.nodes {
		if node.metric(STATEMENTS)? >= delivery.accepted as f64 {
			holding_all += 1;
		}
	}
	Ok(MeshRun {
		propagation: settings.propagation,
		peers,
		delivery,
		sends_per_delivery: sent / (accepted * (n - 1) as f64),
		known_per_statement: known / accepted,
		holding_all,
		cpu_per_statement,
	})
}

/// Latency over a mesh of nodes that found each other from one boot node, once per mode.
pub fn mesh(
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let runs = modes
		.iter()
		.map(|settings| mesh_run(settings, runtime, pool, plan))
		.collect::<Result<Vec<_>, _>>()?;
	let n = plan.mesh_nodes;
	println!(
		"\n### mesh{n}: {n} nodes that know only the first, {} /s for {} s into one\n",
		plan.rate, plan.seconds
	);
	println!(
		"| propagation | peers min/mean/max | submitted/s | accepted | reached 5 watched | lost | p50 \
		 | p90 | p99 | max | sends per delivery | duplicates received per statement | nodes holding all \
		 | node CPU per statement (all nodes) |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
	for run in &runs {
		let delivery = &run.delivery;
		let seen: Vec<u64> = run.peers.iter().flatten().copied().collect();
		let mean = seen.iter().sum::<u64>() as f64 / seen.len().max(1) as f64;
		println!(
			"| {} | {}/{mean:.1}/{} | {:.0} | {} | {} | {} | {} | {:.2} | {:.2} | {}/{n} | {:.0} us |",
			run.propagation.flag(),
			seen.iter().min().unwrap_or(&0),
			seen.iter().max().unwrap_or(&0),
			delivery.submit_rate,
			delivery.accepted,
			delivery.delivered,
			delivery.lost(),
			latency_cells(delivery.latency, true),
			run.sends_per_delivery,
			run.known_per_statement,
			run.holding_all,
			run.cpu_per_statement.as_secs_f64() * 1e6,
		);
	}
	print_footer(runs.iter().map(|run| (run.propagation, &run.delivery)).collect());
	Ok(())
}
