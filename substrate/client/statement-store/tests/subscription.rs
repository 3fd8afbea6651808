//! Subscriptions and dumps in bounded memory: paged replay, bounded live queues that drop a
//! lagging subscriber, nothing missed or repeated across replay and live, paged dumps.

mod common;

use common::*;
use statement_primitives::{
	Error as PrimitivesError, Hash, StatementSource, StatementStore, SubmitResult, TopicFilter,
	SUBSCRIPTION_STATE_BYTES,
};
use statement_store::{Error, Subscription};
use std::collections::HashSet;

const LOCAL: StatementSource = StatementSource::Local;

/// Statement `n` of a run: its own signer, topics `n % 3` and `10 + n % 2`, `size` data bytes.
fn numbered(n: u32, size: usize) -> statement_primitives::Statement {
	let mut data = vec![0u8; size.max(4)];
	data[..4].copy_from_slice(&n.to_le_bytes());
	expiring(3600, n, &[n % 3, 10 + n % 2]).data(data).signed_ed25519(&ed25519_pair(n % 50))
}

fn submit_all(store: &statement_store::Store, from: u32, to: u32, size: usize) -> Vec<Hash> {
	(from..to)
		.map(|n| {
			let statement = numbered(n, size);
			assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
			statement.hash()
		})
		.collect()
}

fn replay_pages(subscription: &mut Subscription, max_bytes: usize) -> Vec<Vec<Vec<u8>>> {
	let mut pages = Vec::new();
	while let Some(page) = subscription.next_replay_page(max_bytes).unwrap() {
		pages.push(page);
	}
	pages
}

/// A store in `dir` whose subscriptions together have `budget` bytes.
fn with_budget(dir: &std::path::Path, budget: usize) -> statement_store::Store {
	let mut config = config(dir, &TestClock::new());
	config.subscription_budget_bytes = budget;
	statement_store::Store::open(config, allowances(1000, 1 << 24)).unwrap()
}

fn hash_of(encoding: &[u8]) -> Hash {
	statement_primitives::hash_encoded(encoding)
}

#[test]
fn a_subscriber_that_never_reads_is_dropped_past_its_queue_bound_and_forgotten() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let subscription = store.subscribe_with_queue(TopicFilter::Any, 8 * 1024).unwrap();
	assert_eq!(store.metrics().subscriptions, 1);
	// About 60 KiB of statements, never read.
	submit_all(&store, 0, 120, 500);
	// Matching runs on its own thread, a little after each commit.
	store.wait_for_matching();
	assert_eq!(store.metrics().subscriptions, 0, "the store forgot the lagging subscriber");
	assert!(subscription.is_lagged());
	assert!(matches!(subscription.try_next_live(usize::MAX), Err(Error::Lagged { .. })));
	assert!(
		subscription.peak_buffered_bytes() <= 8 * 1024,
		"{}",
		subscription.peak_buffered_bytes()
	);
	// Others are still served.
	let reader = store.subscribe_with_queue(TopicFilter::Any, 8 * 1024).unwrap();
	submit_all(&store, 120, 121, 500);
	store.wait_for_matching();
	assert_eq!(reader.try_next_live(usize::MAX).unwrap().len(), 1);
}

/// Many stuck subscribers, each within its own bound, together past the store's budget: the
/// ones furthest behind are dropped first with the lag error, the queues together never hold
/// more than the budget, and a subscriber that reads is never dropped.
#[test]
fn stuck_subscribers_together_stay_within_one_budget_furthest_behind_dropped_first() {
	let dir = tempfile::tempdir().unwrap();
	// Room for the 101 subscribers' state (2 KiB each) in half of it.
	let budget = 512 * 1024;
	let store = with_budget(dir.path(), budget);
	let reader = store.subscribe_with_queue(TopicFilter::Any, 1 << 20).unwrap();
	let mut stuck = Vec::new();
	let mut peak = 0;
	let mut read = 0;
	// A new stuck subscriber every 4 statements: the earlier, the further behind. Each one's
	// own bound (1 MiB) is never reached; only the budget is.
	for n in 0..400u32 {
		if n % 4 == 0 {
			stuck.push(store.subscribe_with_queue(TopicFilter::Any, 1 << 20).unwrap());
		}
		submit_all(&store, n, n + 1, 500);
		store.wait_for_matching();
		let queued = store.metrics().subscription_queued_bytes as usize;
		peak = peak.max(queued);
		read += reader.try_next_live(usize::MAX).expect("a reader is never dropped").len();
	}
	assert!(peak <= budget, "the queues together held {peak} bytes, past the budget of {budget}");
	assert_eq!(read, 400, "the reader got every statement");
	let lagged: Vec<bool> = stuck.iter().map(Subscription::is_lagged).collect();
	let dropped = lagged.iter().filter(|lagged| **lagged).count();
	assert!(dropped > 0, "the budget never dropped anyone");
	assert_eq!(store.metrics().subscriptions_dropped_for_budget, dropped as u64);
	// Dropped in order of how far behind they were: the oldest ones, and no younger one before
	// an older one.
	assert!(lagged[0], "{lagged:?}");
	assert!(!lagged[lagged.len() - 1], "{lagged:?}");
	let first_kept = lagged.iter().position(|lagged| !lagged).unwrap();
	assert!(lagged[first_kept..].iter().all(|lagged| !lagged), "{lagged:?}");
	assert!(matches!(stuck[0].try_next_live(usize::MAX), Err(Error::Lagged { .. })));
	// Dropping the rest gives their bytes back.
	drop(stuck);
	assert_eq!(store.metrics().subscription_queued_bytes, 0);
	reader.try_next_live(usize::MAX).unwrap();
}

/// The open subscriptions' own state may take half the budget: one more is refused with a
/// typed error, counted, and admitted again once one closes. Gossip's watcher is not counted.
#[test]
fn subscriptions_past_half_the_budget_are_refused_until_one_closes() {
	let dir = tempfile::tempdir().unwrap();
	let store = with_budget(dir.path(), 20 * SUBSCRIPTION_STATE_BYTES);
	let _gossip = store.watch_admissions(1 << 20);
	let mut open: Vec<_> = (0..10).map(|_| store.subscribe(TopicFilter::Any).unwrap()).collect();
	match store.subscribe(TopicFilter::Any) {
		Err(Error::Query(PrimitivesError::TooManySubscriptions { open, share })) => {
			assert_eq!((open, share), (10, 10 * SUBSCRIPTION_STATE_BYTES));
		}
		other => panic!("the 11th subscription was not refused: {:?}", other.err()),
	}
	// Through the trait too, as the RPC server sees it.
	let refused = StatementStore::subscribe(&store, TopicFilter::Any).err();
	assert!(matches!(refused, Some(PrimitivesError::TooManySubscriptions { .. })), "{refused:?}");
	assert_eq!(store.metrics().subscriptions_refused_for_budget, 2);
	assert_eq!(store.metrics().subscriptions, 11, "ten and gossip's watcher");
	open.pop();
	open.push(store.subscribe(TopicFilter::Any).expect("room again once one closed"));
}

/// What a reader takes but holds unsent counts as queued: against the subscriber's own bound,
/// and against the budget, where it drops the subscribers furthest behind; released, it
/// counts no more.
#[test]
fn bytes_held_unsent_count_against_the_bound_and_the_budget() {
	let dir = tempfile::tempdir().unwrap();
	let budget = 256 * 1024;
	let store = with_budget(dir.path(), budget);

	// Held and released: counted in between, not after.
	let reader = store.subscribe_with_queue(TopicFilter::Any, 64 * 1024).unwrap();
	reader.hold(10_000).unwrap();
	assert_eq!(store.metrics().subscription_queued_bytes, 10_000);
	reader.release(10_000);
	assert_eq!(store.metrics().subscription_queued_bytes, 0);

	// Against its own bound: what is held plus what arrives may not pass it.
	reader.hold(60 * 1024).unwrap();
	submit_all(&store, 0, 20, 500);
	store.wait_for_matching();
	assert!(reader.is_lagged(), "held 60 KiB and ~10 KiB arrived, past the 64 KiB bound");
	assert_eq!(store.metrics().subscription_queued_bytes, 0, "a dropped one counts nothing");
	reader.release(60 * 1024);
	assert_eq!(store.metrics().subscription_queued_bytes, 0, "released after the drop: no-op");

	// Against the budget: the ones holding most are dropped first, the idle one stays.
	let idle = store.subscribe_with_queue(TopicFilter::Any, 1 << 20).unwrap();
	let holders: Vec<_> =
		(0..8).map(|_| store.subscribe_with_queue(TopicFilter::Any, 1 << 20).unwrap()).collect();
	let mut refused = 0;
	for (n, holder) in holders.iter().enumerate() {
		if holder.hold((n + 1) * 10 * 1024).is_err() {
			refused += 1;
		}
	}
	// 9 x 2 KiB of state plus 10 + 20 + ... + 70 KiB held passes 256 KiB at the 7th hold,
	// which sheds to 7/8 of it: the 7th (70 KiB) and 6th (60 KiB) go; the 8th then fits.
	assert_eq!(refused, 1, "only the hold that passed the budget failed");
	let lagged: Vec<bool> = holders.iter().map(Subscription::is_lagged).collect();
	assert_eq!(lagged, [false, false, false, false, false, true, true, false]);
	assert!(!holders[0].is_lagged(), "the one holding least stays");
	assert!(!idle.is_lagged(), "one with nothing queued is never dropped");
	let queued = store.metrics().subscription_queued_bytes as usize;
	assert!(queued + 10 * SUBSCRIPTION_STATE_BYTES <= budget, "{queued} bytes queued");
	assert!(store.metrics().subscriptions_dropped_for_budget >= 1);
}

#[test]
fn dropping_a_subscription_forgets_it_at_once() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let subscription = store.subscribe(TopicFilter::Any).unwrap();
	let other = store.subscribe(TopicFilter::MatchAll(vec![topic(1)])).unwrap();
	assert_eq!(store.metrics().subscriptions, 2);
	drop(subscription);
	assert_eq!(store.metrics().subscriptions, 1, "forgotten before any commit");
	drop(other);
	assert_eq!(store.metrics().subscriptions, 0);
}

#[test]
fn a_replay_larger_than_the_queue_bound_comes_in_pages_of_bounded_size() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	// About 300 KiB stored; each encoding is a little over 1,000 bytes.
	let hashes = submit_all(&store, 0, 300, 1000);
	let page_bytes = 8 * 1024;
	for (filter, expected) in [
		(TopicFilter::Any, 300),
		(TopicFilter::MatchAll(vec![]), 300),
		(TopicFilter::MatchAll(vec![topic(1), topic(10)]), 50),
		(TopicFilter::MatchAny(vec![topic(0), topic(11)]), 200),
	] {
		let mut subscription = store.subscribe_with_queue(filter.clone(), 16 * 1024).unwrap();
		assert_eq!(subscription.replay_total(), expected, "{filter:?}");
		let pages = replay_pages(&mut subscription, page_bytes);
		assert!(pages.len() >= expected as usize * 1000 / page_bytes, "{filter:?}: paged");
		for page in &pages {
			assert!(page.iter().map(Vec::len).sum::<usize>() <= page_bytes, "{filter:?}");
		}
		assert!(subscription.peak_buffered_bytes() <= page_bytes, "{filter:?}");
		let replayed: Vec<Hash> = pages.iter().flatten().map(|body| hash_of(body)).collect();
		let wanted: Vec<Hash> = hashes
			.iter()
			.enumerate()
			.filter(|(n, _)| match &filter {
				TopicFilter::MatchAll(topics) if !topics.is_empty() => n % 3 == 1 && n % 2 == 0,
				TopicFilter::MatchAny(_) => n % 3 == 0 || n % 2 == 1,
				_ => true,
			})
			.map(|(_, hash)| *hash)
			.collect();
		assert_eq!(replayed, wanted, "{filter:?}: every match once, in admission order");
	}
}

#[test]
fn a_statement_removed_before_its_replay_page_is_skipped() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let hashes = submit_all(&store, 0, 40, 100);
	let mut subscription = store.subscribe(TopicFilter::Any).unwrap();
	let first = subscription.next_replay_page(1).unwrap().unwrap();
	assert_eq!(first.len(), 1);
	store.remove(&hashes[1]).unwrap();
	let mut replayed: Vec<Hash> = first.iter().map(|body| hash_of(body)).collect();
	replayed.extend(replay_pages(&mut subscription, 1).iter().flatten().map(|body| hash_of(body)));
	let mut expected = hashes.clone();
	expected.remove(1);
	assert_eq!(replayed, expected);
}

#[test]
fn no_statement_is_missed_or_repeated_across_replay_and_live_under_concurrent_submits() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	submit_all(&store, 0, 300, 64);
	let writer = {
		let store = store.clone();
		std::thread::spawn(move || submit_all(&store, 300, 1500, 64))
	};
	// Subscribe while the writer commits, then replay in small pages while it goes on.
	while store.len() < 600 {
		std::thread::yield_now();
	}
	let mut any = store.subscribe(TopicFilter::Any).unwrap();
	let mut some = store.subscribe(TopicFilter::MatchAny(vec![topic(2), topic(11)])).unwrap();
	let mut seen_any: Vec<Hash> = Vec::new();
	let mut seen_some: Vec<Hash> = Vec::new();
	while let Some(page) = any.next_replay_page(2048).unwrap() {
		seen_any.extend(page.iter().map(|body| hash_of(body)));
	}
	while let Some(page) = some.next_replay_page(2048).unwrap() {
		seen_some.extend(page.iter().map(|body| hash_of(body)));
	}
	let mut all = (0..300).map(|n| numbered(n, 64).hash()).collect::<Vec<_>>();
	all.extend(writer.join().unwrap());
	store.wait_for_matching();
	for item in any.try_next_live(usize::MAX).unwrap() {
		seen_any.push(hash_of(&item));
	}
	for item in some.try_next_live(usize::MAX).unwrap() {
		seen_some.push(hash_of(&item));
	}
	assert_eq!(seen_any.len(), all.len(), "nothing repeated, nothing missed");
	assert_eq!(seen_any.iter().collect::<HashSet<_>>(), all.iter().collect::<HashSet<_>>());
	let wanted: Vec<Hash> = all
		.iter()
		.enumerate()
		.filter(|(n, _)| n % 3 == 2 || n % 2 == 1)
		.map(|(_, hash)| *hash)
		.collect();
	assert_eq!(seen_some.len(), wanted.len());
	assert_eq!(seen_some.iter().collect::<HashSet<_>>(), wanted.iter().collect::<HashSet<_>>());
}

#[test]
fn dump_pages_return_every_statement_once_while_writers_commit_between_pages() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	let before = submit_all(&store, 0, 700, 100);
	let mut seen: Vec<Hash> = Vec::new();
	let mut after = 0;
	let mut extra = 700;
	loop {
		let page = store.statements_page(after, 64, 4096).unwrap();
		assert!(page.statements.len() <= 64);
		assert!(page.statements.iter().map(|(_, _, body)| body.len()).sum::<usize>() <= 4096);
		seen.extend(page.statements.iter().map(|(_, hash, _)| *hash));
		// A writer commits between pages: the walk holds no lock here.
		submit_all(&store, extra, extra + 1, 100);
		extra += 1;
		match page.next {
			Some(next) => after = next,
			None => break,
		}
	}
	let unique: HashSet<_> = seen.iter().collect();
	assert_eq!(unique.len(), seen.len(), "no statement twice");
	assert!(before.iter().all(|hash| unique.contains(hash)), "every stored statement once");
	assert_eq!(store.statements().unwrap().len(), 700 + (extra - 700) as usize);
}

#[test]
fn gossip_sees_stored_statements_up_to_the_watermark_and_new_ones_on_its_watch_once() {
	let dir = tempfile::tempdir().unwrap();
	let store = open(dir.path(), &TestClock::new());
	assert_eq!(StatementStore::admission_watermark(&store), 0);
	let before = submit_all(&store, 0, 40, 100);
	let watch = StatementStore::watch_admissions(&store, 1 << 20).unwrap();
	assert_eq!(watch.replay_total(), 0, "a watch replays nothing");
	let upto = StatementStore::admission_watermark(&store);
	let after = submit_all(&store, 40, 50, 100);

	// The journal up to the watermark, in pages of at most ~1 KiB past the first statement.
	let mut cursor = 0;
	let mut synced = Vec::new();
	loop {
		let page = StatementStore::admitted_page(&store, cursor, upto, 1024).unwrap();
		assert!(page.statements.len() <= 7, "{} statements in a 1 KiB page", page.statements.len());
		synced.extend(page.statements.iter().map(|(hash, _)| *hash));
		match page.next {
			Some(next) => cursor = next,
			None => break,
		}
	}
	assert_eq!(synced, before, "exactly the statements admitted up to the watermark, in order");

	// The watch has exactly the later ones.
	store.wait_for_matching();
	let live: Vec<Hash> =
		watch.try_next_live(usize::MAX).unwrap().iter().map(|encoding| hash_of(encoding)).collect();
	assert_eq!(live, after);
	assert!(watch.try_next_live(usize::MAX).unwrap().is_empty());
}

/// Whether a statement with `topics` matches `filter`, written out from the RPC's definition.
fn wanted(filter: &TopicFilter, topics: &[u32]) -> bool {
	let has = |t: &statement_primitives::Topic| topics.iter().any(|n| topic(*n) == *t);
	match filter {
		TopicFilter::Any => true,
		TopicFilter::MatchAll(all) => all.iter().all(has),
		TopicFilter::MatchAny(any) => any.iter().any(has),
	}
}

/// A random filter: `any`, `matchAll` of 1-4 topics or `matchAny` of 1-128, over a few
/// topics that statements use and many they do not.
fn random_filter(rng: &mut impl rand::Rng) -> TopicFilter {
	fn topics(
		rng: &mut impl rand::Rng,
		count: usize,
		range: u32,
	) -> Vec<statement_primitives::Topic> {
		let mut picked: Vec<u32> = (0..count).map(|_| rng.gen_range(0..range)).collect();
		picked.sort_unstable();
		picked.dedup();
		picked.into_iter().map(topic).collect()
	}
	match rng.gen_range(0..10) {
		0 => TopicFilter::Any,
		1..=5 => {
			let count = rng.gen_range(1..=4);
			TopicFilter::MatchAll(topics(rng, count, 8))
		}
		_ => {
			let count = rng.gen_range(1..=128);
			TopicFilter::MatchAny(topics(rng, count, 200))
		}
	}
}

/// Exactly once, to exactly the matching subscribers, across replay and live: statements on
/// random topics are submitted from two threads while subscriptions with random filters come
/// and go. Every subscription sees, over its replay and its live stream, each statement its
/// filter matches once and no other; one dropped early saw only matching statements, once.
#[test]
fn every_matching_subscriber_gets_each_statement_once_under_concurrent_subscribes() {
	use rand::{rngs::StdRng, Rng, SeedableRng};
	use std::collections::HashMap;
	for seed in 0..4u64 {
		let dir = tempfile::tempdir().unwrap();
		let clock = TestClock::new();
		let store =
			statement_store::Store::open(config(dir.path(), &clock), allowances(10_000, 1 << 26))
				.unwrap();
		let submitted = std::sync::Mutex::new(HashMap::<Hash, Vec<u32>>::new());
		let go = std::sync::atomic::AtomicBool::new(false);
		std::thread::scope(|scope| {
			for writer in 0..2u32 {
				let (store, submitted, go) = (&store, &submitted, &go);
				scope.spawn(move || {
					let mut rng = StdRng::seed_from_u64(seed * 100 + u64::from(writer));
					while !go.load(std::sync::atomic::Ordering::Relaxed) {
						std::thread::yield_now();
					}
					for n in 0..200u32 {
						let count = rng.gen_range(1..=4);
						let mut topics: Vec<u32> =
							(0..count).map(|_| rng.gen_range(0..8)).collect();
						topics.sort_unstable();
						topics.dedup();
						let statement = expiring(3600, n, &topics)
							.data(vec![writer as u8; 16 + n as usize % 64])
							.signed_ed25519(&ed25519_pair(writer * 1000 + n % 40));
						assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
						submitted.lock().unwrap().insert(statement.hash(), topics);
					}
				});
			}
			let mut rng = StdRng::seed_from_u64(seed);
			let mut open: Vec<(TopicFilter, Subscription, Vec<Hash>)> = Vec::new();
			let mut checked_dropped = 0;
			go.store(true, std::sync::atomic::Ordering::Relaxed);
			for _ in 0..120 {
				let filter = random_filter(&mut rng);
				let mut subscription = store.subscribe_with_queue(filter.clone(), 1 << 24).unwrap();
				let mut seen = Vec::new();
				while let Some(page) = subscription.next_replay_page(4096).unwrap() {
					seen.extend(page.iter().map(|body| hash_of(body)));
				}
				open.push((filter, subscription, seen));
				for (_, subscription, seen) in &mut open {
					for item in subscription.try_next_live(usize::MAX).unwrap() {
						seen.push(hash_of(&item));
					}
				}
				if rng.gen_bool(0.3) {
					let (filter, subscription, seen) =
						open.swap_remove(rng.gen_range(0..open.len()));
					drop(subscription);
					let submitted = submitted.lock().unwrap();
					let unique: HashSet<&Hash> = seen.iter().collect();
					assert_eq!(unique.len(), seen.len(), "seed {seed}: a statement came twice");
					for hash in &seen {
						// A statement is recorded just after its submit returns: wait for it.
						if let Some(topics) = submitted.get(hash) {
							assert!(
								wanted(&filter, topics),
								"seed {seed}: {filter:?} got {topics:?}"
							);
						}
					}
					checked_dropped += 1;
				}
				std::thread::sleep(std::time::Duration::from_micros(rng.gen_range(0..500)));
			}
			assert!(checked_dropped > 0);
			// Everything written: what each open subscription saw is exactly what it matches.
			while submitted.lock().unwrap().len() < 400 {
				std::thread::yield_now();
			}
			store.wait_for_matching();
			let submitted = submitted.lock().unwrap();
			for (filter, subscription, mut seen) in open {
				for item in subscription.try_next_live(usize::MAX).unwrap() {
					seen.push(hash_of(&item));
				}
				let unique: HashSet<Hash> = seen.iter().copied().collect();
				assert_eq!(unique.len(), seen.len(), "seed {seed}: {filter:?}: a statement twice");
				let expected: HashSet<Hash> = submitted
					.iter()
					.filter(|(_, topics)| wanted(&filter, topics))
					.map(|(hash, _)| *hash)
					.collect();
				assert_eq!(unique, expected, "seed {seed}: {filter:?}");
			}
		});
	}
}

/// Every replay page of a filter.
fn replayed(replay: &mut statement_store::FilterReplay) -> Vec<Vec<u8>> {
	let mut all = Vec::new();
	while let Some(page) = replay.next_page(64 * 1024).unwrap() {
		all.extend(page);
	}
	all
}

/// What is queued for a filter subscription now, with each item's filter ids.
fn queued(subscription: &statement_store::FilterSubscription) -> Vec<(Vec<u8>, Vec<u64>)> {
	subscription
		.try_next_live(usize::MAX)
		.unwrap()
		.into_iter()
		.map(|(encoded, ids)| (encoded.to_vec(), ids.to_vec()))
		.collect()
}

#[test]
fn a_filter_set_replays_each_filter_and_queues_each_new_statement_once_with_its_filters() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	let before = simple(1, &[1, 2], b"before");
	assert_eq!(store.submit(before.clone(), LOCAL), SubmitResult::New);
	let subscription = store.subscribe_filters(1 << 20).unwrap();
	let mut one = subscription.add_filter(7, TopicFilter::MatchAll(vec![topic(1)])).unwrap();
	assert_eq!(one.total(), 1);
	assert_eq!(replayed(&mut one), vec![before.encode()]);
	let both = simple(2, &[1, 2], b"both");
	assert_eq!(store.submit(both.clone(), LOCAL), SubmitResult::New);
	// Filter 8 comes after `both` was stored: `both` is its replay's, never its live stream's.
	let mut two = subscription.add_filter(8, TopicFilter::MatchAll(vec![topic(2)])).unwrap();
	let mut replay_two = replayed(&mut two);
	replay_two.sort();
	let mut expected = vec![before.encode(), both.encode()];
	expected.sort();
	assert_eq!(replay_two, expected);
	let later = simple(3, &[1, 2], b"later");
	let only_two = simple(4, &[2], b"only two");
	let neither = simple(5, &[3], b"neither");
	for statement in [&later, &only_two, &neither] {
		assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
	}
	store.wait_for_matching();
	assert_eq!(
		queued(&subscription),
		vec![(both.encode(), vec![7]), (later.encode(), vec![7, 8]), (only_two.encode(), vec![8])]
	);
	// A removed filter takes nothing more.
	subscription.remove_filter(8);
	let after_removal = simple(6, &[1, 2], b"after removal");
	let only_two_again = simple(7, &[2], b"only two again");
	for statement in [&after_removal, &only_two_again] {
		assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
	}
	store.wait_for_matching();
	assert_eq!(queued(&subscription), vec![(after_removal.encode(), vec![7])]);
	// `any` takes everything from its addition on, and an empty `matchAll` is refused.
	let any = subscription.add_filter(9, TopicFilter::Any).unwrap();
	assert_eq!(any.total(), store.len());
	assert!(subscription
		.add_filter(10, TopicFilter::MatchAll((0..5).map(topic).collect()))
		.is_err());
	let last = simple(8, &[4], b"last");
	assert_eq!(store.submit(last.clone(), LOCAL), SubmitResult::New);
	store.wait_for_matching();
	assert_eq!(queued(&subscription), vec![(last.encode(), vec![9])]);
}

/// Everything a filter subscription owes now, read in small pages, as it comes.
fn drained(subscription: &statement_store::FilterSubscription) -> Vec<(Vec<u8>, Vec<u64>)> {
	let mut all = Vec::new();
	loop {
		let page = subscription.try_next_live(1000).unwrap();
		if page.is_empty() {
			return all;
		}
		all.extend(page.into_iter().map(|(encoded, ids)| (encoded.to_vec(), ids.to_vec())));
	}
}

#[test]
fn a_filter_set_that_falls_behind_reads_what_it_owes_from_the_store_in_order() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let store = open(dir.path(), &clock);
	let subscription = store.subscribe_filters(4 * 1024).unwrap();
	let _any = subscription.add_filter(0, TopicFilter::Any).unwrap();
	let numbered_all = |from: u32, to: u32| -> Vec<Vec<u8>> {
		submit_all(&store, from, to, 400);
		(from..to).map(|n| numbered(n, 400).encode()).collect()
	};
	// Two taken from the queue, then far more than its 4 KiB: it spills.
	let mut expected: Vec<(Vec<u8>, Vec<u64>)> =
		numbered_all(0, 2).into_iter().map(|encoded| (encoded, vec![0])).collect();
	store.wait_for_matching();
	assert_eq!(drained(&subscription), expected);
	expected.clear();
	expected.extend(numbered_all(2, 40).into_iter().map(|encoded| (encoded, vec![0])));
	store.wait_for_matching();
	assert!(subscription.catching_up(), "40 statements of 400 bytes fit no 4 KiB queue");
	assert!(subscription.live().peak_buffered_bytes() <= 4 * 1024);
	// A filter added while it is behind takes only what is stored after it; a statement
	// removed before it was read is not sent.
	let _topic_one = subscription.add_filter(1, TopicFilter::MatchAll(vec![topic(1)])).unwrap();
	for n in 40..50 {
		let encoded = numbered(n, 400).encode();
		let ids = if n % 3 == 1 { vec![0, 1] } else { vec![0] };
		expected.push((encoded, ids));
	}
	submit_all(&store, 40, 50, 400);
	let removed = numbered(45, 400);
	assert!(store.remove(&removed.hash()).is_ok());
	expected.retain(|(encoded, _)| *encoded != removed.encode());
	store.wait_for_matching();
	assert_eq!(drained(&subscription), expected);
	assert!(!subscription.catching_up());
	// Caught up, it queues again, and nothing comes twice.
	let next = numbered_all(50, 51);
	store.wait_for_matching();
	assert_eq!(drained(&subscription), vec![(next[0].clone(), vec![0])]);
	assert_eq!(store.metrics().subscriptions, 1);
}
