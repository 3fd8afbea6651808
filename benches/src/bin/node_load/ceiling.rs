//! The in-process ceiling: a `statement_store::Store` opened in this process with the node's
//! defaults (`Config::new`, as the node builds it from its default flags) and the node's
//! allowances, measured on the same statements and queries with threads calling it directly
//! where the node has connections. What the node reaches below this is lost between the socket
//! and the store.

use crate::{
	data::Signed,
	watch::CpuMark,
	window::{Timing, Window},
};
use statement_primitives::{StatementSource, StatementStore, SubmitResult, Topic};
use statement_store::{Config, MapAllowances, Store};
use std::sync::{
	atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
	Arc,
};

/// A store of our own, in a temporary directory.
pub struct Ceiling {
	store: Store,
	_dir: tempfile::TempDir,
}

/// Operations a second in one measured span.
#[derive(Clone, Copy, Debug)]
pub struct Rate {
	/// Operations counted a second.
	pub per_second: f64,
	/// Statements taken from the slice (submits only).
	pub used: usize,
	/// Whether the slice ran out before the window ended (the rate is then a floor).
	pub ran_dry: bool,
	/// CPU this process used meanwhile (the store's own threads included), in cores.
	pub cores: f64,
}

impl Ceiling {
	/// Open an empty store with the node's defaults and `allowances`.
	pub fn open(allowances: MapAllowances) -> Result<Ceiling, String> {
		let dir = tempfile::Builder::new()
			.prefix("node-load-ceiling")
			.tempdir()
			.map_err(|err| format!("cannot create a temporary directory: {err}"))?;
		let store = Store::open(Config::new(dir.path()), Arc::new(allowances))
			.map_err(|err| format!("cannot open the in-process store: {err}"))?;
		Ok(Ceiling { store, _dir: dir })
	}

	/// Submit every one of `statements`; each must be new.
	pub fn fill(&self, statements: &[Signed]) -> Result<(), String> {
		statements.iter().try_for_each(|signed| self.submit(signed))
	}

	fn submit(&self, signed: &Signed) -> Result<(), String> {
		match self.store.submit(signed.statement.clone(), StatementSource::Local) {
			SubmitResult::New => Ok(()),
			other => Err(format!("the in-process store answered {other:?} to a new statement")),
		}
	}

	/// Submits a second with `threads` threads taking the next of `statements` in turn.
	pub fn submits(
		&self,
		statements: &[Signed],
		threads: usize,
		timing: Timing,
	) -> Result<Rate, String> {
		let next = AtomicUsize::new(0);
		let ran_dry = AtomicBool::new(false);
		let cpu = CpuMark::now(None);
		let window = Window::open(timing);
		let counted = on_threads(threads, window, || {
			let Some(signed) = statements.get(next.fetch_add(1, Ordering::Relaxed)) else {
				ran_dry.store(true, Ordering::Relaxed);
				return Ok(false);
			};
			self.submit(signed).map(|()| true)
		})?;
		Ok(Rate {
			per_second: counted as f64 / window.seconds(),
			used: next.into_inner().min(statements.len()),
			ran_dry: ran_dry.into_inner(),
			cores: cpu.share_until(&CpuMark::now(None)).bench,
		})
	}

	/// `broadcasts(topics)` a second with `threads` threads; each answer must hold `expected`
	/// statements. With `writer`, one more thread submits those statements without pause
	/// meanwhile; its rate comes second.
	pub fn queries(
		&self,
		topics: &[Topic],
		expected: usize,
		threads: usize,
		writer: Option<&[Signed]>,
		timing: Timing,
	) -> Result<(Rate, Option<Rate>), String> {
		let query = || match self.store.broadcasts(topics) {
			Ok(found) if found.len() == expected => Ok(true),
			Ok(found) => Err(format!("{} statements in-process, {expected} expected", found.len())),
			Err(err) => Err(format!("an in-process query failed: {err}")),
		};
		let cpu = CpuMark::now(None);
		let window = Window::open(timing);
		let rate = |counted: u64| Rate {
			per_second: counted as f64 / window.seconds(),
			used: 0,
			ran_dry: false,
			cores: cpu.share_until(&CpuMark::now(None)).bench,
		};
		let Some(writes) = writer else {
			return Ok((rate(on_threads(threads, window, query)?), None));
		};
		std::thread::scope(|scope| {
			let writing = scope.spawn(|| self.submits(writes, 1, timing));
			let counted = on_threads(threads, window, query);
			let written = writing.join().map_err(|_| "the in-process writer panicked")??;
			Ok((rate(counted?), Some(written)))
		})
	}
}

/// Run `work` on `threads` threads until the window ends or `work` says there is no more
/// (`Ok(false)`); how many calls started in the measured span.
fn on_threads(
	threads: usize,
	window: Window,
	work: impl Fn() -> Result<bool, String> + Sync,
) -> Result<u64, String> {
	let counted = AtomicU64::new(0);
	std::thread::scope(|scope| {
		let workers: Vec<_> = (0..threads.max(1))
			.map(|_| {
				scope.spawn(|| loop {
					let started = std::time::Instant::now();
					if started >= window.end || !work()? {
						return Ok::<(), String>(());
					}
					if window.counts(started) {
						counted.fetch_add(1, Ordering::Relaxed);
					}
				})
			})
			.collect();
		workers.into_iter().try_for_each(|worker| {
			worker.join().map_err(|_| "an in-process thread panicked".to_string())?
		})
	})?;
	Ok(counted.into_inner())
}
