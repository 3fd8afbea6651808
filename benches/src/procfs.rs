//! What a process costs, read from Linux's `/proc`: resident memory from `status`, CPU ticks
//! from `stat` (of a process, of each of its threads, of the whole machine), bytes written
//! from `io`, open descriptors and what they refer to, mapped files, the load average, and a sampler of a process's peak `VmRSS`. Every harness reads
//! these here; elsewhere than Linux every figure reads as missing (`None`, or zero).

use std::{
	collections::BTreeMap,
	fmt::Display,
	path::{Path, PathBuf},
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc,
	},
	thread::JoinHandle,
	time::Duration,
};

/// `/proc` counts CPU time in these a second (`USER_HZ`, 100 on every Linux ABI).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// A process as `/proc` names it: a pid, or `"self"`.
pub const SELF: &str = "self";

/// `/proc/<pid>/status`, read once so that several fields come from the same moment.
pub struct Status(String);

/// The status of `pid` (a number or [`SELF`]), `None` if the process is gone.
pub fn status(pid: impl Display) -> Option<Status> {
	std::fs::read_to_string(format!("/proc/{pid}/status")).ok().map(Status)
}

impl Status {
	/// A field counted in KiB, such as `"VmRSS"`, `"VmHWM"` or `"RssAnon"`.
	pub fn kib(&self, field: &str) -> Option<u64> {
		self.0
			.lines()
			.find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
			.and_then(|value| value.split_whitespace().next()?.parse().ok())
	}
}

/// One `status` field of `pid` in KiB, 0 if it cannot be read.
pub fn status_kib(pid: impl Display, field: &str) -> u64 {
	status(pid).and_then(|status| status.kib(field)).unwrap_or(0)
}

/// `VmRSS` of `pid` in KiB (0 if it cannot be read).
pub fn rss_kib(pid: impl Display) -> u64 {
	status_kib(pid, "VmRSS")
}

/// Open file descriptors of `pid` (entries of `/proc/<pid>/fd`; 0 if it cannot be read).
pub fn descriptors(pid: impl Display) -> usize {
	std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |entries| entries.count())
}

/// What each open descriptor of `pid` refers to (the targets of `/proc/<pid>/fd/*`: a path,
/// or `socket:[..]`, `pipe:[..]`, `anon_inode:..`); a file deleted while open ends in
/// ` (deleted)`. Empty if they cannot be read.
pub fn open_files(pid: impl Display) -> Vec<PathBuf> {
	let Ok(entries) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
	entries.flatten().filter_map(|entry| std::fs::read_link(entry.path()).ok()).collect()
}

/// The files under one directory that a process maps, from `/proc/<pid>/smaps`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mapped {
	/// Each mapping's file, as the kernel names it (a deleted one ends in ` (deleted)`).
	pub files: Vec<PathBuf>,
	/// Their pages in RAM, KiB.
	pub resident_kib: u64,
	/// Their mappings' length, KiB.
	pub size_kib: u64,
}

/// The mappings of files under `dir` in `smaps` text: each mapping is a header line
/// (`start-end perms offset dev inode path`) followed by `Field: value kB` lines.
pub fn parse_smaps(smaps: &str, dir: &Path) -> Mapped {
	let mut mapped = Mapped::default();
	let mut inside = false;
	for line in smaps.lines() {
		let mut fields = line.split_whitespace();
		let first = fields.next().unwrap_or_default();
		if first.contains('-') && !first.ends_with(':') {
			// A header: the path is the sixth field on, and may hold spaces.
			let path = line.splitn(6, char::is_whitespace).nth(5).map(str::trim_start);
			inside = path.is_some_and(|path| Path::new(path).starts_with(dir));
			if let (true, Some(path)) = (inside, path) {
				mapped.files.push(PathBuf::from(path));
			}
			continue;
		}
		let mut kib = || fields.next().and_then(|value| value.parse::<u64>().ok()).unwrap_or(0);
		match first {
			"Size:" if inside => mapped.size_kib += kib(),
			"Rss:" if inside => mapped.resident_kib += kib(),
			_ => {}
		}
	}
	mapped
}

/// The files under `dir` that `pid` maps (empty if its `smaps` cannot be read).
pub fn mapped(pid: impl Display, dir: &Path) -> Mapped {
	std::fs::read_to_string(format!("/proc/{pid}/smaps"))
		.map_or_else(|_| Mapped::default(), |smaps| parse_smaps(&smaps, dir))
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

/// CPU ticks of a whole process (all its threads; a pid or [`SELF`]); 0 if it cannot be read.
pub fn process_ticks(pid: impl Display) -> u64 {
	std::fs::read_to_string(format!("/proc/{pid}/stat"))
		.ok()
		.and_then(|line| parse_stat(&line))
		.map_or(0, |(_, ticks)| ticks)
}

/// CPU time `pid` has used (user and system; zero if it cannot be read).
pub fn cpu_time(pid: impl Display) -> Duration {
	Duration::from_millis(process_ticks(pid) * 1000 / TICKS_PER_SECOND as u64)
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

/// Bytes this process has written to storage so far, from `/proc/self/io`: `write_bytes`
/// less `cancelled_write_bytes`, so a file emptied before the kernel wrote it costs nothing.
pub fn written_bytes() -> Option<u64> {
	let io = std::fs::read_to_string("/proc/self/io").ok()?;
	let field = |name: &str| -> Option<u64> {
		io.lines().find_map(|line| line.strip_prefix(name)).and_then(|v| v.trim().parse().ok())
	};
	Some(field("write_bytes:")?.saturating_sub(field("cancelled_write_bytes:")?))
}

/// `/proc/loadavg`'s first three fields.
pub fn load_average() -> String {
	let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
	text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The highest `VmRSS` of a process, sampled every `period` on a thread of its own.
pub struct RssPeak {
	peak: Arc<AtomicU64>,
	done: Arc<AtomicBool>,
	sampler: Option<JoinHandle<()>>,
}

impl RssPeak {
	/// Start sampling `pid` every `period`; the first sample is taken before this returns.
	pub fn start(pid: u32, period: Duration) -> RssPeak {
		let peak = Arc::new(AtomicU64::new(rss_kib(pid)));
		let done = Arc::new(AtomicBool::new(false));
		let sampler = {
			let (peak, done) = (peak.clone(), done.clone());
			std::thread::spawn(move || {
				while !done.load(Ordering::Relaxed) {
					peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
					std::thread::sleep(period);
				}
			})
		};
		RssPeak { peak, done, sampler: Some(sampler) }
	}

	/// Stop sampling; the peak in KiB.
	pub fn finish(mut self) -> u64 {
		self.stop();
		self.peak.load(Ordering::Relaxed)
	}

	fn stop(&mut self) {
		self.done.store(true, Ordering::Relaxed);
		if let Some(sampler) = self.sampler.take() {
			let _ = sampler.join();
		}
	}
}

impl Drop for RssPeak {
	fn drop(&mut self) {
		self.stop();
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use std::time::Instant;

	#[test]
	fn stat_lines_are_read_after_the_last_parenthesis() {
		let line = "4242 (tokio (worker) 1) S 1 4242 4242 0 -1 4194560 2103 0 0 0 \
			1500 250 0 0 20 0 9 0 12345 1000000 500 18446744073709551615";
		assert_eq!(parse_stat(line), Some(("tokio (worker) 1".to_string(), 1750)));
		assert_eq!(parse_stat("4242 (short) S 1"), None);
	}

	#[test]
	fn status_fields_are_read_by_exact_name_in_kib() {
		let status = Status("VmRSSx:\t9 kB\nVmRSS:\t  2048 kB\nRssAnon:\t1024 kB\n".into());
		assert_eq!(status.kib("VmRSS"), Some(2048));
		assert_eq!(status.kib("RssAnon"), Some(1024));
		assert_eq!(status.kib("VmHWM"), None);
	}

	#[test]
	fn this_process_is_readable() {
		assert!(rss_kib(SELF) > 0);
		assert!(status(std::process::id()).and_then(|s| s.kib("RssAnon")).is_some());
		assert!(!thread_ticks(std::process::id()).is_empty());
		assert_eq!(rss_kib(u32::MAX), 0);
		let open = descriptors(std::process::id());
		let file = std::fs::File::open("/proc/self/status").unwrap();
		assert_eq!(descriptors(std::process::id()), open + 1);
		drop(file);
		assert_eq!(descriptors(u32::MAX), 0);
	}

	#[test]
	fn smaps_mappings_under_a_directory_are_summed_and_others_left_out() {
		let smaps = "\
55d0-55e0 r-xp 00000000 fd:01 42 /usr/bin/statement-node
Size:                 64 kB
Rss:                  60 kB
7f00-7f10 rw-s 00000000 fd:01 43 /tmp/node-0/db/table_01_05
Size:               1024 kB
Rss:                 256 kB
Pss:                 256 kB
7f20-7f30 rw-s 00000000 fd:01 44 /tmp/node-0/db/index 01 (deleted)
Size:                512 kB
Rss:                   8 kB
7f40-7f50 rw-p 00000000 00:00 0 
Size:                132 kB
Rss:                 132 kB
";
		let mapped = parse_smaps(smaps, Path::new("/tmp/node-0"));
		assert_eq!(
			mapped.files,
			[
				PathBuf::from("/tmp/node-0/db/table_01_05"),
				PathBuf::from("/tmp/node-0/db/index 01 (deleted)")
			]
		);
		assert_eq!((mapped.resident_kib, mapped.size_kib), (264, 1536));
		assert_eq!(parse_smaps(smaps, Path::new("/tmp/node-1")), Mapped::default());
	}

	#[test]
	fn a_mapped_file_and_an_open_one_are_seen() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("open");
		std::fs::write(&path, b"x").unwrap();
		let file = std::fs::File::open(&path).unwrap();
		assert!(open_files(std::process::id()).contains(&path));
		drop(file);
		assert!(!open_files(std::process::id()).contains(&path));
		// The running test executable is a mapped file, with pages in RAM.
		let exe = std::env::current_exe().unwrap();
		let seen = mapped(std::process::id(), exe.parent().unwrap());
		assert!(seen.files.contains(&exe), "{seen:?}");
		assert!(seen.resident_kib > 0 && seen.size_kib >= seen.resident_kib, "{seen:?}");
		assert_eq!(mapped(u32::MAX, dir.path()), Mapped::default());
	}

	#[test]
	fn this_process_has_used_some_cpu() {
		let spin = Instant::now();
		while spin.elapsed() < Duration::from_millis(50) {}
		assert!(cpu_time(std::process::id()) >= Duration::from_millis(10));
		assert_eq!(cpu_time(u32::MAX), Duration::ZERO);
	}

	#[test]
	fn the_peak_is_at_least_the_first_sample() {
		let peak = RssPeak::start(std::process::id(), Duration::from_millis(5));
		assert!(peak.finish() > 0);
	}
}
