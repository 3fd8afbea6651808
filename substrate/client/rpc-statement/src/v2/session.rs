//! One spec-v2 subscription, served by a task of its own: its filters, their replays, the
//! live stream, and the order `statement_unstable_subscribe.md` guarantees.
//!
//! How each guarantee holds:
//! - A filter's replay and its live stream are split by the store, atomically with the
//!   commits (`statement_primitives::FilterSubscription`): every match stored when the
//!   filter was added is in its replay, every later one in the live stream, none in both.
//! - The answer to `add_filter` reaches the connection's buffer before that filter's first
//!   event: the replay starts only once jsonrpsee says the answer was written
//!   ([`Command::Started`]).
//! - New statements wait while any filter's replay is still to start or under way (the spec
//!   lets a server delay live notifications); they wait in the store's bounded queue. So one
//!   that matches a replaying filter comes after that replay's `replayDone` (or after the
//!   filter is removed).
//! - The store queues each new statement once, with the ids of the filters it matched;
//!   filters removed since are taken out of the ids here, and a statement left with none is
//!   not sent. Filter ids are never reused.
//! - New statements wait in the store's bounded queue; when it overflows (a client that does
//!   not read, statements held back behind a long replay, the subscription budget) it spills
//!   and the task reads them from the store instead, in order (see
//!   `statement_primitives::FilterSubscription`), so none is dropped for memory.
//! - Between its pages a replay gives way to submissions on the node (one in progress or
//!   one within [`SUBMISSIONS_QUIET`]), for [`REPLAY_YIELD`] at most a page: a replay of
//!   millions of statements slows down rather than taking the cores the submits need. Each page is read while the one before it is
//!   sent, so the disk and the socket work at once.
//! - A subscription that cannot keep the guarantees (the store fails) gets
//!   `{"event": "stop"}` and nothing after it: no statement is ever skipped silently.

use super::json::{Entry, Event, Hex, LimitReached};
use crate::{
	hex::HexList,
	limits::{LIVE_BATCH_BYTES, REPLAY_BATCH_BYTES, REPLAY_YIELD, SUBMISSIONS_QUIET},
	pump::Stop,
	service::SubscriptionHook,
	submissions::Submissions,
	subscribe::connection_full,
};
use jsonrpsee::SubscriptionSink;
use serde_json::value::RawValue;
use statement_primitives::{FilterReplay, FilterSubscription, TopicFilter};
use std::{collections::BTreeMap, sync::Arc, time::Duration};
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Most filters one subscription holds at once, as upstream.
pub const MAX_FILTERS: usize = 128;

/// What the methods ask of a subscription's task.
pub(crate) enum Command {
	/// Add a filter; the answer is its id, or that the subscription holds [`MAX_FILTERS`].
	AddFilter { filter: TopicFilter, reply: oneshot::Sender<Result<Added, String>> },
	/// The answer to `add_filter` for this filter was written: its replay may start.
	Started(u64),
	/// Remove a filter (unknown ids are ignored).
	RemoveFilter(u64),
}

/// What adding a filter gave.
pub(crate) enum Added {
	/// Its id.
	Id(u64),
	/// The subscription holds as many filters as it may.
	LimitReached,
}

impl Added {
	/// The answer's JSON.
	pub(crate) fn answer(&self) -> serde_json::Value {
		match self {
			Added::Id(id) => serde_json::Value::String(id.to_string()),
			Added::LimitReached => {
				serde_json::to_value(LimitReached::ANSWER).unwrap_or(serde_json::Value::Null)
			}
		}
	}
}

/// A replay, between pages or reading its next one.
enum Replay {
	/// Between pages.
	Idle(Box<dyn FilterReplay>),
	/// Reading the next page off the async threads while the last one is sent.
	Reading(tokio::task::JoinHandle<(Box<dyn FilterReplay>, PageRead)>),
}

/// A replay page as read: its statements, or `None` once the replay is done.
type PageRead = statement_primitives::Result<Option<Vec<Vec<u8>>>>;

/// One active filter.
struct Filter {
	/// Its replay, until it is done; `None` after `replayDone`.
	replay: Option<Replay>,
	/// Whether the answer to its `add_filter` was written, so that its replay may start.
	started: bool,
	/// Kept while the filter lives: a light node asks its peers for the filter's topics.
	_interest: Option<Box<dyn std::any::Any + Send>>,
}

/// A subscription's task state.
pub(crate) struct Session {
	pub(crate) sink: SubscriptionSink,
	pub(crate) subscription: Arc<dyn FilterSubscription>,
	pub(crate) commands: mpsc::UnboundedReceiver<Command>,
	/// Permits to read off the async threads, shared with the legacy subscriptions.
	pub(crate) readers: Arc<Semaphore>,
	/// Called with each filter as it is added (see [`crate::SubscriptionHook`]).
	pub(crate) hook: Option<SubscriptionHook>,
	/// Submissions on the node, which replay pages give way to.
	submissions: Arc<Submissions>,
	filters: BTreeMap<u64, Filter>,
	next_filter_id: u64,
}

impl Session {
	/// A subscription of no filters yet.
	pub(crate) fn new(
		sink: SubscriptionSink,
		subscription: Arc<dyn FilterSubscription>,
		commands: mpsc::UnboundedReceiver<Command>,
		readers: Arc<Semaphore>,
		hook: Option<SubscriptionHook>,
		submissions: Arc<Submissions>,
	) -> Session {
		let filters = BTreeMap::new();
		let next_filter_id = 0;
		Session {
			sink,
			subscription,
			commands,
			readers,
			hook,
			submissions,
			filters,
			next_filter_id,
		}
	}

	/// Serve the subscription until the client leaves or it stops.
	pub(crate) async fn run(mut self) {
		let stop = loop {
			match self.step().await {
				Ok(true) => continue,
				Ok(false) => {}
				Err(stop) => break stop,
			}
			// Nothing to do now: wait for a command, a new statement (unless they wait for a
			// replay to start: the queue spills to the store if they are many), or the
			// client to go.
			let live = self.subscription.clone();
			let held_back = self.filters.values().any(|filter| filter.replay.is_some());
			let new_statement = async {
				if held_back {
					std::future::pending::<()>().await
				} else {
					live.live().wait_live().await
				}
			};
			tokio::select! {
				command = self.commands.recv() => match command {
					Some(command) => {
						if let Err(stop) = self.handle(command).await {
							break stop;
						}
					}
					None => break Stop::Closed,
				},
				_ = new_statement => {},
				_ = self.sink.closed() => break Stop::Closed,
			}
		};
		if let Stop::Failed(reason) = stop {
			log::debug!(target: "statement-rpc", "spec-v2 subscription stopped: {reason}");
			send_stop(self.sink);
		}
	}

	/// Do the next thing there is to do: commands, a replay page, new statements. `Ok(false)`
	/// if there was nothing.
	async fn step(&mut self) -> Result<bool, Stop> {
		while let Ok(command) = self.commands.try_recv() {
			self.handle(command).await?;
		}
		if self.sink.is_closed() {
			return Err(Stop::Closed);
		}
		if let Some(id) = self.replaying() {
			self.replay_page(id).await?;
			return Ok(true);
		}
		if self.filters.values().any(|filter| filter.replay.is_some()) {
			// A replay still to start: new statements wait.
			return Ok(false);
		}
		let batch = self.next_live().await?;
		if batch.is_empty() {
			return Ok(false);
		}
		let statements: Vec<Entry<_>> = batch
			.into_iter()
			.filter_map(|(statement, ids)| {
				let active: Vec<String> = ids
					.iter()
					.filter(|id| self.filters.contains_key(id))
					.map(u64::to_string)
					.collect();
				(!active.is_empty())
					.then_some(Entry { statement: Hex(statement), filter_ids: active })
			})
			.collect();
		if !statements.is_empty() {
			let event = Event::NewStatements { statements }.raw().map_err(Stop::Failed)?;
			self.send(event, 0).await?;
		}
		Ok(true)
	}

	/// New statements, with the filters that took them: from the queue, or, once it spilled,
	/// from the store (off the async threads).
	async fn next_live(
		&mut self,
	) -> Result<Vec<(statement_primitives::Encoded, Box<[u64]>)>, Stop> {
		let failed =
			|err: statement_primitives::Error| Stop::Failed(format!("statement store: {err}"));
		if !self.subscription.catching_up() {
			return self.subscription.try_next_live(LIVE_BATCH_BYTES).map_err(failed);
		}
		let Ok(permit) = self.readers.clone().acquire_owned().await else {
			return Err(Stop::Closed);
		};
		let subscription = self.subscription.clone();
		tokio::task::spawn_blocking(move || {
			let _permit = permit;
			subscription.try_next_live(LIVE_BATCH_BYTES)
		})
		.await
		.map_err(|err| Stop::Failed(format!("statement store: {err}")))?
		.map_err(failed)
	}

	/// The filter whose replay runs now: the oldest started one with pages left.
	fn replaying(&self) -> Option<u64> {
		self.filters
			.iter()
			.find(|(_, filter)| filter.started && filter.replay.is_some())
			.map(|(id, _)| *id)
	}

	async fn handle(&mut self, command: Command) -> Result<(), Stop> {
		match command {
			Command::AddFilter { filter, reply } => {
				let added = self.add(filter).await;
				let failed = added.as_ref().err().cloned();
				let _ = reply.send(added);
				if let Some(reason) = failed {
					return Err(Stop::Failed(reason));
				}
			}
			Command::Started(id) => {
				if let Some(filter) = self.filters.get_mut(&id) {
					filter.started = true;
				}
			}
			Command::RemoveFilter(id) => {
				if self.filters.remove(&id).is_some() {
					self.subscription.remove_filter(id);
				}
			}
		}
		Ok(())
	}

	/// Add `filter` in the store (off the async threads: it reads the topics' lists).
	async fn add(&mut self, filter: TopicFilter) -> Result<Added, String> {
		if self.filters.len() >= MAX_FILTERS {
			return Ok(Added::LimitReached);
		}
		let id = self.next_filter_id;
		self.next_filter_id += 1;
		let interest = self.hook.as_ref().map(|hook| hook(&filter));
		let subscription = self.subscription.clone();
		let permit = self.readers.clone().acquire_owned().await.map_err(|err| err.to_string())?;
		let replay = tokio::task::spawn_blocking(move || {
			let _permit = permit;
			subscription.add_filter(id, &filter)
		})
		.await
		.map_err(|err| format!("adding a filter: {err}"))?
		.map_err(|err| err.to_string())?;
		let filter =
			Filter { replay: Some(Replay::Idle(replay)), started: false, _interest: interest };
		self.filters.insert(id, filter);
		Ok(Added::Id(id))
	}

	/// Send filter `id`'s next replay page, or its `replayDone`. The page after it is read
	/// while this one is sent (and counted in the store as held if it has to wait for room).
	async fn replay_page(&mut self, id: u64) -> Result<(), Stop> {
		let Some(replay) = self.filters.get_mut(&id).and_then(|filter| filter.replay.take()) else {
			return Ok(());
		};
		let reading = match replay {
			Replay::Reading(reading) => reading,
			Replay::Idle(replay) => read_page(replay, &self.submissions, &self.readers).await?,
		};
		let (replay, page) =
			reading.await.map_err(|err| Stop::Failed(format!("statement store: {err}")))?;
		let page = page.map_err(|err| Stop::Failed(format!("statement store: {err}")))?;
		// Removed while the page was read: nothing more of it is sent.
		if !self.filters.contains_key(&id) {
			return Ok(());
		}
		let (event, ahead) = match page {
			Some(statements) => {
				let next = read_page(replay, &self.submissions, &self.readers).await?;
				if let Some(filter) = self.filters.get_mut(&id) {
					filter.replay = Some(Replay::Reading(next));
				}
				let statements = HexList(statements);
				let event = Event::ReplayStatements { filter_id: id.to_string(), statements };
				(event.raw(), REPLAY_BATCH_BYTES)
			}
			None => (Event::<Vec<u8>>::ReplayDone { filter_id: id.to_string() }.raw(), 0),
		};
		self.send(event.map_err(Stop::Failed)?, ahead).await
	}

	/// Send `event` once the connection has room (at most
	/// [`crate::limits::IN_FLIGHT_NOTIFICATIONS`] waiting), serving commands meanwhile: a
	/// client that reads slowly still has its `add_filter` and `remove_filter` answered. While
	/// it waits, `event` and `ahead` more bytes read for the subscription count in the store
	/// as held.
	async fn send(&mut self, event: Box<RawValue>, ahead: usize) -> Result<(), Stop> {
		let held = event.get().len() + ahead;
		let subscription = self.subscription.clone();
		let live = subscription.live();
		let mut holding = false;
		let mut pause = Duration::from_millis(1);
		let sent = loop {
			if !connection_full(&self.sink) {
				break self.sink.send(event).await.map_err(|_| Stop::Closed);
			}
			if !holding {
				if let Err(err) = live.hold(held) {
					break Err(Stop::Failed(err.to_string()));
				}
				holding = true;
			}
			if let Err(err) = live.check() {
				break Err(Stop::Failed(err.to_string()));
			}
			tokio::select! {
				command = self.commands.recv() => match command {
					Some(command) => {
						if let Err(stop) = self.handle(command).await {
							break Err(stop);
						}
					}
					None => break Err(Stop::Closed),
				},
				_ = tokio::time::sleep(pause) => pause = (pause * 2).min(Duration::from_millis(100)),
				_ = self.sink.closed() => break Err(Stop::Closed),
			}
		};
		if holding {
			live.release(held);
		}
		sent
	}
}

/// Start reading `replay`'s next page off the async threads, once submissions in progress
/// are done (or [`REPLAY_YIELD`] passed) and a reader permit is free.
async fn read_page(
	mut replay: Box<dyn FilterReplay>,
	submissions: &Submissions,
	readers: &Arc<Semaphore>,
) -> Result<tokio::task::JoinHandle<(Box<dyn FilterReplay>, PageRead)>, Stop> {
	give_way(submissions).await;
	let Ok(permit) = readers.clone().acquire_owned().await else { return Err(Stop::Closed) };
	Ok(tokio::task::spawn_blocking(move || {
		let _permit = permit;
		let page = replay.next_page(REPLAY_BATCH_BYTES);
		(replay, page)
	}))
}

/// Wait while the node is handling submissions (one in progress, or one within
/// [`SUBMISSIONS_QUIET`]), [`REPLAY_YIELD`] at most: a replay gives the cores to submits
/// between its pages.
async fn give_way(submissions: &Submissions) {
	let until = tokio::time::Instant::now() + REPLAY_YIELD;
	while submissions.busy(SUBMISSIONS_QUIET) && tokio::time::Instant::now() < until {
		tokio::time::sleep(Duration::from_millis(1)).await;
	}
}

/// End the subscription with `{"event": "stop"}`: now if the connection has room, else from a
/// task that waits for room (or for the client to leave). Nothing is sent after it.
fn send_stop(mut sink: SubscriptionSink) {
	let Ok(stop) = Event::<Vec<u8>>::Stop.raw() else { return };
	match sink.try_send(stop) {
		Ok(()) | Err(jsonrpsee::core::server::TrySendError::Closed(_)) => {}
		Err(jsonrpsee::core::server::TrySendError::Full(stop)) => {
			tokio::spawn(async move {
				let _ = sink.send(stop).await;
			});
		}
	}
}
