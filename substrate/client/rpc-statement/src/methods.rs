//! The statement methods' registration in a jsonrpsee module. Queries, submission, removal
//! and the dumps are blocking methods that call the store; subscriptions start in
//! `subscribe`.

use crate::{
	error::{dump_too_large, internal, store_error, too_many_subscriptions},
	hex::HexList,
	limits::{DUMP_PAGE_MAX, DUMP_WALK_PAGE},
	params::Positional,
	service::StatementRpc,
	subscribe::{start, Starting},
};
use jsonrpsee::{types::error::ErrorObjectOwned, RpcModule};
use sp_core::Bytes;
use statement_primitives::{StatementStore, Topic};

impl StatementRpc {
	/// The JSON-RPC module with every statement method.
	pub fn into_module(self) -> RpcModule<StatementRpc> {
		let mut module = RpcModule::new(self);
		register(&mut module).expect("method names are distinct; qed");
		module
	}
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
		crate::submit::submit_counted(&rpc, &params)
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
		let page = rpc
			.store
			.statements_page(after, limit, rpc.max_answer_bytes())
			.map_err(|err| store_error(&err))?;
		let statements: Vec<Bytes> =
			page.statements.into_iter().map(|(_, body)| Bytes(body)).collect();
		Ok::<_, ErrorObjectOwned>(
			serde_json::json!({ "statements": statements, "next": page.next }),
		)
	})?;
	module.register_blocking_method("statement_remove", |params, rpc, _| {
		rpc.ensure_unsafe_allowed()?;
		let hash = Positional::of(&params)?.hash(0)?;
		rpc.store.remove(&hash).map_err(|err| store_error(&err))
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
	// Async: a node with topic-routed storage first has the topics fetched from their
	// holders (the hook); the store is then read on the blocking pool.
	for (name, needs_key, query) in queries {
		module.register_async_method(name, move |params, rpc, _| async move {
			let params = Positional::of(&params)?;
			let topics = params.topics(0)?;
			let key = if needs_key { Some(params.key(1)?) } else { None };
			if let Some(hook) = &rpc.before_query {
				hook(topics.clone()).await;
			}
			let store = rpc.store.clone();
			tokio::task::spawn_blocking(move || query(store.as_ref(), &topics, key))
				.await
				.map_err(internal)?
				.map(HexList)
				.map_err(|err| store_error(&err))
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
					rpc.metrics.subscribed(false);
					tokio::spawn(pending.reject(too_many_subscriptions(full)));
					return;
				}
			}
			tokio::spawn(start(filter.map_err(ErrorObjectOwned::from), pending, rpc, starting));
		},
	)?;
	crate::v2::register(module)?;
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
		let page = rpc
			.store
			.statements_page(after, DUMP_WALK_PAGE, usize::MAX)
			.map_err(|err| store_error(&err))?;
		for (_, body) in page.statements {
			// Each hex string also carries "0x", two quotes and a comma.
			bytes += body.len() + 3;
			if bytes > limit {
				return Err(dump_too_large(rpc.max_response_bytes));
			}
			out.push(Bytes(body));
		}
		if page.next.is_none() {
			return Ok(out);
		}
		after = page.next;
	}
}
