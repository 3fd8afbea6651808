//! The legacy storage reads, `state_getStorage`, `state_getStorageHash` and
//! `state_getStorageSize` (each also under its `...At` alias), answered from the genesis storage
//! in the chain spec (`genesis.raw.top`): the node has no other block, and so no other state.
//!
//! Clients built on polkadot-api read `:code`'s hash this way when a node does not offer
//! `chainHead_v1`, and retry every 250 ms for as long as the method is missing. A key the
//! genesis storage does not hold is answered `null`, as Substrate answers it; `:code` is such a
//! key, since the node runs no runtime.

use super::{chain::ChainInfo, runtime::ensure_genesis};
use jsonrpsee::{
	core::RegisterMethodError,
	types::{ErrorObjectOwned, Params},
	RpcModule,
};
use sp_core::{Bytes, H256};
use statement_rpc::invalid_params;

/// The key and block parameters: `(key, at)`, `at` missing or `null` for the best block.
fn key_and_at(params: &Params) -> Result<(Vec<u8>, Option<H256>), ErrorObjectOwned> {
	let mut sequence = params.sequence();
	let key: Bytes = sequence.next().map_err(|_| {
		invalid_params("bad storage key: expected 0x-hex, such as \"0x3a636f6465\"")
	})?;
	let at: Option<H256> = sequence.optional_next().map_err(|_| {
		invalid_params("bad block hash: expected 0x-hex of 32 bytes, or null for the best block")
	})?;
	Ok((key.0, at))
}

/// The genesis storage's value at the key `params` name, after checking the block.
fn value<'a>(info: &'a ChainInfo, params: &Params) -> Result<Option<&'a [u8]>, ErrorObjectOwned> {
	let (key, at) = key_and_at(params)?;
	ensure_genesis(info, at)?;
	Ok(info.storage.get(&key).map(Vec::as_slice))
}

/// Register the three reads and their `...At` aliases.
pub fn register(module: &mut RpcModule<ChainInfo>) -> Result<(), RegisterMethodError> {
	module.register_method("state_getStorage", |params, info, _| {
		Ok::<_, ErrorObjectOwned>(value(info, &params)?.map(|value| Bytes(value.to_vec())))
	})?;
	module.register_method("state_getStorageHash", |params, info, _| {
		Ok::<_, ErrorObjectOwned>(
			value(info, &params)?.map(|value| H256(sp_crypto_hashing::blake2_256(value))),
		)
	})?;
	module.register_method("state_getStorageSize", |params, info, _| {
		Ok::<_, ErrorObjectOwned>(value(info, &params)?.map(|value| value.len() as u64))
	})?;
	for (alias, method) in [
		("state_getStorageAt", "state_getStorage"),
		("state_getStorageHashAt", "state_getStorageHash"),
		("state_getStorageSizeAt", "state_getStorageSize"),
	] {
		module.register_alias(alias, method)?;
	}
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::chain_spec::ChainSpec;
	use serde_json::{json, Value};

	async fn call(module: &RpcModule<ChainInfo>, method: &str, params: Value) -> Value {
		let request = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
		let (response, _) = module.raw_json_request(&request.to_string(), 1).await.unwrap();
		serde_json::from_str(response.get()).unwrap()
	}

	#[tokio::test]
	async fn genesis_storage_is_read_back_and_a_missing_key_is_null() {
		let spec = ChainSpec::load("dev").unwrap();
		let (key, value) = spec.genesis.raw.top.iter().next().unwrap();
		let bytes = hex::decode(value.trim_start_matches("0x")).unwrap();
		let info = ChainInfo::from_spec(&spec).unwrap();
		let genesis = info.genesis_hex();
		let module = info.into_module().unwrap();

		for at in [json!([key]), json!([key, null]), json!([key, genesis])] {
			let answer = call(&module, "state_getStorage", at.clone()).await;
			assert_eq!(answer["result"], json!(value), "{at}: {answer}");
			let answer = call(&module, "state_getStorageAt", at.clone()).await;
			assert_eq!(answer["result"], json!(value), "{at}: {answer}");
		}
		let hash = format!("{:?}", H256(sp_crypto_hashing::blake2_256(&bytes)));
		let answer = call(&module, "state_getStorageHash", json!([key])).await;
		assert_eq!(answer["result"], json!(hash), "{answer}");
		let answer = call(&module, "state_getStorageSize", json!([key, genesis])).await;
		assert_eq!(answer["result"], json!(bytes.len()), "{answer}");

		// `:code`, which polkadot-api asks for: the node runs no runtime.
		for method in ["state_getStorage", "state_getStorageHash", "state_getStorageSize"] {
			let answer = call(&module, method, json!(["0x3a636f6465", genesis])).await;
			assert_eq!(answer["result"], Value::Null, "{method}: {answer}");
		}
	}

	#[tokio::test]
	async fn other_blocks_and_bad_keys_get_substrates_errors() {
		let module =
			ChainInfo::from_spec(&ChainSpec::load("dev").unwrap()).unwrap().into_module().unwrap();
		let other = format!("{:?}", H256::repeat_byte(7));
		let answer = call(&module, "state_getStorage", json!(["0x3a636f6465", other])).await;
		assert_eq!(answer["error"]["code"], json!(4003), "{answer}");
		assert!(answer["error"]["message"].as_str().unwrap().contains("UnknownBlock"), "{answer}");
		for bad in [json!([]), json!(["0xzz"]), json!([7]), json!(["0x00", "0x01"])] {
			let answer = call(&module, "state_getStorageHash", bad.clone()).await;
			assert_eq!(answer["error"]["code"], json!(-32602), "{bad}: {answer}");
		}
	}
}
