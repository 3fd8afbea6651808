//! Subscriptions: stored matches first, then every new match exactly once, in commit order,
//! in bounded memory.
//!
//! Ids are handed out in increasing order and never twice. Under the shared view lock a new
//! subscription notes the id after the newest stored one and the number of the last commit,
//! and registers for the live stream; each commit is numbered, and hands its statements to
//! the matcher, inside the exclusive view lock. So every statement committed before the
//! subscription has a lower id and is replayed, and every one committed after it is in a
//! commit numbered higher, which the matcher streams to it (commits numbered up to its own
//! it skips). Replay reads the stored matches below that id a page at a time as the reader
//! asks (see `paging`); a statement removed before its page is read is skipped. So no
//! statement falls between the replay and the live stream, and none comes twice.
//!
//! Matching is off the write path: a commit pushes its statements onto the matcher's queue
//! (O(1), the encodings moved, not copied) and the matcher thread (`stmt-match`) queues each
//! for the subscribers it matches. Subscribers are indexed by topic: `MatchAll` under its
//! first topic (the others are checked), `MatchAny` under each of its topics, `Any` (and
//! `MatchAll` of nothing) apart; a statement costs a lookup per topic plus the subscribers
//! listed there. [`Store::wait_for_matching`] waits until the matcher has caught up, and
//! [`Store::admission_watermark`] does too, so a watch drained after it holds every
//! statement up to the watermark.
//!
//! Memory: replay holds one page. The live queue of each subscriber is bounded in bytes (the
//! bound given to [`crate::store::Store::subscribe_with_queue`]); a commit that would overflow it
//! drops the subscriber instead, frees its queue and makes its next read fail with
//! [`Error::Lagged`], as Substrate closes lagging subscriptions. An encoding queued for many
//! subscribers is shared, not copied. What a reader took but holds unsent (an RPC
//! notification waiting for its client to read, a replay page among them) counts as queued
//! while held ([`Subscription::hold`]). Dropping a [`Subscription`] forgets it at once.
//!
//! All subscriptions together are bounded too ([`crate::config::Config::subscription_budget_bytes`]):
//! each subscriber's bound alone would let many stuck subscribers (100 connections x 1,024
//! subscriptions) hold gigabytes. The budget counts what every subscriber has queued (and
//! holds) plus [`SUBSCRIPTION_STATE_BYTES`] for each open one:
//! - a subscription that would take the open ones' share past half the budget is refused
//!   ([`Error::TooManySubscriptions`]), so that the other half is left for queues;
//! - a commit (or a [`Subscription::hold`]) that takes the sum past the budget drops the
//!   subscribers furthest behind (largest queues first, never one with nothing queued)
//!   until it is under seven eighths of it, with the same lag error.
//!
//! Gossip's own watcher is not counted.

pub(crate) mod filters;
pub(crate) mod handle;
pub(crate) mod queue;
pub(crate) mod registry;
pub(crate) mod subscribe;
#[cfg(test)]
mod tests;
