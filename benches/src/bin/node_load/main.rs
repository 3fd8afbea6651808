//! The node under load: the real `statement-node` over real sockets, each figure beside the
//! in-process ceiling measured in the same run (measurement only).
//!
//! ```sh
//! cargo build --release -p statement-node -p statement-store-benches --bin statement-node --bin node_load
//! target/release/node_load                # ~4 minutes: every phase 10 s after 1 s of warm-up
//! target/release/node_load --quick        # smoke check, ~1 minute
//! ```
//!
//! First the in-process ceiling: a `statement_store::Store` in this process with the node's
//! defaults and the node's allowances takes the same pre-signed statements from 1 thread and
//! from `--threads` (every core), then answers the same queries. Then the node, started with a
//! chain spec that gives the 64 signing accounts unlimited allowances (nothing is refused or
//! evicted), is loaded phase by phase: submits over WebSocket and over HTTP at each of
//! `--connections`, a WebSocket phase paced at half the WebSocket peak, and `statement_broadcasts`
//! (a 1-topic query and a 2-topic MatchAll, each returning 100 statements of a 10,000-statement
//! query set) from 8 WebSocket connections, without and with a connection submitting as fast
//! as it can. Every statement is signed before the phase that sends it starts. Meanwhile the
//! node's `VmRSS` and `RssAnon` are sampled every second, and during the WebSocket submit
//! phase at the most connections its CPU is read per thread. With `--perf PREFIX` that phase
//! and the 1-topic query phase are recorded by `perf record` into `PREFIX.submit` and
//! `PREFIX.broadcasts`.
//!
//! Options: `--node PATH` (default: `statement-node` beside this executable), `--seconds S`
//! (10, per phase), `--warm-up S` (1), `--connections 1,8,32`, `--threads N` (in-process,
//! default every core), `--quick` (1 s phases, 0.25 s warm-up), `--perf PREFIX`, `--soak N`;
//! `--help` lists them.

mod args;
mod ceiling;
mod data;
mod load;
mod null;
mod phases;
mod report;
mod soak;
mod watch;
mod window;

use args::{Args, Cli};
use ceiling::{Ceiling, Rate};
use clap::Parser;
use data::{Signed, Stash, QUERY_MATCHES};
use load::{Group, Job};
use phases::NodeRun;
use report::{Row, Target};
use sp_core::Pair;
use statement_primitives::Topic;
use statement_store::MapAllowances;
use statement_store_benches::{
	chain_spec,
	client::Transport,
	fixture,
	node::{self, Launch},
	procfs,
};
use std::{path::PathBuf, process::ExitCode, sync::Arc, time::Instant};
use watch::{CpuMark, MemoryWatch};
use window::Timing;

/// Connections that query, and that the paced phase uses.
const QUERY_CONNECTIONS: usize = 8;

/// Statements signed for a phase, over what its expected rate would use.
const MARGIN: f64 = 1.5;

/// Statements submitted in-process to estimate how many the first phase needs.
const CALIBRATION: usize = 2000;

/// The in-process figures each node phase is set beside.
struct Ceilings {
	threads: usize,
	submit_one: Rate,
	submit_many: Rate,
	one_topic: Rate,
	two_topics: Rate,
	one_topic_writing: (Rate, Option<Rate>),
	two_topics_writing: (Rate, Option<Rate>),
}

impl Ceilings {
	/// The submit figures that ran out of statements (each then a floor).
	fn ran_dry(&self) -> Vec<&'static str> {
		let writers = [&self.one_topic_writing.1, &self.two_topics_writing.1];
		[("submit, 1 thread", &self.submit_one), ("submit, threads", &self.submit_many)]
			.into_iter()
			.chain(
				["writer, 1 topic", "writer, 2 topics"]
					.into_iter()
					.zip(writers.into_iter().flatten()),
			)
			.filter(|(_, rate)| rate.ran_dry)
			.map(|(name, _)| name)
			.collect()
	}

	/// The in-process submit figures beside `connections` connections, and their threads.
	fn submits(&self, connections: usize) -> (Rate, usize) {
		if connections == 1 {
			(self.submit_one, 1)
		} else {
			(self.submit_many, self.threads)
		}
	}
}

fn main() -> ExitCode {
	let cli = Cli::parse();
	if cli.serve_null {
		return match null::serve() {
			Ok(()) => ExitCode::SUCCESS,
			Err(message) => {
				eprintln!("node_load --serve-null: {message}");
				ExitCode::from(2)
			}
		};
	}
	let args = cli.args();
	let outcome = match args.soak {
		Some(count) => soak::run(&args, count),
		None => run(args),
	};
	match outcome {
		Ok(()) => ExitCode::SUCCESS,
		Err(message) => {
			eprintln!("node_load: {message}");
			ExitCode::from(2)
		}
	}
}

fn run(args: Args) -> Result<(), String> {
	let started = Instant::now();
	let binary = node::binary(args.node.clone())?;
	let keys = fixture::keys();
	let accounts: Vec<[u8; 32]> = keys.iter().map(|key| key.public().0).collect();
	let storage = chain_spec::unlimited_allowances(&accounts);
	let allowances = || {
		MapAllowances::from_storage(storage.iter().map(|(k, v)| (k.as_slice(), v.as_slice())))
			.map_err(|err| format!("bad allowances: {err}"))
	};
	println!(
		"node {}, {} cores, load average {} at the start; phases {:.2} s after {:.2} s of \
		 warm-up; in-process threads {}\n",
		binary.display(),
		std::thread::available_parallelism().map_or(0, |n| n.get()),
		procfs::load_average(),
		args.timing.measured.as_secs_f64(),
		args.timing.warm_up.as_secs_f64(),
		args.threads,
	);
	let query_set = data::query_set(&keys);
	let mut stash = Stash::new(keys);
	let cpu = CpuMark::now(None);
	let ceilings = measure_ceilings(&args, &query_set, &mut stash, allowances()?)?;
	let cpu = cpu.share_until(&CpuMark::now(None));
	println!(
		"in-process: submit {} /s (1 thread, {:.2} cores), {} /s ({} threads, {:.2} cores); \
		 broadcasts 1 topic {} /s, 2 topics {} /s; all in-process phases: this process {:.2} \
		 cores, other {:.2} (signing included)",
		report::thousands(ceilings.submit_one.per_second),
		ceilings.submit_one.cores,
		report::thousands(ceilings.submit_many.per_second),
		ceilings.threads,
		ceilings.submit_many.cores,
		report::thousands(ceilings.one_topic.per_second),
		report::thousands(ceilings.two_topics.per_second),
		cpu.bench,
		cpu.other,
	);
	for name in ceilings.ran_dry() {
		println!("in-process {name} ran out of statements: its rate is a floor");
	}

	let (_dir, node, runtime) = start_node(binary, &accounts, "node-load")?;
	println!("node pid {}, JSON-RPC port {}\n", node.pid(), node.rpc_port());
	let memory = MemoryWatch::start(node.pid());
	let mut run = NodeRun {
		args: &args,
		port: node.rpc_port(),
		pid: node.pid(),
		stash,
		ceilings: &ceilings,
		memory: &memory,
		rows: Vec::new(),
		best_rate: ceilings.submit_many.per_second,
	};
	let outcome = runtime.block_on(run.all(query_set));
	let NodeRun { rows, mut stash, .. } = run;
	let samples = memory.finish();
	node.kill()?;
	let threads = outcome?;
	let bound = runtime.block_on(null_phases(&args, &ceilings, &mut stash))?;

	println!();
	report::print_table(&rows);
	let held: Vec<&Row> = rows.iter().filter(|row| row.met().is_some()).collect();
	let met = held.iter().filter(|row| row.met() == Some(true)).count();
	println!("\ntargets met: {met} of {}", held.len());
	println!(
		"\nThe same phases against the RPC methods over a store that does nothing (`null.rs`): \
		 the most the JSON-RPC path answers on this machine, whatever the store costs.\n"
	);
	report::print_table(&bound);
	println!("\nNode memory:\n");
	report::print_memory(&samples);
	if let Some((label, before, after, seconds)) = threads {
		println!("\nNode CPU by thread during {label}:\n");
		report::print_threads(&before, &after, seconds);
	}
	println!(
		"\nstatements sent to the node {} (and the query set's {}), signing {:.1} s, load \
		 average {} at the end, {:.0} s in all",
		stash.sent,
		data::QUERY_SET,
		stash.signing.as_secs_f64(),
		procfs::load_average(),
		started.elapsed().as_secs_f64()
	);
	Ok(())
}

/// The WebSocket submit phases and the 1-topic query phase again, against the null server
/// (the RPC methods over a store that does nothing): the bound each node figure meets.
async fn null_phases(
	args: &Args,
	ceilings: &Ceilings,
	stash: &mut Stash,
) -> Result<Vec<Row>, String> {
	let server = null::NullServer::start()?;
	stash.top_up(CALIBRATION * 5);
	let feed = stash.lend_cycling();
	let mut rows = Vec::new();
	let mut phases: Vec<(Job, usize, Rate, usize)> = args
		.connections
		.iter()
		.map(|&connections| {
			let (ceiling, threads) = ceilings.submits(connections);
			(Job::Submit(feed.clone()), connections, ceiling, threads)
		})
		.collect();
	let query = Job::Query {
		topics: Arc::new(data::hex_topics(&data::one_topic())),
		expected: QUERY_MATCHES,
	};
	phases.push((query, QUERY_CONNECTIONS, ceilings.one_topic, ceilings.threads));
	for (job, connections, ceiling, threads) in phases {
		let phase = match job {
			Job::Query { .. } => "broadcasts 1 topic, null store",
			_ => "submit, null store",
		};
		let cpu = CpuMark::now(Some(server.pid()));
		let outcome = load::run(
			server.port,
			&[Group { transport: Transport::Ws, connections, job }],
			args.timing,
		)
		.await;
		let cpu = cpu.share_until(&CpuMark::now(Some(server.pid())));
		let measured = outcome?.into_iter().next().ok_or("a phase measured nothing")?;
		rows.push(Row {
			phase: phase.to_string(),
			connections: connections.to_string(),
			transport: Transport::Ws.label(),
			measured,
			ceiling: Some((ceiling, threads)),
			per_op: true,
			target: Target::None,
			cpu,
		});
	}
	Ok(rows)
}

/// The node `binary` in a new temporary directory (named with `prefix`; it goes when the
/// returned handle drops), with a chain spec giving `accounts` unlimited allowances, and an
/// async runtime for the clients.
fn start_node(
	binary: PathBuf,
	accounts: &[[u8; 32]],
	prefix: &str,
) -> Result<(tempfile::TempDir, node::Node, tokio::runtime::Runtime), String> {
	let dir = tempfile::Builder::new()
		.prefix(prefix)
		.tempdir()
		.map_err(|err| format!("cannot create a temporary directory: {err}"))?;
	let spec = dir.path().join("spec.json");
	chain_spec::write(&spec, accounts)?;
	let launch = Launch::new(binary).chain(&spec).base_path(dir.path().join("base")).loopback();
	let node = launch.start()?;
	let runtime = tokio::runtime::Builder::new_multi_thread()
		.enable_all()
		.build()
		.map_err(|err| format!("cannot start the async runtime: {err}"))?;
	Ok((dir, node, runtime))
}

/// Statements a phase at `rate` a second may need.
fn needed(rate: f64, timing: Timing) -> usize {
	let seconds = (timing.warm_up + timing.measured).as_secs_f64();
	(rate * seconds * MARGIN) as usize + 1000
}

/// The in-process figures: a store filled with the query set, then submits from 1 and from
/// `--threads` threads, queries, and queries beside a writer thread.
fn measure_ceilings(
	args: &Args,
	query_set: &[Signed],
	stash: &mut Stash,
	allowances: MapAllowances,
) -> Result<Ceilings, String> {
	let ceiling = Ceiling::open(allowances)?;
	ceiling.fill(query_set)?;
	stash.top_up(CALIBRATION);
	let calibrating = Instant::now();
	ceiling.fill(&stash.unsent()[..CALIBRATION])?;
	let guess = CALIBRATION as f64 / calibrating.elapsed().as_secs_f64().max(1e-9);
	let mut used = CALIBRATION;
	let timing = args.timing;
	let mut submits = |stash: &mut Stash, threads: usize, rate: f64| {
		stash.top_up(used + needed(rate, timing));
		let measured = ceiling.submits(&stash.unsent()[used..], threads, timing)?;
		used += measured.used;
		Ok::<_, String>(measured)
	};
	let submit_one = submits(stash, 1, guess)?;
	let submit_many = submits(stash, args.threads, guess * args.threads as f64)?;
	let (one, two) = (data::one_topic(), data::two_topics());
	let query = |topics: &[Topic], writer: Option<&[Signed]>| {
		ceiling.queries(topics, QUERY_MATCHES, args.threads, writer, timing)
	};
	let one_topic = query(&one, None)?.0;
	let two_topics = query(&two, None)?.0;
	let mut writing = |topics: &[Topic]| {
		stash.top_up(used + needed(submit_one.per_second, timing));
		let measured = query(topics, Some(&stash.unsent()[used..]))?;
		used += measured.1.map_or(0, |writer| writer.used);
		Ok::<_, String>(measured)
	};
	let one_topic_writing = writing(&one)?;
	let two_topics_writing = writing(&two)?;
	Ok(Ceilings {
		threads: args.threads,
		submit_one,
		submit_many,
		one_topic,
		two_topics,
		one_topic_writing,
		two_topics_writing,
	})
}
