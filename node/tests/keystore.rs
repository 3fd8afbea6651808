//! The keystore behind `statement_postedClear`, on the real binary over JSON-RPC: dev keys,
//! keys inserted with `author_insertKey` (kept across restarts), key files in Substrate's
//! layout, and the unsafe-method policy.

mod common;

use statement_test_support::{hex::encode as hex, topic::named as topic};

use common::Node;
use jsonrpsee::{
	core::{client::ClientT, ClientError},
	http_client::{HttpClient, HttpClientBuilder},
	rpc_params,
};
use serde_json::Value;
use sp_core::{ed25519, sr25519, Pair};
use statement_primitives::testing::TestStatement;
use statement_primitives::{Statement, Topic};
use std::{path::Path, process::Command, time::Duration};

fn ed25519_public(suri: &str) -> ed25519::Public {
	ed25519::Pair::from_string(suri, None).unwrap().public()
}

/// A statement on `topic` from `signer` (a dev account, which has an allowance), with `data`
/// encrypted to `dest`.
fn encrypted(signer: &str, topic: Topic, dest: &ed25519::Public, data: &[u8]) -> Statement {
	TestStatement::new()
		.expiring_in(3600, 0)
		.topic(0, topic)
		.encrypted_to(dest, data)
		.signed_sr25519(&sr25519::Pair::from_string(signer, None).unwrap())
}

fn client(node: &Node) -> HttpClient {
	HttpClientBuilder::default().build(node.http_url()).unwrap()
}

async fn submit(http: &HttpClient, statement: &Statement) {
	let result: Value =
		http.request("statement_submit", rpc_params![hex(&statement.encode())]).await.unwrap();
	assert_eq!(result["status"], "new", "{result}");
}

async fn posted_clear(http: &HttpClient, topics: &[Topic], dest: &[u8; 32]) -> Vec<String> {
	let topics: Vec<String> = topics.iter().map(|topic| hex(&topic.0)).collect();
	http.request("statement_postedClear", rpc_params![topics, hex(dest)]).await.unwrap()
}

async fn has_key(http: &HttpClient, public: &[u8], key_type: &str) -> bool {
	http.request("author_hasKey", rpc_params![hex(public), key_type]).await.unwrap()
}

fn error(result: Result<Value, ClientError>) -> (i32, String) {
	match result {
		Err(ClientError::Call(object)) => (object.code(), object.message().to_string()),
		other => panic!("expected a JSON-RPC error, got {other:?}"),
	}
}

#[tokio::test]
async fn a_dev_node_decrypts_data_posted_to_alice_and_skips_what_it_cannot() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let http = client(&node);
	let alice = ed25519_public("//Alice");
	let stranger = ed25519::Pair::generate().0.public();
	let t = topic("inbox");
	let methods: Value = http.request("rpc_methods", rpc_params![]).await.unwrap();
	for name in ["author_insertKey", "author_hasKey"] {
		assert!(methods["methods"].as_array().unwrap().contains(&name.into()), "{name} listed");
	}

	let for_alice = encrypted("//Alice", t, &alice, b"hello alice");
	let from_bob = encrypted("//Bob", t, &alice, b"and again");
	// Carries Alice's key but was encrypted to another: the node cannot open it.
	let mut mislabelled = encrypted("//Charlie", t, &stranger, b"not for alice");
	mislabelled.set_decryption_key(alice.0);
	mislabelled.sign_sr25519_private(&sr25519::Pair::from_string("//Charlie", None).unwrap());
	// Carries Alice's key over data in the clear, which is no ECIES ciphertext.
	let mut clear = mislabelled.clone();
	clear.set_plain_data(b"plain text, not encrypted at all, long enough to be tried".to_vec());
	clear.sign_sr25519_private(&sr25519::Pair::from_string("//Dave", None).unwrap());
	let for_stranger = encrypted("//Eve", t, &stranger, b"for nobody here");
	for statement in [&for_alice, &from_bob, &mislabelled, &clear, &for_stranger] {
		submit(&http, statement).await;
	}

	let mut clear_data = posted_clear(&http, &[t], &alice.0).await;
	clear_data.sort();
	let mut expected = vec![hex(b"hello alice"), hex(b"and again")];
	expected.sort();
	assert_eq!(clear_data, expected, "the two it can open, and no error for the others");
	assert_eq!(posted_clear(&http, &[], &alice.0).await.len(), 2, "without a topic too");
	assert!(posted_clear(&http, &[t], &stranger.0).await.is_empty(), "a key it does not hold");
	let posted: Vec<String> = http
		.request("statement_posted", rpc_params![vec![hex(&t.0)], hex(&alice.0)])
		.await
		.unwrap();
	assert_eq!(posted.len(), 4, "statement_posted still returns every posted statement");

	let with_statement: Vec<String> = http
		.request("statement_postedClearStatement", rpc_params![vec![hex(&t.0)], hex(&alice.0)])
		.await
		.unwrap();
	let mut expected: Vec<String> = [(&for_alice, &b"hello alice"[..]), (&from_bob, b"and again")]
		.iter()
		.map(|(statement, clear)| hex(&[statement.encode(), clear.to_vec()].concat()))
		.collect();
	expected.sort();
	let mut with_statement = with_statement;
	with_statement.sort();
	assert_eq!(with_statement, expected, "the encoded statement followed by its clear data");
}

#[tokio::test]
async fn sign_encrypt_makes_a_statement_that_posted_clear_reads_back() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	let http = client(&node);
	let alice = ed25519_public("//Alice");
	// The key the README's walkthrough encrypts to.
	assert_eq!(hex(&alice.0), "0x88dc3417d5058ec4b4503e0c12ea1a0a89be200fe98922423d4334014fa6b0ee");
	let out = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["sign", "--suri", "//Bob", "--topic", "walkthrough", "--data", "hi Alice"])
		.args(["--encrypt", "--decryption-key", &hex(&alice.0)])
		.output()
		.unwrap();
	let stderr = String::from_utf8_lossy(&out.stderr);
	assert!(out.status.success(), "{stderr}");
	assert!(stderr.contains(&format!("decryption key: {}", hex(&alice.0))), "{stderr}");
	let encoded = String::from_utf8(out.stdout).unwrap().trim().to_string();
	let statement = Statement::from_bytes(&::hex::decode(&encoded[2..]).unwrap()).unwrap();
	assert_ne!(statement.data(), Some(&b"hi Alice"[..]), "the data is not in the clear");

	let result: Value = http.request("statement_submit", rpc_params![encoded]).await.unwrap();
	assert_eq!(result["status"], "new");
	assert_eq!(
		posted_clear(&http, &[topic("walkthrough")], &alice.0).await,
		vec![hex(b"hi Alice")]
	);

	let refused = Command::new(env!("CARGO_BIN_EXE_statement-node"))
		.args(["sign", "--encrypt", "--decryption-key", "alice"])
		.output()
		.unwrap();
	assert!(!refused.status.success(), "a key given as text cannot be encrypted to");
	assert!(String::from_utf8_lossy(&refused.stderr).contains("ed25519 public key as 0x-hex"));
}

#[tokio::test]
async fn an_inserted_key_decrypts_at_once_and_after_a_restart() {
	let base = tempfile::tempdir().unwrap();
	let base_path = base.path().to_str().unwrap();
	let suri = "//InsertedStatementKey";
	let public = ed25519_public(suri);
	let t = topic("inserted");
	let statement = encrypted("//Alice", t, &public, b"kept secret");
	{
		let node = common::start(&["-d", base_path, "--no-prometheus"]);
		let http = client(&node);
		submit(&http, &statement).await;
		assert!(posted_clear(&http, &[t], &public.0).await.is_empty(), "not yet a key it holds");
		assert!(!has_key(&http, &public.0, "stmt").await);
		assert!(
			!has_key(&http, &ed25519_public("//Alice").0, "stmt").await,
			"dev keys only with --dev"
		);

		let mismatch = http
			.request::<Value, _>(
				"author_insertKey",
				rpc_params!["stmt", suri, hex(&ed25519_public("//Other").0)],
			)
			.await;
		let (code, message) = error(mismatch);
		assert_eq!(code, -32602, "{message}");
		assert!(message.contains("not the public key given"), "{message}");
		let (code, _) =
			error(http.request("author_insertKey", rpc_params!["stm", suri, hex(&public.0)]).await);
		assert_eq!(code, 1040, "a key type must be four characters, as in Substrate");
		assert!(!has_key(&http, &public.0, "stmt").await, "nothing was written");
		// Other key types are kept for the operator, but only real keys: not any string.
		let (code, message) = error(
			http.request("author_insertKey", rpc_params!["babe", "not a key", hex(&[7; 32])]).await,
		);
		assert_eq!(code, -32602, "{message}");
		assert!(message.contains("not a valid secret URI"), "{message}");
		let sr_public = sr25519::Pair::from_string("//Babe", None).unwrap().public();
		let (code, message) = error(
			http.request("author_insertKey", rpc_params!["babe", "//Babe", hex(&[7; 32])]).await,
		);
		assert_eq!(code, -32602, "{message}");
		assert!(message.contains("does not give the public key"), "{message}");
		assert!(!has_key(&http, &[7; 32], "babe").await, "nothing was written");
		let inserted: Value = http
			.request("author_insertKey", rpc_params!["babe", "//Babe", hex(&sr_public.0)])
			.await
			.unwrap();
		assert_eq!(inserted, Value::Null);
		assert!(has_key(&http, &sr_public.0, "babe").await);

		let inserted: Value = http
			.request("author_insertKey", rpc_params!["stmt", suri, hex(&public.0)])
			.await
			.unwrap();
		assert_eq!(inserted, Value::Null);
		assert!(has_key(&http, &public.0, "stmt").await);
		assert!(!has_key(&http, &public.0, "babe").await, "another key type");
		assert_eq!(posted_clear(&http, &[t], &public.0).await, vec![hex(b"kept secret")]);
		assert!(node.stop().unwrap().success());
	}
	let file = base
		.path()
		.join("chains/local_testnet/keystore")
		.join(format!("73746d74{}", ::hex::encode(public.0)));
	assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("\"{suri}\""));

	let node = common::start(&["-d", base_path, "--no-prometheus"]);
	let http = client(&node);
	assert!(has_key(&http, &public.0, "stmt").await, "the key survived the restart");
	assert_eq!(posted_clear(&http, &[t], &public.0).await, vec![hex(b"kept secret")]);
}

/// A key file made the Substrate way in `dir`, for the key of `suri`.
fn write_key_file(dir: &Path, suri: &str) -> ed25519::Public {
	let public = ed25519_public(suri);
	std::fs::create_dir_all(dir).unwrap();
	let name = format!("73746d74{}", ::hex::encode(public.0));
	std::fs::write(dir.join(name), serde_json::to_string(suri).unwrap()).unwrap();
	public
}

#[tokio::test]
async fn keystore_path_files_are_used_and_a_malformed_one_is_reported_once() {
	let base = tempfile::tempdir().unwrap();
	let keys = base.path().join("my-keys");
	let good = write_key_file(&keys, "//FromAFile");
	let broken = ed25519_public("//Broken");
	let broken_name = format!("73746d74{}", ::hex::encode(broken.0));
	std::fs::write(keys.join(&broken_name), "{not json").unwrap();
	// As a key file copied in with a umask of 022 would be.
	let good_file = keys.join(format!("73746d74{}", ::hex::encode(good.0)));
	std::fs::set_permissions(
		&good_file,
		<std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644),
	)
	.unwrap();
	let keys_path = keys.to_str().unwrap();
	let node = common::start(&["--dev", "--no-prometheus", "--keystore-path", keys_path]);
	let startup = node.startup_log().to_vec();
	let said = |text: &str| startup.iter().filter(|line| line.contains(text)).count();
	assert_eq!(said(&format!("Keystore: {keys_path} (7 statement keys)")), 1, "{startup:#?}");
	let malformed = |line: &&String| line.contains(&broken_name) && !line.contains("other users");
	assert_eq!(
		startup.iter().filter(malformed).count(),
		1,
		"one warning for the malformed file: {startup:#?}"
	);
	// Written here with the default mode (0644), as a copied key file would be: named.
	let good_name = format!("73746d74{}", ::hex::encode(good.0));
	let loose = format!("{good_name} is open to other users (mode 0644)");
	assert_eq!(said(&loose), 1, "{startup:#?}");

	let http = client(&node);
	let t = topic("from a file");
	submit(&http, &encrypted("//Alice", t, &good, b"read with a file key")).await;
	submit(&http, &encrypted("//Bob", t, &broken, b"unreadable")).await;
	assert_eq!(posted_clear(&http, &[t], &good.0).await, vec![hex(b"read with a file key")]);
	for _ in 0..3 {
		assert!(posted_clear(&http, &[t], &broken.0).await.is_empty(), "skipped, not an error");
	}
	assert!(!has_key(&http, &broken.0, "stmt").await);
	std::thread::sleep(Duration::from_millis(300));
	let later: Vec<String> =
		node.logs().try_iter().filter(|line| line.contains(&broken_name)).collect();
	assert!(later.is_empty(), "the malformed file is not reported again: {later:#?}");
}

#[tokio::test]
async fn key_methods_are_refused_unless_unsafe_methods_are_allowed() {
	let node = common::start(&["--dev", "--no-prometheus", "--rpc-methods", "safe"]);
	let http = client(&node);
	let public = ed25519_public("//Refused");
	let (code, message) = error(
		http.request("author_insertKey", rpc_params!["stmt", "//Refused", hex(&public.0)]).await,
	);
	assert_eq!(code, -32601, "{message}");
	assert!(message.contains("unsafe"), "{message}");
	let (code, _) = error(http.request("author_hasKey", rpc_params![hex(&public.0), "stmt"]).await);
	assert_eq!(code, -32601);
	let alice = ed25519_public("//Alice");
	let t = topic("safe");
	submit(&http, &encrypted("//Alice", t, &alice, b"still readable")).await;
	assert_eq!(
		posted_clear(&http, &[t], &alice.0).await,
		vec![hex(b"still readable")],
		"postedClear is safe and still decrypts"
	);
}
