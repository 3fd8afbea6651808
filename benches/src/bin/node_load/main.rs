//! The node under load: the real `statement-node` over real sockets, each figure beside the
//! in-process ceiling measured in the same run (issue 14, item 1; measurement only).
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
//! default every core), `--quick` (1 s phases, 0.25 s warm-up), `--perf PREFIX`.

mod ceiling;
mod data;
mod load;
mod null;
mod report;
mod soak;
mod watch;
mod window;

use ceiling::{Ceiling, Rate};
use data::{Feed, Signed, Stash, QUERY_MATCHES};
use load::{Group, Job};
use report::{Row, Target};
use sp_core::Pair;
use statement_primitives::Topic;
use statement_store::MapAllowances;
use statement_store_benches::{
	chain_spec,
	client::Transport,
	fixture,
	node::{self, Chain, Launch},
	procfs,
};
use std::{
	path::PathBuf,
	process::{Child, Command, ExitCode, Stdio},
	sync::Arc,
	time::{Duration, Instant},
};
use watch::{CpuMark, MemoryWatch};
use window::Timing;

/// Connections that query, and that the paced phase uses.
const QUERY_CONNECTIONS: usize = 8;

/// The issue's target for rates: at least this share of the in-process rate.
const TARGET_SHARE: f64 = 0.6;

/// The issue's target for latency at half the peak rate.
const TARGET_P99: Duration = Duration::from_millis(10);

/// Statements signed for a phase, over what its expected rate would use.
const MARGIN: f64 = 1.5;

/// Statements submitted in-process to estimate how many the first phase needs.
const CALIBRATION: usize = 2000;

/// Command-line options.
struct Args {
	node: Option<PathBuf>,
	timing: Timing,
	connections: Vec<usize>,
	threads: usize,
	perf: Option<PathBuf>,
	/// `--soak N`: only submit N statements and watch the node's memory.
	soak: Option<usize>,
}

impl Args {
	fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
		let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
		let mut parsed = Args {
			node: None,
			timing: Timing { warm_up: Duration::from_secs(1), measured: Duration::from_secs(10) },
			connections: vec![1, 8, 32],
			threads: cores,
			perf: None,
			soak: None,
		};
		let seconds = |arg: &str, text: String| {
			let value: f64 = number(arg, text)?;
			Duration::try_from_secs_f64(value).map_err(|_| format!("{arg}: {value} is not a time"))
		};
		while let Some(arg) = args.next() {
			let mut value = || args.next().ok_or(format!("{arg} needs a value"));
			match arg.as_str() {
				"--node" => parsed.node = Some(PathBuf::from(value()?)),
				"--seconds" => parsed.timing.measured = seconds(&arg, value()?)?,
				"--warm-up" => parsed.timing.warm_up = seconds(&arg, value()?)?,
				"--connections" => {
					parsed.connections = value()?
						.split(',')
						.map(|n| number(&arg, n.trim().to_string()))
						.collect::<Result<_, _>>()?
				}
				"--threads" => parsed.threads = number(&arg, value()?)?,
				"--quick" => {
					parsed.timing = Timing {
						warm_up: Duration::from_millis(250),
						measured: Duration::from_secs(1),
					}
				}
				"--perf" => parsed.perf = Some(PathBuf::from(value()?)),
				"--soak" => parsed.soak = Some(number(&arg, value()?)?),
				"-h" | "--help" => {
					return Err("usage: node_load [--node PATH] [--seconds S] [--warm-up S] \
						[--connections 1,8,32] [--threads N] [--quick] [--perf PREFIX] \
						[--soak N]"
						.into())
				}
				other => return Err(format!("unknown option {other:?} (try --help)")),
			}
		}
		if parsed.timing.measured.is_zero() || parsed.threads == 0 {
			return Err("--seconds and --threads must be positive".into());
		}
		if parsed.connections.is_empty() || parsed.connections.contains(&0) {
			return Err("--connections must list positive numbers".into());
		}
		Ok(parsed)
	}
}

/// `text` as the number option `arg` needs.
fn number<T: std::str::FromStr>(arg: &str, text: String) -> Result<T, String> {
	text.parse().map_err(|_| format!("{arg}: {text:?} is not a valid number"))
}

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
	if std::env::args().nth(1).as_deref() == Some("--serve-null") {
		return match null::serve() {
			Ok(()) => ExitCode::SUCCESS,
			Err(message) => {
				eprintln!("node_load --serve-null: {message}");
				ExitCode::from(2)
			}
		};
	}
	let outcome = Args::parse(std::env::args().skip(1)).and_then(|args| match args.soak {
		Some(count) => soak::run(&args, count),
		None => run(args),
	});
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
	println!("node pid {}, JSON-RPC port {}\n", node.pid(), node.rpc_port);
	let memory = MemoryWatch::start(node.pid());
	let mut run = NodeRun {
		args: &args,
		port: node.rpc_port,
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
	let launch = Launch {
		binary,
		base_path: Some(dir.path().join("base")),
		chain: Chain::Spec(spec),
		args: ["--listen-addr", "/ip4/127.0.0.1/tcp/0"].map(String::from).to_vec(),
	};
	let (node, _) = launch.start()?;
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

/// Per-thread CPU ticks before and after a phase, its name and length in seconds.
type ThreadSpan = (
	String,
	std::collections::BTreeMap<u32, (String, u64)>,
	std::collections::BTreeMap<u32, (String, u64)>,
	f64,
);

/// The node's phases and what they found.
struct NodeRun<'a> {
	args: &'a Args,
	port: u16,
	pid: u32,
	stash: Stash,
	ceilings: &'a Ceilings,
	memory: &'a MemoryWatch,
	rows: Vec<Row>,
	/// The highest submit rate seen so far (in-process at first), to size the next feed.
	best_rate: f64,
}

impl NodeRun<'_> {
	/// Every phase; the per-thread CPU of the WebSocket submit phase at the most connections.
	async fn all(&mut self, query_set: Vec<Signed>) -> Result<Option<ThreadSpan>, String> {
		self.memory.set_phase("query set");
		let loading = [Group {
			transport: Transport::Ws,
			connections: QUERY_CONNECTIONS,
			job: Job::Submit(Feed::new(query_set)),
		}];
		let loaded = load::run(
			self.port,
			&loading,
			Timing { warm_up: Duration::ZERO, measured: Duration::from_secs(600) },
		)
		.await?;
		if loaded[0].refused > 0 || !loaded[0].ran_dry {
			return Err(format!(
				"the node did not take the whole query set: {}",
				loaded[0].first_refusal.as_deref().unwrap_or("timed out")
			));
		}

		let most = self.args.connections.iter().copied().max().unwrap_or(1);
		let mut threads = None;
		let mut ws_peak: f64 = 0.0;
		for &connections in &self.args.connections {
			let profiled = connections == most;
			// Signed now, so that the span read per thread is the phase alone.
			self.stash.top_up(needed(self.best_rate, self.args.timing));
			let before = profiled.then(|| procfs::thread_ticks(self.pid));
			let perf = if profiled { self.start_perf("submit")? } else { None };
			let phase_started = Instant::now();
			let rate = self.submits(Transport::Ws, connections, None).await?;
			let seconds = phase_started.elapsed().as_secs_f64();
			finish_perf(perf)?;
			if let Some(before) = before {
				let label = format!("the WebSocket submit phase at {connections} connections");
				threads = Some((label, before, procfs::thread_ticks(self.pid), seconds));
			}
			ws_peak = ws_peak.max(rate);
		}
		self.submits(Transport::Ws, QUERY_CONNECTIONS, Some(ws_peak / 2.0)).await?;
		for &connections in &self.args.connections {
			self.submits(Transport::Http, connections, None).await?;
		}
		let ceilings = self.ceilings;
		self.queries("broadcasts 1 topic", data::one_topic(), ceilings.one_topic, None).await?;
		self.queries("broadcasts 2-topic MatchAll", data::two_topics(), ceilings.two_topics, None)
			.await?;
		let writing = ceilings.one_topic_writing;
		self.queries("broadcasts 1 topic, writer", data::one_topic(), writing.0, writing.1).await?;
		let writing = ceilings.two_topics_writing;
		self.queries(
			"broadcasts 2-topic MatchAll, writer",
			data::two_topics(),
			writing.0,
			writing.1,
		)
		.await?;
		Ok(threads)
	}

	/// One submit phase (paced at `pace` a second if given); its row is added.
	async fn submits(
		&mut self,
		transport: Transport,
		connections: usize,
		pace: Option<f64>,
	) -> Result<f64, String> {
		let phase = match pace {
			Some(rate) => format!("submit at half the WS peak ({} /s)", report::thousands(rate)),
			None => "submit".to_string(),
		};
		self.memory.set_phase(&format!("{phase} {} {connections}", transport.label()));
		self.stash.top_up(needed(pace.unwrap_or(self.best_rate), self.args.timing));
		let feed = self.stash.lend();
		let job = match pace {
			Some(rate) => Job::Paced(feed.clone(), rate),
			None => Job::Submit(feed.clone()),
		};
		let cpu = CpuMark::now(Some(self.pid));
		let outcome =
			load::run(self.port, &[Group { transport, connections, job }], self.args.timing).await;
		let cpu = cpu.share_until(&CpuMark::now(Some(self.pid)));
		let measured = outcome?.into_iter().next().ok_or("a phase measured nothing")?;
		self.stash.give_back(feed)?;
		let rate = measured.rate;
		self.best_rate = self.best_rate.max(rate);
		let target = match (pace, transport) {
			(Some(_), _) => Target::P99(TARGET_P99),
			(None, Transport::Ws) if connections >= 8 => Target::Ratio(TARGET_SHARE),
			_ => Target::None,
		};
		self.rows.push(Row {
			phase,
			connections: connections.to_string(),
			transport: transport.label(),
			ceiling: pace.is_none().then(|| self.ceilings.submits(connections)),
			per_op: true,
			measured,
			target,
			cpu,
		});
		Ok(rate)
	}

	/// One query phase from [`QUERY_CONNECTIONS`] WebSocket connections, with a writer if
	/// `writer` (its in-process rate) is given; its rows are added.
	async fn queries(
		&mut self,
		phase: &str,
		topics: Vec<Topic>,
		ceiling: Rate,
		writer: Option<Rate>,
	) -> Result<(), String> {
		self.memory.set_phase(phase);
		let profiled = writer.is_none() && topics.len() == 1;
		let perf = if profiled { self.start_perf("broadcasts")? } else { None };
		let query =
			Job::Query { topics: Arc::new(data::hex_topics(&topics)), expected: QUERY_MATCHES };
		let mut groups =
			vec![Group { transport: Transport::Ws, connections: QUERY_CONNECTIONS, job: query }];
		let feed = writer.map(|_| {
			self.stash.top_up(needed(self.best_rate, self.args.timing));
			self.stash.lend()
		});
		if let Some(feed) = &feed {
			groups.push(Group {
				transport: Transport::Ws,
				connections: 1,
				job: Job::Submit(feed.clone()),
			});
		}
		let cpu = CpuMark::now(Some(self.pid));
		let outcome = load::run(self.port, &groups, self.args.timing).await;
		let cpu = cpu.share_until(&CpuMark::now(Some(self.pid)));
		finish_perf(perf)?;
		let mut measured = outcome?.into_iter();
		drop(groups);
		if let Some(feed) = feed {
			self.stash.give_back(feed)?;
		}
		let queries = measured.next().ok_or("a phase measured nothing")?;
		let with_writer = if writer.is_some() { " + 1 writer" } else { "" };
		self.rows.push(Row {
			phase: phase.to_string(),
			connections: format!("{QUERY_CONNECTIONS}{with_writer}"),
			transport: "WS",
			measured: queries,
			ceiling: Some((ceiling, self.ceilings.threads)),
			per_op: writer.is_none(),
			target: Target::Ratio(TARGET_SHARE),
			cpu,
		});
		if let (Some(written), Some(ceiling)) = (measured.next(), writer) {
			self.rows.push(Row {
				phase: "its writer (submits)".to_string(),
				connections: "1".into(),
				transport: "WS",
				measured: written,
				ceiling: Some((ceiling, 1)),
				per_op: false,
				target: Target::None,
				cpu,
			});
		}
		Ok(())
	}

	/// `perf record` of the node for one phase into `PREFIX.what`, if `--perf` asked for it.
	fn start_perf(&self, what: &str) -> Result<Option<Child>, String> {
		let Some(prefix) = &self.args.perf else { return Ok(None) };
		let mut path = prefix.clone().into_os_string();
		path.push(format!(".{what}"));
		let seconds = (self.args.timing.warm_up + self.args.timing.measured).as_secs_f64();
		Command::new("perf")
			.args(["record", "-e", "cpu-clock", "-F", "499", "--call-graph", "dwarf,16384"])
			.args(["-p", &self.pid.to_string(), "-o"])
			.arg(path)
			.args(["--", "sleep", &format!("{seconds:.2}")])
			.stdout(Stdio::null())
			.stderr(Stdio::null())
			.spawn()
			.map(Some)
			.map_err(|err| format!("cannot run perf: {err}"))
	}
}

/// Wait for `perf record` to write its file.
fn finish_perf(perf: Option<Child>) -> Result<(), String> {
	if let Some(mut perf) = perf {
		let status = perf.wait().map_err(|err| format!("perf: {err}"))?;
		if !status.success() {
			return Err(format!("perf record failed ({status})"));
		}
	}
	Ok(())
}
