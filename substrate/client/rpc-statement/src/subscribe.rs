//! A subscription's life until the pump takes it: subscribe to the store, accept, send the
//! stored matches a page at a time while the client reads, then hand the subscription to the
//! [`Pump`](crate::pump::Pump) with the replay's last page.
//!
//! A replay page is sent only while the connection's outgoing buffer holds fewer than
//! [`IN_FLIGHT_NOTIFICATIONS`] messages, so a client that does not read leaves the rest of its
//! replay in the store. While a page waits for room it is counted in the store as held
//! ([`StatementSubscription::hold`]), so the store's budget for all subscriptions covers it.

use crate::{
	error::{internal, invalid_params, store_error, too_many_subscriptions},
	limits::{IN_FLIGHT_NOTIFICATIONS, REPLAY_BATCH_BYTES},
	notification::encode,
	pump::{self, Stop},
	service::StatementRpc,
};
use jsonrpsee::{types::error::ErrorObjectOwned, PendingSubscriptionSink};
use statement_primitives::{StatementSubscription, TopicFilter};
use std::sync::{
	atomic::{AtomicUsize, Ordering},
	Arc,
};

/// One subscription being opened, counted in [`StatementRpc::starting`] until dropped.
pub(crate) struct Starting(Arc<AtomicUsize>);

impl Starting {
	pub(crate) fn new(count: &Arc<AtomicUsize>) -> Starting {
		count.fetch_add(1, Ordering::Relaxed);
		Starting(count.clone())
	}

	/// How many others are being opened.
	pub(crate) fn others(&self) -> usize {
		self.0.load(Ordering::Relaxed).saturating_sub(1)
	}
}

impl Drop for Starting {
	fn drop(&mut self) {
		self.0.fetch_sub(1, Ordering::Relaxed);
	}
}

/// A subscription as the store hands it out.
type Subscription = Box<dyn StatementSubscription>;

/// Subscribe to the store, accept, replay; then hand the subscription to the pump. A
/// subscription that fails during its replay ends with the error notification.
pub(crate) async fn start(
	filter: Result<TopicFilter, ErrorObjectOwned>,
	pending: PendingSubscriptionSink,
	rpc: Arc<StatementRpc>,
	starting: Starting,
) {
	let filter = match filter {
		Ok(filter) => filter,
		Err(err) => {
			rpc.metrics.subscribed(false);
			return pending.reject(err).await;
		}
	};
	// Held until the subscription ends.
	let hooked = rpc.on_subscribe.as_ref().map(|hook| hook(&filter));
	let store = rpc.store.clone();
	let queue_bytes = rpc.queue_bytes;
	let Ok(permit) = rpc.readers.clone().acquire_owned().await else { return };
	// Subscribe and read the first two replay pages (most replays have one) off the async
	// threads, in one blocking call rather than one each.
	let subscribed = tokio::task::spawn_blocking(move || {
		let _permit = permit;
		let mut subscription =
			store.subscribe_with_queue(filter, queue_bytes).map_err(|err| match err {
				full @ statement_primitives::Error::TooManySubscriptions { .. } => {
					too_many_subscriptions(full)
				}
				other => invalid_params(other.to_string()),
			})?;
		let mut page =
			|| subscription.next_replay_page(REPLAY_BATCH_BYTES).map_err(|err| store_error(&err));
		let first = page()?;
		let second = if first.is_some() { page()? } else { None };
		Ok::<_, ErrorObjectOwned>((subscription, first, second))
	})
	.await;
	let (subscription, first, second) = match subscribed {
		Ok(Ok(started)) => started,
		Ok(Err(err)) => {
			rpc.metrics.subscribed(false);
			return pending.reject(err).await;
		}
		Err(err) => {
			rpc.metrics.subscribed(false);
			return pending.reject(internal(err)).await;
		}
	};
	// Open (counted by the store) or refused: no longer starting.
	drop(starting);
	let Ok(sink) = pending.accept().await else { return };
	rpc.metrics.subscribed(true);
	// Held, as the interest is, for as long as the subscription lives.
	let held: Box<dyn std::any::Any + Send> = Box::new((hooked, rpc.metrics.active()));
	// Boxed: a start that waits for a reader (above) holds only its own few fields.
	match Box::pin(replay(&sink, subscription, first, second, &rpc.readers)).await {
		Ok((subscription, last)) => rpc.pump.adopt(sink, subscription, Some(held), last),
		Err(Stop::Closed) => {}
		Err(Stop::Failed(reason)) => pump::fail(sink, reason),
	}
}

/// Send the stored matches, a page a notification, but the last (with `remaining: 0`), which
/// is returned for the pump to send: a subscription whose replay is one page (most are)
/// never waits for buffer room in a task of its own.
async fn replay(
	sink: &jsonrpsee::SubscriptionSink,
	mut subscription: Subscription,
	first: Option<Vec<Vec<u8>>>,
	second: Option<Vec<Vec<u8>>>,
	readers: &Arc<tokio::sync::Semaphore>,
) -> Result<(Subscription, Box<serde_json::value::RawValue>), Stop> {
	let total = subscription.replay_total();
	// One page ahead, so that the last replay batch can say `remaining: 0`.
	let (mut current, mut next) = (first, second);
	let mut sent = 0u64;
	loop {
		let batch = current.take().unwrap_or_default();
		sent += batch.len() as u64;
		let remaining = if next.is_some() { total.saturating_sub(sent) } else { 0 };
		let event = encode(batch, Some(u32::try_from(remaining).unwrap_or(u32::MAX)))
			.map_err(Stop::Failed)?;
		if next.is_none() {
			return Ok((subscription, event));
		}
		// While it waits for room, the next page is held too.
		let ahead = next.iter().flatten().map(Vec::len).sum::<usize>();
		send(sink, subscription.as_ref(), event, ahead).await?;
		current = next;
		let (next_subscription, after) = replay_page(subscription, readers).await?;
		subscription = next_subscription;
		next = after;
	}
}

/// The next replay page, read off the async threads.
async fn replay_page(
	mut subscription: Subscription,
	readers: &Arc<tokio::sync::Semaphore>,
) -> Result<(Subscription, Option<Vec<Vec<u8>>>), Stop> {
	let Ok(permit) = readers.clone().acquire_owned().await else { return Err(Stop::Closed) };
	let read = tokio::task::spawn_blocking(move || {
		let _permit = permit;
		let page = subscription.next_replay_page(REPLAY_BATCH_BYTES);
		(subscription, page)
	})
	.await;
	match read {
		Ok((subscription, Ok(page))) => Ok((subscription, page)),
		Ok((_, Err(err))) => Err(Stop::Failed(format!("statement store: {err}"))),
		Err(err) => Err(Stop::Failed(format!("statement store: {err}"))),
	}
}

/// Send `event` once the connection's outgoing buffer has room (at most
/// [`IN_FLIGHT_NOTIFICATIONS`] waiting), so a client that does not read leaves its backlog in
/// the store's bounded queue, where lagging is noticed. While it waits, `event` and `ahead`
/// more bytes read for the subscription are counted in the store as held.
pub(crate) async fn send(
	sink: &jsonrpsee::SubscriptionSink,
	subscription: &dyn StatementSubscription,
	event: Box<serde_json::value::RawValue>,
	ahead: usize,
) -> Result<(), Stop> {
	let full = || connection_full(sink);
	if full() {
		let held = event.get().len() + ahead;
		subscription.hold(held).map_err(|err| Stop::Failed(err.to_string()))?;
		let waited = wait_for_room(sink, subscription, full).await;
		subscription.release(held);
		waited?;
	}
	sink.send(event).await.map_err(|_| Stop::Closed)
}

/// Whether [`IN_FLIGHT_NOTIFICATIONS`] of the subscription's messages wait in the
/// connection's buffer already.
pub(crate) fn connection_full(sink: &jsonrpsee::SubscriptionSink) -> bool {
	sink.max_capacity().saturating_sub(sink.capacity()) >= IN_FLIGHT_NOTIFICATIONS
}

/// Wait until `full` is false, the client leaves or the store drops the subscriber.
async fn wait_for_room(
	sink: &jsonrpsee::SubscriptionSink,
	subscription: &dyn StatementSubscription,
	full: impl Fn() -> bool,
) -> Result<(), Stop> {
	let mut pause = std::time::Duration::from_millis(1);
	while full() {
		subscription.check().map_err(|err| Stop::Failed(err.to_string()))?;
		tokio::select! {
			_ = tokio::time::sleep(pause) => {},
			_ = sink.closed() => return Err(Stop::Closed),
		}
		pause = (pause * 2).min(std::time::Duration::from_millis(100));
	}
	Ok(())
}
