//! Subscriptions as RPC servers and gossip see them: the stored matches a page at a time, then
//! each new match once, from a queue bounded in bytes.
//!
//! Policy, which every [`crate::StatementStore`] keeps:
//! - The replay is read a page at a time as the subscriber asks, so it holds one page of
//!   memory however many statements match.
//! - New matches wait in a per-subscriber queue of at most the `queue_bytes` given to
//!   [`crate::StatementStore::subscribe_with_queue`] ([`DEFAULT_SUBSCRIBER_QUEUE_BYTES`] for
//!   [`crate::StatementStore::subscribe`]). A statement larger than the bound still enters an
//!   empty queue, so no statement is too large to be delivered.
//! - A subscriber whose queue would pass its bound is dropped: its queue is freed, it gets no
//!   more statements, and its next read (and [`StatementSubscription::check`]) returns
//!   [`crate::Error::Lagged`]. A slow reader therefore costs the store at most its bound, and
//!   learns that it missed statements instead of seeing a silent gap.
//! - What the reader took but holds unsent (a notification waiting for its client to read)
//!   counts as queued while it is held ([`StatementSubscription::hold`]), so a slow reader
//!   cannot escape the bound by taking its statements out of the queue.
//! - Dropping the [`StatementSubscription`] unsubscribes at once.
//!
//! The trait uses only `std`: waiting is a boxed future, which any executor can poll.

use crate::Result;
use std::{future::Future, pin::Pin, sync::Arc};

/// Live-queue bound of [`crate::StatementStore::subscribe`]: 1 MiB of encoded statements.
pub const DEFAULT_SUBSCRIBER_QUEUE_BYTES: usize = 1024 * 1024;

/// What a store with a memory budget for its subscriptions counts for each open one, beside
/// what it has queued: the subscription's own state in the store and in the RPC server that
/// serves it. Measured on a release node: 1.7-2.3 KiB per idle subscription (RSS, with
/// jemalloc; benches/HISTORY.md, "Subscriptions at app scale").
pub const SUBSCRIPTION_STATE_BYTES: usize = 2048;

/// An encoded statement, shared by every subscriber it is queued for rather than copied.
pub type Encoded = Arc<[u8]>;

/// A future a subscription hands out, borrowing the subscription.
pub type SubscriptionFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One open subscription: the stored matches, read page by page, then what arrives.
///
/// The replay calls may block on disk reads (run them off async threads); the live calls only
/// take a short lock.
pub trait StatementSubscription: Send + Sync {
	/// How many stored statements matched when the subscription began (the replay sends fewer
	/// if some are removed before their page is read).
	fn replay_total(&self) -> u64;

	/// The next page of stored matches, oldest first, at most `max_bytes` of encodings (but at
	/// least one statement); `None` once the replay is done.
	fn next_replay_page(&mut self, max_bytes: usize) -> Result<Option<Vec<Vec<u8>>>>;

	/// Matches committed since the subscription began, oldest first, up to `max_bytes` (but
	/// at least one if any is queued); empty if none is. [`crate::Error::Lagged`] once the
	/// subscriber has been dropped for falling behind.
	fn try_next_live(&self, max_bytes: usize) -> Result<Vec<Encoded>>;

	/// Resolves once a statement has been queued, or the subscriber dropped, since the last
	/// [`StatementSubscription::try_next_live`] found the queue empty. A wake-up that came
	/// before the wait began is kept, so `try_next_live` then `wait_live` misses nothing.
	fn wait_live(&self) -> SubscriptionFuture<'_, ()>;

	/// [`crate::Error::Lagged`] if the subscriber was dropped for falling behind.
	fn check(&self) -> Result<()>;

	/// The reader holds `bytes` of this subscriber's statements that it has not sent yet (a
	/// notification waiting for room in a connection's buffer): count them as queued, against
	/// the subscriber's bound and the store's budget for all subscribers, until
	/// [`StatementSubscription::release`]. A reader that holds what it cannot send so is
	/// dropped for lagging as a queue that fills is. [`crate::Error::Lagged`] if the
	/// subscriber is (or is now) dropped; the bytes are not counted then.
	fn hold(&self, bytes: usize) -> Result<()>;

	/// `bytes` counted with [`StatementSubscription::hold`] have been sent or thrown away.
	fn release(&self, bytes: usize);

	/// Wake `waker` whenever a statement is queued or the subscriber is dropped (whenever
	/// [`StatementSubscription::wait_live`] would resolve), replacing any waker set before.
	/// For a server that drives many subscriptions from one task rather than a task each;
	/// after setting it, call [`StatementSubscription::try_next_live`] once, since what was
	/// queued before did not wake it.
	fn set_waker(&self, waker: std::task::Waker);

	/// Like [`StatementSubscription::try_next_live`], but waits until there is something to
	/// return.
	fn next_live(&self, max_bytes: usize) -> SubscriptionFuture<'_, Result<Vec<Encoded>>> {
		Box::pin(async move {
			loop {
				let ready = self.try_next_live(max_bytes)?;
				if !ready.is_empty() {
					return Ok(ready);
				}
				self.wait_live().await;
			}
		})
	}
}
