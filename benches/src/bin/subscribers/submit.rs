//! `--mode submit`: submits over HTTP, alone and beside each count of WebSocket subscriptions,
//! a fresh node a row; the rate against the run without any, and the node's RSS.

use crate::{
	metric, start_node,
	statements::{batches, submit_all, submit_statements},
	status_mib,
	subscriptions::open_subscriptions,
	wire::close,
	Args,
};
use statement_store_benches::{metrics::SUBSCRIPTIONS, procfs::RssPeak};
use std::time::{Duration, Instant};

/// How long `submit` waits after the subscriptions opened before it measures and submits.
const SETTLE: Duration = Duration::from_secs(15);
/// How often `submit` samples the node's RSS for its peak.
const RSS_PERIOD: Duration = Duration::from_millis(20);

struct Run {
	idle_mib: f64,
	/// RSS once every subscription is open, before any submit.
	subscribed_mib: f64,
	peak_mib: f64,
	hwm_mib: f64,
	end_mib: f64,
	seconds: f64,
	accepted: usize,
	/// Subscriptions the node opened (the rest it refused for its budget).
	opened: usize,
	open_subscriptions: Option<f64>,
}

fn run(args: &Args, batches: &[String], subscribers: usize) -> Result<Run, String> {
	let node = start_node(&args.node, args.budget_mib)?;
	std::thread::sleep(Duration::from_millis(500));
	let idle_mib = status_mib(&node, "VmRSS");
	let (streams, opened) = open_subscriptions(
		&node,
		subscribers,
		args.per_connection,
		&args.filter.json(),
		args.read(),
		None,
	)?;
	// Let the replies drain and the allocator settle: jemalloc returns the pages that the
	// subscribing itself used after 10 s, work that would otherwise land on the submits.
	std::thread::sleep(SETTLE);
	let subscribed_mib = status_mib(&node, "VmRSS");

	let peak = RssPeak::start(node.pid(), RSS_PERIOD);
	let started = Instant::now();
	let accepted = submit_all(node.rpc_port(), batches)?;
	let seconds = started.elapsed().as_secs_f64();
	// Let the node settle (background writes, dropping lagging subscribers).
	std::thread::sleep(Duration::from_secs(2));
	let peak_kib = peak.finish();
	let open_subscriptions = metric(&node, SUBSCRIPTIONS);
	let result = Run {
		idle_mib,
		subscribed_mib,
		peak_mib: peak_kib as f64 / 1024.0,
		hwm_mib: status_mib(&node, "VmHWM"),
		end_mib: status_mib(&node, "VmRSS"),
		seconds,
		accepted,
		opened,
		open_subscriptions,
	};
	close(streams);
	Ok(result)
}

pub fn run_mode(args: &Args) -> Result<(), String> {
	eprintln!("signing {} statements ...", args.statements);
	let batches = batches(&submit_statements(args.statements));
	let clients = if args.read() { "reading" } else { "never reading" };
	println!(
		"| subscribers ({clients}) | accepted | submit time | submits/s | vs 0 | RSS idle | RSS subscribed | per subscription | peak RSS (sampled) | VmHWM | RSS at end | subscriptions open at end |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
	let mut without = None;
	let mut peak_without = None;
	for subscribers in std::iter::once(0).chain(args.subscribers.iter().copied()) {
		let run = run(args, &batches, subscribers)
			.map_err(|err| format!("run with {subscribers} subscribers failed: {err}"))?;
		let rate = run.accepted as f64 / run.seconds;
		let base = *without.get_or_insert(rate);
		let peak = run.hwm_mib.max(run.peak_mib);
		let peak_base = *peak_without.get_or_insert(peak);
		let per_subscription = if subscribers == 0 {
			"-".to_string()
		} else {
			let kib = (run.subscribed_mib - run.idle_mib) * 1024.0 / run.opened.max(1) as f64;
			format!("{kib:.2} KiB ({} opened)", run.opened)
		};
		println!(
			"| {subscribers} | {} | {:.1} s | {rate:.0} | {:.2}x | {:.0} MiB | {:.0} MiB | {per_subscription} | {:.0} MiB ({:+.0}) | {:.0} MiB | {:.0} MiB | {} |",
			run.accepted,
			run.seconds,
			rate / base,
			run.idle_mib,
			run.subscribed_mib,
			run.peak_mib,
			peak - peak_base,
			run.hwm_mib,
			run.end_mib,
			run.open_subscriptions.map_or("?".into(), |open| format!("{open}")),
		);
	}
	Ok(())
}
