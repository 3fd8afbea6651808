//! Every submit outcome, the channel and eviction rules, and the global limits.

mod common;

use common::*;
use statement_primitives::{
	InvalidReason, RejectionReason, Statement, StatementSource, StatementStore, SubmitResult,
	MAX_STATEMENT_SIZE,
};
use statement_store::{Config, Store};

const LOCAL: StatementSource = StatementSource::Local;
const NETWORK: StatementSource = StatementSource::Network;

fn store_with(
	count: u32,
	size: u32,
	tweak: impl FnOnce(&mut Config),
) -> (tempfile::TempDir, Store, TestClock) {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let mut config = config(dir.path(), &clock);
	tweak(&mut config);
	let store = Store::open(config, allowances(count, size)).unwrap();
	(dir, store, clock)
}

#[test]
fn a_new_statement_is_stored_and_a_second_submit_is_known() {
	let (_dir, store, _) = store_with(10, 1000, |_| {});
	let statement = simple(1, &[1, 2], b"hi");
	assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
	assert_eq!(store.submit(statement.clone(), NETWORK), SubmitResult::Known);
	assert!(store.has_statement(&statement.hash()));
	assert_eq!(store.statement(&statement.hash()).unwrap(), Some(statement));
	assert_eq!(store.len(), 1);
}

#[test]
fn unsigned_and_badly_signed_statements_are_invalid() {
	let (_dir, store, _) = store_with(10, 1000, |_| {});
	let mut unsigned = simple(1, &[1], b"x");
	unsigned.remove_proof();
	assert_eq!(store.submit(unsigned, LOCAL), SubmitResult::Invalid(InvalidReason::NoProof));
	let mut tampered = simple(1, &[1], b"x");
	tampered.set_plain_data(b"y".to_vec());
	assert_eq!(store.submit(tampered, LOCAL), SubmitResult::Invalid(InvalidReason::BadProof));
	assert!(store.is_empty());
}

#[test]
fn expired_and_oversized_statements_are_invalid() {
	let (_dir, store, clock) = store_with(10, u32::MAX, |_| {});
	let statement = simple(1, &[1], b"x");
	clock.set(NOW + 7200);
	assert_eq!(
		store.submit(statement, LOCAL),
		SubmitResult::Invalid(InvalidReason::AlreadyExpired)
	);
	clock.set(NOW);
	let big = simple(1, &[1], &vec![0; MAX_STATEMENT_SIZE]);
	let size = big.encode().len();
	assert_eq!(
		store.submit(big, LOCAL),
		SubmitResult::Invalid(InvalidReason::EncodingTooLarge {
			submitted_size: size,
			max_size: MAX_STATEMENT_SIZE
		})
	);
}

#[test]
fn accounts_without_allowance_are_rejected() {
	let (_dir, store, _) = store_with(0, 0, |_| {});
	assert_eq!(
		store.submit(simple(1, &[1], b"x"), LOCAL),
		SubmitResult::Rejected(RejectionReason::NoAllowance)
	);
}

#[test]
fn data_larger_than_the_whole_allowance_is_too_large() {
	let (_dir, store, _) = store_with(10, 4, |_| {});
	assert_eq!(
		store.submit(simple(1, &[1], b"12345"), LOCAL),
		SubmitResult::Rejected(RejectionReason::DataTooLarge {
			submitted_size: 5,
			available_size: 4
		})
	);
}

fn with_expiry(signer: u32, expires_in: u32, channel: Option<u8>, data: &[u8]) -> Statement {
	expiring(expires_in, 0, &[1])
		.channel(channel.map(|channel| [channel; 32]))
		.data(data)
		.signed_ed25519(&ed25519_pair(signer))
}

#[test]
fn a_full_account_evicts_its_lowest_expiry_statement_for_a_higher_one() {
	let (_dir, store, _) = store_with(2, 1000, |_| {});
	let low = with_expiry(1, 100, None, b"a");
	let mid = with_expiry(1, 200, None, b"b");
	let high = with_expiry(1, 300, None, b"c");
	for s in [&low, &mid, &high] {
		assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
	}
	assert!(!store.has_statement(&low.hash()));
	assert!(store.has_statement(&mid.hash()) && store.has_statement(&high.hash()));
	// The evicted one may not come back from the network.
	assert_eq!(store.submit(low.clone(), NETWORK), SubmitResult::KnownExpired);
	// A lower expiry than everything held is refused.
	let lowest = with_expiry(1, 50, None, b"d");
	assert_eq!(
		store.submit(lowest.clone(), LOCAL),
		SubmitResult::Rejected(RejectionReason::AccountFull {
			submitted_expiry: lowest.expiry(),
			min_expiry: mid.expiry()
		})
	);
	assert_eq!(store.metrics().evicted, 1);
}

#[test]
fn within_one_expiry_second_eviction_follows_the_sequence_not_the_order_of_arrival() {
	let (_dir, store, _) = store_with(3, 1000, |_| {});
	let in_second = |sequence: u32, data: &[u8]| {
		expiring(100, sequence, &[1]).data(data).signed_ed25519(&ed25519_pair(1))
	};
	// Admitted (so listed by id) in another order than their priority.
	let (nine, three, six) = (in_second(9, b"a"), in_second(3, b"b"), in_second(6, b"c"));
	for s in [&nine, &three, &six] {
		assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
	}
	let later = with_expiry(1, 200, None, b"d");
	assert_eq!(store.submit(later.clone(), LOCAL), SubmitResult::New);
	assert!(!store.has_statement(&three.hash()), "the lowest sequence goes first");
	let lower = in_second(5, b"e");
	assert_eq!(
		store.submit(lower.clone(), LOCAL),
		SubmitResult::Rejected(RejectionReason::AccountFull {
			submitted_expiry: lower.expiry(),
			min_expiry: six.expiry()
		})
	);
	assert_eq!(store.submit(in_second(7, b"f"), LOCAL), SubmitResult::New);
	assert!(!store.has_statement(&six.hash()));
	assert!(store.has_statement(&nine.hash()) && store.has_statement(&later.hash()));
}

#[test]
fn statements_of_one_expiry_are_evicted_in_hash_order_as_the_reference_does() {
	// The reference orders an account's statements by (expiry, hash): of two with the same
	// expiry, the lower hash goes first, whichever came first.
	let (_dir, store, _) = store_with(2, 1000, |_| {});
	let (first, second) = (with_expiry(1, 100, None, b"a"), with_expiry(1, 100, None, b"b"));
	let (low, high) =
		if first.hash() < second.hash() { (&first, &second) } else { (&second, &first) };
	for s in [high, low] {
		assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
	}
	assert_eq!(store.submit(with_expiry(1, 200, None, b"c"), LOCAL), SubmitResult::New);
	assert!(!store.has_statement(&low.hash()), "the lower hash goes first");
	assert!(store.has_statement(&high.hash()));
}

#[test]
fn a_long_tie_keeps_its_hash_order_across_submits_and_admissions() {
	// A tie of 100 (over the 64 from which a walk keeps its order for the next walks):
	// each evicting submit takes the lowest hash left, and a statement admitted at or below
	// the tie's expiry since is taken in its place when it comes first.
	let (_dir, store, _) = store_with(100, 100_000, |_| {});
	let mut tie: Vec<Statement> =
		(0..100u32).map(|i| with_expiry(1, 100, None, &i.to_le_bytes())).collect();
	for s in &tie {
		assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
	}
	tie.sort_by_key(|s| std::cmp::Reverse(s.hash()));
	let mut evicting = (200..).map(|expires_in| with_expiry(1, expires_in, None, b"later"));
	let mut evict_next = |store: &Store, expected: &Statement, what: &str| {
		assert_eq!(store.submit(evicting.next().unwrap(), LOCAL), SubmitResult::New);
		assert!(!store.has_statement(&expected.hash()), "{what} was not the one evicted");
	};
	for _ in 0..3 {
		let lowest = tie.pop().unwrap();
		evict_next(&store, &lowest, "the lowest hash of the tie");
		assert!(tie.iter().all(|s| store.has_statement(&s.hash())));
	}
	assert_eq!(
		store.submit(with_expiry(1, 50, None, b"lower"), LOCAL),
		SubmitResult::Rejected(RejectionReason::AccountFull {
			submitted_expiry: with_expiry(1, 50, None, b"lower").expiry(),
			min_expiry: tie[0].expiry()
		})
	);

	// Room for one, taken at the tie's expiry by a hash below every other.
	store.remove(&tie.remove(0).hash()).unwrap();
	let below = (0u32..)
		.map(|i| with_expiry(1, 100, None, &[b"below".as_slice(), &i.to_le_bytes()].concat()))
		.find(|s| tie.iter().all(|other| s.hash() < other.hash()))
		.unwrap();
	assert_eq!(store.submit(below.clone(), LOCAL), SubmitResult::New);
	evict_next(&store, &below, "the statement admitted into the tie with its lowest hash");

	// Room for one, taken below the tie's expiry.
	store.remove(&tie.remove(0).hash()).unwrap();
	let lower = with_expiry(1, 50, None, b"lower");
	assert_eq!(store.submit(lower.clone(), LOCAL), SubmitResult::New);
	evict_next(&store, &lower, "the statement admitted below the tie's expiry");
	let lowest = tie.pop().unwrap();
	evict_next(&store, &lowest, "the lowest hash of the tie, after the admissions");
	assert!(tie.iter().all(|s| store.has_statement(&s.hash())));
}

#[test]
fn a_refused_submit_that_walked_past_the_lowest_expiry_leaves_the_order_as_it_was() {
	// A submit that must evict the 10 of the lowest expiry and one of a long tie above it,
	// then is refused (the store is full): the walk read the tie, but it is not the account's
	// lowest, so the next eviction still takes the lowest expiry first.
	let low: Vec<Statement> = (0..10u8).map(|i| with_expiry(1, 50, None, &[i])).collect();
	let tie: Vec<Statement> = (10..110u8).map(|i| with_expiry(1, 100, None, &[i])).collect();
	let filled: usize = low.iter().chain(&tie).map(|s| s.encode().len()).sum();
	let (_dir, store, _) =
		store_with(110, 2000, |config| config.max_total_size = filled as u64 + 100);
	for s in low.iter().chain(&tie) {
		assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
	}
	assert_eq!(
		store.submit(with_expiry(1, 200, None, &[7; 1901]), LOCAL),
		SubmitResult::Rejected(RejectionReason::StoreFull)
	);
	assert_eq!(store.submit(with_expiry(1, 200, None, b"later"), LOCAL), SubmitResult::New);
	let lowest = low.iter().min_by_key(|s| s.hash()).unwrap();
	assert!(!store.has_statement(&lowest.hash()), "the lowest expiry's lowest hash goes first");
	assert!(tie.iter().all(|s| store.has_statement(&s.hash())));
}

#[test]
fn size_allowance_evicts_as_many_as_needed() {
	let (_dir, store, _) = store_with(10, 10, |_| {});
	let a = with_expiry(1, 100, None, b"aaaa");
	let b = with_expiry(1, 200, None, b"bbbb");
	let c = with_expiry(1, 300, None, b"cccccccc");
	for s in [&a, &b, &c] {
		assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
	}
	assert!(!store.has_statement(&a.hash()) && !store.has_statement(&b.hash()));
	assert!(store.has_statement(&c.hash()));
}

#[test]
fn a_channel_keeps_one_statement_and_needs_a_strictly_higher_expiry() {
	let (_dir, store, _) = store_with(10, 1000, |_| {});
	let first = with_expiry(1, 100, Some(7), b"first");
	let same = with_expiry(1, 100, Some(7), b"same expiry");
	let second = with_expiry(1, 200, Some(7), b"second");
	assert_eq!(store.submit(first.clone(), LOCAL), SubmitResult::New);
	assert_eq!(
		store.submit(same, LOCAL),
		SubmitResult::Rejected(RejectionReason::ChannelPriorityTooLow {
			submitted_expiry: first.expiry(),
			min_expiry: first.expiry()
		})
	);
	assert_eq!(store.submit(second.clone(), LOCAL), SubmitResult::New);
	assert!(!store.has_statement(&first.hash()));
	assert_eq!(store.broadcasts(&[common::topic(1)]).unwrap(), vec![b"second".to_vec()]);
	// Another account's channel of the same id is independent.
	assert_eq!(store.submit(with_expiry(2, 50, Some(7), b"other"), LOCAL), SubmitResult::New);
}

#[test]
fn global_count_and_size_limits_make_the_store_full() {
	let (_dir, store, _) = store_with(10, 1000, |config| config.max_total_statements = 2);
	assert_eq!(store.submit(simple(1, &[1], b"a"), LOCAL), SubmitResult::New);
	assert_eq!(store.submit(simple(2, &[1], b"b"), LOCAL), SubmitResult::New);
	assert_eq!(
		store.submit(simple(3, &[1], b"c"), LOCAL),
		SubmitResult::Rejected(RejectionReason::StoreFull)
	);
	let first = simple(1, &[9], b"sized");
	let limit = first.encode().len() as u64;
	let (_dir, store, _) = store_with(10, 1000, |config| config.max_total_size = limit);
	assert_eq!(store.submit(first, LOCAL), SubmitResult::New);
	assert_eq!(
		store.submit(simple(2, &[9], b"sized"), LOCAL),
		SubmitResult::Rejected(RejectionReason::StoreFull)
	);
}

#[test]
fn removed_statements_are_banned_from_the_network_but_local_may_resubmit() {
	let (_dir, store, _) = store_with(10, 1000, |_| {});
	let statement = simple(1, &[1], b"x");
	assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
	store.remove(&statement.hash()).unwrap();
	assert!(!store.has_statement(&statement.hash()));
	assert_eq!(store.submit(statement.clone(), NETWORK), SubmitResult::KnownExpired);
	assert_eq!(store.submit(statement.clone(), StatementSource::Chain), SubmitResult::New);
	store.remove(&statement.hash()).unwrap();
	assert_eq!(store.submit(statement.clone(), LOCAL), SubmitResult::New);
	// Removing something absent is not an error.
	store.remove(&[9; 32]).unwrap();
}

#[test]
fn released_statements_are_gone_but_may_come_back_from_the_network_and_survive_a_reopen() {
	let dir = tempfile::tempdir().unwrap();
	let clock = TestClock::new();
	let kept = simple(1, &[1], b"kept");
	let released = simple(1, &[1], b"released");
	{
		let store = Store::open(config(dir.path(), &clock), allowances(10, 1000)).unwrap();
		for statement in [&kept, &released] {
			assert_eq!(store.submit(statement.clone(), NETWORK), SubmitResult::New);
		}
		// Twice, and beside a hash never stored: each is skipped.
		store.release(&[released.hash(), [9; 32], released.hash()]).unwrap();
		assert!(!store.has_statement(&released.hash()));
		assert_eq!(store.broadcasts(&[common::topic(1)]).unwrap(), vec![b"kept".to_vec()]);
	}
	let store = Store::open(config(dir.path(), &clock), allowances(10, 1000)).unwrap();
	assert!(store.has_statement(&kept.hash()));
	assert!(!store.has_statement(&released.hash()), "a release is durable");
	// No ban, unlike a removal: a peer may hand it back.
	assert_eq!(store.submit(released.clone(), NETWORK), SubmitResult::New);
	assert_eq!(store.len(), 2);
}

#[test]
fn remove_by_drops_every_statement_of_one_account_only() {
	let (_dir, store, _) = store_with(10, 1000, |_| {});
	for n in 0..3u8 {
		assert_eq!(store.submit(simple(1, &[1], &[n]), LOCAL), SubmitResult::New);
	}
	assert_eq!(store.submit(simple(2, &[1], b"keep"), LOCAL), SubmitResult::New);
	store.remove_by(account(1)).unwrap();
	assert_eq!(store.broadcasts(&[common::topic(1)]).unwrap(), vec![b"keep".to_vec()]);
	assert_eq!(store.len(), 1);
}

#[test]
fn submit_outcomes_are_counted_in_metrics() {
	let (_dir, store, _) = store_with(10, 1000, |_| {});
	let statement = simple(1, &[1], b"x");
	store.submit(statement.clone(), LOCAL);
	store.submit(statement, LOCAL);
	let metrics = store.metrics();
	assert_eq!(metrics.submits.get("new"), Some(&1));
	assert_eq!(metrics.submits.get("known"), Some(&1));
	assert_eq!(metrics.statements, 1);
}
