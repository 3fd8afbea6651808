//! What the node process costs while it is loaded, read through [`procfs`]: resident memory
//! (`VmRSS`, and `RssAnon`, the heap and stacks without mapped files) sampled every second on
//! a thread of its own and labelled with the phase, and the CPU time (`utime + stime`) of the
//! node, of this process and of the rest of the machine over a span.

use statement_store_benches::procfs;
use std::{
	sync::{
		atomic::{AtomicBool, Ordering},
		Arc, Mutex,
	},
	thread::JoinHandle,
	time::{Duration, Instant},
};

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
fn memory_kib(pid: u32) -> Option<(u64, u64)> {
	let status = procfs::status(pid)?;
	Some((status.kib("VmRSS")?, status.kib("RssAnon")?))
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
			node: node.map_or(0, procfs::process_ticks),
			bench: procfs::process_ticks(procfs::SELF),
			machine: procfs::machine_ticks(),
		}
	}

	/// CPU used from this mark to `later`.
	pub fn share_until(&self, later: &CpuMark) -> CpuShare {
		let seconds = (later.at - self.at).as_secs_f64().max(1e-9);
		let cores = |ticks: u64| ticks as f64 / procfs::TICKS_PER_SECOND / seconds;
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
	fn this_process_is_readable() {
		assert!(memory_kib(std::process::id()).is_some_and(|(rss, _)| rss > 0));
	}
}
