//! Two real `statement-node` processes gossiping over loopback: peers found through
//! `--bootnodes`, statements from one served by the other, and the `system_*` peer methods.

mod common;

use common::Node;
use jsonrpsee::{core::client::ClientT, http_client::HttpClientBuilder, rpc_params};
use serde_json::{json, Value};
use sp_core::{sr25519, Pair};
use statement_primitives::{Statement, Topic};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// zombienet's key for a node named `alice`, and the PeerId it gives.
const ALICE_KEY: &str = "2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90";
const ALICE_PEER: &str = "12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm";

async fn call(node: &Node, method: &str) -> Value {
	let client = HttpClientBuilder::default().build(node.http_url()).unwrap();
	client.request(method, rpc_params![]).await.unwrap()
}

#[tokio::test]
async fn a_statement_submitted_to_one_node_is_served_by_its_peer() {
	let alice = common::start(&["--dev", "--no-prometheus", "--node-key", ALICE_KEY]);
	assert_eq!(call(&alice, "system_localPeerId").await, json!(ALICE_PEER));
	let listen = call(&alice, "system_localListenAddresses").await;
	let address = listen[0].as_str().unwrap().to_string();
	assert!(
		address.starts_with("/ip4/127.0.0.1/tcp/") && address.ends_with(ALICE_PEER),
		"{listen}"
	);
	let bob = common::start(&["--dev", "--no-prometheus", "--bootnodes", &address]);

	let deadline = Instant::now() + Duration::from_secs(20);
	while call(&bob, "system_health").await["peers"] != json!(1) {
		assert!(Instant::now() < deadline, "bob never connected to alice");
		tokio::time::sleep(Duration::from_millis(50)).await;
	}
	let peers = call(&bob, "system_peers").await;
	assert_eq!(peers[0]["peerId"], json!(ALICE_PEER), "{peers}");
	assert_eq!(peers[0]["roles"], json!("FULL"), "{peers}");
	// No blocks but genesis: every peer's best block is the genesis block.
	assert_eq!(peers[0]["bestHash"], call(&bob, "chain_getBlockHash").await, "{peers}");
	assert_eq!(call(&bob, "system_health").await["shouldHavePeers"], json!(true));
	assert_eq!(call(&alice, "system_health").await["shouldHavePeers"], json!(false));

	let topic = Topic::from_name("gossip");
	let mut statement = Statement::new();
	let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
	statement.set_expiry_from_parts((now + 3600) as u32, 0);
	statement.set_topic(0, topic);
	statement.set_plain_data(b"from alice".to_vec());
	statement.sign_sr25519_private(&sr25519::Pair::from_string("//Alice", None).unwrap());
	let alice_rpc = HttpClientBuilder::default().build(alice.http_url()).unwrap();
	let encoded = format!("0x{}", hex::encode(codec::Encode::encode(&statement)));
	let result: Value = alice_rpc.request("statement_submit", rpc_params![encoded]).await.unwrap();
	assert_eq!(result, json!({"status": "new"}));

	let bob_rpc = HttpClientBuilder::default().build(bob.http_url()).unwrap();
	let topics = json!([format!("0x{}", hex::encode(topic.0))]);
	let expected = json!([format!("0x{}", hex::encode(b"from alice"))]);
	let deadline = Instant::now() + Duration::from_secs(5);
	loop {
		let found: Value =
			bob_rpc.request("statement_broadcasts", rpc_params![topics.clone()]).await.unwrap();
		if found == expected {
			break;
		}
		assert!(Instant::now() < deadline, "bob never served alice's statement: {found}");
		tokio::time::sleep(Duration::from_millis(20)).await;
	}
}

#[tokio::test]
async fn a_light_node_is_reported_light_by_its_peer() {
	let alice = common::start(&["--dev", "--no-prometheus", "--node-key", ALICE_KEY]);
	let address =
		call(&alice, "system_localListenAddresses").await[0].as_str().unwrap().to_string();
	let light = common::start(&[
		"--dev",
		"--no-prometheus",
		"--bootnodes",
		&address,
		"--statement-topics",
		"gossip",
	]);
	let deadline = Instant::now() + Duration::from_secs(20);
	while call(&alice, "system_health").await["peers"] != json!(1) {
		assert!(Instant::now() < deadline, "the light node never connected to alice");
		tokio::time::sleep(Duration::from_millis(50)).await;
	}
	let peers = call(&alice, "system_peers").await;
	assert_eq!(peers[0]["roles"], json!("LIGHT"), "{peers}");
	assert_eq!(peers[0]["peerId"], call(&light, "system_localPeerId").await, "{peers}");
}
