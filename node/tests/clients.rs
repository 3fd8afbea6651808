//! What standard clients (polkadot-js, substrate-interface) ask for when they connect, asked of
//! the real `statement-node` binary over HTTP and WebSocket.

mod common;

use codec::{Decode, Encode};
use common::Node;
use frame_metadata::{RuntimeMetadata, RuntimeMetadataPrefixed};
use jsonrpsee::{
	core::client::{ClientT, SubscriptionClientT},
	http_client::{HttpClient, HttpClientBuilder},
	rpc_params,
	ws_client::WsClientBuilder,
};
use serde_json::{json, Value};
use sp_runtime::{
	generic::Header,
	traits::{BlakeTwo256, Hash as _},
	StateVersion,
};
use std::{path::Path, process::Command, time::Duration};

const ZERO_HASH: &str = "0x0000000000000000000000000000000000000000000000000000000000000000";

/// Start the node and return it with the genesis hash its gossip protocol is named after, as
/// logged at start ("Statement gossip on /<genesis hex>/statement/1").
fn start_reading_protocol(args: &[&str]) -> (Node, String) {
	let args: Vec<&str> = args.iter().copied().chain(["--no-prometheus"]).collect();
	let node = common::start(&args);
	let logs = node.startup_log().to_vec();
	let protocol = logs
		.iter()
		.find_map(|line| line.split("Statement gossip on /").nth(1))
		.unwrap_or_else(|| panic!("no protocol name logged: {logs:#?}"));
	let genesis = protocol.split('/').next().unwrap().to_string();
	assert_eq!(genesis.len(), 64, "{protocol}");
	(node, format!("0x{genesis}"))
}

fn http(node: &Node) -> HttpClient {
	HttpClientBuilder::default().build(node.http_url()).unwrap()
}

/// A chain spec file: the built-in `chain` with `properties` set.
fn spec_file(dir: &Path, chain: &str, properties: Value) -> String {
	let output = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["build-spec", "--chain", chain])
		.output()
		.unwrap();
	assert!(output.status.success());
	let mut spec: Value = serde_json::from_slice(&output.stdout).unwrap();
	spec["properties"] = properties;
	let path = dir.join(format!("{chain}.json"));
	std::fs::write(&path, serde_json::to_vec(&spec).unwrap()).unwrap();
	path.to_str().unwrap().to_string()
}

/// The state root of a raw spec's genesis storage, computed here from the spec's JSON.
fn state_root_of(spec_json: &Value) -> String {
	let bytes = |text: &str| ::hex::decode(text.trim_start_matches("0x")).unwrap();
	let top: Vec<(Vec<u8>, Vec<u8>)> = spec_json["genesis"]["raw"]["top"]
		.as_object()
		.unwrap()
		.iter()
		.map(|(key, value)| (bytes(key), bytes(value.as_str().unwrap())))
		.collect();
	assert!(!top.is_empty());
	format!("{:?}", BlakeTwo256::trie_root(top, StateVersion::V1))
}

#[tokio::test]
async fn block_zero_is_the_genesis_the_gossip_protocol_is_named_after() {
	let (node, genesis) = start_reading_protocol(&["--dev"]);
	let client = http(&node);
	for params in [rpc_params![0], rpc_params![], rpc_params![None::<u32>], rpc_params!["0x0"]] {
		let hash: Value = client.request("chain_getBlockHash", params).await.unwrap();
		assert_eq!(hash, json!(genesis));
	}
	for method in ["chain_getHead", "chain_getFinalizedHead", "chain_getFinalisedHead"] {
		let hash: Value = client.request(method, rpc_params![]).await.unwrap();
		assert_eq!(hash, json!(genesis), "{method}");
	}
	// There is no other block: Substrate answers unknown blocks with null.
	let hash: Value = client.request("chain_getBlockHash", rpc_params![1]).await.unwrap();
	assert_eq!(hash, Value::Null);
	let hashes: Value = client.request("chain_getBlockHash", rpc_params![[0, 7]]).await.unwrap();
	assert_eq!(hashes, json!([genesis, null]));
	let err = client.request::<Value, _>("chain_getBlockHash", rpc_params![-1]).await.unwrap_err();
	assert!(err.to_string().contains("bad block number"), "{err}");
}

#[tokio::test]
async fn the_genesis_header_hashes_to_the_genesis_hash_and_holds_the_spec_state_root() {
	let (node, genesis) = start_reading_protocol(&["--dev"]);
	let client = http(&node);
	let spec = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["build-spec", "--chain", "dev"])
		.output()
		.unwrap();
	let spec: Value = serde_json::from_slice(&spec.stdout).unwrap();
	for params in [rpc_params![], rpc_params![None::<String>], rpc_params![genesis.clone()]] {
		let json: Value = client.request("chain_getHeader", params).await.unwrap();
		assert_eq!(json["parentHash"], ZERO_HASH);
		assert_eq!(json["number"], "0x0");
		assert_eq!(json["digest"], json!({ "logs": [] }));
		assert_eq!(json["stateRoot"], state_root_of(&spec));
		let empty_trie = BlakeTwo256::trie_root(Vec::new(), StateVersion::V1);
		assert_eq!(json["extrinsicsRoot"], format!("{empty_trie:?}"));
		let header: Header<u32, BlakeTwo256> = serde_json::from_value(json).unwrap();
		let hash = sp_crypto_hashing::blake2_256(&header.encode());
		assert_eq!(format!("0x{}", ::hex::encode(hash)), genesis);
	}
	let unknown: Value = client.request("chain_getHeader", rpc_params![ZERO_HASH]).await.unwrap();
	assert_eq!(unknown, Value::Null);
	let block: Value = client.request("chain_getBlock", rpc_params![]).await.unwrap();
	assert_eq!(block["block"]["extrinsics"], json!([]));
	assert_eq!(block["block"]["header"]["stateRoot"], state_root_of(&spec));
	let err = client.request::<Value, _>("chain_getHeader", rpc_params!["0x12"]).await.unwrap_err();
	assert!(err.to_string().contains("bad block hash"), "{err}");
}

#[tokio::test]
async fn system_properties_come_from_the_chain_spec() {
	let dir = tempfile::tempdir().unwrap();
	let properties = json!({ "tokenSymbol": "STMT", "tokenDecimals": 12, "ss58Format": 0 });
	let custom = spec_file(dir.path(), "local", properties.clone());
	let (node, custom_genesis) = start_reading_protocol(&["--chain", &custom, "--tmp"]);
	let answer: Value = http(&node).request("system_properties", rpc_params![]).await.unwrap();
	assert_eq!(answer, properties);
	drop(node);

	// No properties: `{}`, as Substrate answers. Properties do not change the genesis.
	let bare = spec_file(dir.path(), "local", Value::Null);
	let (node, bare_genesis) = start_reading_protocol(&["--chain", &bare, "--tmp"]);
	let answer: Value = http(&node).request("system_properties", rpc_params![]).await.unwrap();
	assert_eq!(answer, json!({}));
	assert_eq!(bare_genesis, custom_genesis);
	drop(node);

	let node = common::start(&["--dev", "--no-prometheus"]);
	let answer: Value = http(&node).request("system_properties", rpc_params![]).await.unwrap();
	assert_eq!(answer, json!({ "ss58Format": 42 }));
}

#[tokio::test]
async fn the_runtime_version_describes_this_node_at_genesis_only() {
	let (node, genesis) = start_reading_protocol(&["--dev"]);
	let client = http(&node);
	for (method, params) in [
		("state_getRuntimeVersion", rpc_params![]),
		("state_getRuntimeVersion", rpc_params![genesis.clone()]),
		("chain_getRuntimeVersion", rpc_params![]),
	] {
		let version: Value = client.request(method, params).await.unwrap();
		assert_eq!(version["specName"], "statement-node", "{method}");
		assert_eq!(version["implName"], "statement-node");
		assert!(version["specVersion"].as_u64().unwrap() >= 1);
		assert!(version["implVersion"].is_u64() && version["authoringVersion"].is_u64());
		assert!(version["transactionVersion"].is_u64());
		assert_eq!(version["apis"], json!([]));
		assert_eq!(version["stateVersion"], 1);
	}
	let err = client
		.request::<Value, _>("state_getRuntimeVersion", rpc_params![ZERO_HASH])
		.await
		.unwrap_err();
	assert!(err.to_string().contains("UnknownBlock"), "{err}");
}

#[tokio::test]
async fn the_metadata_decodes_with_frame_metadata_and_declares_no_pallets() {
	let (node, genesis) = start_reading_protocol(&["--dev"]);
	let client = http(&node);
	for params in [rpc_params![], rpc_params![genesis]] {
		let hex: String = client.request("state_getMetadata", params).await.unwrap();
		let bytes = ::hex::decode(hex.trim_start_matches("0x")).unwrap();
		let mut input = &bytes[..];
		let prefixed = RuntimeMetadataPrefixed::decode(&mut input).unwrap();
		assert!(input.is_empty(), "{} bytes after the metadata", input.len());
		assert_eq!(prefixed.0, frame_metadata::META_RESERVED);
		let RuntimeMetadata::V14(metadata) = prefixed.1 else { panic!("not V14") };
		assert!(metadata.pallets.is_empty());
		let extrinsic = metadata.types.resolve(metadata.extrinsic.ty.id).unwrap();
		assert_eq!(extrinsic.path.segments.last().unwrap(), "UncheckedExtrinsic");
	}
	let err =
		client.request::<Value, _>("state_getMetadata", rpc_params![ZERO_HASH]).await.unwrap_err();
	assert!(err.to_string().contains("UnknownBlock"), "{err}");
}

#[tokio::test]
async fn legacy_storage_reads_answer_from_the_genesis_storage_and_null_for_code() {
	let (node, genesis) = start_reading_protocol(&["--dev"]);
	let client = http(&node);
	// //Alice's allowance: `:statement_allowance:` ++ her sr25519 account, two little-endian
	// u32s (100,000 statements, 100 MiB).
	let alice = "d43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d";
	let key = format!("0x{}{alice}", ::hex::encode(b":statement_allowance:"));
	let value = [100_000u32.to_le_bytes(), (100u32 << 20).to_le_bytes()].concat();
	for params in [rpc_params![key.clone()], rpc_params![key.clone(), genesis.clone()]] {
		let read: Option<String> = client.request("state_getStorage", params).await.unwrap();
		assert_eq!(read, Some(format!("0x{}", ::hex::encode(&value))));
	}
	let hash: Option<String> =
		client.request("state_getStorageHash", rpc_params![key.clone()]).await.unwrap();
	let expected = sp_crypto_hashing::blake2_256(&value);
	assert_eq!(hash, Some(format!("0x{}", ::hex::encode(expected))));
	let size: Option<u64> =
		client.request("state_getStorageSizeAt", rpc_params![key.clone()]).await.unwrap();
	assert_eq!(size, Some(8));
	// `:code`, which polkadot-api reads the hash of: there is no runtime.
	let code: Option<String> =
		client.request("state_getStorageHash", rpc_params!["0x3a636f6465", genesis]).await.unwrap();
	assert_eq!(code, None);
	let err = client
		.request::<Value, _>("state_getStorage", rpc_params![key, ZERO_HASH])
		.await
		.unwrap_err();
	assert!(err.to_string().contains("UnknownBlock"), "{err}");
}

#[tokio::test]
async fn head_and_version_subscriptions_send_once_over_websocket_and_then_stay_quiet() {
	let (node, genesis) = start_reading_protocol(&["--dev"]);
	let ws = WsClientBuilder::default().build(node.ws_url()).await.unwrap();
	let header: Value = http(&node).request("chain_getHeader", rpc_params![]).await.unwrap();
	let version: Value =
		http(&node).request("state_getRuntimeVersion", rpc_params![]).await.unwrap();
	for (subscribe, unsubscribe, expected) in [
		("chain_subscribeNewHeads", "chain_unsubscribeNewHeads", &header),
		("chain_subscribeNewHead", "chain_unsubscribeNewHead", &header),
		("chain_subscribeFinalizedHeads", "chain_unsubscribeFinalizedHeads", &header),
		("chain_subscribeAllHeads", "chain_unsubscribeAllHeads", &header),
		("state_subscribeRuntimeVersion", "state_unsubscribeRuntimeVersion", &version),
	] {
		let mut subscription =
			ws.subscribe::<Value, _>(subscribe, rpc_params![], unsubscribe).await.unwrap();
		let first = tokio::time::timeout(Duration::from_secs(5), subscription.next())
			.await
			.unwrap_or_else(|_| panic!("{subscribe} sent nothing"));
		assert_eq!(&first.unwrap().unwrap(), expected, "{subscribe}");
		let second = tokio::time::timeout(Duration::from_millis(500), subscription.next()).await;
		assert!(second.is_err(), "{subscribe} sent a second item: {second:?}");
		subscription.unsubscribe().await.unwrap();
	}
	let hash: Value = ws.request("chain_getBlockHash", rpc_params![0]).await.unwrap();
	assert_eq!(hash, json!(genesis));
}

#[tokio::test]
async fn rpc_methods_lists_what_clients_probe() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let methods: Value = http(&node).request("rpc_methods", rpc_params![]).await.unwrap();
	let methods = methods["methods"].as_array().unwrap();
	for name in [
		"chain_getBlockHash",
		"chain_getHead",
		"chain_getHeader",
		"chain_getBlock",
		"chain_getFinalizedHead",
		"chain_subscribeNewHeads",
		"chain_subscribeFinalizedHeads",
		"state_getRuntimeVersion",
		"state_getMetadata",
		"state_subscribeRuntimeVersion",
		"system_properties",
		"statement_submit",
	] {
		assert!(methods.contains(&json!(name)), "{name} missing from rpc_methods");
	}
}
