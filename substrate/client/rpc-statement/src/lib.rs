//! JSON-RPC methods of the statement store, with upstream's names and JSON shapes: the legacy
//! methods, and the spec-v2 API (`statement_unstable_*`, [`v2`]) beside them.
//!
//! The parts:
//! - `service` holds [`StatementRpc`] (an `Arc<dyn StatementStore>`: any store implementing
//!   the primitives' trait; this crate never sees a concrete store or its database) with the
//!   server's limits; [`StatementRpc::into_module`] gives the jsonrpsee module.
//! - `methods` registers every method. Queries, submission and removal are blocking methods
//!   that call the store directly; the dumps walk the store a page at a time
//!   ([`statements_page`](statement_primitives::StatementStore::statements_page)) so no
//!   answer passes the response limit.
//! - `params` reads the parameters (`0x`-hex, 32-byte values, topic filters) and answers bad
//!   input with a [`ParamError`] naming the parameter, the accepted forms and what was given.
//! - `subscribe` opens a subscription and sends its replay; `pump` then serves every live
//!   subscription from one task; `notification` writes their JSON.
//! - [`error`] lists every JSON-RPC error code the node answers with, and builds this
//!   crate's; [`limits`] every limit; `hex` writes answers as `0x`-hex.
//!
//! | method | params | result |
//! |---|---|---|
//! | `statement_submit` | `0x`-hex SCALE statement | `SubmitResult` JSON |
//! | `statement_broadcasts` | topics | data of matching broadcasts |
//! | `statement_posted` | topics, key | data of matching posted statements |
//! | `statement_postedClear` | topics, key | decrypted data |
//! | `statement_broadcastsStatement`, `statement_postedStatement`, `statement_postedClearStatement` | as above | encoded statements |
//! | `statement_dump` (unsafe) | - | every encoded statement; an error naming `statement_dumpPage` if they would not fit in one response |
//! | `statement_dumpPage` (unsafe) | cursor (`null` to start), limit (1 to 1,000) | `{"statements": [...], "next": cursor or null}` |
//! | `statement_remove` (unsafe) | hash | `null` |
//! | `statement_subscribeStatement` | `TopicFilter` | `statement_statement` notifications |
//! | `statement_unstable_subscribe`, `_unsubscribe`, `_add_filter`, `_remove_filter`, `_submit` | see [`v2`] | the spec-v2 API: [`v2`] |
//!
//! Params are given by position. A topic, key or hash is a `0x`-hex string of 32 bytes or an
//! array of 32 numbers from 0 to 255 (as older clients send them), in plain topic lists and
//! inside filters alike. A topic filter is exactly one of `"any"`, `{"matchAll": [topics]}`
//! (at most 4) or `{"matchAny": [topics]}` (at most 128), upstream's names; other spellings
//! (`"Any"`, `{"match_all": ..}`) are refused with an error listing these forms.
//!
//! A bad parameter gets error `-32602` and the connection stays usable. The message is
//! `missing <param>: expected <forms>` or `bad <param>[<where>]: <problem>`, the problem
//! usually being `expected <forms>, got <given>`, for example:
//!
//! ```text
//! bad topic filter: expected "any", {"matchAll": [topics]} or {"matchAny": [topics]}, got "Any"
//! bad topic filter: matchAll: 5 topics given, at most 4
//! bad topic filter: matchAny[0]: expected 32 bytes, got 2
//! bad topics: expected an array of at most 4 topics, got a string
//! bad topics[1]: not valid hex: 'z' at position 2 is not a hex digit
//! bad statement hash: expected 32 bytes, got 2
//! missing decryption key: expected a 0x-hex string of 32 bytes or an array of 32 numbers
//! ```
//!
//! `<given>` is the value itself, cut to [`SHOWN_CHARS`] characters, when its JSON type is one
//! the parameter takes, and only its type (`a string`, `an object`, ...) when it is not.
//!
//! A subscription replays the stored matches a page at a time as the client reads them
//! (while the connection's outgoing buffer holds fewer than
//! [`limits::IN_FLIGHT_NOTIFICATIONS`] messages), then streams new matches (while the pump's
//! notifications waiting in that buffer come to less than
//! [`limits::CONNECTION_IN_FLIGHT_BYTES`]); what the client has not taken waits in the
//! store's bounded queue, and a subscriber that falls further behind is dropped with a
//! subscription error notification
//! (`{"params": {"subscription": .., "error": "subscription dropped: .."}}`), as Substrate
//! closes lagging subscriptions. The replay runs in a task of its own; the live stream of
//! every subscription is then served from one task (the pump), woken by the store when it
//! queues a statement for one. The method is registered raw, so jsonrpsee keeps no task per
//! subscription either: an idle subscription holds no serving state beyond its entry in the
//! pump, jsonrpsee's own entry and its store subscriber.
//!
//! Memory: a notification the server holds because the client has not read the ones before
//! (a replay page, or live statements taken from the store's queue) is counted in the store
//! as queued while it waits
//! ([`StatementSubscription::hold`](statement_primitives::StatementSubscription::hold)), so
//! the store's budget for all subscriptions covers it. A subscription the store would refuse
//! for that budget
//! ([`check_subscription_room`](statement_primitives::StatementStore::check_subscription_room),
//! counting those still opening) is refused as it arrives with error -32006; the rest open
//! through at most 8 (`limits::SUBSCRIPTION_READERS`) blocking reads at once.
#![forbid(unsafe_code)]

pub mod error;
mod hex;
pub mod limits;
mod methods;
pub mod metrics;
mod notification;
mod params;
mod pump;
mod service;
mod submissions;
mod submit;
mod subscribe;
pub mod v2;

pub use error::{ensure_unsafe_allowed, invalid_params};
pub use params::{ParamError, SHOWN_CHARS};
pub use service::{QueryHook, StatementRpc, SubscriptionHook};
