//! What the node process costs while it is loaded, read from `/proc`: resident memory
//! (`VmRSS`, and `RssAnon`, the heap and stacks without mapped files) sampled every second on
//! a thread of its own, and CPU time (`utime + stime`) of the node, of this process, of the
//! whole machine, and of each of the node's threads.

use std::{
	collections::BTreeMap,
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc, Mutex,
	},
	thread::JoinHandle,
	time::{Duration, Instant},
};

/// `/proc` counts CPU time in these a second (`USER_HZ`, 100 on every Linux ABI).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// How often memory is sampled.
const PERIOD: Duration = Duration::from_secs(1);

/// One memory sample.
#[derive(Clone, Debug)]
pub struct Sample {
	/// Seconds since sampling began.
	pub at: f64,
	/// The phase running then.
	pub phase: String,
	/// `VmRSS`, KiB.
	pub rss_kib: u64,
	/// `RssAnon`, KiB.
	pub anon_kib: u64,
}

/// `VmRSS` and `RssAnon` of `pid` in KiB, `None` if the process is gone.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
	let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
	let field = |name: &str| {
		status
			.lines()
			.find_map(|line| line.strip_prefix(name))
			.and_then(|value| value.split_whitespace().next()?.parse().ok())
	};
	Some((field("VmRSS:")?, field("RssAnon:")?))
}

/// The node's memory, every [`PERIOD`], labelled with the phase then running.
pub struct MemoryWatch {
	phase: Arc<Mutex<String>>,
	samples: Arc<Mutex<Vec<Sample>>>,
	done: Arc<AtomicBool>,
	sampler: Option<JoinHandle<()>>,
}

impl MemoryWatch {
	/// Start sampling `pid`.
	pub fn start(pid: u32) -> MemoryWatch {
		let phase = Arc::new(Mutex::new(String::from("start")));
		let samples = Arc::new(Mutex::new(Vec::new()));
		let done = Arc::new(AtomicBool::new(false));
		let sampler = {
			let (phase, samples, done) = (phase.clone(), samples.clone(), done.clone());
			std::thread::spawn(move || {
				let started = Instant::now();
				while !done.load(Ordering::Relaxed) {
					if let Some((rss_kib, anon_kib)) = memory_kib(pid) {
						let phase = phase.lock().map(|name| name.clone()).unwrap_or_default();
						let at = started.elapsed().as_secs_f64();
						let sample = Sample { at, phase, rss_kib, anon_kib };
						if let Ok(mut samples) = samples.lock() {
							samples.push(sample);
						}
					}
					std::thread::sleep(PERIOD);
				}
			})
		};
		MemoryWatch { phase, samples, done, sampler: Some(sampler) }
	}

	/// Label the samples from now on (and say on stderr which phase runs).
	pub fn set_phase(&self, name: &str) {
		eprintln!("phase: {name}");
		if let Ok(mut phase) = self.phase.lock() {
			*phase = name.to_string();
		}
	}

	/// Stop sampling; every sample.
	pub fn finish(mut self) -> Vec<Sample> {
		self.done.store(true, Ordering::Relaxed);
		if let Some(sampler) = self.sampler.take() {
			let _ = sampler.join();
		}
		self.samples.lock().map(|samples| samples.clone()).unwrap_or_default()
	}
}

/// The name and CPU ticks (`utime + stime`) in a `/proc/.../stat` line. The name is in
/// parentheses and may itself hold spaces and parentheses, so fields are counted after the
/// last `)`.
pub fn parse_stat(line: &str) -> Option<(String, u64)> {
	let open = line.find('(')?;
	let close = line.rfind(')')?;
	let name = line.get(open + 1..close)?.to_string();
	let fields: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
	// Fields 14 and 15 of proc(5); the state (field 3) is the first after the name.
	let utime: u64 = fields.get(11)?.parse().ok()?;
	let stime: u64 = fields.get(12)?.parse().ok()?;
	Some((name, utime + stime))
}

/// CPU ticks of a whole process (all its threads); 0 if it cannot be read.
pub fn process_ticks(pid: &str) -> u64 {
	std::fs::read_to_string(format!("/proc/{pid}/stat"))
		.ok()
		.and_then(|line| parse_stat(&line))
		.map_or(0, |(_, ticks)| ticks)
}

/// Busy ticks of the whole machine (all but idle and iowait), from `/proc/stat`.
pub fn machine_ticks() -> u64 {
	let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
	let Some(line) = text.lines().next() else { return 0 };
	let fields: Vec<u64> =
		line.split_whitespace().skip(1).filter_map(|field| field.parse().ok()).collect();
	// user nice system idle iowait irq softirq steal (guest time is inside user already)
	let busy = [0, 1, 2, 5, 6, 7];
	busy.iter().filter_map(|at| fields.get(*at)).sum()
}

/// CPU ticks of every thread of `pid`, by thread id, with their names.
pub fn thread_ticks(pid: u32) -> BTreeMap<u32, (String, u64)> {
	let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
		return BTreeMap::new();
	};
	tasks
		.flatten()
		.filter_map(|task| {
			let tid: u32 = task.file_name().to_str()?.parse().ok()?;
			let line = std::fs::read_to_string(task.path().join("stat")).ok()?;
			Some((tid, parse_stat(&line)?))
		})
		.collect()
}

/// CPU used in a span, in cores (1.0 = one core busy the whole span).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuShare {
	/// The node process.
	pub node: f64,
	/// This process (clients and in-process stores).
	pub bench: f64,
	/// Everything else on the machine (other builds and sessions).
	pub other: f64,
}

/// CPU counters at one moment, to take a [`CpuShare`] against a later one.
#[derive(Clone, Copy, Debug)]
pub struct CpuMark {
	at: Instant,
	node: u64,
	bench: u64,
	machine: u64,
}

impl CpuMark {
	/// The counters now; `node` is the node's pid, if it runs.
	pub fn now(node: Option<u32>) -> CpuMark {
		CpuMark {
			at: Instant::now(),
			node: node.map_or(0, |pid| process_ticks(&pid.to_string())),
			bench: process_ticks("self"),
			machine: machine_ticks(),
		}
	}

	/// CPU used from this mark to `later`.
	pub fn share_until(&self, later: &CpuMark) -> CpuShare {
		let seconds = (later.at - self.at).as_secs_f64().max(1e-9);
		let cores = |ticks: u64| ticks as f64 / TICKS_PER_SECOND / seconds;
		let node = later.node.saturating_sub(self.node);
		let bench = later.bench.saturating_sub(self.bench);
		let machine = later.machine.saturating_sub(self.machine);
		CpuShare {
			node: cores(node),
			bench: cores(bench),
			other: cores(machine.saturating_sub(node + bench)),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn stat_lines_are_read_after_the_last_parenthesis() {
		let line = "4242 (tokio (worker) 1) S 1 4242 4242 0 -1 4194560 2103 0 0 0 \
			1500 250 0 0 20 0 9 0 12345 1000000 500 18446744073709551615";
		assert_eq!(parse_stat(line), Some(("tokio (worker) 1".to_string(), 1750)));
		assert_eq!(parse_stat("4242 (short) S 1"), None);
	}

	#[test]
	fn this_process_is_readable() {
		assert!(memory_kib(std::process::id()).is_some_and(|(rss, _)| rss > 0));
		assert!(!thread_ticks(std::process::id()).is_empty());
	}
}
