//! `--soak N`: the node's memory under a long submit stream.
//!
//! Signs N statements, starts the node (its defaults: 64 MiB of posting lists, 16 MiB of
//! bodies), sends all N from 8 WebSocket connections as fast as the node answers, then lets it
//! idle for a few seconds. `RssAnon` (heap, stacks, anonymous maps: what the node holds
//! rather than file pages the kernel can drop) is sampled every second throughout and set
//! against the bound the store's documentation gives: the membership set (10 bytes a
//! statement) plus the configured caches plus 64 MiB for everything else (runtime, buffers,
//! pending changes). Environment variables reach the node, so allocator settings such as
//! `MALLOC_ARENA_MAX` can be compared run against run.

use crate::{
	data::Stash,
	load::{self, Group, Job},
	report,
	watch::MemoryWatch,
	window::Timing,
	Args,
};
use sp_core::Pair;
use statement_store_benches::{client::Transport, fixture, node};
use std::time::{Duration, Instant};

/// Connections sending.
const CONNECTIONS: usize = 8;
/// Idle time after the last submit, sampled too.
const IDLE: Duration = Duration::from_secs(5);
/// The node's default caches: posting lists and bodies.
const CACHES_MIB: f64 = 64.0 + 16.0;
/// What the bound allows besides the membership set and the caches.
const OTHER_MIB: f64 = 64.0;
/// Bytes a statement the membership set takes at most, as the store documents it (about 9
/// at 4.19M; up to 10 while a table grows, or with ids 2^32 apart).
const MEMBERSHIP_BYTES: f64 = 10.0;

/// Run the soak with `count` statements.
pub fn run(args: &Args, count: usize) -> Result<(), String> {
	let binary = node::binary(args.node.clone())?;
	let keys = fixture::keys();
	let accounts: Vec<[u8; 32]> = keys.iter().map(|key| key.public().0).collect();
	let mut stash = Stash::new(keys);
	eprintln!("signing {count} statements...");
	stash.top_up(count);
	let (_dir, node, runtime) = crate::start_node(binary, &accounts, "node-soak")?;
	let memory = MemoryWatch::start(node.pid());
	memory.set_phase("submitting");
	let feed = stash.lend();
	let started = Instant::now();
	let group =
		Group { transport: Transport::Ws, connections: CONNECTIONS, job: Job::Submit(feed) };
	let window = Timing { warm_up: Duration::ZERO, measured: Duration::from_secs(24 * 3600) };
	let measured =
		runtime.block_on(load::run(node.rpc_port(), std::slice::from_ref(&group), window))?;
	let took = started.elapsed();
	let Job::Submit(feed) = group.job else { unreachable!("built above") };
	memory.set_phase("idle");
	std::thread::sleep(IDLE);
	let samples = memory.finish();
	node.kill()?;
	stash.give_back(feed)?;
	let measured = measured.into_iter().next().ok_or("the soak measured nothing")?;
	if measured.refused > 0 {
		return Err(format!(
			"the node refused {} statements, first: {}",
			measured.refused,
			measured.first_refusal.as_deref().unwrap_or("?")
		));
	}
	report::print_memory(&samples);
	let sent = stash.sent;
	let bound = sent as f64 * MEMBERSHIP_BYTES / f64::from(1 << 20) + CACHES_MIB + OTHER_MIB;
	let mib = |kib: u64| kib as f64 / 1024.0;
	let peak = samples.iter().map(|sample| sample.anon_kib).max().unwrap_or(0);
	let last = samples.last().map_or(0, |sample| sample.anon_kib);
	println!(
		"\n{sent} statements in {:.0} s ({} /s) from {CONNECTIONS} WebSocket connections; \
		 RssAnon peak {:.0} MiB, at the end {:.0} MiB; bound {bound:.0} MiB (membership {:.0} + \
		 caches {CACHES_MIB:.0} + {OTHER_MIB:.0}): {}",
		took.as_secs_f64(),
		report::thousands(sent as f64 / took.as_secs_f64()),
		mib(peak),
		mib(last),
		sent as f64 * MEMBERSHIP_BYTES / f64::from(1 << 20),
		if mib(peak) <= bound { "met" } else { "missed" },
	);
	Ok(())
}
