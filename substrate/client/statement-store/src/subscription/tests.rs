use super::{
	handle::to_primitives,
	queue::{Encoded, Queue},
	registry::{matches, Handed, Subscriptions},
};
use crate::{
	error::Error,
	index::schema::{Id, Record},
	store::Store,
};
use parking_lot::Mutex;
use statement_primitives::testing::{ed25519_pair, TestStatement};
use statement_primitives::{Hash, Topic, TopicFilter};
use std::sync::{atomic::Ordering, Arc};
use tokio::sync::Notify;

fn queue(bound: usize) -> Queue {
	Queue { state: Mutex::default(), ready: Notify::new(), bound, total: None, spills: false }
}

#[test]
fn a_queue_past_its_bound_is_emptied_and_reports_the_lag() {
	let queue = queue(10);
	let item: Encoded = Arc::from(vec![0u8; 4]);
	assert!(queue.push(&item) && queue.push(&item));
	assert!(!queue.push(&item), "12 bytes do not fit in 10");
	assert!(queue.state.lock().items.is_empty(), "the queue is freed");
	assert!(matches!(queue.take(100), Err(Error::Lagged { queue_bytes: 10 })));
}

#[test]
fn one_statement_larger_than_the_bound_still_fits_an_empty_queue() {
	let queue = queue(10);
	assert!(queue.push(&Arc::from(vec![0u8; 50])));
	assert_eq!(queue.take(1).unwrap().len(), 1);
}

#[test]
fn take_stops_at_max_bytes_but_always_returns_one() {
	let queue = queue(100);
	for n in 0..5u8 {
		queue.push(&Arc::from(vec![n; 10]));
	}
	assert_eq!(queue.take(25).unwrap().len(), 2);
	assert_eq!(queue.take(1).unwrap().len(), 1);
	assert_eq!(queue.state.lock().bytes, 20);
}

#[test]
fn a_lag_stays_a_lag_through_the_primitives_error() {
	let lagged = to_primitives(Error::Lagged { queue_bytes: 10 });
	assert_eq!(lagged, statement_primitives::Error::Lagged { queue_bytes: 10 });
	assert_eq!(lagged.to_string(), Error::Lagged { queue_bytes: 10 }.to_string());
}

fn signed(n: u8, topic: u8) -> statement_primitives::Statement {
	TestStatement::new()
		.expiry(u32::MAX, u32::from(n))
		.topic(0, Topic([topic; 32]))
		.data(vec![n; 64])
		.signed_ed25519(&ed25519_pair(u32::from(n)))
}

#[tokio::test]
async fn through_the_trait_a_subscriber_gets_replay_then_live_then_its_lag() {
	use statement_primitives::{StatementAllowance, StatementSource, StatementStore, SubmitResult};
	let dir = tempfile::tempdir().unwrap();
	let allowances =
		crate::allowance::MapAllowances::new().with_default(StatementAllowance::new(1000, 1 << 20));
	let concrete =
		Store::open(crate::config::Config::new(dir.path()), Arc::new(allowances)).unwrap();
	let store: Arc<dyn StatementStore> = Arc::new(concrete.clone());
	let submit = |n, topic| {
		assert_eq!(store.submit(signed(n, topic), StatementSource::Local), SubmitResult::New);
	};
	for n in 0..3 {
		submit(n, 1);
	}
	submit(3, 2);
	let filter = TopicFilter::MatchAll(vec![Topic([1; 32])]);
	let mut subscription = store.subscribe_with_queue(filter, 400).unwrap();
	assert_eq!(subscription.replay_total(), 3);
	let mut replayed = Vec::new();
	while let Some(page) = subscription.next_replay_page(1).unwrap() {
		assert_eq!(page.len(), 1, "a page past max_bytes still carries one statement");
		replayed.extend(page);
	}
	let expected: Vec<_> = (0..3).map(|n| signed(n, 1).encode()).collect();
	assert_eq!(replayed, expected);

	submit(4, 2);
	submit(5, 1);
	let live = subscription.next_live(usize::MAX).await.unwrap();
	assert_eq!(live.iter().map(|item| item.to_vec()).collect::<Vec<_>>(), [signed(5, 1).encode()]);
	assert!(subscription.try_next_live(usize::MAX).unwrap().is_empty());

	// Three statements of some 200 bytes each cannot all fit the 400-byte bound.
	for n in 6..9 {
		submit(n, 1);
	}
	concrete.wait_for_matching();
	let lag = statement_primitives::Error::Lagged { queue_bytes: 400 };
	assert_eq!(subscription.check(), Err(lag.clone()));
	assert_eq!(subscription.try_next_live(usize::MAX), Err(lag.clone()));
	assert_eq!(subscription.next_live(usize::MAX).await, Err(lag));
	assert_eq!(concrete.inner.subscriptions.len(), 0, "a lagging subscriber is forgotten");
	drop(subscription);

	let kept = store.subscribe(TopicFilter::Any).unwrap();
	assert_eq!(concrete.inner.subscriptions.len(), 1);
	drop(kept);
	assert_eq!(concrete.inner.subscriptions.len(), 0, "dropping unsubscribes");
}

#[test]
fn through_the_trait_pages_return_every_statement_once_in_admission_order() {
	use statement_primitives::{StatementAllowance, StatementSource, StatementStore};
	let dir = tempfile::tempdir().unwrap();
	let allowances =
		crate::allowance::MapAllowances::new().with_default(StatementAllowance::new(1000, 1 << 20));
	let store: Arc<dyn StatementStore> = Arc::new(
		Store::open(crate::config::Config::new(dir.path()), Arc::new(allowances)).unwrap(),
	);
	let expected: Vec<_> = (0..10)
		.map(|n| {
			let statement = signed(n, n % 3);
			store.submit(statement.clone(), StatementSource::Local);
			(statement.hash(), statement.encode())
		})
		.collect();
	let mut seen = Vec::new();
	let mut after = None;
	loop {
		let page = store.statements_page(after, 4, usize::MAX).unwrap();
		assert!(page.statements.len() <= 4);
		seen.extend(page.statements);
		if page.next.is_none() {
			break;
		}
		after = page.next;
	}
	assert_eq!(seen, expected);
	let one = store.statements_page(None, 10, 1).unwrap();
	assert_eq!(one.statements.len(), 1, "past the first statement, max_bytes holds");
}

fn record(id: Id, topics: &[u8]) -> (Hash, Record, Vec<u8>) {
	let record = Record {
		id,
		expiry: u64::MAX,
		account: [0; 32],
		data_len: 8,
		encoded_len: 8,
		channel: None,
		decryption_key: None,
		topics: topics.iter().map(|n| Topic([*n; 32])).collect(),
	};
	([id as u8; 32], record, vec![id as u8; 8])
}

#[test]
fn a_commit_numbered_before_a_subscriber_registered_is_not_streamed_to_it() {
	let subscriptions = Subscriptions::with_budget(usize::MAX);
	let shared = &subscriptions.shared;
	// Commit 1 is numbered (under the view lock) before the subscriber registers, and
	// matched after: the replay has it, the stream must not.
	shared.last_batch.store(1, Ordering::Release);
	let (_, queue) = subscriptions.add(TopicFilter::Any, 1 << 20).unwrap();
	let early = Handed { batch: 1, bytes: 8, added: vec![record(1, &[1])] };
	let late = Handed { batch: 2, bytes: 8, added: vec![record(2, &[1])] };
	shared.match_commit(&early, &mut Vec::new());
	assert!(queue.take(usize::MAX).unwrap().is_empty(), "commit 1 streamed twice");
	shared.match_commit(&late, &mut Vec::new());
	assert_eq!(queue.take(usize::MAX).unwrap().len(), 1);
}

#[test]
fn commits_never_wait_on_subscribers_that_do_not_read() {
	let subscriptions = Arc::new(Subscriptions::with_budget(usize::MAX));
	let queues: Vec<_> =
		(0..1_000).map(|_| subscriptions.add(TopicFilter::Any, 1 << 20).unwrap().1).collect();
	// The matcher is held up (its index locked here); nobody reads any queue. Commits must
	// still go through: they hand their statements over and never match themselves.
	let index = subscriptions.shared.index.lock();
	let (done, finished) = std::sync::mpsc::channel();
	let committer = {
		let subscriptions = subscriptions.clone();
		std::thread::spawn(move || {
			for id in 0..200u64 {
				subscriptions.notify(vec![record(id, &[1])]);
			}
			let _ = done.send(());
		})
	};
	let outcome = finished.recv_timeout(std::time::Duration::from_secs(60));
	let matched = subscriptions.shared.matched_batch.load(Ordering::Acquire);
	drop(index);
	assert!(outcome.is_ok(), "200 commits did not return in 60 s with the matcher held up");
	assert!(matched < 200, "the commits were matched while the matcher was held up");
	committer.join().unwrap();
	subscriptions.flush();
	for queue in &queues {
		assert_eq!(queue.take(usize::MAX).unwrap().len(), 200);
	}
}

#[test]
fn a_statement_is_matched_only_against_subscribers_listed_under_its_topics() {
	let subscriptions = Subscriptions::with_budget(usize::MAX);
	// 10,000 subscribers on other topics cost a statement nothing.
	for n in 0..10_000u32 {
		let mut other = [0u8; 32];
		other[..4].copy_from_slice(&n.to_le_bytes());
		other[31] = 0xee;
		let filter = match n % 2 {
			0 => TopicFilter::MatchAll(vec![Topic(other), Topic([1; 32])]),
			_ => TopicFilter::MatchAny(vec![Topic(other), Topic([0xee; 32])]),
		};
		subscriptions.add(filter, 1 << 20).unwrap();
	}
	let (all, _) = subscriptions.add(TopicFilter::MatchAll(vec![Topic([1; 32])]), 1 << 20).unwrap();
	let (any, _) = subscriptions
		.add(TopicFilter::MatchAny(vec![Topic([2; 32]), Topic([1; 32])]), 1 << 20)
		.unwrap();
	let (every, _) = subscriptions.add(TopicFilter::Any, 1 << 20).unwrap();
	let index = subscriptions.shared.index.lock();
	let mut candidates = Vec::new();
	index.candidates(&[Topic([1; 32]), Topic([2; 32])], &mut candidates);
	candidates.sort_unstable();
	assert_eq!(candidates, [all, any, every], "listed once each, nobody else");
	index.candidates(&[Topic([9; 32])], &mut candidates);
	assert_eq!(candidates, [every]);
	drop(index);
	subscriptions.remove(any);
	subscriptions.remove(every);
	let index = subscriptions.shared.index.lock();
	index.candidates(&[Topic([1; 32]), Topic([2; 32])], &mut candidates);
	assert_eq!(candidates, [all], "unsubscribing unlists");
	assert!(!index.by_topic.contains_key(&Topic([2; 32])), "an empty list is removed");
}

#[test]
fn filters_match_on_topics_alone() {
	let (a, b, c) = (Topic([1; 32]), Topic([2; 32]), Topic([3; 32]));
	assert!(matches(&TopicFilter::Any, &[]));
	assert!(matches(&TopicFilter::MatchAll(vec![a, b]), &[b, c, a]));
	assert!(!matches(&TopicFilter::MatchAll(vec![a, b]), &[a]));
	assert!(matches(&TopicFilter::MatchAll(vec![]), &[a]));
	assert!(matches(&TopicFilter::MatchAny(vec![c, b]), &[b]));
	assert!(!matches(&TopicFilter::MatchAny(vec![]), &[a]));
}

#[test]
fn a_commit_with_no_subscriber_to_match_is_done_without_the_matcher() {
	let subscriptions = Subscriptions::with_budget(usize::MAX);
	// The matcher is held up (its index locked here): a commit it had to match would stay
	// unmatched until the lock goes.
	let index = subscriptions.shared.index.lock();
	subscriptions.notify(vec![record(1, &[1])]);
	let matched = subscriptions.shared.matched_batch.load(Ordering::Acquire);
	drop(index);
	assert_eq!(matched, 1, "a commit nobody can match waited for the matcher thread");
	// With a subscriber, the next one is the matcher's to deliver.
	let (_, queue) = subscriptions.add(TopicFilter::Any, 1 << 20).unwrap();
	subscriptions.notify(vec![record(2, &[1])]);
	subscriptions.flush();
	assert_eq!(queue.take(usize::MAX).unwrap().len(), 1);
}
