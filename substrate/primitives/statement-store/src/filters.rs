//! Subscriptions of a set of filters, as the spec-v2 RPC (`statement_unstable_*`) serves
//! them: filters come and go while the subscription lives; each has its own replay of the
//! stored matches, taken atomically with its addition; new statements come once, each with
//! the ids of every filter that takes it.
//!
//! The rules, which every [`crate::StatementStore`] that offers these keeps:
//! - A filter added takes, as its replay, every statement stored when it was added, and, as
//!   its live stream, every statement committed after; none is in both, none falls between.
//! - A new statement is queued once for the subscription, with the ids of the filters that
//!   were there when it was committed and match it. A filter added later has it in its
//!   replay instead, so it is never streamed twice under one filter id.
//! - The live queue is bounded, and held bytes count against it, as a plain subscription's
//!   ([`crate::StatementSubscription`]); but where a plain subscriber past its bound is
//!   dropped, this one spills: the statements it would have queued are read from the store
//!   instead, in order, until it has caught up. None is skipped but one removed from the
//!   store before it was read.

use crate::{Encoded, Result, StatementSubscription, TopicFilter};

/// A subscription whose filters come and go; dropping it unsubscribes.
pub trait FilterSubscription: Send + Sync {
	/// Add `filter` under `filter_id` (the caller's; not reused while the subscription
	/// lives): its replay of the matches stored now, and from now on its matches in the live
	/// queue. [`crate::Error::Lagged`] if the subscriber was dropped.
	fn add_filter(&self, filter_id: u64, filter: &TopicFilter) -> Result<Box<dyn FilterReplay>>;

	/// Stop streaming filter `filter_id`; statements queued already keep its id.
	fn remove_filter(&self, filter_id: u64);

	/// New statements, oldest first, up to `max_bytes` (at least one if any is queued), each
	/// with the ids of the filters that took it; empty if none is queued. While
	/// [`FilterSubscription::catching_up`], it reads them from the store, and may block on
	/// disk.
	fn try_next_live(&self, max_bytes: usize) -> Result<Vec<(Encoded, Box<[u64]>)>>;

	/// Whether the live queue spilled, so that [`FilterSubscription::try_next_live`] reads
	/// from the store (run it off async threads then).
	fn catching_up(&self) -> bool;

	/// The live queue as a plain subscription's: to wait on it, hold and release bytes taken
	/// from it, and check for a lag (it has no replay of its own).
	fn live(&self) -> &dyn StatementSubscription;
}

/// One filter's replay: its stored matches as of its addition, a page at a time. The calls
/// may block on disk reads (run them off async threads).
pub trait FilterReplay: Send {
	/// How many stored statements matched when the filter was added.
	fn total(&self) -> u64;

	/// The next page, oldest first, at most `max_bytes` (at least one statement); `None`
	/// once the replay is done.
	fn next_page(&mut self, max_bytes: usize) -> Result<Option<Vec<Vec<u8>>>>;
}
