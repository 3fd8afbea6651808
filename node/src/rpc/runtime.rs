//! The runtime this node describes to clients: `state_getRuntimeVersion`, its subscription, and
//! `state_getMetadata`.
//!
//! The node runs no runtime: it has no pallets, no calls and no storage a client could query.
//! Clients still refuse to start without a version and decodable metadata, so the node
//! describes exactly that: a runtime named `statement-node` with no runtime APIs (so clients
//! fetch metadata with `state_getMetadata` rather than `state_call`), and V14 metadata with no
//! pallets. V14, because substrate-interface 1.8 (py-scale-codec) decodes nothing newer, while
//! polkadot-js decodes V14 to V16. The metadata is encoded by `frame-metadata` with a
//! `scale-info` registry, as a FRAME runtime's is.
//!
//! The registry holds what clients look for even in a runtime without pallets, so that they
//! connect without warnings:
//! - the extrinsic type, `sp_runtime`'s `UncheckedExtrinsic`, whose type parameters give
//!   clients the address, call and signature types; the call type is an empty `RuntimeCall`;
//! - `frame_system::EventRecord`, whose first type parameter is how clients find the event
//!   type (an empty `RuntimeEvent`); it is described here, with FRAME's shape, because the
//!   node does not link FRAME;
//! - an empty `RuntimeError`, and the primitives `u16`, `u32` and `u64`, with which
//!   polkadot-js types the well-known storage keys (`:heappages`, `:extrinsic_index`, ...).

use super::chain::{block_hash_param, send_once, ChainInfo};
use codec::Encode;
use frame_metadata::{
	v14::{ExtrinsicMetadata, RuntimeMetadataV14},
	RuntimeMetadataPrefixed,
};
use jsonrpsee::{
	core::RegisterMethodError,
	types::{ErrorObjectOwned, Params},
	RpcModule,
};
use scale_info::{
	build::{Fields, Variants},
	meta_type, IntoPortable, Path, Registry, Type, TypeInfo, TypeParameter,
};
use sp_core::{Bytes, H256};
use sp_runtime::{generic::UncheckedExtrinsic, AccountId32, MultiAddress, MultiSignature};
use sp_version::RuntimeVersion;
use std::borrow::Cow;

/// `specName` and `implName` of the runtime the node describes.
pub const SPEC_NAME: &str = "statement-node";

/// `specVersion`: raise it whenever the metadata changes, since clients cache metadata by
/// genesis hash and spec version.
pub const SPEC_VERSION: u32 = 1;

/// The runtime type; a FRAME runtime's is a unit struct too.
#[derive(TypeInfo)]
#[allow(dead_code)]
struct Runtime;

/// The calls the runtime dispatches: none.
#[derive(TypeInfo)]
#[allow(dead_code)]
enum RuntimeCall {}

/// The events the runtime deposits: none.
#[derive(TypeInfo)]
#[allow(dead_code)]
enum RuntimeEvent {}

/// The errors the runtime returns: none.
#[derive(TypeInfo)]
#[allow(dead_code)]
enum RuntimeError {}

/// `frame_system::EventRecord<RuntimeEvent, H256>`'s shape: how an event would be recorded.
struct EventRecord;

impl TypeInfo for EventRecord {
	type Identity = Self;

	fn type_info() -> Type {
		Type::builder()
			.path(Path::new("EventRecord", "frame_system"))
			.type_params([
				TypeParameter::new("E", Some(meta_type::<RuntimeEvent>())),
				TypeParameter::new("T", Some(meta_type::<H256>())),
			])
			.composite(
				Fields::named()
					.field(|f| f.ty::<Phase>().name("phase").type_name("Phase"))
					.field(|f| f.ty::<RuntimeEvent>().name("event").type_name("E"))
					.field(|f| f.ty::<Vec<H256>>().name("topics").type_name("Vec<T>")),
			)
	}
}

/// `frame_system::Phase`'s shape: when in a block an event happened.
struct Phase;

impl TypeInfo for Phase {
	type Identity = Self;

	fn type_info() -> Type {
		Type::builder().path(Path::new("Phase", "frame_system")).variant(
			Variants::new()
				.variant("ApplyExtrinsic", |v| {
					v.index(0).fields(Fields::unnamed().field(|f| f.ty::<u32>().type_name("u32")))
				})
				.variant("Finalization", |v| v.index(1))
				.variant("Initialization", |v| v.index(2)),
		)
	}
}

/// An extrinsic as a Substrate runtime with Substrate's default account types would take it,
/// were there any call to make.
type Extrinsic = UncheckedExtrinsic<MultiAddress<AccountId32, ()>, RuntimeCall, MultiSignature, ()>;

/// What `state_getRuntimeVersion` answers.
pub fn version() -> RuntimeVersion {
	RuntimeVersion {
		spec_name: Cow::Borrowed(SPEC_NAME),
		impl_name: Cow::Borrowed(SPEC_NAME),
		authoring_version: 0,
		spec_version: SPEC_VERSION,
		impl_version: 0,
		apis: Cow::Borrowed(&[]),
		transaction_version: 1,
		system_version: 1,
	}
}

/// The SCALE encoding of the runtime's metadata (`RuntimeMetadataPrefixed`, V14), as
/// `state_getMetadata` answers it.
pub fn metadata() -> Vec<u8> {
	let mut registry = Registry::new();
	// Registered first, as FRAME does, so the extrinsic's types keep the lowest ids.
	let extrinsic = ExtrinsicMetadata {
		ty: meta_type::<Extrinsic>(),
		version: 4,
		signed_extensions: Vec::new(),
	}
	.into_portable(&mut registry);
	let ty = registry.register_type(&meta_type::<Runtime>());
	registry.register_type(&meta_type::<EventRecord>());
	registry.register_type(&meta_type::<RuntimeError>());
	registry.register_types([meta_type::<u16>(), meta_type::<u32>(), meta_type::<u64>()]);
	let metadata =
		RuntimeMetadataV14 { types: registry.into(), pallets: Vec::new(), extrinsic, ty };
	RuntimeMetadataPrefixed::from(metadata).encode()
}

/// `Ok` if the first parameter names the only block there is, else Substrate's unknown-block
/// error.
fn check_at(info: &ChainInfo, params: &Params) -> Result<(), ErrorObjectOwned> {
	ensure_genesis(info, block_hash_param(params)?)
}

/// `Ok` if `at` (`None`: the best block) names the only block there is, else Substrate's
/// unknown-block error.
pub fn ensure_genesis(info: &ChainInfo, at: Option<H256>) -> Result<(), ErrorObjectOwned> {
	if info.is_genesis(at) {
		return Ok(());
	}
	let hash = at.unwrap_or_default();
	Err(ErrorObjectOwned::owned(
		statement_rpc::error::UNKNOWN_BLOCK,
		format!("Client error: UnknownBlock: header not found: {hash:?}; only genesis exists"),
		None::<()>,
	))
}

/// Register `state_getRuntimeVersion`, `state_subscribeRuntimeVersion` and `state_getMetadata`
/// (with Substrate's `chain_*` aliases).
pub fn register(module: &mut RpcModule<ChainInfo>) -> Result<(), RegisterMethodError> {
	let metadata = Bytes(metadata());
	module.register_method("state_getMetadata", move |params, info, _| {
		check_at(info, &params)?;
		Ok::<_, ErrorObjectOwned>(metadata.clone())
	})?;
	module.register_method("state_getRuntimeVersion", |params, info, _| {
		check_at(info, &params)?;
		Ok::<_, ErrorObjectOwned>(version())
	})?;
	module.register_alias("chain_getRuntimeVersion", "state_getRuntimeVersion")?;
	module.register_subscription(
		"state_subscribeRuntimeVersion",
		"state_runtimeVersion",
		"state_unsubscribeRuntimeVersion",
		|_, pending, _, _| async move { send_once(pending, &version()).await },
	)?;
	module.register_alias("chain_subscribeRuntimeVersion", "state_subscribeRuntimeVersion")?;
	module.register_alias("chain_unsubscribeRuntimeVersion", "state_unsubscribeRuntimeVersion")?;
	Ok(())
}

#[cfg(test)]
mod tests {
	use super::*;
	use codec::Decode;
	use frame_metadata::RuntimeMetadata;

	#[test]
	fn metadata_is_v14_with_no_pallets_and_names_the_outer_types() {
		let encoded = metadata();
		assert_eq!(&encoded[..4], b"meta");
		let RuntimeMetadataPrefixed(_, RuntimeMetadata::V14(decoded)) =
			RuntimeMetadataPrefixed::decode(&mut &encoded[..]).unwrap()
		else {
			panic!("not V14")
		};
		assert!(decoded.pallets.is_empty());
		let names: Vec<String> = decoded
			.types
			.types
			.iter()
			.filter_map(|ty| ty.ty.path.segments.last().cloned())
			.collect();
		for name in
			["UncheckedExtrinsic", "RuntimeCall", "EventRecord", "RuntimeEvent", "RuntimeError"]
		{
			assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
		}
	}

	#[test]
	fn the_version_names_no_runtime_api() {
		let version = serde_json::to_value(version()).unwrap();
		assert_eq!(version["specName"], SPEC_NAME);
		assert_eq!(version["apis"], serde_json::json!([]));
		assert_eq!(version["stateVersion"], 1);
	}
}
