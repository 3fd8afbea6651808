//! One peer's state in the gossip core: what it wants, what waits for it, what is in flight.

use super::time::Time;
use crate::{
	affinity::AffinityFilter,
	rate::Bucket,
	wire::{Role, Version},
};
use statement_primitives::{Encoded, Topic};
use std::{collections::VecDeque, sync::Arc};

/// A statement to propagate, shared by every outbox it waits in.
#[derive(Debug)]
pub(super) struct Item {
	pub hash: statement_primitives::Hash,
	pub encoding: Encoded,
	/// Unix seconds after which it is not sent.
	pub expires: u64,
	pub topics: Vec<Topic>,
}

/// Which statements a peer is sent.
#[derive(Clone, Debug)]
pub(super) enum Wants {
	/// None: a light statement/2 peer that has not sent a filter yet.
	Nothing,
	/// Every statement: a full peer, or any statement/1 peer.
	All,
	/// Those its affinity filter matches.
	Matching(Arc<AffinityFilter>),
}

impl Wants {
	pub fn accepts(&self, topics: &[Topic]) -> bool {
		match self {
			Wants::Nothing => false,
			Wants::All => true,
			Wants::Matching(filter) => filter.matches(topics),
		}
	}
}

/// A journal range `(after, upto]` an initial sync still has to walk, and what of it the peer
/// already had under an earlier filter (so a changed filter sends only what is new to it).
#[derive(Clone, Debug)]
pub(super) struct Range {
	pub after: u64,
	pub upto: u64,
	pub had: Wants,
}

/// An initial sync under way.
#[derive(Debug)]
pub(super) struct InitialSync {
	pub ranges: VecDeque<Range>,
	pub started: Time,
	/// After a failed store read: not before this time.
	pub retry_at: Option<Time>,
}

/// What a peer's one slot in flight is doing; `id` matches the driver's report to it.
#[derive(Debug)]
pub(super) enum Busy {
	/// A notification of `count` live statements.
	Live { id: u64, bytes: usize, count: usize },
	/// Reading an initial-sync page from the store.
	Reading { id: u64, reserved: usize },
	/// Sending an initial-sync page; on delivery the cursor moves to `next`.
	Syncing { id: u64, reserved: usize, next: Option<u64>, count: usize },
	/// Sending our affinity filter.
	Filter { id: u64 },
}

impl Busy {
	pub fn id(&self) -> u64 {
		match self {
			Busy::Live { id, .. }
			| Busy::Reading { id, .. }
			| Busy::Syncing { id, .. }
			| Busy::Filter { id } => *id,
		}
	}
}

/// A peer with an open statement stream.
#[derive(Debug)]
pub(super) struct Peer {
	pub version: Version,
	pub role: Role,
	pub wants: Wants,
	/// A filter received during an initial sync, applied when the sync ends.
	pub pending_filter: Option<Arc<AffinityFilter>>,
	pub outbox: VecDeque<Arc<Item>>,
	pub busy: Option<Busy>,
	/// Live and sync take turns: whether the last send was a sync one.
	pub last_was_sync: bool,
	pub sync: Option<InitialSync>,
	/// Statements it may send.
	pub bucket: Bucket,
	/// Filter changes it may make.
	pub filter_bucket: Bucket,
	pub standing: i64,
	/// Our own filter has changed since it was last sent to this peer.
	pub filter_due: bool,
	pub filter_sent_at: Option<Time>,
}
