//! Subscriptions: stored matches first, then every new match exactly once, in commit order,
//! in bounded memory.
//!
//! Ids are handed out in increasing order and never twice. Under the shared view lock a new
//! subscription notes the id after the newest stored one and the number of the last commit,
//! and registers for the live stream; each commit is numbered, and hands its statements to
//! the matcher, inside the exclusive view lock. So every statement committed before the
//! subscription has a lower id and is replayed, and every one committed after it is in a
//! commit numbered higher, which the matcher streams to it (commits numbered up to its own
//! it skips). Replay reads the stored matches below that id a page at a time as the reader
//! asks (see `paging`); a statement removed before its page is read is skipped. So no
//! statement falls between the replay and the live stream, and none comes twice.
//!
//! Matching is off the write path: a commit pushes its statements onto the matcher's queue
//! (O(1), the encodings moved, not copied) and the matcher thread (`stmt-match`) queues each
//! for the subscribers it matches. Subscribers are indexed by topic: `MatchAll` under its
//! first topic (the others are checked), `MatchAny` under each of its topics, `Any` (and
//! `MatchAll` of nothing) apart; a statement costs a lookup per topic plus the subscribers
//! listed there. [`Store::wait_for_matching`] waits until the matcher has caught up, and
//! [`Store::admission_watermark`] does too, so a watch drained after it holds every
//! statement up to the watermark.
//!
//! Memory: replay holds one page. The live queue of each subscriber is bounded in bytes (the
//! bound given to [`crate::Store::subscribe_with_queue`]); a commit that would overflow it
//! drops the subscriber instead, frees its queue and makes its next read fail with
//! [`Error::Lagged`], as Substrate closes lagging subscriptions. An encoding queued for many
//! subscribers is shared, not copied. What a reader took but holds unsent (an RPC
//! notification waiting for its client to read, a replay page among them) counts as queued
//! while held ([`Subscription::hold`]). Dropping a [`Subscription`] forgets it at once.
//!
//! All subscriptions together are bounded too ([`crate::Config::subscription_budget_bytes`]):
//! each subscriber's bound alone would let many stuck subscribers (100 connections x 1,024
//! subscriptions) hold gigabytes. The budget counts what every subscriber has queued (and
//! holds) plus [`SUBSCRIPTION_STATE_BYTES`] for each open one:
//! - a subscription that would take the open ones' share past half the budget is refused
//!   ([`Error::TooManySubscriptions`]), so that the other half is left for queues;
//! - a commit (or a [`Subscription::hold`]) that takes the sum past the budget drops the
//!   subscribers furthest behind (largest queues first, never one with nothing queued)
//!   until it is under seven eighths of it, with the same lag error.
//!
//! Gossip's own watcher is not counted.

use crate::{
	paging::PAGE_IDS,
	posting::intersect,
	schema::{Id, PostingKey, Record},
	Error, Result, Store,
};
use parking_lot::{Condvar, Mutex};
use statement_primitives::{
	check_match_all, Hash, StatementSubscription, SubscriptionFuture, Topic, TopicFilter,
	SUBSCRIPTION_STATE_BYTES,
};
use std::{
	collections::{HashMap, VecDeque},
	sync::{
		atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
		Arc,
	},
};
use tokio::sync::Notify;

/// Live-queue bound of [`crate::Store::subscribe`]: the primitives' default, 1 MiB.
pub const DEFAULT_SUBSCRIBER_QUEUE_BYTES: usize =
	statement_primitives::DEFAULT_SUBSCRIBER_QUEUE_BYTES;

/// An encoded statement, shared by every subscriber it is queued for.
pub type Encoded = statement_primitives::Encoded;

/// A live subscription: the stored matches, read page by page, then what arrives.
pub struct Subscription {
	store: Store,
	id: u64,
	queue: Arc<Queue>,
	replay: Option<Replay>,
	replay_total: u64,
	largest_page: usize,
}

/// Where the replay stands: stored matches of `filter` in `(after, below)` are left.
struct Replay {
	filter: TopicFilter,
	after: Id,
	below: Id,
}

struct Queue {
	state: Mutex<QueueState>,
	ready: Notify,
	bound: usize,
	/// Bytes queued for every budgeted subscriber together (see the module documentation);
	/// `None` for a queue outside the budget.
	total: Option<Arc<AtomicUsize>>,
}

#[derive(Default)]
struct QueueState {
	items: VecDeque<Encoded>,
	/// Bytes of `items`, plus `held`.
	bytes: usize,
	/// Bytes the reader took and holds unsent ([`Subscription::hold`]).
	held: usize,
	peak: usize,
	lagged: bool,
	/// Woken with `ready`, for a reader that drives many queues from one task.
	waker: Option<std::task::Waker>,
}

impl Queue {
	/// Queue `item`, or, if it would take the queue past its bound, empty the queue and mark
	/// the subscriber lagging. Returns whether the subscriber is still served.
	fn push(&self, item: &Encoded) -> bool {
		let mut state = self.state.lock();
		if state.bytes > 0 && state.bytes + item.len() > self.bound {
			self.lag(state);
			return false;
		}
		state.bytes += item.len();
		state.peak = state.peak.max(state.bytes);
		state.items.push_back(item.clone());
		self.counted(item.len() as isize);
		let waker = state.waker.clone();
		drop(state);
		self.ready.notify_one();
		if let Some(waker) = waker {
			waker.wake();
		}
		true
	}

	/// Count `bytes` the reader holds unsent as queued, or, if that would take a queue that
	/// holds anything past its bound, empty it and mark the subscriber lagging. Returns
	/// whether the subscriber is still served.
	fn hold(&self, bytes: usize) -> bool {
		let mut state = self.state.lock();
		if state.lagged {
			return false;
		}
		if state.bytes > 0 && state.bytes + bytes > self.bound {
			self.lag(state);
			return false;
		}
		state.bytes += bytes;
		state.held += bytes;
		state.peak = state.peak.max(state.bytes);
		self.counted(bytes as isize);
		true
	}

	/// Held bytes were sent: no longer queued.
	fn unhold(&self, bytes: usize) {
		let mut state = self.state.lock();
		// Nothing is held any more once the subscriber lagged.
		let bytes = bytes.min(state.held);
		state.held -= bytes;
		state.bytes -= bytes;
		self.counted(-(bytes as isize));
	}

	/// Empty the queue and mark the subscriber lagging (its next read fails).
	fn lag(&self, mut state: parking_lot::MutexGuard<'_, QueueState>) {
		self.counted(-(state.bytes as isize));
		state.items = VecDeque::new();
		state.bytes = 0;
		state.held = 0;
		state.lagged = true;
		let waker = state.waker.clone();
		drop(state);
		self.ready.notify_one();
		if let Some(waker) = waker {
			waker.wake();
		}
	}

	/// Bytes queued now.
	fn bytes(&self) -> usize {
		self.state.lock().bytes
	}

	/// The queue is going away: its bytes leave the budget.
	fn release(&self) {
		let mut state = self.state.lock();
		self.counted(-(state.bytes as isize));
		state.items = VecDeque::new();
		state.bytes = 0;
		state.held = 0;
	}

	fn counted(&self, delta: isize) {
		if let Some(total) = &self.total {
			if delta >= 0 {
				total.fetch_add(delta as usize, Ordering::Relaxed);
			} else {
				total.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed);
			}
		}
	}

	/// Queued statements up to `max_bytes` (at least one), or the lag error.
	fn take(&self, max_bytes: usize) -> Result<Vec<Encoded>> {
		let mut state = self.state.lock();
		if state.lagged {
			return Err(Error::Lagged { queue_bytes: self.bound });
		}
		let mut out = Vec::new();
		let mut bytes = 0;
		while let Some(item) = state.items.front() {
			if !out.is_empty() && bytes + item.len() > max_bytes {
				break;
			}
			bytes += item.len();
			out.extend(state.items.pop_front());
		}
		state.bytes -= bytes;
		self.counted(-(bytes as isize));
		Ok(out)
	}
}

struct Subscriber {
	filter: TopicFilter,
	queue: Arc<Queue>,
	/// Batches numbered up to this one were committed before the subscriber registered: the
	/// replay has them, the live stream must not.
	after_batch: u64,
}

/// Statements a commit handed to the matcher.
struct Handed {
	/// The commit's number: one more than the previous commit's.
	batch: u64,
	/// Bytes of the encodings, counted in the backlog.
	bytes: usize,
	added: Vec<(Hash, Record, Vec<u8>)>,
}

/// The subscribers, indexed by what their filters ask for, so a statement costs a lookup per
/// topic plus the subscribers it matches, not a check of every subscriber.
#[derive(Default)]
struct Index {
	subscribers: HashMap<u64, Subscriber>,
	/// Subscribers counted in the budget; shared with [`Shared::open`] for lock-free reads.
	budgeted: Arc<AtomicUsize>,
	/// `Any` and `MatchAll` of no topic: every statement.
	all: Vec<u64>,
	/// `MatchAll` under its first topic (the rest are checked), `MatchAny` under each.
	by_topic: HashMap<Topic, Vec<u64>>,
}

impl Index {
	/// Where `filter` is listed: the topics it is found through, or `None` for every
	/// statement.
	fn keys(filter: &TopicFilter) -> Option<&[Topic]> {
		match filter {
			TopicFilter::Any => None,
			TopicFilter::MatchAll(topics) if topics.is_empty() => None,
			TopicFilter::MatchAll(topics) => Some(&topics[..1]),
			TopicFilter::MatchAny(topics) => Some(topics),
		}
	}

	fn insert(&mut self, id: u64, subscriber: Subscriber) {
		if subscriber.queue.total.is_some() {
			self.budgeted.fetch_add(1, Ordering::Relaxed);
		}
		match Index::keys(&subscriber.filter) {
			None => self.all.push(id),
			Some(topics) => {
				for topic in topics {
					let listed = self.by_topic.entry(*topic).or_default();
					// A `MatchAny` may name a topic twice: list it once.
					if listed.last() != Some(&id) {
						listed.push(id);
					}
				}
			}
		}
		self.subscribers.insert(id, subscriber);
	}

	fn remove(&mut self, id: u64) -> Option<Subscriber> {
		let subscriber = self.subscribers.remove(&id)?;
		if subscriber.queue.total.is_some() {
			self.budgeted.fetch_sub(1, Ordering::Relaxed);
		}
		let unlist = |listed: &mut Vec<u64>| {
			if let Some(at) = listed.iter().position(|listed| *listed == id) {
				listed.swap_remove(at);
			}
		};
		match Index::keys(&subscriber.filter) {
			None => unlist(&mut self.all),
			Some(topics) => {
				for topic in topics {
					if let Some(listed) = self.by_topic.get_mut(topic) {
						unlist(listed);
						if listed.is_empty() {
							self.by_topic.remove(topic);
						}
					}
				}
			}
		}
		Some(subscriber)
	}

	/// The subscribers `topics` may match, each once, in no particular order.
	fn candidates(&self, topics: &[Topic], out: &mut Vec<u64>) {
		out.clear();
		out.extend_from_slice(&self.all);
		for topic in topics {
			if let Some(listed) = self.by_topic.get(topic) {
				out.extend_from_slice(listed);
			}
		}
		if topics.len() > 1 {
			out.sort_unstable();
			out.dedup();
		}
	}
}

/// What the matcher thread and the store share.
struct Shared {
	index: Mutex<Index>,
	/// Commits handed over and not matched yet, oldest first.
	handed: Mutex<VecDeque<Handed>>,
	/// Signalled when a commit is handed over, when one has been matched, and at close.
	wake: Condvar,
	/// Bytes of encodings in `handed`.
	backlog: AtomicUsize,
	/// The number of the last commit handed over (all are numbered, matched or not).
	last_batch: AtomicU64,
	/// The number of the last commit matched.
	matched_batch: AtomicU64,
	closing: AtomicBool,
	/// Bytes queued for budgeted subscribers, all together.
	queued: Arc<AtomicUsize>,
	/// Budgeted subscribers open (the index's count).
	open: Arc<AtomicUsize>,
	/// The most `queued` plus the open subscribers' state may reach before the subscribers
	/// furthest behind are dropped.
	budget: usize,
	/// Subscribers dropped to keep within the budget, since the store opened.
	dropped_for_budget: AtomicU64,
	/// Subscriptions refused for the budget, since the store opened.
	refused_for_budget: AtomicU64,
}

/// The open subscriptions, and the thread that matches new statements to them.
pub struct Subscriptions {
	shared: Arc<Shared>,
	next_id: AtomicU64,
	matcher: Option<std::thread::JoinHandle<()>>,
}

/// Bytes of handed-over statements the matcher may fall behind before commits wait for it.
/// It only ever does with an enormous fan-out; statements are small next to this.
const MAX_BACKLOG_BYTES: usize = 64 << 20;

impl Default for Subscriptions {
	fn default() -> Self {
		Subscriptions::with_budget(usize::MAX)
	}
}

impl Drop for Subscriptions {
	fn drop(&mut self) {
		self.shared.closing.store(true, Ordering::Release);
		{
			let _handed = self.shared.handed.lock();
			self.shared.wake.notify_all();
		}
		if let Some(thread) = self.matcher.take() {
			let _ = thread.join();
		}
	}
}

impl Subscriptions {
	/// No subscriptions yet; all queues together hold at most `budget` bytes. Starts the
	/// matcher thread (`stmt-match`).
	pub fn with_budget(budget: usize) -> Self {
		let index = Index::default();
		let open = index.budgeted.clone();
		let shared = Arc::new(Shared {
			index: Mutex::new(index),
			handed: Mutex::default(),
			wake: Condvar::new(),
			backlog: AtomicUsize::default(),
			last_batch: AtomicU64::default(),
			matched_batch: AtomicU64::default(),
			closing: AtomicBool::default(),
			queued: Arc::default(),
			open,
			budget,
			dropped_for_budget: AtomicU64::default(),
			refused_for_budget: AtomicU64::default(),
		});
		let matching = shared.clone();
		let matcher = std::thread::Builder::new()
			.name("stmt-match".into())
			.spawn(move || matching.run())
			.map_err(|err| {
				log::error!(target: "statement-store", "cannot start the matcher thread: {err}");
			})
			.ok();
		Subscriptions { shared, next_id: AtomicU64::default(), matcher }
	}

	/// Bytes queued for all budgeted subscribers now, how many subscribers were dropped to
	/// keep within the budget, and how many subscriptions it refused.
	pub fn usage(&self) -> (usize, u64, u64) {
		let shared = &self.shared;
		(
			shared.queued.load(Ordering::Relaxed),
			shared.dropped_for_budget.load(Ordering::Relaxed),
			shared.refused_for_budget.load(Ordering::Relaxed),
		)
	}

	/// Hand a commit's new statements to the matcher; called while the view lock is held
	/// exclusively, which numbers the commits in order. Costs a queue push: matching happens
	/// on the matcher thread. Waits only if the matcher is [`MAX_BACKLOG_BYTES`] behind.
	pub fn notify(&self, added: Vec<(Hash, Record, Vec<u8>)>) {
		let shared = &self.shared;
		let batch = shared.last_batch.load(Ordering::Relaxed) + 1;
		shared.last_batch.store(batch, Ordering::Release);
		let bytes = added.iter().map(|(_, _, encoding)| encoding.len()).sum();
		let mut handed = shared.handed.lock();
		if self.matcher.is_none() {
			// No thread could be started: match here.
			shared.match_commit(&Handed { batch, bytes, added }, &mut Vec::new());
			shared.matched_batch.store(batch, Ordering::Release);
			return;
		}
		if added.is_empty() && handed.is_empty() {
			// Nothing to match: the batch number still moves on.
			shared.matched_batch.store(batch, Ordering::Release);
			return;
		}
		while shared.backlog.load(Ordering::Relaxed) > MAX_BACKLOG_BYTES
			&& !shared.closing.load(Ordering::Relaxed)
		{
			shared.wake.wait(&mut handed);
		}
		shared.backlog.fetch_add(bytes, Ordering::Relaxed);
		handed.push_back(Handed { batch, bytes, added });
		shared.wake.notify_all();
	}

	/// Wait until everything handed over so far is matched (queued to its subscribers).
	pub fn flush(&self) {
		let shared = &self.shared;
		let target = shared.last_batch.load(Ordering::Acquire);
		if shared.matched_batch.load(Ordering::Acquire) >= target {
			return;
		}
		let mut handed = shared.handed.lock();
		while shared.matched_batch.load(Ordering::Acquire) < target && self.matcher.is_some() {
			shared.wake.wait_for(&mut handed, std::time::Duration::from_millis(50));
		}
	}

	/// Number of open subscriptions.
	pub fn len(&self) -> usize {
		self.shared.index.lock().subscribers.len()
	}

	/// Register a subscriber counted in the budget; the caller holds the view lock (shared),
	/// so no commit is numbered while it registers. [`TooManySubscriptions`] if the open
	/// ones' state would take more than half the budget.
	///
	/// [`TooManySubscriptions`]: statement_primitives::Error::TooManySubscriptions
	fn add(&self, filter: TopicFilter, bound: usize) -> Result<(u64, Arc<Queue>)> {
		let mut index = self.shared.index.lock();
		self.check_room(0).map_err(Error::Query)?;
		Ok(self.insert(&mut index, filter, bound, true))
	}

	/// [`TooManySubscriptions`], counted as a refusal, if the open subscriptions' state
	/// leaves no room in half the budget for one more beside `starting` being opened.
	///
	/// [`TooManySubscriptions`]: statement_primitives::Error::TooManySubscriptions
	pub fn check_room(&self, starting: usize) -> statement_primitives::Result<()> {
		let open = self.shared.open.load(Ordering::Relaxed);
		let share = self.shared.budget / 2;
		let wanted = open.saturating_add(starting).saturating_add(1);
		if wanted.saturating_mul(SUBSCRIPTION_STATE_BYTES) > share {
			self.shared.refused_for_budget.fetch_add(1, Ordering::Relaxed);
			return Err(statement_primitives::Error::TooManySubscriptions { open, share });
		}
		Ok(())
	}

	/// Register a subscriber outside the budget (gossip's watcher), as [`Subscriptions::add`].
	fn add_unbudgeted(&self, filter: TopicFilter, bound: usize) -> (u64, Arc<Queue>) {
		self.insert(&mut self.shared.index.lock(), filter, bound, false)
	}

	fn insert(
		&self,
		index: &mut Index,
		filter: TopicFilter,
		bound: usize,
		budgeted: bool,
	) -> (u64, Arc<Queue>) {
		let id = self.next_id.fetch_add(1, Ordering::Relaxed);
		let queue = Arc::new(Queue {
			state: Mutex::default(),
			ready: Notify::new(),
			bound: bound.max(1),
			total: budgeted.then(|| self.shared.queued.clone()),
		});
		let after_batch = self.shared.last_batch.load(Ordering::Acquire);
		let subscriber = Subscriber { filter, queue: queue.clone(), after_batch };
		index.insert(id, subscriber);
		(id, queue)
	}

	fn remove(&self, id: u64) {
		let removed = self.shared.index.lock().remove(id);
		if let Some(subscriber) = removed {
			subscriber.queue.release();
		}
	}

	/// Past the budget, drop the subscribers furthest behind (as a commit does).
	fn keep_within_budget(&self) {
		if self.shared.used() > self.shared.budget {
			let mut index = self.shared.index.lock();
			if self.shared.used() > self.shared.budget {
				self.shared.shed(&mut index);
			}
		}
	}
}

impl Shared {
	/// What the budget counts now: the queues, and each open subscriber's own state.
	fn used(&self) -> usize {
		let state = self.open.load(Ordering::Relaxed).saturating_mul(SUBSCRIPTION_STATE_BYTES);
		self.queued.load(Ordering::Relaxed).saturating_add(state)
	}

	/// The matcher thread: match handed-over commits in order until the store closes.
	fn run(&self) {
		let mut candidates = Vec::new();
		loop {
			let next = {
				let mut handed = self.handed.lock();
				loop {
					if let Some(next) = handed.pop_front() {
						break next;
					}
					if self.closing.load(Ordering::Acquire) {
						return;
					}
					self.wake.wait(&mut handed);
				}
			};
			self.match_commit(&next, &mut candidates);
			self.backlog.fetch_sub(next.bytes, Ordering::Relaxed);
			let _handed = self.handed.lock();
			self.matched_batch.store(next.batch, Ordering::Release);
			self.wake.notify_all();
		}
	}

	/// Queue each statement of `handed` for the subscribers it matches; drop those that lag,
	/// then, past the budget, those furthest behind.
	fn match_commit(&self, handed: &Handed, candidates: &mut Vec<u64>) {
		let mut index = self.index.lock();
		let mut lagged = Vec::new();
		for (_, record, encoding) in &handed.added {
			index.candidates(&record.topics, candidates);
			let mut shared: Option<Encoded> = None;
			for id in candidates.iter() {
				let Some(subscriber) = index.subscribers.get(id) else { continue };
				if subscriber.after_batch >= handed.batch
					|| !matches(&subscriber.filter, &record.topics)
				{
					continue;
				}
				let item = shared.get_or_insert_with(|| Arc::from(encoding.as_slice()));
				if !subscriber.queue.push(item) {
					log::debug!(
						target: "statement-store",
						"subscription {id} lagged past {} queued bytes; dropped",
						subscriber.queue.bound
					);
					lagged.push(*id);
				}
			}
			for id in lagged.drain(..) {
				index.remove(id);
			}
		}
		if self.used() > self.budget {
			self.shed(&mut index);
		}
	}

	/// Drop the budgeted subscribers furthest behind until what the budget counts is under
	/// seven eighths of it; never one with nothing queued.
	fn shed(&self, index: &mut Index) {
		let target = self.budget - self.budget / 8;
		let state = self.open.load(Ordering::Relaxed).saturating_mul(SUBSCRIPTION_STATE_BYTES);
		let mut behind: Vec<(usize, u64)> = index
			.subscribers
			.iter()
			.filter(|(_, subscriber)| subscriber.queue.total.is_some())
			.map(|(id, subscriber)| (subscriber.queue.bytes(), *id))
			.collect();
		// Largest queue first; among equals, the oldest subscriber.
		behind.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
		// Each dropped subscriber frees its state too.
		let mut left = self.queued.load(Ordering::Relaxed).saturating_add(state);
		let mut count = 0u64;
		for (bytes, id) in behind {
			if left <= target || bytes == 0 {
				break;
			}
			left = left.saturating_sub(bytes + SUBSCRIPTION_STATE_BYTES);
			if let Some(subscriber) = index.remove(id) {
				subscriber.queue.lag(subscriber.queue.state.lock());
				count += 1;
			}
		}
		let total = self.dropped_for_budget.fetch_add(count, Ordering::Relaxed) + count;
		log::debug!(
			target: "statement-store",
			"subscription queues past their budget of {} bytes: dropped the {count} furthest \
			 behind ({total} so far)",
			self.budget
		);
	}
}

impl Subscription {
	/// Register for `filter`'s live stream with a queue of at most `queue_bytes`; replay
	/// covers ids below `below`, `replay_total` matches. The caller holds the view lock.
	/// Refused past the budget (see the module documentation).
	pub(crate) fn register(
		store: &Store,
		filter: TopicFilter,
		queue_bytes: usize,
		below: Id,
		replay_total: u64,
	) -> Result<Subscription> {
		let (id, queue) = store.inner.subscriptions.add(filter.clone(), queue_bytes)?;
		Ok(Subscription {
			store: store.clone(),
			id,
			queue,
			replay: Some(Replay { filter, after: 0, below }),
			replay_total,
			largest_page: 0,
		})
	}

	/// How many stored statements matched when the subscription began (the replay sends
	/// fewer if some are removed before their page is read).
	pub fn replay_total(&self) -> u64 {
		self.replay_total
	}

	/// The next page of stored matches, oldest first, at most `max_bytes` (at least one
	/// statement); `None` once the replay is done. Holds the view lock only while it takes a
	/// page's ids.
	pub fn next_replay_page(&mut self, max_bytes: usize) -> Result<Option<Vec<Vec<u8>>>> {
		let inner = &self.store.inner;
		while let Some(replay) = &mut self.replay {
			let ids = inner.filter_page(&replay.filter, replay.after, replay.below, PAGE_IDS)?;
			if ids.scanned_to.is_none() {
				self.replay = None;
				break;
			}
			let bodies = inner.page_bodies(ids, replay.after, max_bytes, true)?;
			replay.after = bodies.cursor;
			if !bodies.read.is_empty() {
				self.largest_page = self.largest_page.max(bodies.bytes);
				return Ok(Some(bodies.read.into_iter().map(|(_, _, body)| body).collect()));
			}
		}
		Ok(None)
	}

	/// Statements committed since the subscription began, oldest first, up to `max_bytes`
	/// (at least one); waits until there is one. [`Error::Lagged`] once the subscriber has
	/// been dropped for falling behind.
	pub async fn next_live(&self, max_bytes: usize) -> Result<Vec<Encoded>> {
		loop {
			let ready = self.queue.take(max_bytes)?;
			if !ready.is_empty() {
				return Ok(ready);
			}
			// `notify_one` leaves a permit when nobody waits, so a push between `take` and
			// here is not missed.
			self.queue.ready.notified().await;
		}
	}

	/// Like [`Subscription::next_live`], without waiting: empty if nothing is queued.
	pub fn try_next_live(&self, max_bytes: usize) -> Result<Vec<Encoded>> {
		self.queue.take(max_bytes)
	}

	/// Count `bytes` the reader took and holds unsent (a notification waiting for its client
	/// to read) as queued, against this subscriber's bound and the budget of all, until
	/// [`Subscription::release`]; past the bound this subscriber is dropped, past the budget
	/// those furthest behind are. [`Error::Lagged`] if this subscriber is (now) dropped.
	pub fn hold(&self, bytes: usize) -> Result<()> {
		if !self.queue.hold(bytes) {
			if self.store.inner.subscriptions.shared.index.lock().remove(self.id).is_some() {
				log::debug!(
					target: "statement-store",
					"subscription {} lagged past {} queued bytes; dropped",
					self.id,
					self.queue.bound
				);
			}
			return self.check();
		}
		if self.queue.total.is_some() {
			self.store.inner.subscriptions.keep_within_budget();
		}
		self.check()
	}

	/// `bytes` counted by [`Subscription::hold`] were sent (or thrown away).
	pub fn release(&self, bytes: usize) {
		self.queue.unhold(bytes);
	}

	/// Whether the subscriber was dropped for falling behind.
	pub fn is_lagged(&self) -> bool {
		self.queue.state.lock().lagged
	}

	/// [`Error::Lagged`] if the subscriber was dropped for falling behind.
	pub fn check(&self) -> Result<()> {
		match self.is_lagged() {
			true => Err(Error::Lagged { queue_bytes: self.queue.bound }),
			false => Ok(()),
		}
	}

	/// The most encoded bytes this subscription held at once: its fullest live queue, or its
	/// largest replay page.
	pub fn peak_buffered_bytes(&self) -> usize {
		self.queue.state.lock().peak.max(self.largest_page)
	}
}

/// The store's subscription as the primitives' trait, for users that hold an
/// `Arc<dyn StatementStore>`.
impl StatementSubscription for Subscription {
	fn replay_total(&self) -> u64 {
		Subscription::replay_total(self)
	}

	fn next_replay_page(
		&mut self,
		max_bytes: usize,
	) -> statement_primitives::Result<Option<Vec<Vec<u8>>>> {
		Subscription::next_replay_page(self, max_bytes).map_err(to_primitives)
	}

	fn try_next_live(&self, max_bytes: usize) -> statement_primitives::Result<Vec<Encoded>> {
		Subscription::try_next_live(self, max_bytes).map_err(to_primitives)
	}

	fn wait_live(&self) -> SubscriptionFuture<'_, ()> {
		// `notify_one` leaves a permit when nobody waits, so a push between `try_next_live`
		// and this wait is not missed.
		Box::pin(self.queue.ready.notified())
	}

	fn check(&self) -> statement_primitives::Result<()> {
		Subscription::check(self).map_err(to_primitives)
	}

	fn set_waker(&self, waker: std::task::Waker) {
		self.queue.state.lock().waker = Some(waker);
	}

	fn hold(&self, bytes: usize) -> statement_primitives::Result<()> {
		Subscription::hold(self, bytes).map_err(to_primitives)
	}

	fn release(&self, bytes: usize) {
		Subscription::release(self, bytes)
	}
}

/// The store's error as the primitives', keeping a lag a lag (the general conversion folds
/// every store failure it does not know into a database error).
fn to_primitives(err: Error) -> statement_primitives::Error {
	match err {
		Error::Lagged { queue_bytes } => statement_primitives::Error::Lagged { queue_bytes },
		other => other.into(),
	}
}

impl Drop for Subscription {
	fn drop(&mut self) {
		self.store.inner.subscriptions.remove(self.id);
	}
}

/// Whether a statement with `topics` matches `filter`.
fn matches(filter: &TopicFilter, topics: &[Topic]) -> bool {
	match filter {
		TopicFilter::Any => true,
		TopicFilter::MatchAll(wanted) => wanted.iter().all(|topic| topics.contains(topic)),
		TopicFilter::MatchAny(wanted) => wanted.iter().any(|topic| topics.contains(topic)),
	}
}

impl Store {
	/// Wait until every statement committed so far is queued for the subscriptions it
	/// matches: matching runs on its own thread (`stmt-match`), a little after the commit.
	pub fn wait_for_matching(&self) {
		self.inner.subscriptions.flush();
	}

	/// Every statement committed from now on, with a queue of at most `queue_bytes`, and no
	/// replay: what gossip propagates.
	pub fn watch_admissions(&self, queue_bytes: usize) -> Subscription {
		let _view = self.inner.view.read();
		let (id, queue) = self.inner.subscriptions.add_unbudgeted(TopicFilter::Any, queue_bytes);
		Subscription {
			store: self.clone(),
			id,
			queue,
			replay: None,
			replay_total: 0,
			largest_page: 0,
		}
	}

	/// Subscribe with [`DEFAULT_SUBSCRIBER_QUEUE_BYTES`] of live queue; see
	/// [`Store::subscribe_with_queue`].
	pub fn subscribe(&self, filter: TopicFilter) -> Result<Subscription> {
		self.subscribe_with_queue(filter, DEFAULT_SUBSCRIBER_QUEUE_BYTES)
	}

	/// Subscribe: the stored statements matching `filter`, read page by page as the caller
	/// asks, then each new match as it commits, queued up to `queue_bytes`; a subscriber
	/// whose queue would overflow is dropped (see `subscription`).
	pub fn subscribe_with_queue(
		&self,
		filter: TopicFilter,
		queue_bytes: usize,
	) -> Result<Subscription> {
		if let TopicFilter::MatchAll(topics) = &filter {
			check_match_all(topics)?;
		}
		let _view = self.inner.view.read();
		// Every stored statement has a lower id, every later one a higher id.
		let below = {
			self.inner.db.hand_over()?;
			crate::read::last_stored_id(self.inner.db.raw())?.map_or(1, |id| id + 1)
		};
		let total = match &filter {
			TopicFilter::MatchAll(topics) if !topics.is_empty() => {
				let mut lists = Vec::new();
				for topic in topics {
					lists.push(self.inner.posting_list(PostingKey::Topic(topic.0))?);
				}
				intersect(&mut lists.iter().map(|list| list.ids()).collect::<Vec<_>>()).len()
			}
			TopicFilter::MatchAny(topics) => {
				let mut ids = Vec::new();
				for topic in topics {
					ids.extend_from_slice(
						self.inner.posting_list(PostingKey::Topic(topic.0))?.ids(),
					);
				}
				ids.sort_unstable();
				ids.dedup();
				ids.len()
			}
			TopicFilter::Any | TopicFilter::MatchAll(_) => self.len() as usize,
		};
		Subscription::register(self, filter, queue_bytes, below, total as u64)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn queue(bound: usize) -> Queue {
		Queue { state: Mutex::default(), ready: Notify::new(), bound, total: None }
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
		use sp_core::Pair;
		let mut statement = statement_primitives::Statement::new();
		statement.set_expiry_from_parts(u32::MAX, u32::from(n));
		statement.set_topic(0, Topic([topic; 32]));
		statement.set_plain_data(vec![n; 64]);
		statement.sign_ed25519_private(&sp_core::ed25519::Pair::from_seed(&[n; 32]));
		statement
	}

	#[tokio::test]
	async fn through_the_trait_a_subscriber_gets_replay_then_live_then_its_lag() {
		use statement_primitives::{
			StatementAllowance, StatementSource, StatementStore, SubmitResult,
		};
		let dir = tempfile::tempdir().unwrap();
		let allowances =
			crate::MapAllowances::new().with_default(StatementAllowance::new(1000, 1 << 20));
		let concrete = Store::open(crate::Config::new(dir.path()), Arc::new(allowances)).unwrap();
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
		assert_eq!(
			live.iter().map(|item| item.to_vec()).collect::<Vec<_>>(),
			[signed(5, 1).encode()]
		);
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
			crate::MapAllowances::new().with_default(StatementAllowance::new(1000, 1 << 20));
		let store: Arc<dyn StatementStore> =
			Arc::new(Store::open(crate::Config::new(dir.path()), Arc::new(allowances)).unwrap());
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
		let (all, _) =
			subscriptions.add(TopicFilter::MatchAll(vec![Topic([1; 32])]), 1 << 20).unwrap();
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
}
