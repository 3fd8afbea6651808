//! The spec-v2 statement RPC, `statement_unstable_*` (paritytech/json-rpc-interface-spec,
//! `src/api/statement*.md`), beside the legacy methods, with upstream's JSON
//! (sp-statement-store 29's types; `json`).
//!
//! | method | params | result |
//! |---|---|---|
//! | `statement_unstable_subscribe` | - | a subscription id: 16 random alphanumeric characters |
//! | `statement_unstable_unsubscribe` | subscription | `true` if it was open, else `false` (as upstream; the spec says `null`, which no client reads) |
//! | `statement_unstable_add_filter` | subscription, `"any"` or `{"matchAll": [1 to 4 topics]}` | the filter's id (`"0"`, `"1"`, ...; never reused), or `{"result": "limitReached"}` past 128 filters |
//! | `statement_unstable_remove_filter` | subscription, filter id | `null`, for unknown ids too |
//! | `statement_unstable_submit` | `0x`-hex SCALE statement | `{"status": "new" \| "known"}`, `{"status": "rejected" \| "invalid", "reason": .., <camelCase fields>}` |
//!
//! Notifications are `statement_unstable_subscribeEvent` with `{subscription, result}`; the
//! results are `replayStatements` (a filter's stored matches), `replayDone`,
//! `newStatements` (each with the ids of the filters that took it) and `stop` (see
//! `session` for the order they keep).
//!
//! Errors: a bad parameter (`matchAny`, an empty `matchAll`, more than 4 topics, a topic
//! that is not 32 bytes, bad hex, bytes that do not decode or are followed by more) is
//! -32602; `add_filter` on a subscription this connection does not hold is -32801; a client
//! may always hold 2 subscriptions on a connection, past the configured number (16 by
//! default) -32800; past the store's subscription budget -32006; a failure inside -32603. A
//! submission the store fails is -32603 (the spec-v2 result has no `internalError`); an
//! expired statement is `invalid`/`alreadyExpired`; `known` means stored now.

mod json;
mod session;

pub use json::SubmitOutcome;
pub use session::MAX_FILTERS;

use crate::{
	error::{internal, invalid_params, too_many_subscriptions},
	params::Positional,
	service::StatementRpc,
};
use jsonrpsee::{
	core::server::ResponsePayload, types::error::ErrorObjectOwned, ConnectionId,
	PendingSubscriptionSink, RpcModule,
};
use parking_lot::Mutex;
use serde_json::Value;
use session::{Added, Command, Session};
use statement_primitives::TopicFilter;
use std::{collections::HashMap, sync::Arc};
use tokio::sync::{mpsc, oneshot};

/// The spec-v2 subscriptions open, by connection and id, so that `add_filter` and
/// `remove_filter` find theirs and no other connection's. The methods `register` adds share
/// one.
#[derive(Default)]
struct Sessions {
	open: Mutex<HashMap<(ConnectionId, String), mpsc::UnboundedSender<Command>>>,
	per_connection: Mutex<HashMap<ConnectionId, usize>>,
}

impl Sessions {
	/// The commands of subscription `id` of `connection`.
	fn get(&self, connection: ConnectionId, id: &str) -> Option<mpsc::UnboundedSender<Command>> {
		self.open.lock().get(&(connection, id.to_string())).cloned()
	}

	/// Count one more subscription on `connection`, unless it holds `most` already.
	fn reserve(self: &Arc<Self>, connection: ConnectionId, most: usize) -> Option<Reserved> {
		let mut counts = self.per_connection.lock();
		let count = counts.entry(connection).or_default();
		if *count >= most {
			return None;
		}
		*count += 1;
		Some(Reserved { sessions: self.clone(), connection, id: None })
	}
}

/// One subscription counted on its connection (and listed, once open) until dropped.
struct Reserved {
	sessions: Arc<Sessions>,
	connection: ConnectionId,
	id: Option<String>,
}

impl Drop for Reserved {
	fn drop(&mut self) {
		if let Some(id) = self.id.take() {
			self.sessions.open.lock().remove(&(self.connection, id));
		}
		let mut counts = self.sessions.per_connection.lock();
		if let Some(count) = counts.get_mut(&self.connection) {
			*count -= 1;
			if *count == 0 {
				counts.remove(&self.connection);
			}
		}
	}
}

/// -32800: the connection holds as many subscriptions as it may.
fn too_many_on_connection(most: usize) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(
		crate::error::TOO_MANY_V2_SUBSCRIPTIONS,
		format!("this connection holds {most} statement subscriptions, the most it may"),
		None::<()>,
	)
}

/// -32801: no such subscription on this connection.
fn unknown_subscription(id: &str) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(
		crate::error::UNKNOWN_SUBSCRIPTION,
		format!("no statement subscription {id:?} on this connection"),
		None::<()>,
	)
}

/// The connection a call came on.
fn connection_of(extensions: &jsonrpsee::Extensions) -> Result<ConnectionId, ErrorObjectOwned> {
	extensions.get::<ConnectionId>().copied().ok_or_else(|| internal("no connection id"))
}

/// A spec-v2 topic filter: `"any"` or `{"matchAll": [1 to 4 topics]}`.
fn v2_filter(params: &Positional, at: usize) -> Result<TopicFilter, ErrorObjectOwned> {
	match params.filter(at)? {
		TopicFilter::MatchAny(_) => Err(invalid_params(
			"bad topic filter: matchAny is not a spec-v2 filter; use \"any\" or {\"matchAll\": [topics]}",
		)),
		TopicFilter::MatchAll(topics) if topics.is_empty() => {
			Err(invalid_params("bad topic filter: matchAll: expected 1 to 4 topics, got none"))
		}
		filter => Ok(filter),
	}
}

/// Add the spec-v2 methods to `module`.
pub(crate) fn register(
	module: &mut RpcModule<StatementRpc>,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
	let sessions = Arc::new(Sessions::default());
	let open_in = sessions.clone();
	module.register_subscription_raw(
		"statement_unstable_subscribe",
		"statement_unstable_subscribeEvent",
		"statement_unstable_unsubscribe",
		move |_params, pending, rpc, extensions| {
			let connection = connection_of(extensions);
			tokio::spawn(open(pending, rpc, open_in.clone(), connection));
		},
	)?;
	let add_in = sessions.clone();
	module.register_async_method(
		"statement_unstable_add_filter",
		move |params, rpc, extensions| {
			let sessions = add_in.clone();
			async move {
				add_filter(params.into_owned(), rpc, sessions, extensions)
					.await
					.unwrap_or_else(ResponsePayload::error)
			}
		},
	)?;
	module.register_method(
		"statement_unstable_remove_filter",
		move |params, _rpc, extensions| {
			let params = Positional::of(&params)?;
			let subscription = params.string(0, "subscription")?;
			let filter = params.string(1, "filter id")?;
			let connection = connection_of(extensions)?;
			if let (Some(commands), Ok(id)) =
				(sessions.get(connection, &subscription), filter.parse())
			{
				let _ = commands.send(Command::RemoveFilter(id));
			}
			Ok::<_, ErrorObjectOwned>(Value::Null)
		},
	)?;
	module.register_blocking_method("statement_unstable_submit", |params, rpc, _| {
		let result = crate::submit::submit_counted(&rpc, &params)?;
		SubmitOutcome::of(result).map_err(internal)
	})?;
	Ok(())
}

/// `statement_unstable_add_filter`: the filter's id once the subscription's task took it;
/// its replay starts once that answer is in the connection's buffer.
async fn add_filter(
	params: jsonrpsee::types::Params<'static>,
	_rpc: Arc<StatementRpc>,
	sessions: Arc<Sessions>,
	extensions: jsonrpsee::Extensions,
) -> Result<ResponsePayload<'static, Value>, ErrorObjectOwned> {
	let params = Positional::of(&params)?;
	let subscription = params.string(0, "subscription")?;
	let filter = v2_filter(&params, 1)?;
	let connection = connection_of(&extensions)?;
	let Some(commands) = sessions.get(connection, &subscription) else {
		return Err(unknown_subscription(&subscription));
	};
	let (reply, added) = oneshot::channel();
	let gone = || unknown_subscription(&subscription);
	commands.send(Command::AddFilter { filter, reply }).map_err(|_| gone())?;
	let added = added.await.map_err(|_| gone())?.map_err(internal)?;
	let (payload, written) = ResponsePayload::success(added.answer()).notify_on_completion();
	if let Added::Id(id) = added {
		tokio::spawn(async move {
			if written.await.is_ok() {
				let _ = commands.send(Command::Started(id));
			}
		});
	}
	Ok(payload)
}

/// Open a subscription: count it on its connection, subscribe in the store, accept, serve.
async fn open(
	pending: PendingSubscriptionSink,
	rpc: Arc<StatementRpc>,
	sessions: Arc<Sessions>,
	connection: Result<ConnectionId, ErrorObjectOwned>,
) {
	let connection = match connection {
		Ok(connection) => connection,
		Err(err) => return pending.reject(err).await,
	};
	let most = rpc.v2_per_connection;
	let Some(mut reserved) = sessions.reserve(connection, most) else {
		rpc.metrics.subscribed(false);
		return pending.reject(too_many_on_connection(most)).await;
	};
	let subscription = match rpc.store.subscribe_filters(rpc.queue_bytes) {
		Ok(subscription) => Arc::from(subscription),
		Err(full @ statement_primitives::Error::TooManySubscriptions { .. }) => {
			rpc.metrics.subscribed(false);
			return pending.reject(too_many_subscriptions(full)).await;
		}
		Err(err) => {
			rpc.metrics.subscribed(false);
			return pending.reject(internal(err)).await;
		}
	};
	// Listed before the answer goes out: a client may call `add_filter` as soon as it has
	// the id.
	let id = match pending.subscription_id() {
		jsonrpsee::types::SubscriptionId::Str(id) => id.to_string(),
		jsonrpsee::types::SubscriptionId::Num(id) => id.to_string(),
	};
	let (commands, received) = mpsc::unbounded_channel();
	sessions.open.lock().insert((connection, id.clone()), commands);
	reserved.id = Some(id);
	let Ok(sink) = pending.accept().await else { return };
	rpc.metrics.subscribed(true);
	let _active = rpc.metrics.active();
	let hook = rpc.on_subscribe.clone();
	let submissions = rpc.submissions.clone();
	Session::new(sink, subscription, received, rpc.readers.clone(), hook, submissions).run().await;
	drop(reserved);
}
