//! Routers in one process ([`crate::routing::memory`]): each with a store of its own,
//! queries delivered at once, time advanced by hand. Holders are checked against the placement rule as the test support
//! crate writes it, apart from the code under test.

use super::*;
use crate::routing::{memory::Network, RoutingConfig};
use statement_test_support::routing::holders as rule;

const K: usize = 3;
const REFRESH: Duration = Duration::from_secs(3);
const DROP_AFTER: Duration = Duration::from_secs(5);

fn statement(n: u32, topic: Option<Topic>) -> (Hash, Encoded) {
	let mut statement = Statement::new();
	if let Some(topic) = topic {
		statement.set_topic(0, topic);
	}
	statement.set_plain_data(n.to_le_bytes().to_vec());
	(statement.hash(), Encoded::from(statement.encode()))
}

fn topic(n: u8) -> Topic {
	Topic(sp_crypto_hashing::blake2_256(&[n, 0x70]))
}

/// A network of `n` routers: node 0 knows everyone (as a boot node learns them), the others
/// node 0 and one more.
fn network(n: u32) -> Network {
	let mut config = RoutingConfig::new(K);
	config.refresh = REFRESH;
	config.drop_after = DROP_AFTER;
	let mut net = Network::new(config);
	for _ in 0..n {
		net.join();
	}
	for id in 1..n {
		net.introduce(0, id);
		net.introduce(id, 0);
		net.introduce(id, (id * 7 + 3) % n);
	}
	net
}

/// A node joining `net`, known to node 0 and to `also`.
fn join(net: &mut Network, also: &[u32]) -> u32 {
	let id = net.join();
	net.introduce(0, id);
	net.introduce(id, 0);
	for other in also {
		net.introduce(*other, id);
	}
	id
}

/// The live nodes holding `hash`, and those the rule says should.
fn holding(net: &Network, hash: &Hash, key: &Key) -> (Vec<u32>, Vec<u32>) {
	let live = net.live();
	let peers: Vec<Vec<u8>> = live.iter().map(|id| id.to_le_bytes().to_vec()).collect();
	let mut expected: Vec<u32> = rule(key, &peers, K).into_iter().map(|i| live[i]).collect();
	expected.sort_unstable();
	let holding =
		live.into_iter().filter(|id| net.nodes[*id as usize].store.contains_key(hash)).collect();
	(holding, expected)
}

/// Statements on topics 0..n (and one without topics), submitted through node `from(n)`.
fn submit_all(net: &mut Network, n: u8, from: impl Fn(u8) -> u32) -> Vec<(Hash, Key)> {
	let mut placed = Vec::new();
	for index in 0..n {
		let (hash, encoding) = statement(u32::from(index), Some(topic(index)));
		net.submit(from(index), hash, encoding);
		placed.push((hash, topic(index).0));
	}
	let (hash, encoding) = statement(999, None);
	net.submit(from(n), hash, encoding);
	placed.push((hash, hash));
	placed
}

/// Three topics' statements through node 5 of 20, settled: the first one's hash and key, its
/// holders, and a node that holds none of it.
fn a_topic_and_a_reader() -> (Network, Hash, Key, Vec<u32>, u32) {
	let mut net = network(20);
	let placed = submit_all(&mut net, 3, |_| 5);
	net.advance(DROP_AFTER + Duration::from_secs(1));
	let (hash, key) = placed[0];
	let (holding, _) = holding(&net, &hash, &key);
	let reader = (0..20).find(|id| !holding.contains(id)).unwrap();
	(net, hash, key, holding, reader)
}

/// `leaving` go without a word, `joining` new nodes join, and four refreshes pass.
fn churn(net: &mut Network, leaving: &[u32], joining: u32) {
	for id in leaving {
		net.nodes[*id as usize].alive = false;
	}
	for n in 0..joining {
		join(net, &[n + 1, n + 7]);
	}
	net.advance(REFRESH * 4 + DROP_AFTER);
}

fn assert_placed(net: &Network, placed: &[(Hash, Key)], when: &str) {
	for (hash, key) in placed {
		let (holding, expected) = holding(net, hash, key);
		assert_eq!(
			holding,
			expected,
			"{when}: statement {} is held by the wrong nodes",
			hex::encode(&hash[..4])
		);
	}
}

#[test]
fn every_statement_ends_on_exactly_its_k_holders_and_the_writers_let_go() {
	let mut net = network(40);
	let placed = submit_all(&mut net, 30, |index| u32::from(index) * 13 % 40);
	// Nodes still learn of each other at first (each looks its own key up): a holder may
	// push to a node that, by its own later lookup, is not one, and lets go after
	// `drop_after`.
	net.advance(REFRESH + DROP_AFTER + Duration::from_secs(2));
	assert_placed(&net, &placed, "after the writers' drop time");
	let held: usize = net.nodes.iter().map(|node| node.store.len()).sum();
	assert_eq!(held, placed.len() * K, "exactly K copies of each");
}

#[test]
fn holders_hand_over_to_a_node_that_joins_and_replace_one_that_leaves() {
	let mut net = network(30);
	let placed = submit_all(&mut net, 24, |index| u32::from(index) * 7 % 30);
	net.advance(REFRESH + DROP_AFTER + Duration::from_secs(2));
	assert_placed(&net, &placed, "before churn");
	// The nodes that hold most leave without a word; six new ones join.
	let mut by_load: Vec<(usize, u32)> =
		net.nodes.iter().enumerate().map(|(id, node)| (node.store.len(), id as u32)).collect();
	by_load.sort_unstable_by(|a, b| b.cmp(a));
	let leaving: Vec<u32> = by_load.iter().take(5).map(|(_, id)| *id).collect();
	churn(&mut net, &leaving, 6);
	assert_placed(&net, &placed, "after churn and hand-over");
}

#[test]
fn a_node_that_does_not_hold_a_topic_gets_it_while_a_subscription_names_it() {
	let (mut net, hash, key, holding, reader) = a_topic_and_a_reader();
	net.nodes[reader as usize].wanted = vec![Topic(key)];
	net.advance(Duration::from_secs(1));
	assert!(net.nodes[reader as usize].store.contains_key(&hash), "the stored statement came");
	// A new one on the topic, through another non-holder, reaches the reader too.
	let writer = (0..20).find(|id| !holding.contains(id) && *id != reader).unwrap();
	let later = statement(500, Some(Topic(key)));
	net.submit(writer, later.0, later.1.clone());
	assert!(net.nodes[reader as usize].store.contains_key(&later.0), "the new one came");
	// Once nothing here names the topic, the reader lets both go.
	net.nodes[reader as usize].wanted.clear();
	net.advance(DROP_AFTER * 2 + REFRESH);
	let store = &net.nodes[reader as usize].store;
	assert!(
		!store.contains_key(&hash) && !store.contains_key(&later.0),
		"kept after the subscription"
	);
}

#[test]
fn a_node_that_knew_nobody_looks_again_within_a_second_of_meeting_peers() {
	let mut net = network(1);
	let (hash, encoding) = statement(1, Some(topic(1)));
	net.submit(0, hash, encoding);
	assert!(net.nodes[0].store.contains_key(&hash), "alone, it holds what it takes");
	assert_eq!(net.nodes[0].router.held_keys(), 1, "and knows it holds it");
	join(&mut net, &[]);
	// With K = 3, both nodes are holders; the lonely answer is not trusted for a refresh.
	net.advance(Duration::from_millis(1_500));
	assert!(REFRESH > Duration::from_millis(1_500));
	assert!(net.nodes[1].store.contains_key(&hash), "the newcomer got it before a refresh");
}

#[test]
fn a_push_to_a_new_holder_that_failed_is_made_again_at_the_next_refresh() {
	let mut net = network(30);
	let placed = submit_all(&mut net, 24, |index| u32::from(index) * 7 % 30);
	net.advance(REFRESH + DROP_AFTER + Duration::from_secs(2));
	// Newcomers that cannot take writes at first: every push to them fails.
	let newcomers: Vec<u32> = (0..6).map(|n| join(&mut net, &[n + 1, n + 7])).collect();
	net.refusing_stores = newcomers;
	net.advance(REFRESH * 2);
	net.refusing_stores.clear();
	net.advance(REFRESH * 2 + DROP_AFTER);
	assert_placed(&net, &placed, "after the newcomers took writes");
}

#[test]
fn a_query_on_a_node_that_does_not_hold_its_topic_is_answered_after_the_holders_sent_it() {
	let (mut net, hash, key, holding, reader) = a_topic_and_a_reader();
	assert!(!net.nodes[reader as usize].store.contains_key(&hash), "the reader lets it go first");
	// A query naming another topic too: one topic's holders have all its statements.
	let topics = vec![Topic(key), topic(200)];
	net.feed(reader, Event::Fetch { fetch: 7, topics: topics.clone() });
	net.settle();
	assert_eq!(net.fetched, vec![(reader, 7)], "the fetch was reported done");
	assert!(net.nodes[reader as usize].store.contains_key(&hash), "and the statement is stored");
	// Within the window the holders keep the reader current, and queries need no network.
	let writer = (0..20).find(|id| !holding.contains(id) && *id != reader).unwrap();
	let later = statement(500, Some(Topic(key)));
	net.submit(writer, later.0, later.1.clone());
	assert!(net.nodes[reader as usize].store.contains_key(&later.0), "the new one came");
	let queries = net.queries();
	net.feed(reader, Event::Fetch { fetch: 8, topics });
	net.settle();
	assert_eq!(net.fetched.last(), Some(&(reader, 8)), "answered at once");
	assert_eq!(net.queries(), queries, "without asking anyone");
	// A holder, or a query naming no topic, never asks.
	let holder = holding[0];
	net.feed(holder, Event::Fetch { fetch: 9, topics: vec![Topic(key)] });
	net.feed(reader, Event::Fetch { fetch: 10, topics: vec![] });
	net.settle();
	let mut last = net.fetched[2..].to_vec();
	last.sort_unstable_by_key(|(_, fetch)| *fetch);
	assert_eq!(last, [(holder, 9), (reader, 10)]);
	assert_eq!(net.queries(), queries, "nobody was asked");
	// After the window the reader lets both go, as any statement it does not hold.
	net.advance(DROP_AFTER * 2 + REFRESH);
	let store = &net.nodes[reader as usize].store;
	assert!(!store.contains_key(&hash) && !store.contains_key(&later.0), "kept past the window");
}

#[test]
fn a_write_a_holder_did_not_take_is_sent_again_though_no_holder_is_new() {
	let mut net = network(20);
	net.advance(REFRESH);
	let (hash, encoding) = statement(1, Some(topic(1)));
	let placed = [(hash, topic(1).0)];
	let (_, expected) = holding(&net, &hash, &topic(1).0);
	let writer = (0..20).find(|id| !expected.contains(id)).unwrap();
	// One holder cannot take writes for a moment; nobody's view of the holders changes.
	net.refusing_stores = vec![expected[0]];
	net.submit(writer, hash, encoding);
	net.advance(Duration::from_secs(1));
	net.refusing_stores.clear();
	net.advance(REFRESH * 3 + DROP_AFTER);
	assert_placed(&net, &placed, "after the holder took writes again");
}

#[test]
fn a_statement_sent_to_a_node_that_holds_none_of_its_keys_goes_on_to_the_holders() {
	let mut net = network(20);
	net.advance(REFRESH);
	let (hash, encoding) = statement(2, Some(topic(2)));
	let placed = [(hash, topic(2).0)];
	let (_, expected) = holding(&net, &hash, &topic(2).0);
	let mut others = (0..20).filter(|id| !expected.contains(id));
	let (sender, wrong) = (others.next().unwrap(), others.next().unwrap());
	// A writer whose lookup missed the holders sends the statement to a non-holder only.
	let body = wire::Request::Store { statements: vec![encoding.to_vec()] };
	net.feed(wrong, Event::Request { from: sender, request: u64::MAX, body });
	net.settle();
	assert!(net.nodes[wrong as usize].store.contains_key(&hash), "the non-holder took it");
	net.advance(DROP_AFTER + Duration::from_secs(2));
	assert_placed(&net, &placed, "after the non-holder let go");
}

#[test]
fn a_topic_larger_than_a_page_is_handed_over_whole_a_page_at_a_time() {
	let mut net = network(20);
	net.key_page = 4;
	net.advance(REFRESH);
	// 30 statements on one topic: hand-overs read pages of 4.
	let placed: Vec<(Hash, Key)> = (0..30)
		.map(|n| {
			let (hash, encoding) = statement(1_000 + n, Some(topic(9)));
			net.submit(n % 20, hash, encoding);
			(hash, topic(9).0)
		})
		.collect();
	net.advance(REFRESH + DROP_AFTER + Duration::from_secs(2));
	assert_placed(&net, &placed, "before churn");
	let (_, expected) = holding(&net, &placed[0].0, &topic(9).0);
	churn(&mut net, &expected[..2], 4);
	assert_placed(&net, &placed, "after two holders left and four nodes joined");
}

#[test]
fn a_query_waits_for_a_holder_that_has_the_topic_not_the_first_that_answers() {
	let (mut net, hash, key, holding, reader) = a_topic_and_a_reader();
	// The holder that answers first (the lowest id) lacks the statement, as one that joined a
	// moment ago does.
	net.nodes[holding[0] as usize].store.remove(&hash);
	net.feed(reader, Event::Fetch { fetch: 1, topics: vec![Topic(key)] });
	net.settle();
	assert_eq!(net.fetched, vec![(reader, 1)]);
	assert!(net.stored_when_fetched[0].contains(&hash), "the answer came with the statement");
}

/// Everything `router` asks now, answering each `Nearest` with no peers (the asked node
/// knows nobody else).
fn drain(router: &mut Router<u32, u32>, now: Duration) -> Vec<Action<u32, u32>> {
	let mut left = Vec::new();
	while let Some(action) = router.poll_action() {
		match action {
			Action::Query { query, body: wire::Request::Nearest { .. }, .. } => {
				router.handle(now, Event::Answer { query, answer: Answer::Nearest(Vec::new()) });
			}
			other => left.push(other),
		}
	}
	left
}

#[test]
fn a_hand_over_reads_its_next_page_only_once_the_last_pages_stores_ended() {
	let mut config = RoutingConfig::new(2);
	config.refresh = REFRESH;
	let metrics = Arc::new(crate::metrics::Metrics::default());
	let mut router = Router::new(config, 0, Network::key(0), metrics, u32::MAX);
	let encodings: Vec<Encoded> = (0..3).map(|n| statement(n, Some(topic(4))).1).collect();
	let at = Duration::ZERO;
	router.handle(at, Event::Admitted { encodings: encodings.clone(), forward: true });
	drain(&mut router, at);
	assert_eq!(router.held_keys(), 1, "alone, it holds the topic");
	// A second node comes; with K = 2 it is a holder, new to this one.
	router.handle(at, Event::Peer { peer: 1, key: Network::key(1), addresses: vec![1] });
	let at = Duration::from_millis(1_500);
	router.handle(at, Event::Tick { wanted: Vec::new() });
	let actions = drain(&mut router, at);
	let reads: Vec<_> = actions.iter().filter(|a| matches!(a, Action::ReadKey { .. })).collect();
	assert!(
		matches!(reads[..], [Action::ReadKey { skip: 0, .. }]),
		"the hand-over reads its first page: {actions:?}"
	);
	let key = topic(4).0;
	// A page, and more to come: its Store goes out, the next page waits for it.
	let page = vec![encodings[0].clone()];
	router.handle(at, Event::KeyRead { key, statements: page, next: Some(1) });
	let actions = drain(&mut router, at);
	let store = actions.iter().find_map(|action| match action {
		Action::Query { query, peer: 1, body: wire::Request::Store { .. } } => Some(*query),
		_ => None,
	});
	let Some(store) = store else { panic!("the page is sent to the new holder: {actions:?}") };
	assert!(
		!actions.iter().any(|a| matches!(a, Action::ReadKey { .. })),
		"no second page while the first is in flight: {actions:?}"
	);
	router.handle(at, Event::Answer { query: store, answer: Answer::Stored });
	let actions = drain(&mut router, at);
	assert!(
		actions.iter().any(|a| matches!(a, Action::ReadKey { skip: 1, .. })),
		"the next page once the Store ended: {actions:?}"
	);
}
