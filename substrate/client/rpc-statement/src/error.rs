//! Every JSON-RPC error code the node answers with, in one table, and the errors the
//! statement methods build.
//!
//! | code | constant | when | retry? |
//! |---|---|---|---|
//! | -32601 | [`METHOD_NOT_FOUND`] | no such method; an unsafe method refused (`--rpc-methods`); a subscription over plain HTTP | no |
//! | -32602 | [`INVALID_PARAMS`] | a parameter is missing or malformed: the message names it | no, fix the call |
//! | -32603 | [`INTERNAL`] | the node failed inside (a task it ran died) | yes |
//! | -32006 | [`TOO_MANY_SUBSCRIPTIONS`] | past the connection's subscription limit, or the store's subscription memory budget | after closing some |
//! | -32800 | [`TOO_MANY_V2_SUBSCRIPTIONS`] | `statement_unstable_subscribe` past the connection's spec-v2 limit (at least 2; 16 by default) | after closing some |
//! | -32801 | [`UNKNOWN_SUBSCRIPTION`] | `statement_unstable_add_filter` names a subscription this connection does not hold | no |
//! | -32007 | [`REQUEST_TOO_LARGE`] | a request body past 16 MiB (HTTP 413) | no |
//! | -32008 | [`RESPONSE_TOO_LARGE`] | an answer past the response limit (`statement_dump`: page with `statement_dumpPage`) | no |
//! | 1040 | [`KEYSTORE`] | `author_insertKey` could not store the key | after fixing the keystore |
//! | 4000 | [`STORE_FAILED`] | the store failed in a way not listed below | yes |
//! | 4001 | [`STORE_DISK_FULL`] | the disk holding the store is nearly full: writes are refused, reads go on | later, once space is freed |
//! | 4002 | [`STORE_DAMAGED`] | the store's files are damaged | no: the operator runs `statement-node check-db`, then `repair` |
//! | 4003 | [`UNKNOWN_BLOCK`] | a `state_*` call names a block other than genesis | no |
//!
//! A submission the store cannot take is not an error: `statement_submit` answers
//! `{"status": "internalError", ..}` in its result, as upstream does. The transport's own
//! codes (-32601 for a subscription over HTTP, -32007) are sent by `statement-rpc-server`,
//! which serves any methods and knows nothing of these; the node's tests check that the two
//! agree.

use jsonrpsee::types::error::ErrorObjectOwned;

/// No such method, an unsafe method refused, or a subscription over plain HTTP (as
/// Substrate and jsonrpsee answer them).
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Malformed or missing parameters.
pub const INVALID_PARAMS: i32 = -32602;
/// The node failed inside.
pub const INTERNAL: i32 = -32603;
/// Past a connection's subscription limit or the store's subscription memory budget (the
/// code jsonrpsee gives a connection's limit).
pub const TOO_MANY_SUBSCRIPTIONS: i32 = jsonrpsee::types::error::TOO_MANY_SUBSCRIPTIONS_CODE;
/// `statement_unstable_subscribe` past the connection's spec-v2 limit (the spec's code).
pub const TOO_MANY_V2_SUBSCRIPTIONS: i32 = -32800;
/// A spec-v2 subscription this connection does not hold (the spec's code).
pub const UNKNOWN_SUBSCRIPTION: i32 = -32801;
/// A request body larger than the server takes (jsonrpsee's code).
pub const REQUEST_TOO_LARGE: i32 = jsonrpsee::types::error::OVERSIZED_REQUEST_CODE;
/// An answer larger than the server sends (jsonrpsee's code).
pub const RESPONSE_TOO_LARGE: i32 = jsonrpsee::types::error::OVERSIZED_RESPONSE_CODE;
/// `author_insertKey` could not store the key (Substrate's author error base + 40).
pub const KEYSTORE: i32 = 1040;
/// The store failed in a way not classified below; the call may succeed if made again
/// (upstream's code for any statement-store error).
pub const STORE_FAILED: i32 = 4000;
/// The disk holding the store is nearly full: writes are refused until space is freed, reads
/// go on. Retry later.
pub const STORE_DISK_FULL: i32 = 4001;
/// The store's files are damaged; retrying cannot help until the operator repairs them.
pub const STORE_DAMAGED: i32 = 4002;
/// A block the node does not have (it has only genesis), as Substrate's state methods say.
pub const UNKNOWN_BLOCK: i32 = 4003;

/// `Ok` if unsafe methods are `allowed`, else Substrate's refusal of an unsafe call: one
/// answer for every unsafe method the server has, whichever crate registers it.
pub fn ensure_unsafe_allowed(allowed: bool) -> Result<(), ErrorObjectOwned> {
	if allowed {
		return Ok(());
	}
	Err(ErrorObjectOwned::owned(
		METHOD_NOT_FOUND,
		"RPC call is unsafe to be called externally; start the node with --rpc-methods unsafe",
		None::<()>,
	))
}

/// An invalid-params error (-32602) saying `message`, for this crate's methods and the node's.
pub fn invalid_params(message: impl Into<String>) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(INVALID_PARAMS, message, None::<()>)
}

/// An internal error (-32603): the node failed inside, not the store.
pub fn internal(message: impl std::fmt::Display) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(INTERNAL, format!("internal error: {message}"), None::<()>)
}

/// The store's failure, with its code: a full disk and damage apart from the rest.
pub fn store_error(err: &statement_primitives::Error) -> ErrorObjectOwned {
	use statement_primitives::Error;
	let code = match err {
		Error::DiskFull(_) => STORE_DISK_FULL,
		Error::Damaged(_) => STORE_DAMAGED,
		_ => STORE_FAILED,
	};
	ErrorObjectOwned::owned(code, format!("statement store: {err}"), None::<()>)
}

/// The store's subscriptions took their share of its memory budget.
pub(crate) fn too_many_subscriptions(err: statement_primitives::Error) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(TOO_MANY_SUBSCRIPTIONS, format!("statement store: {err}"), None::<()>)
}

/// An answer past the server's response limit of `limit` bytes, naming the paged method.
pub(crate) fn dump_too_large(limit: u32) -> ErrorObjectOwned {
	ErrorObjectOwned::owned(
		RESPONSE_TOO_LARGE,
		format!(
			"the dump is larger than this server's response limit ({limit} bytes); page \
			 through it with statement_dumpPage"
		),
		None::<()>,
	)
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_primitives::Error;

	#[test]
	fn a_full_disk_and_damage_have_codes_of_their_own() {
		let full = store_error(&Error::DiskFull("the disk holding /db is nearly full".into()));
		assert_eq!(full.code(), STORE_DISK_FULL);
		assert!(full.message().contains("nearly full"), "{}", full.message());
		assert_eq!(store_error(&Error::Damaged("bad table".into())).code(), STORE_DAMAGED);
		assert_eq!(store_error(&Error::Db("gone".into())).code(), STORE_FAILED);
		assert_eq!(store_error(&Error::Storage("state".into())).code(), STORE_FAILED);
	}

	#[test]
	fn the_codes_are_distinct() {
		let mut codes = vec![
			METHOD_NOT_FOUND,
			INVALID_PARAMS,
			INTERNAL,
			TOO_MANY_SUBSCRIPTIONS,
			TOO_MANY_V2_SUBSCRIPTIONS,
			UNKNOWN_SUBSCRIPTION,
			REQUEST_TOO_LARGE,
			RESPONSE_TOO_LARGE,
			KEYSTORE,
			STORE_FAILED,
			STORE_DISK_FULL,
			STORE_DAMAGED,
			UNKNOWN_BLOCK,
		];
		let all = codes.len();
		codes.sort();
		codes.dedup();
		assert_eq!(codes.len(), all);
	}
}
