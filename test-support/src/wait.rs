//! Waiting for a condition: the one way a test waits. Every bound is a hang detector on some
//! observable state, polled often enough that the bound, not the polling, decides, and a
//! failure says what was waited for and what was last seen.

use crate::{Error, Result};
use std::{
	fmt::Display,
	future::Future,
	time::{Duration, Instant},
};

/// The shortest pause between two looks.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// One look at a condition.
#[derive(Debug)]
pub enum Check<T> {
	/// It holds, with what was seen.
	Met(T),
	/// Not yet; says what was seen instead.
	Unmet(String),
}

/// What a look may return: a `bool`, a [`Check`], or either inside a `Result` whose error
/// counts as "not yet" (a node restarting does not answer for a while) and is reported if the
/// deadline passes.
pub trait Look<T> {
	/// The look as a [`Check`].
	fn look(self) -> Check<T>;
}

impl Look<()> for bool {
	fn look(self) -> Check<()> {
		if self {
			Check::Met(())
		} else {
			Check::Unmet("not yet".into())
		}
	}
}

impl<T> Look<T> for Check<T> {
	fn look(self) -> Check<T> {
		self
	}
}

impl<T, L: Look<T>, E: Display> Look<T> for std::result::Result<L, E> {
	fn look(self) -> Check<T> {
		match self {
			Ok(look) => look.look(),
			Err(err) => Check::Unmet(format!("error: {err}")),
		}
	}
}

/// The bound for a wait that `usually` takes: six times that, and at least a minute. Tests
/// share two busy cores with other tests; a liveness bound is there to catch a hang, not to
/// time anything.
pub fn hang_bound(usually: Duration) -> Duration {
	(usually * 6).max(Duration::from_secs(60))
}

/// The state of one wait.
struct Waiting<'a> {
	what: &'a str,
	within: Duration,
	started: Instant,
}

impl Waiting<'_> {
	/// `Some` once the wait is over: met, or past its deadline with what was last seen.
	fn judge<T>(&self, check: Check<T>) -> Option<Result<T>> {
		match check {
			Check::Met(value) => Some(Ok(value)),
			Check::Unmet(seen) if self.started.elapsed() >= self.within => Some(Err(Error::new(
				format!("{}: not within {:?}; last seen: {seen}", self.what, self.within),
			))),
			Check::Unmet(_) => None,
		}
	}
}

/// The pause after a look that took `took`: as long as the look, and at least
/// [`POLL_EVERY`], so that looking at a large store leaves the nodes most of the cores.
fn pause(took: Duration) -> Duration {
	took.max(POLL_EVERY)
}

/// Look at `check` until it is met, or fail once `within` has passed, with `what` and the
/// last thing seen.
pub async fn eventually<T, L, F, Fut>(what: &str, within: Duration, mut check: F) -> Result<T>
where
	L: Look<T>,
	F: FnMut() -> Fut,
	Fut: Future<Output = L>,
{
	let waiting = Waiting { what, within, started: Instant::now() };
	loop {
		let look = Instant::now();
		if let Some(done) = waiting.judge(check().await.look()) {
			return done;
		}
		tokio::time::sleep(pause(look.elapsed())).await;
	}
}

/// [`eventually`] for code without an async runtime: sleeps the thread between looks.
pub fn eventually_blocking<T, L: Look<T>>(
	what: &str,
	within: Duration,
	mut check: impl FnMut() -> L,
) -> Result<T> {
	let waiting = Waiting { what, within, started: Instant::now() };
	loop {
		let look = Instant::now();
		if let Some(done) = waiting.judge(check().look()) {
			return done;
		}
		std::thread::sleep(pause(look.elapsed()));
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_condition_met_later_returns_what_was_seen() {
		let mut looks = 0;
		let seen = eventually_blocking("three looks", Duration::from_secs(10), || {
			looks += 1;
			if looks == 3 {
				Check::Met(looks)
			} else {
				Check::Unmet(format!("{looks} looks"))
			}
		});
		assert_eq!(seen, Ok(3));
	}

	#[test]
	fn a_missed_deadline_names_the_wait_and_the_last_error() {
		let failed = eventually_blocking("the impossible", Duration::from_millis(50), || {
			Err::<bool, _>("the node does not answer")
		})
		.unwrap_err();
		assert!(failed.0.starts_with("the impossible: not within 50ms"), "{failed}");
		assert!(failed.0.ends_with("last seen: error: the node does not answer"), "{failed}");
	}

	#[tokio::test]
	async fn the_async_form_waits_the_same_way() {
		let mut left = 2;
		let done = eventually("a countdown", Duration::from_secs(10), || {
			left -= 1;
			let now = left;
			async move { now == 0 }
		})
		.await;
		assert_eq!(done, Ok(()));
		assert_eq!(hang_bound(Duration::from_secs(1)), Duration::from_secs(60));
		assert_eq!(hang_bound(Duration::from_secs(20)), Duration::from_secs(120));
	}
}
