//! Upstream's published gossip handler (`sc-network-statement` 0.44 on `sc-network` 0.61,
//! litep2p) and our `statement-node`, over real sockets. Each scenario runs with upstream's
//! handler over the reference store (`sc-statement-store` 33) and over ours behind the adapter.

use codec::Encode;
use sc_keystore::LocalKeystore;
use serde_json::json;
use sp_statement_store::{StatementSource, StatementStore, SubmitResult};
use statement_interop::{
	chain::{Client, TokioSpawner},
	eventually,
	node::OurNode,
	statements::{signed, topic},
	upstream::{Options, UpstreamPeer},
};
use std::{sync::Arc, time::Duration};

/// Which store upstream's handler runs over.
#[derive(Clone, Copy, Debug)]
enum Kind {
	Reference,
	Adapter,
}

fn open(kind: Kind, dir: &std::path::Path, genesis: [u8; 32]) -> Arc<dyn StatementStore> {
	let client = Arc::new(Client::new(genesis));
	let keystore = Arc::new(LocalKeystore::in_memory());
	let spawner = Box::new(TokioSpawner(tokio::runtime::Handle::current()));
	match kind {
		Kind::Reference => sc_statement_store::Store::new_shared(
			dir,
			Default::default(),
			client,
			keystore,
			None,
			spawner,
		)
		.expect("the reference store opens"),
		Kind::Adapter => statement_store_sp_adapter::new_shared(
			dir,
			Default::default(),
			client,
			keystore,
			None,
			spawner,
		)
		.expect("our store opens"),
	}
}

fn genesis_of(node: &OurNode) -> [u8; 32] {
	let hash = node.rpc("chain_getBlockHash", json!([0])).expect("the genesis hash");
	let text = hash.as_str().expect("a hex string").trim_start_matches("0x").to_string();
	let bytes: Vec<u8> =
		(0..64).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect();
	bytes.try_into().unwrap()
}

/// Our node and upstream's handler over a `kind` store, with their statement streams open.
struct Pair {
	node: OurNode,
	upstream: UpstreamPeer,
	_dir: tempfile::TempDir,
}

async fn pair(kind: Kind, node_args: &[&str], options: Options) -> Pair {
	let node = OurNode::start(node_args).expect("our node starts");
	let genesis = genesis_of(&node);
	let dir = tempfile::tempdir().unwrap();
	let store = open(kind, dir.path(), genesis);
	let mut upstream = UpstreamPeer::start(genesis, store, options).await.expect("upstream starts");
	upstream.connect(node.peer_id, node.address.clone());
	eventually("both sides to count the statement stream", Duration::from_secs(30), || {
		let ours = node.metric("substrate_sub_libp2p_peers_count")?;
		let theirs = upstream.metric("substrate_sync_statement_peers_connected", None);
		Ok(ours >= 1.0 && theirs >= 1.0)
	})
	.await
	.unwrap_or_else(|err| panic!("{err}\nour node's log:\n{}", node.log()));
	Pair { node, upstream, _dir: dir }
}

async fn statements_cross_both_ways(kind: Kind, node_args: &[&str], version: &str) {
	let Pair { node, upstream, _dir } = pair(kind, node_args, Options::default()).await;
	let upstream_id = upstream.peer_id().to_string();
	assert!(
		node.log().lines().any(|line| line
			.contains(&format!("Statement stream open with {upstream_id} ({version}, Full)"))),
		"{kind:?}: no {version} stream in our log:\n{}",
		node.log()
	);
	let ours = signed(1, &[topic("interop")], 64);
	assert_eq!(node.submit(&ours.encode()).unwrap(), json!({"status": "new"}));
	let theirs = signed(2, &[topic("interop")], 64);
	assert_eq!(upstream.store.submit(theirs.clone(), StatementSource::Local), SubmitResult::New);
	eventually("upstream's store to hold ours", Duration::from_secs(10), || {
		Ok(upstream.store.has_statement(&ours.hash()))
	})
	.await
	.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
	eventually("our node to hold upstream's", Duration::from_secs(10), || {
		Ok(node.stored()?.contains(&theirs.encode()))
	})
	.await
	.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_cross_both_ways_on_statement_2_with_the_reference_store() {
	statements_cross_both_ways(Kind::Reference, &[], "V2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_cross_both_ways_on_statement_2_with_our_store_behind_the_adapter() {
	statements_cross_both_ways(Kind::Adapter, &[], "V2").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_cross_both_ways_on_the_statement_1_fallback() {
	for kind in [Kind::Reference, Kind::Adapter] {
		statements_cross_both_ways(kind, &["--statement-protocol-version", "1"], "V1").await;
	}
}

/// Statements `from..from + count` on `topics`, signed and encoded.
fn batch(
	from: u32,
	count: u32,
	topics: &[sp_statement_store::Topic],
) -> Vec<sp_statement_store::Statement> {
	(from..from + count).map(|n| signed(n, topics, 64)).collect()
}

async fn initial_sync_both_ways(kind: Kind) {
	const EACH: u32 = 10_000;
	let node = OurNode::start(&[]).expect("our node starts");
	let genesis = genesis_of(&node);
	let dir = tempfile::tempdir().unwrap();
	let store = open(kind, dir.path(), genesis);
	let ours = batch(0, EACH, &[topic("ours")]);
	let encoded: Vec<Vec<u8>> = ours.iter().map(Encode::encode).collect();
	let answers = node.submit_all(&encoded).expect("submits");
	assert!(
		answers.iter().all(|answer| *answer == json!({"status": "new"})),
		"{:?}",
		answers.first()
	);
	let theirs = batch(EACH, EACH, &[topic("theirs")]);
	for statement in &theirs {
		assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
	}
	// Only now do they meet: everything each has travels by initial sync.
	let mut upstream = UpstreamPeer::start(genesis, store, Options::default()).await.unwrap();
	upstream.connect(node.peer_id, node.address.clone());
	eventually("upstream's store to hold our 10,000", Duration::from_secs(120), || {
		Ok(ours.iter().all(|statement| upstream.store.has_statement(&statement.hash())))
	})
	.await
	.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
	eventually("our node to hold upstream's 10,000", Duration::from_secs(120), || {
		let held: std::collections::HashSet<Vec<u8>> = node.stored()?.into_iter().collect();
		Ok(theirs.iter().all(|statement| held.contains(&statement.encode())))
	})
	.await
	.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
	let sent = upstream.metric("substrate_sync_initial_sync_statements_sent", None);
	assert!(sent >= EACH as f64, "{kind:?}: upstream's initial sync sent {sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_waiting_statements_on_each_side_sync_both_ways() {
	for kind in [Kind::Reference, Kind::Adapter] {
		initial_sync_both_ways(kind).await;
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_light_node_gets_from_upstream_only_the_statements_its_filter_matches() {
	for kind in [Kind::Reference, Kind::Adapter] {
		let wanted = topic("apples");
		let node = OurNode::start(&[
			"--statement-topics",
			&statement_test_support::hex::encode(&wanted.0),
		])
		.expect("our light node starts");
		let genesis = genesis_of(&node);
		let dir = tempfile::tempdir().unwrap();
		let store = open(kind, dir.path(), genesis);
		let apples = batch(0, 20, &[wanted]);
		let pears = batch(20, 20, &[topic("pears")]);
		for statement in apples.iter().chain(&pears) {
			assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		}
		let mut upstream = UpstreamPeer::start(genesis, store, Options::default()).await.unwrap();
		upstream.connect(node.peer_id, node.address.clone());
		let held = || -> Result<std::collections::HashSet<Vec<u8>>, String> {
			Ok(node.stored()?.into_iter().collect())
		};
		eventually("our light node to get the stored apples", Duration::from_secs(30), || {
			let held = held()?;
			Ok(apples.iter().all(|s| held.contains(&s.encode())))
		})
		.await
		.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
		let light =
			upstream.metric("substrate_sync_statement_peers_connected", Some(("kind", "light")));
		assert_eq!(light, 1.0, "{kind:?}: upstream does not see our node as light");
		let live_apples = batch(40, 5, &[wanted]);
		let live_pears = batch(45, 5, &[topic("pears")]);
		for statement in live_pears.iter().chain(&live_apples) {
			assert_eq!(
				upstream.store.submit(statement.clone(), StatementSource::Local),
				SubmitResult::New
			);
		}
		eventually("our light node to get the new apples", Duration::from_secs(30), || {
			let held = held()?;
			Ok(live_apples.iter().all(|s| held.contains(&s.encode())))
		})
		.await
		.unwrap_or_else(|err| panic!("{kind:?}: {err}"));
		// Two of upstream's one-second ticks more: no pear came, or comes.
		tokio::time::sleep(Duration::from_secs(2)).await;
		let held = held().unwrap();
		assert_eq!(
			held.len(),
			25,
			"{kind:?}: our light node holds {} statements, wants the 25 apples",
			held.len()
		);
		assert!(
			pears.iter().chain(&live_pears).all(|s| !held.contains(&s.encode())),
			"{kind:?}: pears came"
		);
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_node_flooding_upstream_is_cut_off_by_upstreams_rule() {
	for kind in [Kind::Reference, Kind::Adapter] {
		let node = OurNode::start(&[]).expect("our node starts");
		let genesis = genesis_of(&node);
		let encoded: Vec<Vec<u8>> =
			batch(0, 200, &[topic("flood")]).iter().map(Encode::encode).collect();
		node.submit_all(&encoded).unwrap();
		let dir = tempfile::tempdir().unwrap();
		let store = open(kind, dir.path(), genesis);
		// Upstream allows 10 a second, bursts of 50: our initial sync of 200 in one notification
		// is past it.
		let mut upstream =
			UpstreamPeer::start(genesis, store, Options { rate_limit: 10 }).await.unwrap();
		upstream.connect(node.peer_id, node.address.clone());
		eventually("upstream to flag our node and drop it", Duration::from_secs(30), || {
			let flagged = upstream.metric("substrate_sync_statement_flooding_detected", None);
			let peers = node.metric("substrate_sub_libp2p_peers_count")?;
			Ok(flagged >= 1.0 && peers == 0.0)
		})
		.await
		.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
		assert!(
			upstream.reputation(&node.peer_id) < 0,
			"{kind:?}: upstream did not lower our node's reputation"
		);
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_flooding_our_node_is_cut_off_by_ours() {
	for kind in [Kind::Reference, Kind::Adapter] {
		let node = OurNode::start(&["--statement-rate-limit", "10"]).expect("our node starts");
		let genesis = genesis_of(&node);
		let dir = tempfile::tempdir().unwrap();
		let store = open(kind, dir.path(), genesis);
		for statement in batch(0, 200, &[topic("flood")]) {
			assert_eq!(store.submit(statement, StatementSource::Local), SubmitResult::New);
		}
		let mut upstream = UpstreamPeer::start(genesis, store, Options::default()).await.unwrap();
		upstream.connect(node.peer_id, node.address.clone());
		eventually("our node to flag upstream and drop it", Duration::from_secs(30), || {
			let flagged = node.metric("substrate_sync_statement_flooding_detected")?;
			let banned = node.metric("substrate_sync_statement_peers_banned_total")?;
			Ok(flagged >= 1.0
				&& banned >= 1.0
				&& node.metric("substrate_sub_libp2p_peers_count")? == 0.0)
		})
		.await
		.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
	}
}

/// Upstream's store, with statements slipped into what it hands its gossip handler as newly
/// admitted: how a peer whose store let bad statements through would gossip them.
struct Leaky {
	inner: Arc<dyn StatementStore>,
	slipped: parking_lot::Mutex<Vec<sp_statement_store::Statement>>,
}

impl StatementStore for Leaky {
	fn statements(
		&self,
	) -> sp_statement_store::Result<Vec<(sp_statement_store::Hash, sp_statement_store::Statement)>>
	{
		self.inner.statements()
	}
	fn take_recent_statements(
		&self,
	) -> sp_statement_store::Result<Vec<(sp_statement_store::Hash, sp_statement_store::Statement)>>
	{
		let mut recent = self.inner.take_recent_statements()?;
		recent.extend(self.slipped.lock().drain(..).map(|statement| (statement.hash(), statement)));
		Ok(recent)
	}
	fn statement(
		&self,
		hash: &sp_statement_store::Hash,
	) -> sp_statement_store::Result<Option<sp_statement_store::Statement>> {
		self.inner.statement(hash)
	}
	fn has_statement(&self, hash: &sp_statement_store::Hash) -> bool {
		self.inner.has_statement(hash)
	}
	fn statement_hashes(&self) -> Vec<sp_statement_store::Hash> {
		self.inner.statement_hashes()
	}
	fn statements_by_hashes(
		&self,
		hashes: &[sp_statement_store::Hash],
		filter: &mut dyn FnMut(
			&sp_statement_store::Hash,
			&[u8],
			&sp_statement_store::Statement,
		) -> sp_statement_store::FilterDecision,
	) -> sp_statement_store::Result<(
		Vec<(sp_statement_store::Hash, sp_statement_store::Statement)>,
		usize,
	)> {
		self.inner.statements_by_hashes(hashes, filter)
	}
	fn broadcasts(
		&self,
		topics: &[sp_statement_store::Topic],
	) -> sp_statement_store::Result<Vec<Vec<u8>>> {
		self.inner.broadcasts(topics)
	}
	fn posted(
		&self,
		topics: &[sp_statement_store::Topic],
		dest: [u8; 32],
	) -> sp_statement_store::Result<Vec<Vec<u8>>> {
		self.inner.posted(topics, dest)
	}
	fn posted_clear(
		&self,
		topics: &[sp_statement_store::Topic],
		dest: [u8; 32],
	) -> sp_statement_store::Result<Vec<Vec<u8>>> {
		self.inner.posted_clear(topics, dest)
	}
	fn broadcasts_stmt(
		&self,
		topics: &[sp_statement_store::Topic],
	) -> sp_statement_store::Result<Vec<Vec<u8>>> {
		self.inner.broadcasts_stmt(topics)
	}
	fn posted_stmt(
		&self,
		topics: &[sp_statement_store::Topic],
		dest: [u8; 32],
	) -> sp_statement_store::Result<Vec<Vec<u8>>> {
		self.inner.posted_stmt(topics, dest)
	}
	fn posted_clear_stmt(
		&self,
		topics: &[sp_statement_store::Topic],
		dest: [u8; 32],
	) -> sp_statement_store::Result<Vec<Vec<u8>>> {
		self.inner.posted_clear_stmt(topics, dest)
	}
	fn submit(
		&self,
		statement: sp_statement_store::Statement,
		source: StatementSource,
	) -> SubmitResult {
		self.inner.submit(statement, source)
	}
	fn remove(&self, hash: &sp_statement_store::Hash) -> sp_statement_store::Result<()> {
		self.inner.remove(hash)
	}
	fn remove_by(&self, who: [u8; 32]) -> sp_statement_store::Result<()> {
		self.inner.remove_by(who)
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_proofs_gossiped_by_upstream_cost_it_its_standing_with_our_node() {
	for kind in [Kind::Reference, Kind::Adapter] {
		let node = OurNode::start(&[]).expect("our node starts");
		let genesis = genesis_of(&node);
		let dir = tempfile::tempdir().unwrap();
		let leaky =
			Arc::new(Leaky { inner: open(kind, dir.path(), genesis), slipped: Default::default() });
		let mut upstream =
			UpstreamPeer::start(genesis, leaky.clone(), Options::default()).await.unwrap();
		upstream.connect(node.peer_id, node.address.clone());
		eventually("the statement streams to open", Duration::from_secs(30), || {
			Ok(node.metric("substrate_sub_libp2p_peers_count")? >= 1.0)
		})
		.await
		.unwrap();
		// Seventeen bad proofs: 16 x -4,096 leaves a peer at our ban line, the 17th past it.
		leaky.slipped.lock().extend(
			(0..17).map(|n| statement_interop::statements::badly_signed(n, &[topic("bad")])),
		);
		eventually("our node to refuse them and drop upstream", Duration::from_secs(30), || {
			let invalid = node.metric("substrate_sync_statement_invalid_received_total")?;
			let banned = node.metric("substrate_sync_statement_peers_banned_total")?;
			Ok(invalid >= 17.0
				&& banned >= 1.0
				&& node.metric("substrate_sub_libp2p_peers_count")? == 0.0)
		})
		.await
		.unwrap_or_else(|err| panic!("{kind:?}: {err}\nour log:\n{}", node.log()));
	}
}

/// Our store, with statements slipped into the first page our gossip reads for a new peer's
/// initial sync: how a node whose store let bad statements through would gossip them.
struct LeakyOurs {
	inner: Arc<dyn statement_primitives::StatementStore>,
	slipped: Vec<Vec<u8>>,
}

impl statement_primitives::StatementStore for LeakyOurs {
	fn statements(
		&self,
	) -> statement_primitives::Result<
		Vec<(statement_primitives::Hash, statement_primitives::Statement)>,
	> {
		self.inner.statements()
	}
	fn statement(
		&self,
		hash: &statement_primitives::Hash,
	) -> statement_primitives::Result<Option<statement_primitives::Statement>> {
		self.inner.statement(hash)
	}
	fn has_statement(&self, hash: &statement_primitives::Hash) -> bool {
		self.inner.has_statement(hash)
	}
	fn broadcasts(
		&self,
		topics: &[statement_primitives::Topic],
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.inner.broadcasts(topics)
	}
	fn posted(
		&self,
		topics: &[statement_primitives::Topic],
		dest: [u8; 32],
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.inner.posted(topics, dest)
	}
	fn posted_clear(
		&self,
		topics: &[statement_primitives::Topic],
		dest: [u8; 32],
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.inner.posted_clear(topics, dest)
	}
	fn broadcasts_stmt(
		&self,
		topics: &[statement_primitives::Topic],
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.inner.broadcasts_stmt(topics)
	}
	fn posted_stmt(
		&self,
		topics: &[statement_primitives::Topic],
		dest: [u8; 32],
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.inner.posted_stmt(topics, dest)
	}
	fn posted_clear_stmt(
		&self,
		topics: &[statement_primitives::Topic],
		dest: [u8; 32],
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.inner.posted_clear_stmt(topics, dest)
	}
	fn submit(
		&self,
		statement: statement_primitives::Statement,
		source: statement_primitives::StatementSource,
	) -> statement_primitives::SubmitResult {
		self.inner.submit(statement, source)
	}
	fn remove(&self, hash: &statement_primitives::Hash) -> statement_primitives::Result<()> {
		self.inner.remove(hash)
	}
	fn remove_by(&self, who: statement_primitives::AccountId) -> statement_primitives::Result<()> {
		self.inner.remove_by(who)
	}
	fn statements_page(
		&self,
		after: Option<u64>,
		max_count: usize,
		max_bytes: usize,
	) -> statement_primitives::Result<statement_primitives::StatementsPage> {
		self.inner.statements_page(after, max_count, max_bytes)
	}
	fn subscribe_with_queue(
		&self,
		filter: statement_primitives::TopicFilter,
		queue_bytes: usize,
	) -> statement_primitives::Result<Box<dyn statement_primitives::StatementSubscription>> {
		self.inner.subscribe_with_queue(filter, queue_bytes)
	}
	fn admission_watermark(&self) -> u64 {
		self.inner.admission_watermark()
	}
	fn admitted_page(
		&self,
		after: u64,
		upto: u64,
		max_bytes: usize,
	) -> statement_primitives::Result<statement_primitives::StatementsPage> {
		let mut page = self.inner.admitted_page(after, upto, max_bytes)?;
		if after == 0 {
			page.statements.extend(
				self.slipped.iter().map(|encoding| {
					(statement_primitives::hash_encoded(encoding), encoding.clone())
				}),
			);
		}
		Ok(page)
	}
	fn watch_admissions(
		&self,
		queue_bytes: usize,
	) -> statement_primitives::Result<Box<dyn statement_primitives::StatementSubscription>> {
		self.inner.watch_admissions(queue_bytes)
	}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_proofs_gossiped_by_our_side_cost_it_its_standing_with_upstream() {
	const GENESIS: [u8; 32] = [0x5a; 32];
	for kind in [Kind::Reference, Kind::Adapter] {
		let dir = tempfile::tempdir().unwrap();
		let allowances = statement_store::MapAllowances::new()
			.with_default(statement_primitives::StatementAllowance::new(1_000, 1 << 20));
		let ours = statement_store::Store::open(
			statement_store::Config::new(dir.path().join("ours")),
			Arc::new(allowances),
		)
		.unwrap();
		let bad: Vec<sp_statement_store::Statement> = (0..17)
			.map(|n| statement_interop::statements::badly_signed(n, &[topic("bad")]))
			.collect();
		let leaky =
			LeakyOurs { inner: Arc::new(ours), slipped: bad.iter().map(Encode::encode).collect() };
		let mut config = statement_network::Config::new(GENESIS, [0x21; 32]);
		config.listen_addresses =
			vec![statement_network::parse_address("/ip4/127.0.0.1/tcp/0", false).unwrap()];
		config.discovery = false;
		let network =
			statement_network::start(config, Arc::new(leaky)).await.expect("our gossip starts");
		let our_id: sc_network::PeerId = network.local_peer_id().to_base58().parse().unwrap();
		let our_address: sc_network::Multiaddr =
			network.listen_addresses()[0].to_string().parse().unwrap();
		let store = open(kind, &dir.path().join("upstream"), GENESIS);
		let mut upstream = UpstreamPeer::start(GENESIS, store, Options::default()).await.unwrap();
		upstream.connect(our_id, our_address);
		// Each costs the sender the reference's `INVALID_STATEMENT` (-4,096) after the -16 every
		// statement costs until it is checked.
		eventually(
			"upstream to refuse the 17 and lower our reputation for them",
			Duration::from_secs(30),
			|| Ok(upstream.reputation(&our_id) <= -17 * 4_096),
		)
		.await
		.unwrap_or_else(|err| {
			panic!("{kind:?}: {err}; reputation {}", upstream.reputation(&our_id))
		});
		assert!(
			bad.iter().all(|statement| !upstream.store.has_statement(&statement.hash())),
			"{kind:?}"
		);
		network.stop().await;
	}
}
