//! Pages of a topic's stored statements, for watches, fetches and hand-overs.
//!
//! A page is one replay page of a store subscription to the topic. Between pages the
//! subscription is kept ([`Cursors`], by topic and position), so the next page goes on from
//! where the last ended: a topic of n pages is read once, not n²/2 times, and statements
//! removed meanwhile do not shift the ones after them past the reader. A request for a
//! position no cursor is at (its cursor was dropped, or the asker is another peer) skips
//! that many statements of a fresh replay.

use crate::{core::LOG, routing::wire};
use parking_lot::Mutex;
use statement_primitives::{Encoded, StatementStore, StatementSubscription, Topic, TopicFilter};
use std::{
	collections::HashMap,
	sync::Arc,
	time::{Duration, Instant},
};

/// Reads paused between pages; past it, the oldest is dropped.
const MAX_CURSORS: usize = 64;

/// A paused read no page was asked of for this long is dropped.
const CURSOR_IDLE: Duration = Duration::from_secs(60);

/// Bytes of new statements each cursor's subscription may queue (never read: only its
/// replay is).
const CURSOR_QUEUE: usize = 1024;

type Cursor = (Box<dyn StatementSubscription>, Instant);

/// A key, and the position in it the next page starts at.
type At = ([u8; 32], u32);

/// Reads paused between pages, by where each goes on from.
#[derive(Clone, Default)]
pub(super) struct Cursors(Arc<Mutex<HashMap<At, Cursor>>>);

impl Cursors {
	fn take(&self, key: [u8; 32], position: u32) -> Option<Box<dyn StatementSubscription>> {
		self.0.lock().remove(&(key, position)).map(|(subscription, _)| subscription)
	}

	fn put(&self, key: [u8; 32], position: u32, subscription: Box<dyn StatementSubscription>) {
		let mut cursors = self.0.lock();
		let now = Instant::now();
		cursors.retain(|_, (_, since)| now.duration_since(*since) < CURSOR_IDLE);
		if cursors.len() >= MAX_CURSORS {
			let oldest = cursors.iter().min_by_key(|(_, (_, since))| *since).map(|(at, _)| *at);
			if let Some(oldest) = oldest {
				cursors.remove(&oldest);
			}
		}
		cursors.insert((key, position), (subscription, now));
	}
}

/// A page of the statements on `topic` from the `skip`th on (at most [`wire::MAX_ANSWER`]
/// bytes), and whether more may follow.
pub(super) fn read_topic(
	store: &dyn StatementStore,
	cursors: &Cursors,
	topic: Topic,
	skip: u32,
) -> statement_primitives::Result<(Vec<Encoded>, bool)> {
	let (mut subscription, mut skipped) = match cursors.take(topic.0, skip) {
		Some(subscription) => (subscription, skip),
		None => (store.subscribe_with_queue(TopicFilter::MatchAll(vec![topic]), CURSOR_QUEUE)?, 0),
	};
	let mut out = Vec::new();
	while out.is_empty() {
		let Some(page) = subscription.next_replay_page(wire::MAX_ANSWER)? else { break };
		for encoding in page {
			if skipped < skip {
				skipped += 1;
			} else {
				out.push(Encoded::from(encoding));
			}
		}
	}
	let position = skip.saturating_add(out.len() as u32);
	// The replay counts what matched when it began: fewer may come, never more.
	let more = !out.is_empty() && u64::from(position) < subscription.replay_total();
	if more {
		cursors.put(topic.0, position, subscription);
	}
	Ok((out, more))
}

/// A page of a key's statements from the `skip`th on (the one statement without topics of
/// that hash, or a topic's), and where the next page starts if more may follow.
pub(super) fn read_key(
	store: &dyn StatementStore,
	cursors: &Cursors,
	key: [u8; 32],
	skip: u32,
) -> (Vec<Encoded>, Option<u32>) {
	if skip == 0 {
		if let Ok(Some(statement)) = store.statement(&key) {
			if statement.topics().is_empty() {
				return (vec![Encoded::from(statement.encode())], None);
			}
		}
	}
	match read_topic(store, cursors, Topic(key), skip) {
		Ok((page, more)) => {
			let next = more.then(|| skip.saturating_add(page.len() as u32));
			(page, next)
		}
		Err(err) => {
			log::warn!(target: LOG, "Cannot read key {} to hand it over: {err}", hex::encode(key));
			(Vec::new(), None)
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_primitives::{
		testing::{ed25519_pair, TestStatement},
		StatementSource, SubmitResult,
	};
	use statement_test_support::store::open_admitting;

	#[test]
	fn a_topic_is_read_page_after_page_and_a_removal_between_pages_skips_nothing() {
		let dir = tempfile::tempdir().unwrap();
		let store = open_admitting(dir.path());
		let topic = Topic([5; 32]);
		// 24 statements of 100 KiB: three pages of at most 1 MiB.
		let statements: Vec<_> = (0..24u32)
			.map(|n| {
				let mut data = vec![0u8; 100 * 1024];
				data[..4].copy_from_slice(&n.to_le_bytes());
				TestStatement::new()
					.expiring_in(3600, n)
					.topics(&[topic])
					.data(data)
					.signed_ed25519(&ed25519_pair(n % 8))
			})
			.collect();
		for statement in &statements {
			assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		}
		let cursors = Cursors::default();
		let (first, more) = read_topic(&store, &cursors, topic, 0).unwrap();
		assert!(more && !first.is_empty() && first.len() < 24, "{} in the first page", first.len());
		// Between pages, a statement the first page had is removed.
		let gone =
			<statement_primitives::Statement as codec::Decode>::decode(&mut &first[0][..]).unwrap();
		store.release(&[gone.hash()]).unwrap();
		let mut read = first.len();
		let mut seen: Vec<Encoded> = first;
		let mut position = read as u32;
		loop {
			let (page, more) = read_topic(&store, &cursors, topic, position).unwrap();
			read += page.len();
			position += page.len() as u32;
			seen.extend(page);
			if !more {
				break;
			}
		}
		assert_eq!(read, 24, "every statement read once, none skipped");
		seen.sort();
		seen.dedup();
		assert_eq!(seen.len(), 24);
	}
}
