//! JSON-RPC methods of the statement store, with upstream's names and JSON shapes.
//!
//! The parts:
//! - [`StatementRpc`] holds an `Arc<dyn StatementStore>` (any store implementing the
//!   primitives' trait; this crate never sees a concrete store or its database) and the
//!   server's limits, and turns into a jsonrpsee [`RpcModule`] with
//!   [`StatementRpc::into_module`].
//! - Parameter parsing (`0x`-hex, 32-byte values, topic filters) answers bad input with an
//!   error naming the parameter.
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
//! | `statement_dumpPage` (unsafe) | cursor (`null` to start), limit (at most 1,000) | `{"statements": [...], "next": cursor or null}` |
//! | `statement_remove` (unsafe) | hash | `null` |
//! | `statement_subscribeStatement` | `TopicFilter` | `statement_statement` notifications |
//!
//! Topics, keys and hashes are `0x`-hex strings of 32 bytes (arrays of 32 numbers, as older
//! clients send them, are accepted too). Bad params get a JSON-RPC error naming the parameter
//! and the problem (not hex, odd length, wrong size, ...); the connection stays usable.
//!
//! A subscription replays the stored matches a page at a time as the client reads them, then
//! streams new matches. It keeps at most [`IN_FLIGHT_NOTIFICATIONS`] notifications in the
//! server's outgoing buffer; what the client has not taken waits in the store's bounded
//! queue, and a subscriber that falls further behind is dropped with a subscription error
//! notification (`{"params": {"subscription": .., "error": "subscription dropped: .."}}`), as
//! Substrate closes lagging subscriptions.
#![forbid(unsafe_code)]

use jsonrpsee::{
	core::SubscriptionError,
	types::{error::ErrorObjectOwned, Params},
	PendingSubscriptionSink, RpcModule,
};
use sp_core::Bytes;
use statement_primitives::{
	check_match_all, Statement, StatementEvent, StatementSource, StatementStore,
	StatementSubscription, Topic, TopicFilter, DEFAULT_SUBSCRIBER_QUEUE_BYTES,
};
use std::sync::Arc;

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
/// Notifications a subscription may have waiting in the server's buffer for its connection.
pub const IN_FLIGHT_NOTIFICATIONS: usize = 2;

/// Encoded bytes per notification while replaying stored statements (a statement larger
/// than this goes alone).
const REPLAY_BATCH_BYTES: usize = 128 * 1024;
/// Encoded bytes per notification of new statements.
const LIVE_BATCH_BYTES: usize = 64 * 1024;
/// Statements per page while `statement_dump` collects its answer.
const DUMP_WALK_PAGE: usize = 512;

/// What the RPC methods work on.
#[derive(Clone)]
pub struct StatementRpc {
	store: Arc<dyn StatementStore>,
	allow_unsafe: bool,
	max_response_bytes: u32,
	queue_bytes: usize,
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
		}
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
		if self.allow_unsafe {
			return Ok(());
		}
		Err(ErrorObjectOwned::owned(
			UNSAFE_CODE,
			"RPC call is unsafe to be called externally; start the node with --rpc-methods unsafe",
			None::<()>,
		))
	}
}

/// `0x`-hex bytes, or what is wrong with the text.
fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
	let Some(digits) = text.strip_prefix("0x") else {
		return Err("not valid hex: it must start with 0x".into());
	};
	if digits.len() % 2 != 0 {
		return Err(format!("not valid hex: odd number of hex digits ({})", digits.len()));
	}
	let nibble = |at: usize| {
		let digit = digits.as_bytes()[at];
		(digit as char).to_digit(16).map(|value| value as u8).ok_or_else(|| {
			format!("not valid hex: {:?} at position {} is not a hex digit", digit as char, at + 2)
		})
	};
	(0..digits.len() / 2).map(|at| Ok(nibble(2 * at)? << 4 | nibble(2 * at + 1)?)).collect()
}

/// A byte-string parameter: a `0x`-hex string.
struct HexBytes(Vec<u8>);

impl<'de> serde::Deserialize<'de> for HexBytes {
	fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
		let text = <String as serde::Deserialize>::deserialize(deserializer)?;
		parse_hex(&text).map(HexBytes).map_err(serde::de::Error::custom)
	}
}

/// A 32-byte parameter: `0x`-hex string or an array of 32 numbers.
enum Bytes32 {
	Hex(Vec<u8>),
	Array([u8; 32]),
}

impl<'de> serde::Deserialize<'de> for Bytes32 {
	fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
		struct Visitor;
		impl<'de> serde::de::Visitor<'de> for Visitor {
			type Value = Bytes32;
			fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
				f.write_str("a 0x-hex string or an array of 32 numbers")
			}
			fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Bytes32, E> {
				parse_hex(text).map(Bytes32::Hex).map_err(E::custom)
			}
			fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Bytes32, A::Error> {
				let deserializer = serde::de::value::SeqAccessDeserializer::new(seq);
				<[u8; 32] as serde::Deserialize>::deserialize(deserializer).map(Bytes32::Array)
			}
		}
		deserializer.deserialize_any(Visitor)
	}
}

impl Bytes32 {
	fn into_array(self, what: &str) -> Result<[u8; 32], ErrorObjectOwned> {
		match self {
			Bytes32::Array(array) => Ok(array),
			Bytes32::Hex(bytes) => bytes
				.as_slice()
				.try_into()
				.map_err(|_| invalid(format!("{what} must be 32 bytes, got {}", bytes.len()))),
		}
	}
}

/// A topic filter parameter, read with the same hex rules as the other parameters.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
enum FilterParam {
	Any,
	MatchAll(Vec<Bytes32>),
	MatchAny(Vec<Bytes32>),
}

impl FilterParam {
	fn into_filter(self) -> Result<TopicFilter, ErrorObjectOwned> {
		let topics = |raw: Vec<Bytes32>| {
			raw.into_iter()
				.map(|topic| topic.into_array("a topic").map(Topic))
				.collect::<Result<Vec<_>, _>>()
		};
		let filter = match self {
			FilterParam::Any => Ok(TopicFilter::Any),
			FilterParam::MatchAll(raw) => TopicFilter::match_all(topics(raw)?),
			FilterParam::MatchAny(raw) => TopicFilter::match_any(topics(raw)?),
		};
		filter.map_err(|err| invalid(format!("bad topic filter: {err}")))
	}
}

fn invalid(message: impl Into<String>) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(INVALID_PARAMS_CODE, message, None::<()>)
}

fn store_error(err: impl std::fmt::Display) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(STORE_ERROR_CODE, format!("statement store: {err}"), None::<()>)
}

fn topics_param(params: &Params, position: usize) -> Result<Vec<Topic>, ErrorObjectOwned> {
	let raw: Vec<Bytes32> = nth(params, position, "topics")?;
	let topics = raw
		.into_iter()
		.map(|topic| topic.into_array("a topic").map(Topic))
		.collect::<Result<Vec<_>, _>>()?;
	check_match_all(&topics).map_err(|err| invalid(err.to_string()))?;
	Ok(topics)
}

fn nth<T: serde::de::DeserializeOwned>(
	params: &Params,
	position: usize,
	what: &str,
) -> Result<T, ErrorObjectOwned> {
	let mut sequence = params.sequence();
	for _ in 0..position {
		sequence.next::<serde_json::Value>().map_err(|_| invalid(format!("missing {what}")))?;
	}
	sequence.next::<T>().map_err(|err| invalid(format!("bad {what}: {}", detail(&err))))
}

/// What jsonrpsee's "Invalid params" error says went wrong (the decoder's message).
fn detail(err: &ErrorObjectOwned) -> String {
	err.data()
		.and_then(|data| serde_json::from_str::<String>(data.get()).ok())
		.unwrap_or_else(|| err.message().to_string())
}

/// The parameter at `position`, `None` if it is missing or `null`.
fn nth_optional<T: serde::de::DeserializeOwned>(
	params: &Params,
	position: usize,
	what: &str,
) -> Result<Option<T>, ErrorObjectOwned> {
	let mut sequence = params.sequence();
	for _ in 0..position {
		if sequence.next::<serde_json::Value>().is_err() {
			return Ok(None);
		}
	}
	sequence.optional_next::<T>().map_err(|err| invalid(format!("bad {what}: {}", detail(&err))))
}

fn key_param(params: &Params) -> Result<[u8; 32], ErrorObjectOwned> {
	nth::<Bytes32>(params, 1, "decryption key")?.into_array("the decryption key")
}

/// Decode a submitted statement. An oversized one is decoded leniently so that the store can
/// answer with upstream's `EncodingTooLarge` result.
fn statement_param(params: &Params) -> Result<Statement, ErrorObjectOwned> {
	let HexBytes(bytes) = nth(params, 0, "statement")?;
	match Statement::from_bytes(&bytes) {
		Ok(statement) => Ok(statement),
		Err(statement_primitives::Error::TooLarge { .. }) => {
			<Statement as codec::Decode>::decode(&mut &bytes[..])
				.map_err(|err| invalid(format!("statement does not decode: {err}")))
		}
		Err(err) => Err(invalid(format!("statement does not decode: {err}"))),
	}
}

fn encoded(items: Vec<Vec<u8>>) -> Vec<Bytes> {
	items.into_iter().map(Bytes).collect()
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
		let statement = statement_param(&params)?;
		Ok::<_, ErrorObjectOwned>(rpc.store.submit(statement, StatementSource::Local))
	})?;
	module.register_blocking_method("statement_dump", |_, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		dump(&rpc)
	})?;
	module.register_blocking_method("statement_dumpPage", |params, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		let after: Option<u64> = nth_optional(&params, 0, "cursor")?;
		let limit: Option<usize> = nth_optional(&params, 1, "limit")?;
		let limit = limit.unwrap_or(DUMP_PAGE_MAX).clamp(1, DUMP_PAGE_MAX);
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
		let hash =
			nth::<Bytes32>(&params, 0, "statement hash")?.into_array("the statement hash")?;
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
			let topics = topics_param(&params, 0)?;
			let key = if needs_key { Some(key_param(&params)?) } else { None };
			query(rpc.store.as_ref(), &topics, key).map(encoded).map_err(store_error)
		})?;
	}
	module.register_subscription(
		"statement_subscribeStatement",
		"statement_statement",
		"statement_unsubscribeStatement",
		|params, pending, rpc, _| async move { subscribe(params, pending, rpc).await },
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

/// A subscription as the store hands it out.
type Subscription = Box<dyn StatementSubscription>;

/// Why a subscription task stopped early.
enum Stop {
	/// The client went away or unsubscribed.
	Closed,
	/// The store dropped the subscriber, or reading failed: tell the client.
	Failed(String),
}

async fn subscribe(
	params: Params<'static>,
	pending: PendingSubscriptionSink,
	rpc: Arc<StatementRpc>,
) -> Result<(), SubscriptionError> {
	let filter = match nth::<FilterParam>(&params, 0, "topic filter").and_then(|f| f.into_filter())
	{
		Ok(filter) => filter,
		Err(err) => {
			pending.reject(err).await;
			return Ok(());
		}
	};
	let store = rpc.store.clone();
	let queue_bytes = rpc.queue_bytes;
	let subscribed =
		tokio::task::spawn_blocking(move || store.subscribe_with_queue(filter, queue_bytes)).await;
	let subscription = match subscribed {
		Ok(Ok(subscription)) => subscription,
		Ok(Err(err)) => {
			pending.reject(invalid(err.to_string())).await;
			return Ok(());
		}
		Err(err) => {
			pending.reject(store_error(err)).await;
			return Ok(());
		}
	};
	let Ok(sink) = pending.accept().await else { return Ok(()) };
	match serve(&sink, subscription).await {
		Stop::Closed => Ok(()),
		Stop::Failed(reason) => Err(reason.into()),
	}
}

/// Replay, then stream, until the client leaves or the subscription fails.
async fn serve(sink: &jsonrpsee::SubscriptionSink, subscription: Subscription) -> Stop {
	let total = subscription.replay_total();
	// One page ahead, so that the last replay batch can say `remaining: 0`.
	let (mut subscription, mut current) = match replay_page(subscription).await {
		Ok(read) => read,
		Err(stop) => return stop,
	};
	let mut sent = 0u64;
	loop {
		let batch = current.take().unwrap_or_default();
		let (next_subscription, next) = match replay_page(subscription).await {
			Ok(read) => read,
			Err(stop) => return stop,
		};
		subscription = next_subscription;
		sent += batch.len() as u64;
		let remaining = if next.is_some() { total.saturating_sub(sent) } else { 0 };
		let event = StatementEvent::NewStatements {
			statements: batch.into_iter().map(Bytes).collect(),
			remaining: Some(u32::try_from(remaining).unwrap_or(u32::MAX)),
		};
		if let Err(stop) = send(sink, subscription.as_ref(), &event).await {
			return stop;
		}
		if next.is_none() {
			break;
		}
		current = next;
	}
	loop {
		let live = tokio::select! {
			live = subscription.next_live(LIVE_BATCH_BYTES) => live,
			_ = sink.closed() => return Stop::Closed,
		};
		let statements = match live {
			Ok(statements) => statements,
			Err(err) => return Stop::Failed(err.to_string()),
		};
		let event = StatementEvent::NewStatements {
			statements: statements.iter().map(|statement| Bytes(statement.to_vec())).collect(),
			remaining: None,
		};
		drop(statements);
		if let Err(stop) = send(sink, subscription.as_ref(), &event).await {
			return stop;
		}
	}
}

/// The next replay page, read off the async threads.
async fn replay_page(
	mut subscription: Subscription,
) -> Result<(Subscription, Option<Vec<Vec<u8>>>), Stop> {
	let read = tokio::task::spawn_blocking(move || {
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
/// the store's bounded queue, where lagging is noticed.
async fn send(
	sink: &jsonrpsee::SubscriptionSink,
	subscription: &dyn StatementSubscription,
	event: &StatementEvent,
) -> Result<(), Stop> {
	let mut pause = std::time::Duration::from_millis(1);
	while sink.max_capacity().saturating_sub(sink.capacity()) >= IN_FLIGHT_NOTIFICATIONS {
		subscription.check().map_err(|err| Stop::Failed(err.to_string()))?;
		tokio::select! {
			_ = tokio::time::sleep(pause) => {},
			_ = sink.closed() => return Err(Stop::Closed),
		}
		pause = (pause * 2).min(std::time::Duration::from_millis(100));
	}
	let raw = serde_json::value::to_raw_value(event)
		.map_err(|err| Stop::Failed(format!("cannot encode a notification: {err}")))?;
	sink.send(raw).await.map_err(|_| Stop::Closed)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn hex_params_that_are_not_hex_say_so_and_name_the_parameter() {
		for (json, expected) in [
			("[\"0x08022\"]", "bad statement: not valid hex: odd number of hex digits (5)"),
			("[\"0x0g\"]", "bad statement: not valid hex: 'g' at position 3 is not a hex digit"),
			("[\"0802\"]", "bad statement: not valid hex: it must start with 0x"),
		] {
			let Err(err) = statement_param(&Params::new(Some(json))) else {
				panic!("{json} accepted")
			};
			assert!(err.message().starts_with(expected), "{json}: {}", err.message());
			assert_eq!(err.code(), INVALID_PARAMS_CODE);
		}
		let odd = format!("[[\"0x{}1\"]]", "11".repeat(31));
		let err = topics_param(&Params::new(Some(&odd)), 0).unwrap_err();
		assert!(
			err.message().contains("bad topics: not valid hex: odd number"),
			"{}",
			err.message()
		);
		let key = format!("[[], \"0x{}\"]", "zz".repeat(32));
		let err = key_param(&Params::new(Some(&key))).unwrap_err();
		assert!(err.message().contains("bad decryption key: not valid hex"), "{}", err.message());
	}

	#[test]
	fn a_filter_with_odd_length_hex_is_refused_as_not_hex() {
		let json = "[{\"matchAll\": [\"0x123\"]}]";
		let Err(err) = nth::<FilterParam>(&Params::new(Some(json)), 0, "topic filter") else {
			panic!("accepted")
		};
		assert!(
			err.message().contains("bad topic filter: not valid hex: odd"),
			"{}",
			err.message()
		);
	}

	#[test]
	fn topics_accept_hex_and_number_arrays_and_refuse_five() {
		let hex = format!("\"0x{}\"", "11".repeat(32));
		let array = format!("[{}]", vec!["17"; 32].join(","));
		let json = format!("[[{hex},{array}]]");
		let params = Params::new(Some(&json));
		assert_eq!(topics_param(&params, 0).unwrap(), vec![Topic([0x11; 32]); 2]);
		let five = format!("[[{}]]", vec![hex.clone(); 5].join(","));
		let err = topics_param(&Params::new(Some(&five)), 0).unwrap_err();
		assert!(err.message().contains("5 topics given, at most 4"), "{}", err.message());
		let short = Params::new(Some("[[\"0x0102\"]]"));
		assert!(topics_param(&short, 0).unwrap_err().message().contains("32 bytes"));
	}
}
