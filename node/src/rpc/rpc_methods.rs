//! `rpc_methods`: the methods a caller may call, and the one list of which of them are unsafe.

use crate::error::Error;
use jsonrpsee::RpcModule;

/// Methods refused unless unsafe methods are allowed (`--rpc-methods unsafe`, or `auto` on a
/// loopback address), as in Substrate: they read or change the whole store, the node's keys
/// or its peers. Each refuses itself when called; this list keeps them out of `rpc_methods`,
/// which lists only what a caller can call. A new unsafe method is added here.
pub const UNSAFE_METHODS: &[&str] = &[
	"author_hasKey",
	"author_insertKey",
	"statement_dump",
	"statement_dumpPage",
	"statement_remove",
	"system_peers",
];

/// Register `rpc_methods`, which lists every method already in `module` (and itself), less the
/// [`UNSAFE_METHODS`] unless `unsafe_allowed`: so it is registered last.
pub fn register(module: &mut RpcModule<()>, unsafe_allowed: bool) -> Result<(), Error> {
	let mut names: Vec<&'static str> = module
		.method_names()
		.filter(|name| unsafe_allowed || !UNSAFE_METHODS.contains(name))
		.collect();
	names.push("rpc_methods");
	names.sort_unstable();
	module.register_method(
		"rpc_methods",
		move |_, _, _| serde_json::json!({ "version": 1, "methods": names }),
	)?;
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;
	use jsonrpsee::core::EmptyServerParams;
	use serde_json::{json, Value};

	async fn listed(unsafe_allowed: bool) -> Value {
		let mut module = RpcModule::new(());
		for name in ["statement_submit", "statement_dump", "system_peers", "author_insertKey"] {
			module.register_method(name, |_, _, _| ()).unwrap();
		}
		register(&mut module, unsafe_allowed).unwrap();
		let answer: Value = module.call("rpc_methods", EmptyServerParams::new()).await.unwrap();
		answer["methods"].clone()
	}

	#[tokio::test]
	async fn unsafe_methods_are_listed_only_where_they_can_be_called() {
		assert_eq!(listed(false).await, json!(["rpc_methods", "statement_submit"]));
		assert_eq!(
			listed(true).await,
			json!([
				"author_insertKey",
				"rpc_methods",
				"statement_dump",
				"statement_submit",
				"system_peers"
			])
		);
	}
}
