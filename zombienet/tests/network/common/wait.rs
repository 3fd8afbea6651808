//! Waiting for a condition with a deadline: the workspace's `eventually`, with these tests'
//! `anyhow` errors. Every bound in these tests is a deadline on some observable state, polled
//! often enough that the bound, not the polling, decides.

use anyhow::Result;
use std::{future::Future, time::Duration};

pub use statement_test_support::Check;

/// Look at `check` until it is met, or fail once `within` has passed, with `what` and the
/// last thing `check` saw (an error counts as not met yet, and is what was seen).
pub async fn eventually<T, F, Fut>(what: &str, within: Duration, check: F) -> Result<T>
where
	F: FnMut() -> Fut,
	Fut: Future<Output = Result<Check<T>>>,
{
	Ok(statement_test_support::eventually(what, within, check).await?)
}
