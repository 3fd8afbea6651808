//! `light`: a light node wanting one topic in ten beside a full node, both peering with the
//! node that takes the submits: what each receives against what it wanted.

use crate::{
	scenario::{Plan, SYNC_POLL},
	traffic::{bench_topic, submit, Pool},
};
use statement_store_benches::topology::{Node, NodeSettings, Nodes};
use statement_test_support::metrics::names::{BYTES_RECEIVED, RECEIVED, STATEMENTS};
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;

/// Topics the light scenario's statements are spread over; the light node wants one.
pub const LIGHT_TOPICS: usize = 10;

/// What one node received in the light scenario.
struct Intake {
	statements: f64,
	bytes: f64,
}

fn intake(node: &Node) -> Result<Intake, String> {
	let metrics = node.metrics()?;
	Ok(Intake { statements: metrics.value(RECEIVED)?, bytes: metrics.value(BYTES_RECEIVED)? })
}

/// Wait until `node` holds `count` statements, or fail after `within`.
fn await_held(node: &Node, count: usize, within: Duration) -> Result<(), String> {
	let deadline = Instant::now() + within;
	loop {
		let held = node.metric(STATEMENTS)?;
		if held >= count as f64 {
			return Ok(());
		}
		if Instant::now() > deadline {
			return Err(format!(
				"node {} holds {held} of {count} statements after {within:?}; its log:\n{}",
				node.index,
				node.log_tail()
			));
		}
		std::thread::sleep(SYNC_POLL);
	}
}

fn light_run(
	settings: &NodeSettings,
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(Intake, Intake), String> {
	let count = plan.light_statements;
	let half = count / 2;
	eprintln!(
		"light, {} propagation: {count} statements over {LIGHT_TOPICS} topics ...",
		settings.propagation.flag()
	);
	// A alone takes the submits; the full observer F and the light node L each peer with A only.
	let mut nodes = Nodes::line(settings, 1)?;
	let alone = ["--no-discovery".to_string()];
	nodes.join(settings, 0, &alone)?;
	let rpc = nodes.first().rpc_port();
	runtime.block_on(submit(rpc, pool, half, Some(plan.rate)))?;
	await_held(&nodes.nodes[1], half, plan.sync_timeout)?;
	let wanted = format!("0x{}", hex::encode(bench_topic(0).0));
	let light = [alone[0].clone(), "--statement-topics".into(), wanted];
	nodes.join(settings, 0, &light)?;
	// Its initial sync: the first half's statements on its topic.
	await_held(&nodes.nodes[2], pool.on_topic(0, half).0, plan.sync_timeout)?;
	let tail = pool.range(half, count);
	runtime.block_on(submit(rpc, &tail, count - half, Some(plan.rate)))?;
	await_held(&nodes.nodes[1], count, plan.sync_timeout)?;
	await_held(&nodes.nodes[2], pool.on_topic(0, count).0, plan.sync_timeout)?;
	std::thread::sleep(Duration::from_secs(1));
	Ok((intake(&nodes.nodes[1])?, intake(&nodes.nodes[2])?))
}

/// A light node wanting one topic in ten and a full node, each peering with the node that
/// takes the submits: what each receives against what it wanted; once per mode.
pub fn light(
	modes: &[NodeSettings],
	runtime: &Runtime,
	pool: &Pool,
	plan: &Plan,
) -> Result<(), String> {
	let count = plan.light_statements;
	let (all_statements, all_bytes) = (0..LIGHT_TOPICS)
		.map(|k| pool.on_topic(k, count))
		.fold((0, 0), |(n, b), (tn, tb)| (n + tn, b + tb));
	let (wanted_statements, wanted_bytes) = pool.on_topic(0, count);
	println!(
		"\n### light: {count} statements over {LIGHT_TOPICS} topics, half before the light node \
		 joins (initial sync), half after\n"
	);
	println!(
		"| propagation | node | wants | statements received | bytes received | statements \
		 wanted | bytes of them | received / wanted bytes |"
	);
	println!("|---|---|---|---|---|---|---|---|");
	for settings in modes {
		let (full, light) = light_run(settings, runtime, pool, plan)?;
		for (node, wants, intake, statements, bytes) in [
			("full", "everything", full, all_statements, all_bytes),
			("light", "1 topic of 10", light, wanted_statements, wanted_bytes),
		] {
			println!(
				"| {} | {node} | {wants} | {:.0} | {:.0} | {statements} | {bytes} | {:.3}x |",
				settings.propagation.flag(),
				intake.statements,
				intake.bytes,
				intake.bytes / bytes.max(1) as f64,
			);
		}
	}
	Ok(())
}
