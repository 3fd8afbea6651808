//! Waiting for a condition with a deadline: every bound in these tests is a deadline on
//! some observable state, polled often enough that the bound, not the polling, decides.

use anyhow::{bail, Result};
use std::{
	future::Future,
	time::{Duration, Instant},
};

/// The shortest pause between two looks of [`eventually`].
const POLL_EVERY: Duration = Duration::from_millis(50);

/// One look at a condition.
pub enum Check<T> {
	/// It holds, with what was seen.
	Met(T),
	/// Not yet; says what was seen instead.
	Unmet(String),
}

/// Look at `check` until it is met, or fail once `within` has passed, with `what` and the
/// last thing `check` saw. Between looks it pauses 50 ms, or as long as the last look took
/// if that was longer, so that looking at a large store leaves the nodes most of the cores.
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, mut check: F) -> Result<T>
where
	F: FnMut() -> Fut,
	Fut: Future<Output = Result<Check<T>>>,
{
	let deadline = Instant::now() + within;
	loop {
		let look = Instant::now();
		match check().await? {
			Check::Met(value) => return Ok(value),
			Check::Unmet(seen) if Instant::now() >= deadline => {
				bail!("{what}: not within {within:?}; last seen: {seen}")
			}
			Check::Unmet(_) => tokio::time::sleep(look.elapsed().max(POLL_EVERY)).await,
		}
	}
}
