//! Every limit the statement methods keep, in one place: answer sizes, pages, and what a
//! connection's subscriptions may hold in flight.

/// jsonrpsee's default response limit, which the node keeps.
pub const DEFAULT_MAX_RESPONSE_BYTES: u32 = 10 * 1024 * 1024;

/// Most statements `statement_dumpPage` returns at once.
pub const DUMP_PAGE_MAX: usize = 1000;

/// Statements per page while `statement_dump` collects its answer.
pub(crate) const DUMP_WALK_PAGE: usize = 512;

/// Messages a connection's outgoing buffer may hold for a replay page to be sent: a client
/// that does not read leaves the rest of its replay in the store, where it costs nothing.
pub const IN_FLIGHT_NOTIFICATIONS: usize = 2;

/// Encoded notification bytes the pump keeps in one connection's outgoing buffer at most (one
/// notification is always let through, however large). A connection with many subscriptions
/// so gets a statement to each of them at once (~700 notifications of a 256-byte statement
/// fit), while a client that stops reading holds at most this much there; its backlog waits
/// in the store's bounded queues, where lagging is noticed. 1 MiB fanned out no faster
/// (10,000 subscribers over 10 connections, p99 ~80 ms either way; 256 KiB, ~89 ms).
pub const CONNECTION_IN_FLIGHT_BYTES: usize = 512 * 1024;

/// Encoded bytes per notification while replaying stored statements (a statement larger
/// than this goes alone).
pub(crate) const REPLAY_BATCH_BYTES: usize = 128 * 1024;

/// Encoded bytes per notification of new statements.
pub(crate) const LIVE_BATCH_BYTES: usize = 64 * 1024;

/// Longest a spec-v2 replay page waits for submissions in progress to finish: replays give
/// way to submits (a replay of millions of statements would otherwise take the cores the
/// submits need), but always go on.
pub(crate) const REPLAY_YIELD: std::time::Duration = std::time::Duration::from_millis(5);

/// How long after a submission the node still counts as submitting, for replays to give way:
/// a stream of submissions, one call after another, is never seen between two of them.
pub(crate) const SUBMISSIONS_QUIET: std::time::Duration = std::time::Duration::from_millis(2);

/// Blocking calls that subscriptions (subscribe, replay pages) run at once: a flood of
/// subscriptions waits its turn rather than starting a blocking thread each (up to tokio's
/// 512, with their stacks: ~80 MiB of a debug node's memory in a flood of 50,000).
pub(crate) const SUBSCRIPTION_READERS: usize = 8;

/// Spec-v2 subscriptions a connection may always hold (the spec's floor).
pub const MIN_SUBSCRIPTIONS_PER_CONNECTION: usize = 2;

/// Spec-v2 subscriptions a connection may hold unless configured otherwise.
pub const DEFAULT_SUBSCRIPTIONS_PER_CONNECTION: usize = 16;
