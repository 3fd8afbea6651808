//! The run's output: the Markdown table of phases with their in-process ceilings, ratios and
//! targets; the node's memory series; and where the node's CPU went by thread.

use crate::{
	ceiling::Rate,
	load::Measured,
	watch::{CpuShare, Sample},
};
use statement_store_benches::procfs;
use std::{collections::BTreeMap, time::Duration};

/// What a row is held to.
#[derive(Clone, Copy, Debug)]
pub enum Target {
	/// Nothing.
	None,
	/// The node's rate at least this share of the in-process rate.
	Ratio(f64),
	/// p99 latency at most this.
	P99(Duration),
}

/// One phase of the node, with its in-process counterpart.
pub struct Row {
	/// What ran.
	pub phase: String,
	/// Connections, as shown.
	pub connections: String,
	/// `WS` or `HTTP`.
	pub transport: &'static str,
	/// The node's figures.
	pub measured: Measured,
	/// The in-process figures and their thread count.
	pub ceiling: Option<(Rate, usize)>,
	/// Whether CPU per operation means anything (one kind of operation in the phase).
	pub per_op: bool,
	/// What the row is held to.
	pub target: Target,
	/// CPU in the phase (warm-up included).
	pub cpu: CpuShare,
}

impl Row {
	/// Node rate over in-process rate.
	pub fn ratio(&self) -> Option<f64> {
		self.ceiling.map(|(ceiling, _)| self.measured.rate / ceiling.per_second.max(1e-9))
	}

	/// Whether the row meets its target; `None` if it has none.
	pub fn met(&self) -> Option<bool> {
		match self.target {
			Target::None => None,
			Target::Ratio(share) => Some(self.ratio().is_some_and(|ratio| ratio >= share)),
			Target::P99(most) => Some(self.measured.latency.is_some_and(|l| l.p99 <= most)),
		}
	}

	fn verdict(&self) -> String {
		let goal = match self.target {
			Target::None => return "-".into(),
			Target::Ratio(share) => format!(">= {:.0}%", share * 100.0),
			Target::P99(most) => format!("p99 <= {} ms", most.as_millis()),
		};
		let met = if self.met() == Some(true) { "met" } else { "**missed**" };
		format!("{met} ({goal})")
	}
}

/// `1.23 ms`.
fn ms(duration: Duration) -> String {
	format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

/// `12,345`.
pub fn thousands(value: f64) -> String {
	let digits = format!("{:.0}", value.max(0.0));
	let mut out = String::new();
	for (i, digit) in digits.chars().enumerate() {
		if i > 0 && (digits.len() - i) % 3 == 0 {
			out.push(',');
		}
		out.push(digit);
	}
	out
}

/// The phases as a Markdown table.
pub fn print_table(rows: &[Row]) {
	println!(
		"| phase | connections | transport | rate/s | p50 | p99 | max | in-process rate | ratio | \
		 target | CPU node / bench / other | CPU per op node / in-process |"
	);
	println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
	for row in rows {
		let m = &row.measured;
		let latency = m
			.latency
			.map_or(["-".into(), "-".into(), "-".into()], |l| [ms(l.p50), ms(l.p99), ms(l.max)]);
		let ceiling = row.ceiling.map_or("-".into(), |(rate, threads)| {
			format!("{} ({threads} thr)", thousands(rate.per_second))
		});
		let micros = |cores: f64, rate: f64| format!("{:.0}", cores * 1e6 / rate.max(1e-9));
		let per_op = match (row.per_op, row.ceiling) {
			(false, _) => "-".to_string(),
			(true, None) => format!("{} µs / -", micros(row.cpu.node, m.rate)),
			(true, Some((rate, _))) => format!(
				"{} / {} µs",
				micros(row.cpu.node, m.rate),
				micros(rate.cores, rate.per_second)
			),
		};
		let ratio = row.ratio().map_or("-".into(), |ratio| format!("{:.0}%", ratio * 100.0));
		let dry = if m.ran_dry { " (ran dry)" } else { "" };
		println!(
			"| {} | {} | {} | {}{dry} | {} | {} | {} | {ceiling} | {ratio} | {} | {:.2} / {:.2} / \
			 {:.2} | {per_op} |",
			row.phase,
			row.connections,
			row.transport,
			thousands(m.rate),
			latency[0],
			latency[1],
			latency[2],
			row.verdict(),
			row.cpu.node,
			row.cpu.bench,
			row.cpu.other,
		);
	}
	for row in rows {
		if let (Some(service), Some(latency)) = (row.measured.service, row.measured.latency) {
			println!(
				"\n{} / {} {}: latency p50 {} p99 {} (from the due time when every connection \
				 was busy then); from sending to the answer p50 {} p99 {} max {}",
				row.phase,
				row.connections,
				row.transport,
				ms(latency.p50),
				ms(latency.p99),
				ms(service.p50),
				ms(service.p99),
				ms(service.max),
			);
		}
	}
	for row in rows.iter().filter(|row| row.measured.refused > 0) {
		println!(
			"\n{} / {} {}: {} refused, the first: {}",
			row.phase,
			row.connections,
			row.transport,
			row.measured.refused,
			row.measured.first_refusal.as_deref().unwrap_or("?")
		);
	}
}

/// The memory samples, one line per phase in the order they ran, in MiB.
pub fn print_memory(samples: &[Sample]) {
	let mut phases: Vec<(&str, Vec<&Sample>)> = Vec::new();
	for sample in samples {
		match phases.last_mut() {
			Some((phase, list)) if *phase == sample.phase => list.push(sample),
			_ => phases.push((&sample.phase, vec![sample])),
		}
	}
	let mib = |kib: u64| format!("{:.0}", kib as f64 / 1024.0);
	println!("| phase | from | VmRSS MiB, one a second | RssAnon MiB |");
	println!("|---|---|---|---|");
	for (phase, list) in &phases {
		let rss: Vec<String> = list.iter().map(|s| mib(s.rss_kib)).collect();
		let anon: Vec<String> = list.iter().map(|s| mib(s.anon_kib)).collect();
		let from = list.first().map_or(0.0, |s| s.at);
		println!("| {phase} | {from:.0} s | {} | {} |", rss.join(" "), anon.join(" "));
	}
	let max_rss = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
	let max_anon = samples.iter().map(|s| s.anon_kib).max().unwrap_or(0);
	println!("\nmax VmRSS {} MiB, max RssAnon {} MiB", mib(max_rss), mib(max_anon));
}

/// The node's CPU by thread between two readings `seconds` apart: by thread name, then the
/// busiest threads.
pub fn print_threads(
	before: &BTreeMap<u32, (String, u64)>,
	after: &BTreeMap<u32, (String, u64)>,
	seconds: f64,
) {
	let cores = |ticks: u64| ticks as f64 / procfs::TICKS_PER_SECOND / seconds.max(1e-9);
	let mut threads: Vec<(u32, &str, u64)> = after
		.iter()
		.map(|(tid, (name, ticks))| {
			let earlier = before.get(tid).map_or(0, |(_, ticks)| *ticks);
			(*tid, name.as_str(), ticks.saturating_sub(earlier))
		})
		.collect();
	let mut by_name: BTreeMap<&str, (usize, usize, u64)> = BTreeMap::new();
	for (_, name, ticks) in &threads {
		let entry = by_name.entry(name).or_default();
		entry.0 += 1;
		entry.1 += usize::from(*ticks > 0);
		entry.2 += ticks;
	}
	let mut names: Vec<_> = by_name.into_iter().collect();
	names.sort_by_key(|(_, (_, _, ticks))| std::cmp::Reverse(*ticks));
	println!("| thread name | threads (busy) | CPU, cores |");
	println!("|---|---|---|");
	for (name, (count, busy, ticks)) in names {
		println!("| {name} | {count} ({busy}) | {:.2} |", cores(ticks));
	}
	threads.sort_by_key(|(_, _, ticks)| std::cmp::Reverse(*ticks));
	let busiest: Vec<String> = threads
		.iter()
		.take(8)
		.filter(|(_, _, ticks)| *ticks > 0)
		.map(|(tid, name, ticks)| format!("{tid} {name} {:.2}", cores(*ticks)))
		.collect();
	println!("\nbusiest threads (tid name cores): {}", busiest.join(", "));
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn thousands_are_grouped_by_three() {
		assert_eq!(thousands(0.4), "0");
		assert_eq!(thousands(999.0), "999");
		assert_eq!(thousands(1234.0), "1,234");
		assert_eq!(thousands(1_234_567.0), "1,234,567");
	}
}
