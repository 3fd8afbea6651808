//! The node's phases, one after another against one running node: the query set loaded, then
//! submits over WebSocket and HTTP at each connection count, a paced WebSocket phase, and the
//! query phases without and with a writer; each adds its row beside its in-process ceiling.

use crate::{
	ceiling::Rate,
	data::{self, Feed, Signed, Stash, QUERY_MATCHES},
	load::{self, Group, Job},
	needed,
	report::{self, Row, Target},
	watch::{CpuMark, MemoryWatch},
	window::Timing,
	Args, Ceilings, QUERY_CONNECTIONS,
};
use statement_primitives::Topic;
use statement_store_benches::{client::Transport, procfs};
use std::{
	process::{Child, Command, Stdio},
	sync::Arc,
	time::{Duration, Instant},
};

/// The target for rates: at least this share of the in-process rate.
const TARGET_SHARE: f64 = 0.6;

/// The target for latency at half the peak rate.
const TARGET_P99: Duration = Duration::from_millis(10);

/// Per-thread CPU ticks before and after a phase, its name and length in seconds.
pub type ThreadSpan = (
	String,
	std::collections::BTreeMap<u32, (String, u64)>,
	std::collections::BTreeMap<u32, (String, u64)>,
	f64,
);

/// The node's phases and what they found.
pub struct NodeRun<'a> {
	/// The command line.
	pub args: &'a Args,
	/// The node's JSON-RPC port.
	pub port: u16,
	/// The node's process id.
	pub pid: u32,
	/// Statements signed and not yet sent.
	pub stash: Stash,
	/// The in-process figures beside each row.
	pub ceilings: &'a Ceilings,
	/// The node's memory, labelled with the phase.
	pub memory: &'a MemoryWatch,
	/// One row a phase.
	pub rows: Vec<Row>,
	/// The highest submit rate seen so far (in-process at first), to size the next feed.
	pub best_rate: f64,
}

impl NodeRun<'_> {
	/// Every phase; the per-thread CPU of the WebSocket submit phase at the most connections.
	pub async fn all(&mut self, query_set: Vec<Signed>) -> Result<Option<ThreadSpan>, String> {
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
