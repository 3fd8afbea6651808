//! JSON-RPC methods of the statement store, with upstream's names and JSON shapes.
//!
//! The parts:
//! - [`StatementRpc`] holds an `Arc<dyn StatementStore>` (any store implementing the
//!   primitives' trait; this crate never sees a concrete store or its database) and the
//!   server's limits, and turns into a jsonrpsee [`RpcModule`] with
//!   [`StatementRpc::into_module`].
//! - `params.rs` reads the parameters (`0x`-hex, 32-byte values, topic filters) and answers
//!   bad input with a [`ParamError`] naming the parameter, the accepted forms and what was
//!   given.
//! - Queries, submission and removal are blocking methods that call the store directly; the
//!   dumps walk [`StatementStore::statements_page`] so no answer passes the response limit.
//! - A subscription task reads a [`StatementSubscription`]: replay pages off the async
//!   threads, then live batches, sending only while the connection's buffer has room.
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
//! A subscription replays the stored matches a page at a time as the client reads them (while
//! the connection's outgoing buffer holds fewer than [`IN_FLIGHT_NOTIFICATIONS`] messages),
//! then streams new matches (while the pump's notifications waiting in that buffer come to
//! less than [`CONNECTION_IN_FLIGHT_BYTES`]); what the client has not taken waits in the
//! store's bounded queue, and a subscriber that falls further behind is dropped with a
//! subscription error notification
//! (`{"params": {"subscription": .., "error": "subscription dropped: .."}}`), as Substrate
//! closes lagging subscriptions. The replay runs in a task of its own; the live
//! stream of every subscription is then served from one task (the pump), woken by the store
//! when it queues a statement for one. The method is registered raw, so jsonrpsee keeps no task
//! per subscription either: an idle subscription holds no serving state beyond its entry in
//! the pump, jsonrpsee's own entry and its store subscriber.
//!
//! Memory: a notification the server holds because the client has not read the ones before
//! (a replay page, or live statements taken from the store's queue) is counted in the store
//! as queued while it waits ([`StatementSubscription::hold`]), so the store's budget for all
//! subscriptions covers it. A subscription the store would refuse for that budget
//! ([`StatementStore::check_subscription_room`], counting those still opening) is refused as
//! it arrives with error -32006; the rest open through at most 8 (`SUBSCRIPTION_READERS`)
//! blocking reads at once.
#![forbid(unsafe_code)]

use jsonrpsee::{types::error::ErrorObjectOwned, PendingSubscriptionSink, RpcModule};
pub use pump::CONNECTION_IN_FLIGHT_BYTES;
use pump::{Pump, Stop};
use sp_core::Bytes;
use statement_primitives::{
	StatementSource, StatementStore, StatementSubscription, Topic, TopicFilter,
	DEFAULT_SUBSCRIBER_QUEUE_BYTES,
};
use std::sync::Arc;

mod pump;

mod params;

use params::Positional;
pub use params::{ParamError, SHOWN_CHARS};

/// JSON-RPC error code for a refused unsafe method (as Substrate uses).
pub const UNSAFE_CODE: i32 = -32601;
/// JSON-RPC error code for malformed parameters.
pub const INVALID_PARAMS_CODE: i32 = -32602;
/// JSON-RPC error code for a store failure.
pub const STORE_ERROR_CODE: i32 = 4000;

/// JSON-RPC error code for an answer larger than the server sends (as jsonrpsee uses).
pub const RESPONSE_TOO_LARGE_CODE: i32 = -32008;
/// jsonrpsee's default response limit, which the node keeps.
pub const DEFAULT_MAX_RESPONSE_BYTES: u32 = 10 * 1024 * 1024;
/// Most statements `statement_dumpPage` returns at once.
pub const DUMP_PAGE_MAX: usize = 1000;
/// Messages a connection's outgoing buffer may hold for a replay page to be sent.
pub const IN_FLIGHT_NOTIFICATIONS: usize = 2;

/// Encoded bytes per notification while replaying stored statements (a statement larger
/// than this goes alone).
const REPLAY_BATCH_BYTES: usize = 128 * 1024;
/// Encoded bytes per notification of new statements.
pub(crate) const LIVE_BATCH_BYTES: usize = 64 * 1024;
/// Blocking calls that subscriptions (subscribe, replay pages) run at once: a flood of
/// subscriptions waits its turn rather than starting a blocking thread each (up to tokio's
/// 512, with their stacks: ~80 MiB of a debug node's memory in a flood of 50,000).
const SUBSCRIPTION_READERS: usize = 8;
/// Statements per page while `statement_dump` collects its answer.
const DUMP_WALK_PAGE: usize = 512;

/// Called with each subscription's filter as it opens; what it returns is kept for as long as
/// the subscription lives, and dropped when it ends. A light node uses it to ask its peers for
/// the subscription's topics.
pub type SubscriptionHook =
	Arc<dyn Fn(&TopicFilter) -> Box<dyn std::any::Any + Send> + Send + Sync>;

/// What the RPC methods work on.
#[derive(Clone)]
pub struct StatementRpc {
	store: Arc<dyn StatementStore>,
	allow_unsafe: bool,
	max_response_bytes: u32,
	queue_bytes: usize,
	on_subscribe: Option<SubscriptionHook>,
	pump: Pump,
	/// Permits to read for subscriptions (subscribe, replay pages) off the async threads.
	readers: Arc<tokio::sync::Semaphore>,
	/// Subscriptions accepted for opening and not yet open (or refused).
	starting: Arc<std::sync::atomic::AtomicUsize>,
}

impl StatementRpc {
	/// Methods over `store`; `allow_unsafe` enables `statement_dump`, `statement_dumpPage`
	/// and `statement_remove`.
	pub fn new(store: Arc<dyn StatementStore>, allow_unsafe: bool) -> Self {
		StatementRpc {
			store,
			allow_unsafe,
			max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
			queue_bytes: DEFAULT_SUBSCRIBER_QUEUE_BYTES,
			on_subscribe: None,
			pump: Pump::default(),
			readers: Arc::new(tokio::sync::Semaphore::new(SUBSCRIPTION_READERS)),
			starting: Arc::default(),
		}
	}

	/// Call `hook` as each subscription opens (see [`SubscriptionHook`]).
	pub fn with_subscription_hook(mut self, hook: SubscriptionHook) -> Self {
		self.on_subscribe = Some(hook);
		self
	}

	/// The server's response limit, so that dumps that would pass it say so clearly.
	pub fn with_max_response_bytes(mut self, bytes: u32) -> Self {
		self.max_response_bytes = bytes;
		self
	}

	/// Bytes of new statements a subscriber may fall behind before it is dropped.
	pub fn with_subscriber_queue_bytes(mut self, bytes: usize) -> Self {
		self.queue_bytes = bytes;
		self
	}

	/// Encoded bytes one answer may carry: its hex takes twice as many, plus the envelope.
	fn max_answer_bytes(&self) -> usize {
		(self.max_response_bytes as usize).saturating_sub(64 * 1024) / 2
	}

	/// The JSON-RPC module with every statement method.
	pub fn into_module(self) -> RpcModule<StatementRpc> {
		let mut module = RpcModule::new(self);
		register(&mut module).expect("method names are distinct; qed");
		module
	}

	fn ensure_unsafe_allowed(&self) -> Result<(), ErrorObjectOwned> {
		ensure_unsafe_allowed(self.allow_unsafe)
	}
}

/// `Ok` if unsafe methods are `allowed`, else Substrate's refusal of an unsafe call: one
/// answer for every unsafe method the server has, whichever crate registers it.
pub fn ensure_unsafe_allowed(allowed: bool) -> Result<(), ErrorObjectOwned> {
	if allowed {
		return Ok(());
	}
	Err(ErrorObjectOwned::owned(
		UNSAFE_CODE,
		"RPC call is unsafe to be called externally; start the node with --rpc-methods unsafe",
		None::<()>,
	))
}

/// An invalid-params error (-32602) saying `message`, for this crate's methods and the node's.
pub fn invalid_params(message: impl Into<String>) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(INVALID_PARAMS_CODE, message, None::<()>)
}

/// The store's subscriptions took their share of its memory budget: the code jsonrpsee gives
/// a connection's subscription limit.
fn too_many_subscriptions(err: statement_primitives::Error) -> ErrorObjectOwned {
	let code = jsonrpsee::types::error::TOO_MANY_SUBSCRIPTIONS_CODE;
	ErrorObjectOwned::owned(code, format!("statement store: {err}"), None::<()>)
}

fn store_error(err: impl std::fmt::Display) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(STORE_ERROR_CODE, format!("statement store: {err}"), None::<()>)
}

/// A query's answer as JSON: an array of `0x`-hex strings, as `Vec<sp_core::Bytes>` would
/// serialize, with every item hex-encoded into one reused buffer through a byte-pair table
/// (a 100-statement answer is ~50 KB of hex; see benches/HISTORY.md, "Node under load").
#[derive(Clone)]
struct HexList<T>(Vec<T>);

/// The two lowercase hex digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
	let digits = b"0123456789abcdef";
	let mut pairs = [[0u8; 2]; 256];
	let mut byte = 0;
	while byte < 256 {
		pairs[byte] = [digits[byte >> 4], digits[byte & 0xf]];
		byte += 1;
	}
	pairs
};

/// `0x` and the hex of `bytes`, written over `out`.
fn hex_into(out: &mut Vec<u8>, bytes: &[u8]) {
	out.clear();
	out.reserve(2 + 2 * bytes.len());
	out.extend_from_slice(b"0x");
	for byte in bytes {
		out.extend_from_slice(&HEX_PAIRS[*byte as usize]);
	}
}

impl<T: AsRef<[u8]>> serde::Serialize for HexList<T> {
	fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
		use serde::ser::{Error, SerializeSeq};
		let longest = self.0.iter().map(|item| item.as_ref().len()).max().unwrap_or(0);
		let mut buffer = Vec::with_capacity(2 + 2 * longest);
		let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
		for item in &self.0 {
			hex_into(&mut buffer, item.as_ref());
			let text = std::str::from_utf8(&buffer).map_err(S::Error::custom)?;
			seq.serialize_element(text)?;
		}
		seq.end()
	}
}

/// A subscription notification's result, serialized exactly as [`StatementEvent`] is
/// (`{"event": "newStatements", "data": {"statements": [..], "remaining": ..}}`), but from the
/// encodings as the store hands them out: no copy of each statement into a `Bytes`, no hex
/// `String` for each.
///
/// [`StatementEvent`]: statement_primitives::StatementEvent
#[derive(serde::Serialize)]
#[serde(tag = "event", content = "data", rename_all = "camelCase", bound = "T: AsRef<[u8]>")]
enum Notification<T> {
	NewStatements {
		statements: HexList<T>,
		#[serde(skip_serializing_if = "Option::is_none")]
		remaining: Option<u32>,
	},
}

type Query = fn(
	&dyn StatementStore,
	&[Topic],
	Option<[u8; 32]>,
) -> statement_primitives::Result<Vec<Vec<u8>>>;

fn register(
	module: &mut RpcModule<StatementRpc>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
	module.register_blocking_method("statement_submit", |params, rpc, _| {
		let statement = Positional::of(&params)?.statement(0)?;
		Ok::<_, ErrorObjectOwned>(rpc.store.submit(statement, StatementSource::Local))
	})?;
	module.register_blocking_method("statement_dump", |_, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		dump(&rpc)
	})?;
	module.register_blocking_method("statement_dumpPage", |params, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		let params = Positional::of(&params)?;
		let after = params.cursor(0)?;
		let limit = params.limit(1)?;
		let limit = limit.unwrap_or(DUMP_PAGE_MAX).min(DUMP_PAGE_MAX);
		let page =
			rpc.store.statements_page(after, limit, rpc.max_answer_bytes()).map_err(store_error)?;
		let statements: Vec<Bytes> =
			page.statements.into_iter().map(|(_, body)| Bytes(body)).collect();
		Ok::<_, ErrorObjectOwned>(
			serde_json::json!({ "statements": statements, "next": page.next }),
		)
	})?;
	module.register_blocking_method("statement_remove", |params, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		let hash = Positional::of(&params)?.hash(0)?;
		rpc.store.remove(&hash).map_err(store_error)
	})?;
	let queries: [(&'static str, bool, Query); 6] = [
		("statement_broadcasts", false, |s, t, _| s.broadcasts(t)),
		("statement_broadcastsStatement", false, |s, t, _| s.broadcasts_stmt(t)),
		("statement_posted", true, |s, t, k| s.posted(t, k.unwrap_or_default())),
		("statement_postedStatement", true, |s, t, k| s.posted_stmt(t, k.unwrap_or_default())),
		("statement_postedClear", true, |s, t, k| s.posted_clear(t, k.unwrap_or_default())),
		("statement_postedClearStatement", true, |s, t, k| {
			s.posted_clear_stmt(t, k.unwrap_or_default())
		}),
	];
	for (name, needs_key, query) in queries {
		module.register_blocking_method(name, move |params, rpc, _| {
			let params = Positional::of(&params)?;
			let topics = params.topics(0)?;
			let key = if needs_key { Some(params.key(1)?) } else { None };
			query(rpc.store.as_ref(), &topics, key).map(HexList).map_err(store_error)
		})?;
	}
	// Raw: jsonrpsee keeps no task for the subscription's lifetime. The filter is read here,
	// from the borrowed params; the start (store subscription, accept, replay) runs in a task
	// that ends when the subscription is handed to the pump.
	module.register_subscription_raw(
		"statement_subscribeStatement",
		"statement_statement",
		"statement_unsubscribeStatement",
		|params, pending, rpc, _| {
			let filter = Positional::of(&params).and_then(|params| params.filter(0));
			// Past the store's budget (counting those still opening) a flood is refused here,
			// each costing the answer's task rather than a start each. A bad filter is
			// answered as such, by the start.
			let starting = Starting::new(&rpc.starting);
			if filter.is_ok() {
				if let Err(full) = rpc.store.check_subscription_room(starting.others()) {
					tokio::spawn(pending.reject(too_many_subscriptions(full)));
					return;
				}
			}
			tokio::spawn(start(filter.map_err(ErrorObjectOwned::from), pending, rpc, starting));
		},
	)?;
	Ok(())
}

/// Every stored statement, walked a page at a time; an error naming the paged method if the
/// answer would pass the server's response limit.
fn dump(rpc: &StatementRpc) -> Result<Vec<Bytes>, ErrorObjectOwned> {
	let limit = rpc.max_answer_bytes();
	let mut out = Vec::new();
	let mut bytes = 0;
	let mut after = None;
	loop {
		let page =
			rpc.store.statements_page(after, DUMP_WALK_PAGE, usize::MAX).map_err(store_error)?;
		for (_, body) in page.statements {
			// Each hex string also carries "0x", two quotes and a comma.
			bytes += body.len() + 3;
			if bytes > limit {
				return Err(ErrorObjectOwned::owned(
					RESPONSE_TOO_LARGE_CODE,
					format!(
						"the dump is larger than this server's response limit ({} bytes); page \
						 through it with statement_dumpPage",
						rpc.max_response_bytes
					),
					None::<()>,
				));
			}
			out.push(Bytes(body));
		}
		if page.next.is_none() {
			return Ok(out);
		}
		after = page.next;
	}
}

/// One subscription being opened, counted in [`StatementRpc::starting`] until dropped.
struct Starting(Arc<std::sync::atomic::AtomicUsize>);

impl Starting {
	fn new(count: &Arc<std::sync::atomic::AtomicUsize>) -> Starting {
		count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
		Starting(count.clone())
	}

	/// How many others are being opened.
	fn others(&self) -> usize {
		self.0.load(std::sync::atomic::Ordering::Relaxed).saturating_sub(1)
	}
}

impl Drop for Starting {
	fn drop(&mut self) {
		self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
	}
}

/// A subscription as the store hands it out.
type Subscription = Box<dyn StatementSubscription>;

/// Subscribe to the store, accept, replay; then hand the subscription to the pump. A
/// subscription that fails during its replay ends with the error notification.
async fn start(
	filter: Result<TopicFilter, ErrorObjectOwned>,
	pending: PendingSubscriptionSink,
	rpc: Arc<StatementRpc>,
	starting: Starting,
) {
	let filter = match filter {
		Ok(filter) => filter,
		Err(err) => return pending.reject(err).await,
	};
	// Held until the subscription ends.
	let hooked = rpc.on_subscribe.as_ref().map(|hook| hook(&filter));
	let store = rpc.store.clone();
	let queue_bytes = rpc.queue_bytes;
	let Ok(permit) = rpc.readers.clone().acquire_owned().await else { return };
	// Subscribe and read the first two replay pages (most replays have one) off the async
	// threads, in one blocking call rather than one each.
	let subscribed = tokio::task::spawn_blocking(move || {
		let _permit = permit;
		let mut subscription =
			store.subscribe_with_queue(filter, queue_bytes).map_err(|err| match err {
				full @ statement_primitives::Error::TooManySubscriptions { .. } => {
					too_many_subscriptions(full)
				}
				other => invalid_params(other.to_string()),
			})?;
		let mut page = || subscription.next_replay_page(REPLAY_BATCH_BYTES).map_err(store_error);
		let first = page()?;
		let second = if first.is_some() { page()? } else { None };
		Ok::<_, ErrorObjectOwned>((subscription, first, second))
	})
	.await;
	let (subscription, first, second) = match subscribed {
		Ok(Ok(started)) => started,
		Ok(Err(err)) => return pending.reject(err).await,
		Err(err) => return pending.reject(store_error(err)).await,
	};
	// Open (counted by the store) or refused: no longer starting.
	drop(starting);
	let Ok(sink) = pending.accept().await else { return };
	// Boxed: a start that waits for a reader (above) holds only its own few fields.
	match Box::pin(replay(&sink, subscription, first, second, &rpc.readers)).await {
		Ok((subscription, last)) => rpc.pump.adopt(sink, subscription, hooked, last),
		Err(Stop::Closed) => {}
		Err(Stop::Failed(reason)) => pump::fail(sink, reason),
	}
}

/// Send the stored matches, a page a notification, but the last (with `remaining: 0`), which
/// is returned for the pump to send: a subscription whose replay is one page (most are)
/// never waits for buffer room in a task of its own.
async fn replay(
	sink: &jsonrpsee::SubscriptionSink,
	mut subscription: Subscription,
	first: Option<Vec<Vec<u8>>>,
	second: Option<Vec<Vec<u8>>>,
	readers: &Arc<tokio::sync::Semaphore>,
) -> Result<(Subscription, Box<serde_json::value::RawValue>), Stop> {
	let total = subscription.replay_total();
	// One page ahead, so that the last replay batch can say `remaining: 0`.
	let (mut current, mut next) = (first, second);
	let mut sent = 0u64;
	loop {
		let batch = current.take().unwrap_or_default();
		sent += batch.len() as u64;
		let remaining = if next.is_some() { total.saturating_sub(sent) } else { 0 };
		let event = encode(batch, Some(u32::try_from(remaining).unwrap_or(u32::MAX)))?;
		if next.is_none() {
			return Ok((subscription, event));
		}
		// While it waits for room, the next page is held too.
		let ahead = next.iter().flatten().map(Vec::len).sum::<usize>();
		send(sink, subscription.as_ref(), event, ahead).await?;
		current = next;
		let (next_subscription, after) = replay_page(subscription, readers).await?;
		subscription = next_subscription;
		next = after;
	}
}

/// The next replay page, read off the async threads.
async fn replay_page(
	mut subscription: Subscription,
	readers: &Arc<tokio::sync::Semaphore>,
) -> Result<(Subscription, Option<Vec<Vec<u8>>>), Stop> {
	let Ok(permit) = readers.clone().acquire_owned().await else { return Err(Stop::Closed) };
	let read = tokio::task::spawn_blocking(move || {
		let _permit = permit;
		let page = subscription.next_replay_page(REPLAY_BATCH_BYTES);
		(subscription, page)
	})
	.await;
	match read {
		Ok((subscription, Ok(page))) => Ok((subscription, page)),
		Ok((_, Err(err))) => Err(Stop::Failed(format!("statement store: {err}"))),
		Err(err) => Err(Stop::Failed(format!("statement store: {err}"))),
	}
}

/// Send `event` once the connection's outgoing buffer has room (at most
/// [`IN_FLIGHT_NOTIFICATIONS`] waiting), so a client that does not read leaves its backlog in
/// the store's bounded queue, where lagging is noticed. While it waits, `event` and `ahead`
/// more bytes read for the subscription are counted in the store as held.
async fn send(
	sink: &jsonrpsee::SubscriptionSink,
	subscription: &dyn StatementSubscription,
	event: Box<serde_json::value::RawValue>,
	ahead: usize,
) -> Result<(), Stop> {
	let full = || sink.max_capacity().saturating_sub(sink.capacity()) >= IN_FLIGHT_NOTIFICATIONS;
	if full() {
		let held = event.get().len() + ahead;
		subscription.hold(held).map_err(|err| Stop::Failed(err.to_string()))?;
		let waited = wait_for_room(sink, subscription, full).await;
		subscription.release(held);
		waited?;
	}
	sink.send(event).await.map_err(|_| Stop::Closed)
}

/// Wait until `full` is false, the client leaves or the store drops the subscriber.
async fn wait_for_room(
	sink: &jsonrpsee::SubscriptionSink,
	subscription: &dyn StatementSubscription,
	full: impl Fn() -> bool,
) -> Result<(), Stop> {
	let mut pause = std::time::Duration::from_millis(1);
	while full() {
		subscription.check().map_err(|err| Stop::Failed(err.to_string()))?;
		tokio::select! {
			_ = tokio::time::sleep(pause) => {},
			_ = sink.closed() => return Err(Stop::Closed),
		}
		pause = (pause * 2).min(std::time::Duration::from_millis(100));
	}
	Ok(())
}

/// A `newStatements` notification's JSON: `statements` (encodings) and, while replaying, how
/// many `remaining`.
fn encode<T: AsRef<[u8]>>(
	statements: Vec<T>,
	remaining: Option<u32>,
) -> Result<Box<serde_json::value::RawValue>, Stop> {
	let notification = Notification::NewStatements { statements: HexList(statements), remaining };
	serde_json::value::to_raw_value(&notification)
		.map_err(|err| Stop::Failed(format!("cannot encode a notification: {err}")))
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_primitives::StatementEvent;

	#[test]
	fn an_answer_serializes_as_the_hex_strings_bytes_give() {
		let items = vec![vec![], vec![0x00, 0x0f, 0xf0, 0xff], (0..=255).collect(), vec![7; 300]];
		let ours = serde_json::to_string(&HexList(items.clone())).unwrap();
		let theirs = serde_json::to_string(&encoded_as_bytes(items)).unwrap();
		assert_eq!(ours, theirs);
		assert_eq!(serde_json::to_string(&HexList(Vec::<Vec<u8>>::new())).unwrap(), "[]");
	}

	#[test]
	fn a_notification_serializes_as_the_statement_event_would() {
		let items = vec![vec![], vec![0x00, 0x0f, 0xf0, 0xff], (0..=255).collect(), vec![7; 300]];
		for statements in [Vec::new(), items[..1].to_vec(), items.clone()] {
			for remaining in [None, Some(0), Some(u32::MAX)] {
				let ours = encode(statements.clone(), remaining).ok().unwrap();
				let event = StatementEvent::NewStatements {
					statements: encoded_as_bytes(statements.clone()),
					remaining,
				};
				assert_eq!(ours.get(), serde_json::to_string(&event).unwrap());
			}
		}
	}

	fn encoded_as_bytes(items: Vec<Vec<u8>>) -> Vec<Bytes> {
		items.into_iter().map(Bytes).collect()
	}
}
