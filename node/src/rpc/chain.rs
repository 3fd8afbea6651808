//! What standard clients (polkadot-js, substrate-interface, subxt) ask a Substrate node for
//! when they connect: the genesis block (`chain_*`), the chain spec's `system_properties` and,
//! through [`runtime`](super::runtime), a runtime version and metadata, and through
//! [`storage`](super::storage), the genesis storage.
//!
//! The node has no blocks beyond genesis, so genesis is also the best and the finalized block:
//! every `chain_*` method answers with the genesis header built from the chain spec
//! ([`ChainSpec::genesis_header`]), whose hash is the one the gossip protocol is named after.
//! Any other block is unknown, and answered as Substrate answers unknown blocks: `null`. The
//! head subscriptions send the genesis header once and then nothing, as a node whose chain
//! never grows would.

use crate::{
	chain_spec::{ChainSpec, GenesisHeader},
	error::Error,
};
use jsonrpsee::{
	core::{RegisterMethodError, SubscriptionResult},
	types::{ErrorObjectOwned, Params},
	PendingSubscriptionSink, RpcModule,
};
use serde::Serialize;
use serde_json::{Map, Value};
use sp_core::H256;
use statement_rpc::invalid_params;
use std::{collections::BTreeMap, sync::Arc};

/// What the `chain_*`, `state_*` and `system_properties` methods describe: the genesis block
/// and the chain spec's properties.
#[derive(Clone, Debug)]
pub struct ChainInfo {
	/// The genesis header; the hash of its SCALE encoding is [`ChainInfo::genesis_hash`].
	pub header: GenesisHeader,
	/// Its hash.
	pub genesis_hash: H256,
	/// `system_properties`.
	pub properties: Map<String, Value>,
	/// The genesis storage (`genesis.raw.top`), which `state_getStorage` answers from.
	pub storage: Arc<BTreeMap<Vec<u8>, Vec<u8>>>,
}

/// A block as `chain_getBlock` returns it: the header and no extrinsics.
#[derive(Serialize)]
struct SignedBlock<'a> {
	block: Block<'a>,
	justifications: Option<()>,
}

#[derive(Serialize)]
struct Block<'a> {
	header: &'a GenesisHeader,
	extrinsics: [(); 0],
}

impl ChainInfo {
	/// The genesis hash as `0x`-hex, as JSON-RPC answers carry it.
	pub fn genesis_hex(&self) -> String {
		format!("{:?}", self.genesis_hash)
	}

	/// The genesis block and properties of `spec`.
	pub fn from_spec(spec: &ChainSpec) -> Result<ChainInfo, Error> {
		let header = spec.genesis_header()?;
		Ok(ChainInfo {
			genesis_hash: header.hash(),
			header,
			properties: spec.properties.clone().unwrap_or_default(),
			storage: Arc::new(spec.genesis_storage()?),
		})
	}

	/// Whether `at` (a block hash parameter, `None` for "best") names the genesis block.
	pub fn is_genesis(&self, at: Option<H256>) -> bool {
		at.is_none_or(|hash| hash == self.genesis_hash)
	}

	/// The hash of block `number`: genesis for 0 (and for "best", `null`), `null` for others.
	fn block_hash(&self, number: &Value) -> Result<Option<H256>, ErrorObjectOwned> {
		match block_number(number)? {
			None | Some(0) => Ok(Some(self.genesis_hash)),
			Some(_) => Ok(None),
		}
	}
}

/// A block number parameter as Substrate reads it: `null`, a number, or `0x`-hex. `None` for
/// `null`, which asks for the best block.
fn block_number(value: &Value) -> Result<Option<u32>, ErrorObjectOwned> {
	let number = match value {
		Value::Null => return Ok(None),
		Value::Number(number) => number.as_u64().map(u128::from),
		Value::String(text) => {
			text.strip_prefix("0x").and_then(|digits| u128::from_str_radix(digits, 16).ok())
		}
		_ => None,
	};
	let Some(number) = number else {
		return Err(invalid_params(format!(
			"bad block number {value}: expected a number or 0x-hex, such as 0 or \"0x0\""
		)));
	};
	u32::try_from(number).map(Some).map_err(|_| {
		invalid_params(format!(
			"block number {number} is larger than u32::MAX, the largest there is"
		))
	})
}

/// The first parameter, `Value::Null` if there is none.
fn first_param(params: &Params) -> Result<Value, ErrorObjectOwned> {
	let mut sequence = params.sequence();
	sequence
		.optional_next::<Value>()
		.map(Option::unwrap_or_default)
		.map_err(|err| invalid_params(format!("bad parameter: {}", err.message())))
}

/// A block hash parameter: `None` when missing or `null` (the best block).
pub fn block_hash_param(params: &Params) -> Result<Option<H256>, ErrorObjectOwned> {
	let mut sequence = params.sequence();
	sequence.optional_next::<H256>().map_err(|_| {
		invalid_params("bad block hash: expected 0x-hex of 32 bytes, or null for the best block")
	})
}

/// Register the `chain_*` methods and `system_properties`.
pub fn register(module: &mut RpcModule<ChainInfo>) -> Result<(), RegisterMethodError> {
	module.register_method("system_properties", |_, info, _| {
		Ok::<_, ErrorObjectOwned>(info.properties.clone())
	})?;
	module.register_method("chain_getBlockHash", |params, info, _| {
		// Substrate takes one number or a list of them, and answers in the same shape.
		match first_param(&params)? {
			Value::Array(numbers) => numbers
				.iter()
				.map(|number| info.block_hash(number))
				.collect::<Result<Vec<_>, _>>()
				.map(|hashes| serde_json::json!(hashes)),
			number => info.block_hash(&number).map(|hash| serde_json::json!(hash)),
		}
	})?;
	module.register_alias("chain_getHead", "chain_getBlockHash")?;
	module.register_method("chain_getFinalizedHead", |_, info, _| {
		Ok::<_, ErrorObjectOwned>(info.genesis_hash)
	})?;
	module.register_alias("chain_getFinalisedHead", "chain_getFinalizedHead")?;
	module.register_method("chain_getHeader", |params, info, _| {
		let at = block_hash_param(&params)?;
		Ok::<_, ErrorObjectOwned>(info.is_genesis(at).then(|| info.header.clone()))
	})?;
	module.register_method("chain_getBlock", |params, info, _| {
		let at = block_hash_param(&params)?;
		let block = info.is_genesis(at).then_some(SignedBlock {
			block: Block { header: &info.header, extrinsics: [] },
			justifications: None,
		});
		Ok::<_, ErrorObjectOwned>(serde_json::json!(block))
	})?;
	for (subscribe, notification, unsubscribe, aliases) in [
		(
			"chain_subscribeNewHeads",
			"chain_newHead",
			"chain_unsubscribeNewHeads",
			&[
				("chain_subscribeNewHead", "chain_unsubscribeNewHead"),
				("subscribe_newHead", "unsubscribe_newHead"),
			][..],
		),
		(
			"chain_subscribeFinalizedHeads",
			"chain_finalizedHead",
			"chain_unsubscribeFinalizedHeads",
			&[("chain_subscribeFinalisedHeads", "chain_unsubscribeFinalisedHeads")][..],
		),
		("chain_subscribeAllHeads", "chain_allHead", "chain_unsubscribeAllHeads", &[][..]),
	] {
		module.register_subscription(
			subscribe,
			notification,
			unsubscribe,
			|_, pending, info, _| async move { send_once(pending, &info.header).await },
		)?;
		for (alias, unsubscribe_alias) in aliases {
			module.register_alias(alias, subscribe)?;
			module.register_alias(unsubscribe_alias, unsubscribe)?;
		}
	}
	Ok(())
}

/// Accept the subscription, send `item` once, and keep the subscription open, silent, until
/// the client leaves: nothing here ever changes.
pub async fn send_once<T: Serialize>(
	pending: PendingSubscriptionSink,
	item: &T,
) -> SubscriptionResult {
	let sink = pending.accept().await?;
	sink.send(serde_json::value::to_raw_value(item)?).await?;
	sink.closed().await;
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn block_numbers_read_as_substrate_reads_them() {
		assert_eq!(block_number(&Value::Null).unwrap(), None);
		assert_eq!(block_number(&serde_json::json!(0)).unwrap(), Some(0));
		assert_eq!(block_number(&serde_json::json!("0x1f")).unwrap(), Some(31));
		assert_eq!(block_number(&serde_json::json!(u32::MAX)).unwrap(), Some(u32::MAX));
		for bad in [serde_json::json!(-1), serde_json::json!(1.5), serde_json::json!("12")] {
			let err = block_number(&bad).unwrap_err();
			assert!(err.message().contains("bad block number"), "{bad}: {}", err.message());
		}
		let err = block_number(&serde_json::json!(1u64 << 32)).unwrap_err();
		assert!(err.message().contains("larger than u32::MAX"), "{}", err.message());
	}

	#[test]
	fn only_block_zero_and_best_have_a_hash() {
		let info = ChainInfo::from_spec(&ChainSpec::load("dev").unwrap()).unwrap();
		let genesis = Some(info.genesis_hash);
		assert_eq!(info.block_hash(&Value::Null).unwrap(), genesis);
		assert_eq!(info.block_hash(&serde_json::json!(0)).unwrap(), genesis);
		assert_eq!(info.block_hash(&serde_json::json!("0x0")).unwrap(), genesis);
		assert_eq!(info.block_hash(&serde_json::json!(1)).unwrap(), None);
		assert!(info.is_genesis(None) && info.is_genesis(genesis));
		assert!(!info.is_genesis(Some(H256::repeat_byte(7))));
	}
}
