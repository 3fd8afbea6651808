//! JSON-RPC methods of the statement store, with upstream's names and JSON shapes.
//!
//! | method | params | result |
//! |---|---|---|
//! | `statement_submit` | `0x`-hex SCALE statement | `SubmitResult` JSON |
//! | `statement_broadcasts` | topics | data of matching broadcasts |
//! | `statement_posted` | topics, key | data of matching posted statements |
//! | `statement_postedClear` | topics, key | decrypted data |
//! | `statement_broadcastsStatement`, `statement_postedStatement`, `statement_postedClearStatement` | as above | encoded statements |
//! | `statement_dump` (unsafe) | - | every encoded statement |
//! | `statement_remove` (unsafe) | hash | `null` |
//! | `statement_subscribeStatement` | `TopicFilter` | `statement_statement` notifications |
//!
//! Topics, keys and hashes are `0x`-hex strings of 32 bytes (arrays of 32 numbers, as older
//! clients send them, are accepted too). Bad params get a JSON-RPC error naming the problem;
//! the connection stays usable.

use jsonrpsee::{
	types::{error::ErrorObjectOwned, Params},
	PendingSubscriptionSink, RpcModule,
};
use sp_core::Bytes;
use statement_primitives::{
	check_match_all, Statement, StatementEvent, StatementSource, StatementStore, Topic,
	TopicFilter, MAX_STATEMENT_SIZE,
};
use statement_store::Store;

/// JSON-RPC error code for a refused unsafe method (as Substrate uses).
pub const UNSAFE_CODE: i32 = -32601;
/// JSON-RPC error code for malformed parameters.
pub const INVALID_PARAMS_CODE: i32 = -32602;
/// JSON-RPC error code for a store failure.
pub const STORE_ERROR_CODE: i32 = 4000;

/// Encoded bytes per subscription batch while replaying stored statements.
const REPLAY_BATCH_BYTES: usize = 2 * 1024 * 1024;

/// What the RPC methods work on.
#[derive(Clone)]
pub struct StatementRpc {
	store: Store,
	allow_unsafe: bool,
}

impl StatementRpc {
	/// Methods over `store`; `allow_unsafe` enables `statement_dump` and `statement_remove`.
	pub fn new(store: Store, allow_unsafe: bool) -> Self {
		StatementRpc { store, allow_unsafe }
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

/// A 32-byte parameter: `0x`-hex string or an array of 32 numbers.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Bytes32 {
	Hex(Bytes),
	Array([u8; 32]),
}

impl Bytes32 {
	fn into_array(self, what: &str) -> Result<[u8; 32], ErrorObjectOwned> {
		match self {
			Bytes32::Array(array) => Ok(array),
			Bytes32::Hex(bytes) => bytes
				.0
				.as_slice()
				.try_into()
				.map_err(|_| invalid(format!("{what} must be 32 bytes, got {}", bytes.0.len()))),
		}
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
	sequence.next::<T>().map_err(|err| invalid(format!("bad {what}: {}", err.message())))
}

fn key_param(params: &Params) -> Result<[u8; 32], ErrorObjectOwned> {
	nth::<Bytes32>(params, 1, "decryption key")?.into_array("the decryption key")
}

/// Decode a submitted statement. An oversized one is decoded leniently so that the store can
/// answer with upstream's `EncodingTooLarge` result.
fn statement_param(params: &Params) -> Result<Statement, ErrorObjectOwned> {
	let bytes: Bytes = nth(params, 0, "statement")?;
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

type Query = fn(&Store, &[Topic], Option<[u8; 32]>) -> statement_primitives::Result<Vec<Vec<u8>>>;

fn register(
	module: &mut RpcModule<StatementRpc>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
	module.register_blocking_method("statement_submit", |params, rpc, _| {
		let statement = statement_param(&params)?;
		Ok::<_, ErrorObjectOwned>(rpc.store.submit(statement, StatementSource::Local))
	})?;
	module.register_blocking_method("statement_dump", |_, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		let all = rpc.store.statements().map_err(store_error)?;
		Ok::<_, ErrorObjectOwned>(
			all.into_iter().map(|(_, s)| Bytes(s.encode())).collect::<Vec<_>>(),
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
			query(&rpc.store, &topics, key).map(encoded).map_err(store_error)
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

async fn subscribe(
	params: Params<'static>,
	pending: PendingSubscriptionSink,
	rpc: std::sync::Arc<StatementRpc>,
) {
	let filter: TopicFilter = match nth(&params, 0, "topic filter") {
		Ok(filter) => filter,
		Err(err) => return pending.reject(err).await,
	};
	let store = rpc.store.clone();
	let subscription = match tokio::task::spawn_blocking(move || store.subscribe(filter)).await {
		Ok(Ok(subscription)) => subscription,
		Ok(Err(err)) => return pending.reject(invalid(err.to_string())).await,
		Err(err) => return pending.reject(store_error(err)).await,
	};
	let Ok(sink) = pending.accept().await else { return };
	let mut live = subscription.live;
	for event in replay_batches(subscription.replay) {
		if send(&sink, &event).await.is_err() {
			return;
		}
	}
	loop {
		tokio::select! {
			statement = live.recv() => {
				let Some(statement) = statement else { return };
				let event = StatementEvent::NewStatements {
					statements: vec![Bytes(statement)],
					remaining: None,
				};
				if send(&sink, &event).await.is_err() {
					return;
				}
			},
			_ = sink.closed() => return,
		}
	}
}

/// Stored matches in batches of about [`REPLAY_BATCH_BYTES`], each saying how many follow;
/// one empty batch when nothing matches.
fn replay_batches(replay: Vec<Vec<u8>>) -> Vec<StatementEvent> {
	let total = replay.len();
	let mut events = Vec::new();
	let mut batch = Vec::new();
	let mut bytes = 0;
	let mut sent = 0;
	for statement in replay {
		if !batch.is_empty() && bytes + statement.len() > REPLAY_BATCH_BYTES.max(MAX_STATEMENT_SIZE)
		{
			sent += batch.len();
			events.push(StatementEvent::NewStatements {
				statements: std::mem::take(&mut batch),
				remaining: Some((total - sent) as u32),
			});
			bytes = 0;
		}
		bytes += statement.len();
		batch.push(Bytes(statement));
	}
	events.push(StatementEvent::NewStatements { statements: batch, remaining: Some(0) });
	events
}

async fn send(sink: &jsonrpsee::SubscriptionSink, event: &StatementEvent) -> Result<(), ()> {
	let raw = serde_json::value::to_raw_value(event).map_err(|_| ())?;
	sink.send(raw).await.map_err(|_| ())
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn replay_batches_count_down_and_end_with_zero() {
		let statements = vec![vec![0u8; 1 << 20]; 5];
		let events = replay_batches(statements);
		let remaining: Vec<Option<u32>> = events
			.iter()
			.map(|StatementEvent::NewStatements { remaining, .. }| *remaining)
			.collect();
		assert_eq!(remaining.last(), Some(&Some(0)));
		assert!(remaining.windows(2).all(|w| w[0] > w[1]), "{remaining:?}");
		let sent: usize = events
			.iter()
			.map(|StatementEvent::NewStatements { statements, .. }| statements.len())
			.sum();
		assert_eq!(sent, 5);
	}

	#[test]
	fn nothing_stored_still_sends_one_empty_batch() {
		let events = replay_batches(Vec::new());
		assert_eq!(
			events,
			vec![StatementEvent::NewStatements { statements: vec![], remaining: Some(0) }]
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
