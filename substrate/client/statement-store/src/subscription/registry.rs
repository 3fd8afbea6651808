//! The open subscriptions, indexed by topic, and the matcher thread (`stmt-match`) that queues each commit's statements for the subscribers they match.

use super::queue::{Encoded, Queue};
use crate::{
	error::Error,
	error::Result,
	index::schema::{Id, Record},
};
use parking_lot::{Condvar, Mutex};
use statement_primitives::{Hash, Topic, TopicFilter, SUBSCRIPTION_STATE_BYTES};
use std::{
	collections::{HashMap, VecDeque},
	sync::{
		atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
		Arc,
	},
};
use tokio::sync::Notify;

pub(super) struct Subscriber {
	pub(super) wants: Wants,
	pub(super) queue: Arc<Queue>,
}

/// What a subscriber asks for.
pub(super) enum Wants {
	/// One filter, fixed for the subscriber's life.
	One(Wanted),
	/// Filters added and removed while it lives, each from its own commit on; what matches is
	/// queued once, with the ids of the filters it matched.
	Set(Vec<Wanted>),
}

/// One filter of a subscriber.
pub(super) struct Wanted {
	/// The filter's id within its subscriber (0 for a subscriber of one filter).
	pub(super) id: u64,
	pub(super) filter: TopicFilter,
	/// Batches numbered up to this one were committed before the filter was added: its
	/// replay has them, the live stream must not.
	pub(super) after_batch: u64,
	/// The same line in ids: statements stored as this id or a later one are the live
	/// stream's (0 for a subscriber of one filter, which never reads the store for it).
	pub(super) from_id: Id,
}

impl Wanted {
	/// Whether a statement with `topics`, committed in `batch`, is this filter's to stream.
	fn takes(&self, batch: u64, topics: &[Topic]) -> bool {
		self.after_batch < batch && matches(&self.filter, topics)
	}
}

impl Wants {
	fn filters(&self) -> &[Wanted] {
		match self {
			Wants::One(wanted) => std::slice::from_ref(wanted),
			Wants::Set(wanted) => wanted,
		}
	}
}

/// Statements a commit handed to the matcher.
pub(super) struct Handed {
	/// The commit's number: one more than the previous commit's.
	pub(super) batch: u64,
	/// Bytes of the encodings, counted in the backlog.
	pub(super) bytes: usize,
	pub(super) added: Vec<(Hash, Record, Vec<u8>)>,
}

/// The subscribers, indexed by what their filters ask for, so a statement costs a lookup per
/// topic plus the subscribers it matches, not a check of every subscriber.
#[derive(Default)]
pub(super) struct Index {
	pub(super) subscribers: HashMap<u64, Subscriber>,
	/// Subscribers counted in the budget; shared with [`Shared::open`] for lock-free reads.
	pub(super) budgeted: Arc<AtomicUsize>,
	/// Subscribers of any kind; shared with [`Shared::held`], so that a commit learns that
	/// there are none without taking this index's lock.
	pub(super) held: Arc<AtomicUsize>,
	/// `Any` and `MatchAll` of no topic: every statement.
	pub(super) all: Vec<u64>,
	/// `MatchAll` under its first topic (the rest are checked), `MatchAny` under each.
	pub(super) by_topic: HashMap<Topic, Vec<u64>>,
	/// Subscribers of a set of filters, which may be listed under a key more than once.
	sets: usize,
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
		self.held.fetch_add(1, Ordering::Release);
		if subscriber.queue.total.is_some() {
			self.budgeted.fetch_add(1, Ordering::Relaxed);
		}
		if matches!(subscriber.wants, Wants::Set(_)) {
			self.sets += 1;
		}
		for wanted in subscriber.wants.filters() {
			self.list(id, &wanted.filter);
		}
		self.subscribers.insert(id, subscriber);
	}

	/// List subscriber `id` where `filter` is found.
	fn list(&mut self, id: u64, filter: &TopicFilter) {
		match Index::keys(filter) {
			None => self.all.push(id),
			Some(topics) => {
				for (at, topic) in topics.iter().enumerate() {
					// A `MatchAny` may name a topic twice: list it once for the filter.
					if topics[..at].contains(topic) {
						continue;
					}
					self.by_topic.entry(*topic).or_default().push(id);
				}
			}
		}
	}

	/// Take one listing of subscriber `id` for `filter` out.
	fn unlist(&mut self, id: u64, filter: &TopicFilter) {
		let unlist = |listed: &mut Vec<u64>| {
			if let Some(at) = listed.iter().position(|listed| *listed == id) {
				listed.swap_remove(at);
			}
		};
		match Index::keys(filter) {
			None => unlist(&mut self.all),
			Some(topics) => {
				for (at, topic) in topics.iter().enumerate() {
					if topics[..at].contains(topic) {
						continue;
					}
					if let Some(listed) = self.by_topic.get_mut(topic) {
						unlist(listed);
						if listed.is_empty() {
							self.by_topic.remove(topic);
						}
					}
				}
			}
		}
	}

	pub(super) fn remove(&mut self, id: u64) -> Option<Subscriber> {
		let subscriber = self.subscribers.remove(&id)?;
		self.held.fetch_sub(1, Ordering::Release);
		if subscriber.queue.total.is_some() {
			self.budgeted.fetch_sub(1, Ordering::Relaxed);
		}
		if matches!(subscriber.wants, Wants::Set(_)) {
			self.sets -= 1;
		}
		for wanted in subscriber.wants.filters() {
			self.unlist(id, &wanted.filter);
		}
		Some(subscriber)
	}

	/// Add `wanted` to set subscriber `id`; false if there is no such subscriber.
	pub(super) fn add_filter(&mut self, id: u64, wanted: Wanted) -> bool {
		let Some(Subscriber { wants: Wants::Set(filters), .. }) = self.subscribers.get_mut(&id)
		else {
			return false;
		};
		let filter = wanted.filter.clone();
		filters.push(wanted);
		self.list(id, &filter);
		true
	}

	/// Take filter `filter_id` out of set subscriber `id`, if it has it.
	pub(super) fn remove_filter(&mut self, id: u64, filter_id: u64) {
		let Some(Subscriber { wants: Wants::Set(filters), .. }) = self.subscribers.get_mut(&id)
		else {
			return;
		};
		let Some(at) = filters.iter().position(|wanted| wanted.id == filter_id) else { return };
		let removed = filters.swap_remove(at);
		self.unlist(id, &removed.filter);
	}

	/// The subscribers `topics` may match, each once, in no particular order.
	pub(super) fn candidates(&self, topics: &[Topic], out: &mut Vec<u64>) {
		out.clear();
		out.extend_from_slice(&self.all);
		for topic in topics {
			if let Some(listed) = self.by_topic.get(topic) {
				out.extend_from_slice(listed);
			}
		}
		// A statement of several topics, or a subscriber of several filters, may be found
		// more than once.
		if topics.len() > 1 || self.sets > 0 {
			out.sort_unstable();
			out.dedup();
		}
	}
}

/// What the matcher thread and the store share.
pub(super) struct Shared {
	pub(super) index: Mutex<Index>,
	/// Commits handed over and not matched yet, oldest first.
	handed: Mutex<VecDeque<Handed>>,
	/// Signalled when a commit is handed over, when one has been matched, and at close.
	pub(super) wake: Condvar,
	/// Bytes of encodings in `handed`.
	backlog: AtomicUsize,
	/// The number of the last commit handed over (all are numbered, matched or not).
	pub(super) last_batch: AtomicU64,
	/// The number of the last commit matched.
	pub(super) matched_batch: AtomicU64,
	closing: AtomicBool,
	/// Bytes queued for budgeted subscribers, all together.
	pub(super) queued: Arc<AtomicUsize>,
	/// Budgeted subscribers open (the index's count).
	pub(super) open: Arc<AtomicUsize>,
	/// Subscribers open, budgeted or not (the index's count).
	held: Arc<AtomicUsize>,
	/// The most `queued` plus the open subscribers' state may reach before the subscribers
	/// furthest behind are dropped.
	pub(super) budget: usize,
	/// Subscribers dropped to keep within the budget, since the store opened.
	dropped_for_budget: AtomicU64,
	/// Subscriptions refused for the budget, since the store opened.
	refused_for_budget: AtomicU64,
}

/// The open subscriptions, and the thread that matches new statements to them.
pub struct Subscriptions {
	pub(super) shared: Arc<Shared>,
	next_id: AtomicU64,
	pub(super) matcher: Option<std::thread::JoinHandle<()>>,
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
		let held = index.held.clone();
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
			held,
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
		// Every earlier commit matched (so the matcher is idle: it stores the number under
		// this lock once done), and nothing to match in this one: no statement, or no
		// subscriber to match it to (none can register meanwhile: registering holds the
		// view lock this commit holds exclusively, and a later subscriber reads this
		// commit's statements from the store). The batch number still moves on, and the
		// matcher thread is not woken: waking it cost a submit about a tenth of its time.
		let idle = shared.matched_batch.load(Ordering::Acquire) + 1 == batch;
		if idle && (added.is_empty() || shared.held.load(Ordering::Acquire) == 0) {
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
	pub(super) fn add(&self, filter: TopicFilter, bound: usize) -> Result<(u64, Arc<Queue>)> {
		let mut index = self.shared.index.lock();
		self.check_room(0).map_err(Error::Query)?;
		Ok(self.insert(&mut index, Some(filter), bound, true))
	}

	/// Register a subscriber of a set of filters, none yet, counted in the budget; refused
	/// as [`Subscriptions::add`] is.
	pub(super) fn add_set(&self, bound: usize) -> Result<(u64, Arc<Queue>)> {
		let mut index = self.shared.index.lock();
		self.check_room(0).map_err(Error::Query)?;
		Ok(self.insert(&mut index, None, bound, true))
	}

	/// Add `filter` as filter `filter_id` of set subscriber `id`, streaming what commits
	/// from now on, which is stored as `from_id` or later; the caller holds the view lock
	/// (shared), so no commit is numbered while it adds. False if the subscriber is gone.
	pub(super) fn add_filter(
		&self,
		id: u64,
		filter_id: u64,
		filter: TopicFilter,
		from_id: Id,
	) -> bool {
		let after_batch = self.shared.last_batch.load(Ordering::Acquire);
		let wanted = Wanted { id: filter_id, filter, after_batch, from_id };
		self.shared.index.lock().add_filter(id, wanted)
	}

	/// The filters of set subscriber `id`: each one's id, filter, and the first id its live
	/// stream takes.
	pub(super) fn filters_of(&self, id: u64) -> Vec<(u64, TopicFilter, Id)> {
		match self.shared.index.lock().subscribers.get(&id) {
			Some(Subscriber { wants: Wants::Set(filters), .. }) => filters
				.iter()
				.map(|wanted| (wanted.id, wanted.filter.clone(), wanted.from_id))
				.collect(),
			_ => Vec::new(),
		}
	}

	/// Set subscriber `id` has read every stored statement from the store after its queue
	/// spilled: queue again what commits from now on. The caller holds the view lock
	/// (shared), so no commit is numbered meanwhile, and a commit matched later that the
	/// store already held is not queued twice.
	pub(super) fn resume(&self, id: u64) {
		let after_batch = self.shared.last_batch.load(Ordering::Acquire);
		let mut index = self.shared.index.lock();
		let Some(subscriber) = index.subscribers.get_mut(&id) else { return };
		if let Wants::Set(filters) = &mut subscriber.wants {
			for wanted in filters.iter_mut() {
				wanted.after_batch = wanted.after_batch.max(after_batch);
			}
		}
		subscriber.queue.resume();
	}

	/// Stop streaming filter `filter_id` of set subscriber `id`.
	pub(super) fn remove_filter(&self, id: u64, filter_id: u64) {
		self.shared.index.lock().remove_filter(id, filter_id);
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
	pub(super) fn add_unbudgeted(&self, filter: TopicFilter, bound: usize) -> (u64, Arc<Queue>) {
		self.insert(&mut self.shared.index.lock(), Some(filter), bound, false)
	}

	/// Register a subscriber of `filter`, or of a set of filters (none yet) if `None`.
	fn insert(
		&self,
		index: &mut Index,
		filter: Option<TopicFilter>,
		bound: usize,
		budgeted: bool,
	) -> (u64, Arc<Queue>) {
		let id = self.next_id.fetch_add(1, Ordering::Relaxed);
		let queue = Arc::new(Queue {
			state: Mutex::default(),
			ready: Notify::new(),
			bound: bound.max(1),
			total: budgeted.then(|| self.shared.queued.clone()),
			spills: filter.is_none(),
		});
		let after_batch = self.shared.last_batch.load(Ordering::Acquire);
		let wants = match filter {
			Some(filter) => Wants::One(Wanted { id: 0, filter, after_batch, from_id: 0 }),
			None => Wants::Set(Vec::new()),
		};
		index.insert(id, Subscriber { wants, queue: queue.clone() });
		(id, queue)
	}

	pub(super) fn remove(&self, id: u64) {
		let removed = self.shared.index.lock().remove(id);
		if let Some(subscriber) = removed {
			subscriber.queue.release();
		}
	}

	/// Past the budget, drop the subscribers furthest behind (as a commit does).
	pub(super) fn keep_within_budget(&self) {
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
	pub(super) fn match_commit(&self, handed: &Handed, candidates: &mut Vec<u64>) {
		let mut index = self.index.lock();
		let mut lagged = Vec::new();
		for (_, record, encoding) in &handed.added {
			index.candidates(&record.topics, candidates);
			let mut shared: Option<Encoded> = None;
			for id in candidates.iter() {
				let Some(subscriber) = index.subscribers.get(id) else { continue };
				let queued = match &subscriber.wants {
					Wants::One(wanted) => {
						if !wanted.takes(handed.batch, &record.topics) {
							continue;
						}
						let item = shared.get_or_insert_with(|| Arc::from(encoding.as_slice()));
						subscriber.queue.push(item)
					}
					Wants::Set(filters) => {
						let ids: Box<[u64]> = filters
							.iter()
							.filter(|wanted| wanted.takes(handed.batch, &record.topics))
							.map(|wanted| wanted.id)
							.collect();
						if ids.is_empty() {
							continue;
						}
						let item = shared.get_or_insert_with(|| Arc::from(encoding.as_slice()));
						subscriber.queue.push_tagged(item, record.id, ids)
					}
				};
				if !queued {
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
			// A subscriber of a set of filters spills to the store instead, and stays.
			if index.subscribers.get(&id).is_some_and(|subscriber| subscriber.queue.spills) {
				left = left.saturating_sub(bytes);
				if let Some(subscriber) = index.subscribers.get(&id) {
					subscriber.queue.spill(subscriber.queue.state.lock());
				}
				continue;
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

/// Whether a statement with `topics` matches `filter`.
pub(super) fn matches(filter: &TopicFilter, topics: &[Topic]) -> bool {
	match filter {
		TopicFilter::Any => true,
		TopicFilter::MatchAll(wanted) => wanted.iter().all(|topic| topics.contains(topic)),
		TopicFilter::MatchAny(wanted) => wanted.iter().any(|topic| topics.contains(topic)),
	}
}
