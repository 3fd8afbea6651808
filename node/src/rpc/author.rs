//! Substrate's key methods, for the keystore that `statement_postedClear` decrypts with.
//!
//! | method | params | result |
//! |---|---|---|
//! | `author_insertKey` (unsafe) | key type (4 characters), secret URI, `0x` public key | `null` |
//! | `author_hasKey` (unsafe) | `0x` public key, key type | `bool` |
//!
//! Both are unsafe, as in Substrate: refused with the same error as `statement_remove` when
//! unsafe methods are not exposed. A `stmt` key must be the ed25519 key the secret URI gives,
//! else the call is refused with -32602 and nothing is written; it decrypts at once. Keys of
//! other types are kept unchecked, as Substrate keeps them. A key type that is not four
//! characters gets Substrate's error (1040, "Invalid key type ID format").

use crate::keystore::{Keystore, StatementKey, STATEMENT};
use jsonrpsee::{
	types::{ErrorObjectOwned, Params},
	RpcModule,
};
use sp_core::{crypto::KeyTypeId, Bytes};
use statement_rpc::{ensure_unsafe_allowed, invalid_params};
use std::sync::Arc;

/// Add `author_insertKey` and `author_hasKey` over `keystore` to `module`.
pub fn register(
	module: &mut RpcModule<()>,
	keystore: Arc<Keystore>,
	unsafe_allowed: bool,
) -> Result<(), jsonrpsee::core::RegisterMethodError> {
	let inserting = keystore.clone();
	module.register_blocking_method("author_insertKey", move |params, _, _| {
		ensure_unsafe_allowed(unsafe_allowed)?;
		insert_key(&inserting, &params)
	})?;
	module.register_blocking_method("author_hasKey", move |params, _, _| {
		ensure_unsafe_allowed(unsafe_allowed)?;
		let public: Bytes = param(&params, 0, "public key")?;
		let key_type = key_type(param(&params, 1, "key type")?)?;
		Ok::<_, ErrorObjectOwned>(keystore.has_key(key_type, &public))
	})?;
	Ok(())
}

fn insert_key(keystore: &Keystore, params: &Params) -> Result<(), ErrorObjectOwned> {
	let key_type = key_type(param(params, 0, "key type")?)?;
	let suri: String = param(params, 1, "secret URI")?;
	let public: Bytes = param(params, 2, "public key")?;
	let written = if key_type == STATEMENT {
		let key = StatementKey::from_suri(&suri).ok_or_else(|| {
			invalid_params(
				"the secret URI is not a valid ed25519 secret (statement keys are ed25519)",
			)
		})?;
		if public.0 != key.public() {
			return Err(invalid_params(format!(
				"the secret URI gives the ed25519 statement key 0x{}, not the public key given \
				 (0x{})",
				hex::encode(key.public()),
				hex::encode(&public.0)
			)));
		}
		keystore.insert_statement_key(key)
	} else {
		check_other_key(&suri, &public.0)?;
		keystore.insert_other(key_type, &suri, &public)
	};
	written.map_err(|err| {
		log::warn!("author_insertKey: {err}");
		ErrorObjectOwned::owned(
			statement_rpc::error::KEYSTORE,
			format!("The key store is unavailable: {err}"),
			None::<()>,
		)
	})
}

/// A key of a type this node does not use is kept for the node's operator, as Substrate
/// keeps it, but only if it is one: the secret URI must give the public key under one of the
/// schemes Substrate's key types use (sr25519, ed25519, ecdsa). Anything else (a typo, a
/// string that is no secret at all) is refused rather than written to disk.
fn check_other_key(suri: &str, public: &[u8]) -> Result<(), ErrorObjectOwned> {
	use sp_core::{ecdsa, ed25519, sr25519, Pair};
	fn gives<P: Pair>(suri: &str, public: &[u8]) -> Option<bool> {
		P::from_string(suri, None).ok().map(|pair| pair.public().as_ref() == public)
	}
	let answers = [
		gives::<sr25519::Pair>(suri, public),
		gives::<ed25519::Pair>(suri, public),
		gives::<ecdsa::Pair>(suri, public),
	];
	match answers {
		_ if answers.contains(&Some(true)) => Ok(()),
		[None, None, None] => Err(invalid_params("the secret URI is not a valid secret URI")),
		_ => Err(invalid_params(format!(
			"the secret URI does not give the public key 0x{} under sr25519, ed25519 or ecdsa",
			hex::encode(public)
		))),
	}
}

/// A key type as Substrate reads it: exactly four bytes (here also ASCII, as every key type
/// Substrate names is).
fn key_type(text: String) -> Result<KeyTypeId, ErrorObjectOwned> {
	let bytes: [u8; 4] =
		text.as_bytes().try_into().ok().filter(|bytes: &[u8; 4]| bytes.is_ascii()).ok_or_else(
			|| {
				ErrorObjectOwned::owned(
					statement_rpc::error::KEYSTORE,
					"Invalid key type ID format (should be of length four)",
					None::<()>,
				)
			},
		)?;
	Ok(KeyTypeId(bytes))
}

fn param<T: serde::de::DeserializeOwned>(
	params: &Params,
	position: usize,
	what: &str,
) -> Result<T, ErrorObjectOwned> {
	let mut sequence = params.sequence();
	for _ in 0..position {
		sequence
			.next::<serde_json::Value>()
			.map_err(|_| invalid_params(format!("missing {what}")))?;
	}
	sequence.next::<T>().map_err(|err| {
		let detail = err.data().map_or_else(|| err.message().to_string(), |data| data.to_string());
		invalid_params(format!("bad {what}: {detail}"))
	})
}
