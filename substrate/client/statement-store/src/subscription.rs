//! Subscriptions: stored matches first, then every new match exactly once, in commit order.
//!
//! New statements are handed to subscribers inside the commit's critical section, and a
//! subscription takes its replay under the shared view lock, so no statement falls between
//! the replay and the live stream, and none comes twice.

use crate::schema::Record;
use parking_lot::Mutex;
use statement_primitives::{Statement, Topic, TopicFilter};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// A live subscription: what was stored when it began, then what arrives.
pub struct Subscription {
	/// Encodings of the stored statements that matched when the subscription began.
	pub replay: Vec<Vec<u8>>,
	/// Encodings of matching statements committed since, in commit order.
	pub live: UnboundedReceiver<Vec<u8>>,
}

struct Subscriber {
	filter: TopicFilter,
	sink: UnboundedSender<Vec<u8>>,
}

/// The open subscriptions.
#[derive(Default)]
pub struct Subscriptions {
	subscribers: Mutex<Vec<Subscriber>>,
}

impl Subscriptions {
	/// Register a subscriber; the caller holds the view lock while it also takes the replay.
	pub fn add(&self, filter: TopicFilter) -> UnboundedReceiver<Vec<u8>> {
		let (sink, live) = unbounded_channel();
		self.subscribers.lock().push(Subscriber { filter, sink });
		live
	}

	/// Hand newly committed statements to matching subscribers; forget closed ones.
	pub fn notify<'a>(&self, added: impl Iterator<Item = (&'a Record, &'a Vec<u8>)>) {
		let mut subscribers = self.subscribers.lock();
		if subscribers.is_empty() {
			return;
		}
		for (record, encoding) in added {
			subscribers.retain(|subscriber| {
				if !matches(&subscriber.filter, &record.topics) {
					return !subscriber.sink.is_closed();
				}
				subscriber.sink.send(encoding.clone()).is_ok()
			});
		}
	}

	/// Number of open subscriptions.
	pub fn len(&self) -> usize {
		self.subscribers.lock().len()
	}
}

fn matches(filter: &TopicFilter, topics: &[Topic]) -> bool {
	let mut statement = Statement::new();
	for (index, topic) in topics.iter().enumerate() {
		statement.set_topic(index, *topic);
	}
	filter.matches(&statement)
}
