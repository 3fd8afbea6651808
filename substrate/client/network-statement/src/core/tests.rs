//! The protocol's logic, driven through the core alone: no processes, sockets or clocks.

use super::*;
use crate::wire::{self, v1, v2};
use codec::Encode;
use statement_primitives::{hash_encoded, testing::TestStatement, Topic};
use std::sync::Mutex;

const A: Topic = Topic([0xA; 32]);
const B: Topic = Topic([0xB; 32]);
const C: Topic = Topic([0xC; 32]);
const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

/// A store of hashes and a journal of encodings, as the core and its driver see one.
#[derive(Default)]
struct FakeStore {
	journal: Mutex<Vec<Vec<u8>>>,
}

impl FakeStore {
	fn add(&self, encoding: Vec<u8>) {
		self.journal.lock().unwrap().push(encoding);
	}

	/// What `admitted_page` would answer, without a byte limit.
	fn page(&self, after: u64, upto: u64) -> StatementsPage {
		let journal = self.journal.lock().unwrap();
		let statements = journal[after as usize..upto as usize]
			.iter()
			.map(|encoding| (hash_encoded(encoding), encoding.clone()))
			.collect();
		StatementsPage { statements, next: None }
	}
}

impl StoreView for FakeStore {
	fn has_statement(&self, hash: &Hash) -> bool {
		self.journal.lock().unwrap().iter().any(|encoding| hash_encoded(encoding) == *hash)
	}

	fn admission_watermark(&self) -> u64 {
		self.journal.lock().unwrap().len() as u64
	}
}

fn statement(n: u32, topics: &[Topic]) -> Vec<u8> {
	TestStatement::new()
		.expiry(u32::MAX, n)
		.topics(topics)
		.data(n.to_le_bytes())
		.unsigned()
		.encode()
}

struct Harness {
	core: Core<u32>,
	store: Arc<FakeStore>,
	metrics: Arc<Metrics>,
	now: Time,
}

impl Harness {
	fn new(config: CoreConfig) -> Self {
		let store = Arc::new(FakeStore::default());
		let metrics = Arc::new(Metrics::default());
		let core = Core::new(config, store.clone(), metrics.clone(), Duration::ZERO);
		Harness { core, store, metrics, now: Duration::ZERO }
	}

	fn event(&mut self, event: Event<u32>) -> Vec<Action<u32>> {
		self.core.handle(self.now, event);
		std::iter::from_fn(|| self.core.poll_action()).collect()
	}

	fn advance(&mut self, by: Duration) -> Vec<Action<u32>> {
		self.now += by;
		self.event(Event::Tick)
	}

	/// Answer every read from the store and every send as delivered, until the core is quiet;
	/// the statements each peer was sent, by their encoding.
	fn settle(&mut self, mut actions: Vec<Action<u32>>) -> Vec<(u32, Vec<Vec<u8>>)> {
		let mut sent = Vec::new();
		while let Some(action) = actions.pop() {
			let more = match action {
				Action::Read { peer, id, after, upto, .. } => {
					let page = self.store.page(after, upto);
					self.event(Event::Page { peer, id, page: Ok(page) })
				}
				Action::Send { peer, id, notification } => {
					let version =
						self.core.peers.get(&peer).map(|p| p.version).unwrap_or(Version::V1);
					if let Ok(wire::Message::Statements(statements)) =
						wire::decode(version, &notification)
					{
						sent.push((peer, statements.into_iter().map(|(_, e)| e).collect()));
					}
					self.event(Event::Sent { peer, id, outcome: SendOutcome::Delivered })
				}
				_ => Vec::new(),
			};
			actions.extend(more);
		}
		sent
	}

	fn admit(&mut self, encodings: &[Vec<u8>]) -> Vec<Action<u32>> {
		for encoding in encodings {
			self.store.add(encoding.clone());
		}
		let shared = encodings.iter().map(|e| Encoded::from(e.as_slice())).collect();
		let mut actions = self.event(Event::Admitted(shared));
		actions.extend(self.advance(50 * MS));
		actions
	}

	fn open(&mut self, peer: u32, version: Version, role: Role) -> Vec<Action<u32>> {
		self.event(Event::Opened { peer, version, role })
	}
}

fn sent_to(sent: &[(u32, Vec<Vec<u8>>)], peer: u32) -> Vec<Vec<u8>> {
	sent.iter().filter(|(p, _)| *p == peer).flat_map(|(_, s)| s.clone()).collect()
}

fn filter_of(topics: &[Topic]) -> Vec<u8> {
	v2::encode_affinity(&AffinityFilter::of_topics(1, topics.iter()))
}

#[test]
fn a_full_peer_gets_the_store_then_what_is_admitted_but_not_what_it_sent() {
	let mut h = Harness::new(CoreConfig::default());
	let stored = vec![statement(1, &[A]), statement(2, &[B])];
	for encoding in &stored {
		h.store.add(encoding.clone());
	}
	let opened = h.open(7, Version::V2, Role::Full);
	assert!(matches!(opened[..], [Action::Read { peer: 7, after: 0, upto: 2, .. }]), "{opened:?}");
	let sent = h.settle(opened);
	assert_eq!(sent_to(&sent, 7), stored);
	h.open(8, Version::V1, Role::Full);
	let _ = h.settle(Vec::new());
	// A statement from peer 8: validated, and once admitted sent to 7 only.
	let from_eight = statement(3, &[C]);
	let actions =
		h.event(Event::Notification { peer: 8, bytes: v1::encode([&from_eight[..]].into_iter()) });
	let [Action::Validate { peer: 8, hash, .. }] = actions[..] else { panic!("{actions:?}") };
	h.event(Event::Verdict { peer: 8, hash, result: SubmitResult::New });
	let actions = h.admit(std::slice::from_ref(&from_eight));
	let sent = h.settle(actions);
	assert_eq!(sent_to(&sent, 7), vec![from_eight]);
	assert!(sent_to(&sent, 8).is_empty(), "sent back to its source");
}

#[test]
fn a_light_peer_gets_nothing_until_its_filter_then_only_what_matches() {
	let mut h = Harness::new(CoreConfig::default());
	let a1 = statement(1, &[A]);
	let b1 = statement(2, &[B]);
	let none = statement(3, &[]);
	for encoding in [&a1, &b1, &none] {
		h.store.add(encoding.clone());
	}
	let opened = h.open(5, Version::V2, Role::Light);
	assert!(opened.is_empty(), "a light peer without a filter is sent nothing: {opened:?}");
	let nothing = h.admit(&[statement(4, &[A])]);
	assert!(h.settle(nothing).is_empty());
	assert_eq!(h.metrics.light_peers.get(), 1);
	// Its filter: the matching stored statements (and those without topics), none of B.
	let actions = h.event(Event::Notification { peer: 5, bytes: filter_of(&[A]) });
	let sent = sent_to(&h.settle(actions), 5);
	assert_eq!(sent, vec![a1, none, statement(4, &[A])]);
	// Live: A and topic-less ones pass, B does not.
	let a2 = statement(5, &[B, A]);
	let actions = h.admit(&[statement(6, &[B]), a2.clone()]);
	assert_eq!(sent_to(&h.settle(actions), 5), vec![a2]);
}

#[test]
fn a_light_peer_on_statement_1_is_served_as_a_full_one() {
	let mut h = Harness::new(CoreConfig::default());
	h.store.add(statement(1, &[B]));
	let actions = h.open(5, Version::V1, Role::Light);
	assert_eq!(sent_to(&h.settle(actions), 5), vec![statement(1, &[B])]);
}

#[test]
fn a_changed_filter_brings_only_the_statements_the_peer_has_not_had() {
	let mut h = Harness::new(CoreConfig::default());
	let (a, b, c) = (statement(1, &[A]), statement(2, &[B]), statement(3, &[C]));
	for encoding in [&a, &b, &c] {
		h.store.add(encoding.clone());
	}
	h.open(5, Version::V2, Role::Light);
	let actions = h.event(Event::Notification { peer: 5, bytes: filter_of(&[A]) });
	assert_eq!(sent_to(&h.settle(actions), 5), vec![a.clone()]);
	let actions = h.event(Event::Notification { peer: 5, bytes: filter_of(&[A, C]) });
	assert_eq!(sent_to(&h.settle(actions), 5), vec![c.clone()]);
	// A full peer that narrows its filter had everything: nothing is sent again.
	let actions = h.open(6, Version::V2, Role::Full);
	assert_eq!(sent_to(&h.settle(actions), 6).len(), 3);
	let actions = h.event(Event::Notification { peer: 6, bytes: filter_of(&[B]) });
	assert!(h.settle(actions).is_empty());
}

#[test]
fn a_filter_sent_during_an_initial_sync_applies_when_the_sync_ends() {
	let mut h = Harness::new(CoreConfig::default());
	let (a, b) = (statement(1, &[A]), statement(2, &[B]));
	h.store.add(a.clone());
	h.store.add(b.clone());
	let opened = h.open(5, Version::V2, Role::Full);
	// The filter arrives while the first page is being read.
	let during = h.event(Event::Notification { peer: 5, bytes: filter_of(&[A]) });
	assert!(during.is_empty());
	let mut actions = opened;
	actions.extend(during);
	assert_eq!(sent_to(&h.settle(actions), 5), vec![a, b]);
	let live = h.admit(&[statement(3, &[B]), statement(4, &[A])]);
	assert_eq!(sent_to(&h.settle(live), 5), vec![statement(4, &[A])]);
}

#[test]
fn filter_changes_past_the_bound_are_flooding_and_bad_filters_cost_standing() {
	let mut h = Harness::new(CoreConfig::default());
	h.open(5, Version::V2, Role::Light);
	let burst = (FILTER_CHANGES_PER_SECOND * 5) as usize;
	for n in 0..burst {
		let actions =
			h.event(Event::Notification { peer: 5, bytes: filter_of(&[Topic([n as u8; 32])]) });
		h.settle(actions);
	}
	assert_eq!(h.metrics.flooding_detected.get(), 0, "a burst of {burst} is allowed");
	let actions = h.event(Event::Notification { peer: 5, bytes: filter_of(&[A]) });
	assert!(
		matches!(&actions[..], [Action::Ban { peer: 5, reason, .. }] if reason.contains("affinity")),
		"{actions:?}"
	);
	assert_eq!(h.metrics.flooding_detected.get(), 1);
	assert!(h.core.is_banned(&5, h.now));
	let refused = h.open(5, Version::V2, Role::Light);
	assert_eq!(refused, [Action::Close { peer: 5 }]);
	// A filter with no bits: standing lost, and the seventeenth costs the peer its place.
	h.open(6, Version::V2, Role::Light);
	let mut no_bits = vec![1u8];
	no_bits.extend((9u128, 3u32, Vec::<u64>::new()).encode());
	for n in 0..17 {
		let actions = h.event(Event::Notification { peer: 6, bytes: no_bits.clone() });
		assert_eq!(actions.is_empty(), n < 16, "after {} bad filters: {actions:?}", n + 1);
	}
	assert_eq!(h.metrics.bad_notifications.get(), 17);
	assert!(h.core.is_banned(&6, h.now));
}

#[test]
fn a_light_node_sends_its_filter_to_statement_2_peers_paced() {
	let mut h = Harness::new(CoreConfig::default());
	let filter = AffinityFilter::of_topics(3, [A].iter());
	h.event(Event::Interest(filter.clone()));
	let v1_peer = h.open(1, Version::V1, Role::Full);
	assert!(v1_peer.iter().all(|a| !matches!(a, Action::Send { .. })), "{v1_peer:?}");
	let v2_peer = h.open(2, Version::V2, Role::Full);
	let first = v2_peer.iter().find_map(|action| match action {
		Action::Send { peer: 2, id, notification } => Some((*id, notification.clone())),
		_ => None,
	});
	let (id, notification) = first.expect("the filter goes first");
	assert_eq!(notification, v2::encode_affinity(&filter));
	let rest = h.event(Event::Sent { peer: 2, id, outcome: SendOutcome::Delivered });
	h.settle(rest);
	// Two changes within the interval: the newest is sent once the interval has passed.
	h.event(Event::Interest(AffinityFilter::of_topics(3, [A, B].iter())));
	let newest = AffinityFilter::of_topics(3, [A, B, C].iter());
	let too_soon = h.event(Event::Interest(newest.clone()));
	assert!(too_soon.is_empty(), "{too_soon:?}");
	assert!(h.core.next_wakeup() <= h.now + FILTER_INTERVAL);
	let paced = h.advance(FILTER_INTERVAL);
	assert!(
		matches!(&paced[..], [Action::Send { peer: 2, notification, .. }] if *notification == v2::encode_affinity(&newest)),
		"{paced:?}"
	);
}

#[test]
fn a_peer_that_keeps_everything_is_asked_for_everything_instead_of_our_filter() {
	let mut h = Harness::new(CoreConfig::default());
	let filter = AffinityFilter::of_topics(3, [A].iter());
	h.event(Event::Interest(filter.clone()));
	// Known to keep everything before its stream opens: its first filter says so.
	h.event(Event::KeepsEverything { peer: 2 });
	let opened = h.open(2, Version::V2, Role::Full);
	let everything = v2::encode_affinity(&AffinityFilter::everything());
	assert!(
		opened.iter().any(
			|a| matches!(a, Action::Send { peer: 2, notification, .. } if *notification == everything)
		),
		"{opened:?}"
	);
	// Learnt after its stream opened (identify comes later): the filter is sent again.
	let opened = h.open(3, Version::V2, Role::Full);
	let (id, first) = opened
		.iter()
		.find_map(|a| match a {
			Action::Send { peer: 3, id, notification } => Some((*id, notification.clone())),
			_ => None,
		})
		.expect("our filter goes first");
	assert_eq!(first, v2::encode_affinity(&filter));
	let rest = h.event(Event::Sent { peer: 3, id, outcome: SendOutcome::Delivered });
	h.settle(rest);
	assert!(h.event(Event::KeepsEverything { peer: 3 }).is_empty(), "paced");
	let again = h.advance(FILTER_INTERVAL);
	assert!(
		matches!(&again[..], [Action::Send { peer: 3, notification, .. }] if *notification == everything),
		"{again:?}"
	);
}

#[test]
fn a_full_validation_queue_holds_notifications_back_then_drops_what_waited_too_long() {
	let config = CoreConfig { validation_queue: 2, ..CoreConfig::default() };
	let mut h = Harness::new(config);
	h.open(1, Version::V1, Role::Full);
	let encodings: Vec<Vec<u8>> = (0..5).map(|n| statement(n, &[A])).collect();
	let notification = v1::encode(encodings.iter().map(Vec::as_slice));
	let actions = h.event(Event::Notification { peer: 1, bytes: notification });
	let validating: Vec<Hash> = actions
		.iter()
		.filter_map(|a| match a {
			Action::Validate { hash, .. } => Some(*hash),
			_ => None,
		})
		.collect();
	assert_eq!(validating.len(), 2);
	assert!(!h.core.accepts_notifications());
	// A verdict makes room for one more.
	let next = h.event(Event::Verdict { peer: 1, hash: validating[0], result: SubmitResult::New });
	assert_eq!(next.iter().filter(|a| matches!(a, Action::Validate { .. })).count(), 1);
	// Then nothing moves for longer than the wait: the two left are dropped and counted.
	h.advance(VALIDATION_WAIT);
	assert!(h.core.accepts_notifications());
	assert_eq!(h.metrics.ignored.get(), 2);
}

#[test]
fn flooding_statements_and_a_slow_peer_cost_the_peer_its_stream() {
	let config = CoreConfig { rate_limit: 10, ..CoreConfig::default() };
	let mut h = Harness::new(config);
	h.open(1, Version::V2, Role::Full);
	let encodings: Vec<Vec<u8>> = (0..51).map(|n| statement(n, &[A])).collect();
	let bytes = v2::encode_statements(encodings.iter().map(Vec::as_slice));
	let actions = h.event(Event::Notification { peer: 1, bytes });
	assert!(matches!(&actions[..], [Action::Ban { peer: 1, .. }]), "{actions:?}");
	assert_eq!(h.metrics.flooding_detected.get(), 1);
	// A send that times out drops the peer.
	let opened = h.open(2, Version::V2, Role::Full);
	h.settle(opened);
	let actions = h.admit(&[statement(99, &[A])]);
	let Some(Action::Send { id, .. }) =
		actions.into_iter().find(|a| matches!(a, Action::Send { .. }))
	else {
		panic!("nothing sent")
	};
	let closed = h.event(Event::Sent { peer: 2, id, outcome: SendOutcome::TimedOut });
	assert_eq!(closed, [Action::Close { peer: 2 }]);
	assert_eq!(h.core.peer_count(), 0);
}

#[test]
fn reference_propagation_waits_for_the_tick() {
	let config = CoreConfig { propagation: Propagation::Reference, ..CoreConfig::default() };
	let mut h = Harness::new(config);
	let opened = h.open(1, Version::V2, Role::Full);
	h.settle(opened);
	h.store.add(statement(1, &[A]));
	let now = h.event(Event::Admitted(vec![Encoded::from(&statement(1, &[A])[..])]));
	assert!(now.is_empty());
	let early = h.advance(500 * MS);
	assert!(early.is_empty(), "{early:?}");
	let ticked = h.advance(S);
	assert_eq!(sent_to(&h.settle(ticked), 1), vec![statement(1, &[A])]);
}

#[test]
fn a_failed_store_read_pauses_the_sync_then_resumes_from_its_cursor() {
	let mut h = Harness::new(CoreConfig::default());
	h.store.add(statement(1, &[A]));
	let opened = h.open(1, Version::V2, Role::Full);
	let [Action::Read { id, .. }] = opened[..] else { panic!("{opened:?}") };
	let failed = h.event(Event::Page { peer: 1, id, page: Err("disk on fire".into()) });
	assert!(failed.is_empty(), "read again at once: {failed:?}");
	assert_eq!(h.core.next_wakeup(), h.now + READ_RETRY);
	let retried = h.advance(READ_RETRY);
	assert!(
		matches!(retried[..], [Action::Read { peer: 1, after: 0, upto: 1, .. }]),
		"{retried:?}"
	);
	// Past the pause, the core asks for no wake-up in the past (it would spin its driver).
	assert!(h.core.next_wakeup() > h.now);
	assert_eq!(sent_to(&h.settle(retried), 1), vec![statement(1, &[A])]);
}

#[test]
fn a_statement_a_peer_sends_us_while_it_waits_in_that_peers_outbox_is_not_sent_back() {
	let mut h = Harness::new(CoreConfig::default());
	for peer in [1, 2, 3] {
		let opened = h.open(peer, Version::V2, Role::Full);
		h.settle(opened);
	}
	let s = statement(1, &[A]);
	let bytes = v2::encode_statements([&s[..]].into_iter());
	let actions = h.event(Event::Notification { peer: 1, bytes: bytes.clone() });
	let [Action::Validate { hash, .. }] = actions[..] else { panic!("{actions:?}") };
	h.event(Event::Verdict { peer: 1, hash, result: SubmitResult::New });
	h.store.add(s.clone());
	h.event(Event::Admitted(vec![Encoded::from(&s[..])]));
	// Within the coalescing window, peer 2 forwards it to us too.
	h.event(Event::Notification { peer: 2, bytes });
	assert_eq!(h.metrics.known_received.get(), 1);
	let flushed = h.advance(50 * MS);
	let sent = h.settle(flushed);
	assert_eq!(sent_to(&sent, 3), vec![s]);
	assert!(sent_to(&sent, 1).is_empty() && sent_to(&sent, 2).is_empty(), "{sent:?}");
}

#[test]
fn expired_statements_are_sent_neither_live_nor_by_initial_sync() {
	let config = CoreConfig { unix_at_start: 2_000, ..CoreConfig::default() };
	let mut h = Harness::new(config);
	let old = TestStatement::new().expiry(1_500, 1).data(*b"gone").unsigned().encode();
	let fresh = statement(2, &[A]);
	h.store.add(old.clone());
	h.store.add(fresh.clone());
	let opened = h.open(1, Version::V2, Role::Full);
	assert_eq!(sent_to(&h.settle(opened), 1), vec![fresh.clone()]);
	let live = h.admit(&[old, statement(3, &[A])]);
	assert_eq!(sent_to(&h.settle(live), 1), vec![statement(3, &[A])]);
}
