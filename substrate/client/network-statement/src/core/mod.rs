//! The gossip core: the statement protocol as a state machine, with no sockets, threads or
//! clock of its own.
//!
//! A driver feeds it [`Event`]s with the time (`now`, since any fixed origin) and carries out
//! the [`Action`]s it hands back: sends, store reads, validations, closes and bans. Each action
//! that takes time is answered by an event naming it (`id`). The litep2p driver in this crate is
//! one such driver; a simulator or another host's network service can be another without any
//! change here. Peers are any `Copy + Ord` identifier.
//!
//! What the core decides:
//! - which peer is sent which statement (propagation with its coalescing window or the
//!   reference's tick, initial sync walked from the store's journal, topic affinity and light
//!   peers, never back to the peers it came from, expired and oversized ones skipped);
//! - one notification in flight per peer, within the global in-flight caps, with live and sync
//!   sends taking turns;
//! - what a peer may send: rate limits on statements and filter changes, the validation queue
//!   and its hold-back, standing and bans.

mod peer;
mod receive;
mod send;
#[cfg(test)]
mod tests;
mod time;

use crate::{
	affinity::AffinityFilter,
	metrics::Metrics,
	rate::Bucket,
	wire::{Role, Version},
	Propagation, BANNED_STANDING, BAN_DURATION, MAX_OUTBOX,
};
use peer::{InitialSync, Item, Peer, Range, Wants};
use statement_primitives::{
	Encoded, Hash, Statement, StatementStore, StatementsPage, SubmitResult,
};
use std::{
	collections::{BTreeMap, HashMap, HashSet, VecDeque},
	sync::Arc,
	time::Duration,
};

pub use time::Time;

/// Log target.
pub(crate) const LOG: &str = "statement-gossip";

/// How long the peers a statement came from are remembered, for it not to be sent back: longer
/// than a statement waits in an outbox (the coalescing window, or the reference's tick, and
/// a send).
const SOURCES_KEPT: Duration = Duration::from_secs(5);

/// Most peers remembered as sources of one statement.
const MAX_SOURCES: usize = 32;

/// How often bans expire and forgotten sources are purged.
const HOUSEKEEPING: Duration = Duration::from_secs(2);

/// Longest a full validation queue holds back received notifications before dropping.
pub const VALIDATION_WAIT: Duration = Duration::from_secs(2);

/// Filter changes a peer may make a second (bursts of five times as many), the reference's
/// `AFFINITY_UPDATES_PER_SECOND`; past it the peer is flooding.
pub const FILTER_CHANGES_PER_SECOND: u32 = 100;

/// Shortest time between two filters this node sends one peer: well inside the bound above.
pub const FILTER_INTERVAL: Duration = Duration::from_millis(100);

/// After a failed store read, how long an initial sync waits before trying again.
const READ_RETRY: Duration = Duration::from_secs(1);

/// What the core needs to know of the store, answered from memory.
pub trait StoreView: Send + Sync {
	/// Whether the statement is stored (received ones that are skip validation).
	fn has_statement(&self, hash: &Hash) -> bool;
	/// The admission journal's watermark (see [`StatementStore::admission_watermark`]).
	fn admission_watermark(&self) -> u64;
}

impl<S: StatementStore + ?Sized> StoreView for S {
	fn has_statement(&self, hash: &Hash) -> bool {
		StatementStore::has_statement(self, hash)
	}

	fn admission_watermark(&self) -> u64 {
		StatementStore::admission_watermark(self)
	}
}

/// How the core runs.
#[derive(Clone, Debug)]
pub struct CoreConfig {
	/// Statements a second each peer may send (bursts of five times as many).
	pub rate_limit: u32,
	/// How statements are propagated.
	pub propagation: Propagation,
	/// Received statements that may wait for validation at once.
	pub validation_queue: usize,
	/// Statements a peer may keep waiting in its outbox.
	pub max_outbox: usize,
	/// Unix seconds when the core's time was zero: expired statements (expiry is in unix
	/// seconds) are not sent, and the core reads no clock of its own.
	pub unix_at_start: u64,
}

impl Default for CoreConfig {
	fn default() -> Self {
		CoreConfig {
			rate_limit: crate::DEFAULT_RATE_LIMIT,
			propagation: Propagation::default(),
			validation_queue: crate::MAX_PENDING_VALIDATIONS,
			max_outbox: MAX_OUTBOX,
			unix_at_start: 0,
		}
	}
}

/// How a send the core asked for ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOutcome {
	/// Handed to the connection.
	Delivered,
	/// The connection went.
	Failed,
	/// It took longer than [`crate::SEND_TIMEOUT`]: the core drops the peer.
	TimedOut,
}

/// What happens to the core.
#[derive(Debug)]
pub enum Event<P> {
	/// A statement stream opened with a peer, on this version, and it declared this role.
	Opened {
		/// The peer.
		peer: P,
		/// The protocol version negotiated.
		version: Version,
		/// What it declared in its handshake.
		role: Role,
	},
	/// The stream closed.
	Closed {
		/// The peer.
		peer: P,
	},
	/// A notification arrived.
	Notification {
		/// From whom.
		peer: P,
		/// Its bytes.
		bytes: Vec<u8>,
	},
	/// The store admitted these statements (from the admission watch, in order).
	Admitted(Vec<Encoded>),
	/// Everything admitted up to this watermark has been handed over by [`Event::Admitted`].
	CaughtUp {
		/// The watermark.
		upto: u64,
	},
	/// The admission watch fell behind and was renewed when the watermark stood here: every
	/// peer is caught up from the journal instead.
	WatchRenewed {
		/// The watermark.
		upto: u64,
	},
	/// The store's verdict on a statement [`Action::Validate`] handed over.
	Verdict {
		/// The peer it came from.
		peer: P,
		/// Its hash.
		hash: Hash,
		/// What the store said.
		result: SubmitResult,
	},
	/// An [`Action::Send`] ended.
	Sent {
		/// To whom.
		peer: P,
		/// The send's id.
		id: u64,
		/// How.
		outcome: SendOutcome,
	},
	/// An [`Action::Read`] ended.
	Page {
		/// For whom.
		peer: P,
		/// The read's id.
		id: u64,
		/// The page, or why the store could not read it.
		page: Result<StatementsPage, String>,
	},
	/// This node is a light node wanting the topics this filter matches; sent to every
	/// statement/2 peer, now and when its stream opens.
	Interest(AffinityFilter),
	/// The peer keeps every statement (a full node without topic routing): a routed node
	/// asks it for everything instead of its own filter, takes what it sends, and so relays
	/// between such peers and forwards to the holders what they were given.
	KeepsEverything {
		/// The peer.
		peer: P,
	},
	/// Time passed: due at [`Core::next_wakeup`], harmless at any other time.
	Tick,
}

/// What the core asks its driver to do.
#[derive(Debug, PartialEq, Eq)]
pub enum Action<P> {
	/// Send a notification; answer with [`Event::Sent`].
	Send {
		/// To whom.
		peer: P,
		/// Names the send in [`Event::Sent`].
		id: u64,
		/// The bytes.
		notification: Vec<u8>,
	},
	/// Read an initial-sync page with [`StatementStore::admitted_page`]; answer with
	/// [`Event::Page`].
	Read {
		/// For whom.
		peer: P,
		/// Names the read in [`Event::Page`].
		id: u64,
		/// Cursor.
		after: u64,
		/// Watermark.
		upto: u64,
		/// Most bytes of encodings.
		max_bytes: usize,
	},
	/// Check and submit a received statement; answer with [`Event::Verdict`].
	Validate {
		/// From whom.
		peer: P,
		/// Its hash.
		hash: Hash,
		/// The statement.
		statement: Box<Statement>,
	},
	/// Close the statement stream.
	Close {
		/// With whom.
		peer: P,
	},
	/// Close the statement stream and refuse the peer until the time given.
	Ban {
		/// Whom.
		peer: P,
		/// Until when.
		until: Time,
		/// Why, for the log.
		reason: String,
	},
}

/// A received statement waiting for room in the validation queue.
#[derive(Debug)]
struct Held<P> {
	peer: P,
	hash: Hash,
	statement: Statement,
}

/// A peer as the core sees it, for `system_peers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerState {
	/// Protocol version of its stream.
	pub version: Version,
	/// The role it declared.
	pub role: Role,
	/// Whether it has sent an affinity filter.
	pub filtered: bool,
}

/// The statement protocol for one node.
pub struct Core<P> {
	config: CoreConfig,
	store: Arc<dyn StoreView>,
	metrics: Arc<Metrics>,
	peers: BTreeMap<P, Peer>,
	bans: BTreeMap<P, Time>,
	/// Peers each recently received statement came from (also those that sent it again once
	/// it was stored), and when it first came: none of them is sent it.
	sources: HashMap<Hash, (Vec<P>, Time)>,
	/// Statements handed over for validation.
	pending: HashSet<Hash>,
	held: VecDeque<Held<P>>,
	/// When the held statements last moved.
	held_since: Option<Time>,
	in_flight_live: usize,
	in_flight_sync: usize,
	/// Reference propagation: what was admitted since the last tick, with its sources.
	recent: Vec<(Arc<Item>, Vec<P>)>,
	/// When the coalescing window ends (immediate propagation).
	flush_at: Option<Time>,
	next_reference_tick: Time,
	next_housekeeping: Time,
	/// Every admission up to here was handed over: after a lag, peers catch up from here.
	live_since: u64,
	/// Our own filter, when this node is light.
	interest: Option<Arc<AffinityFilter>>,
	/// Peers asked for everything instead of `interest` ([`Event::KeepsEverything`]).
	asked_for_everything: std::collections::BTreeSet<P>,
	next_id: u64,
	actions: VecDeque<Action<P>>,
}

impl<P: Copy + Ord + std::hash::Hash + std::fmt::Debug + std::fmt::Display> Core<P> {
	/// A core with no peers, over `store`, counting into `metrics`, starting at `now`.
	pub fn new(
		config: CoreConfig,
		store: Arc<dyn StoreView>,
		metrics: Arc<Metrics>,
		now: Time,
	) -> Self {
		let live_since = store.admission_watermark();
		Core {
			config,
			store,
			metrics,
			peers: BTreeMap::new(),
			bans: BTreeMap::new(),
			sources: HashMap::new(),
			pending: HashSet::new(),
			held: VecDeque::new(),
			held_since: None,
			in_flight_live: 0,
			in_flight_sync: 0,
			recent: Vec::new(),
			flush_at: None,
			next_reference_tick: now + Duration::from_secs(1),
			next_housekeeping: now + HOUSEKEEPING,
			live_since,
			interest: None,
			asked_for_everything: std::collections::BTreeSet::new(),
			next_id: 0,
			actions: VecDeque::new(),
		}
	}

	/// Take what happened into account.
	pub fn handle(&mut self, now: Time, event: Event<P>) {
		match event {
			Event::Opened { peer, version, role } => self.opened(now, peer, version, role),
			Event::Closed { peer } => self.forget(now, peer),
			Event::Notification { peer, bytes } => self.on_notification(now, peer, &bytes),
			Event::Admitted(statements) => self.on_admitted(now, statements),
			Event::CaughtUp { upto } => self.live_since = self.live_since.max(upto),
			Event::WatchRenewed { upto } => self.on_watch_renewed(now, upto),
			Event::Verdict { peer, hash, result } => self.on_verdict(now, peer, hash, result),
			Event::Sent { peer, id, outcome } => self.on_sent(now, peer, id, outcome),
			Event::Page { peer, id, page } => self.on_page(now, peer, id, page),
			Event::Interest(filter) => self.on_interest(filter),
			Event::KeepsEverything { peer } => self.on_keeps_everything(peer),
			Event::Tick => self.tick(now),
		}
		self.pump(now);
	}

	/// The next thing for the driver to do.
	pub fn poll_action(&mut self) -> Option<Action<P>> {
		self.actions.pop_front()
	}

	/// When the core next needs an [`Event::Tick`].
	pub fn next_wakeup(&self) -> Time {
		let mut next = self.next_housekeeping;
		let mut consider = |time: Option<Time>| {
			if let Some(time) = time {
				next = next.min(time);
			}
		};
		consider(self.flush_at);
		if self.config.propagation == Propagation::Reference {
			consider(Some(self.next_reference_tick));
		}
		consider(self.held_since.map(|since| since + VALIDATION_WAIT));
		for peer in self.peers.values().filter(|peer| peer.busy.is_none()) {
			if peer.filter_due {
				consider(peer.filter_sent_at.map(|at| at + FILTER_INTERVAL));
			}
			consider(peer.sync.as_ref().and_then(|sync| sync.retry_at));
		}
		next
	}

	/// Whether the driver may hand over more notifications; while not, it holds them back (for
	/// at most [`VALIDATION_WAIT`] without progress), which slows senders through the
	/// transport's backpressure instead of dropping their statements.
	pub fn accepts_notifications(&self) -> bool {
		self.held.is_empty()
	}

	/// Whether the peer is banned now: its stream is refused.
	pub fn is_banned(&self, peer: &P, now: Time) -> bool {
		self.bans.get(peer).is_some_and(|until| *until > now)
	}

	/// The peers with an open stream.
	pub fn peers(&self) -> impl Iterator<Item = (&P, PeerState)> {
		self.peers.iter().map(|(id, peer)| {
			let filtered = matches!(peer.wants, Wants::Matching(_));
			(id, PeerState { version: peer.version, role: peer.role, filtered })
		})
	}

	/// How many peers have an open stream.
	pub fn peer_count(&self) -> usize {
		self.peers.len()
	}

	/// Statements waiting to be sent: the entries of every peer's outbox, and (with the
	/// reference's tick) those admitted since the last tick. An entry shares its statement's
	/// encoding with the other outboxes it waits in.
	pub fn queued(&self) -> usize {
		self.recent.len() + self.peers.values().map(|peer| peer.outbox.len()).sum::<usize>()
	}

	fn next_id(&mut self) -> u64 {
		self.next_id += 1;
		self.next_id
	}

	fn opened(&mut self, now: Time, id: P, version: Version, role: Role) {
		if self.is_banned(&id, now) {
			self.actions.push_back(Action::Close { peer: id });
			return;
		}
		if self.peers.contains_key(&id) {
			// A second open without a close: start over.
			self.forget(now, id);
		}
		let wants =
			if role.is_light() && version == Version::V2 { Wants::Nothing } else { Wants::All };
		// The peer gets what is stored up to now by initial sync, and what is admitted from now
		// on by propagation; a statement admitted in between comes twice at worst, and the peer
		// skips it as known.
		let sync = match wants {
			Wants::All => {
				let upto = self.store.admission_watermark();
				log::info!(target: LOG, "Statement stream open with {id} ({version:?}, {role:?}); initial sync of up to #{upto}");
				Some(InitialSync {
					ranges: VecDeque::from([Range { after: 0, upto, had: Wants::Nothing }]),
					started: now,
					retry_at: None,
				})
			}
			_ => {
				log::info!(target: LOG, "Statement stream open with {id} ({version:?}, {role:?}); nothing sent until it sends a filter");
				None
			}
		};
		let peer = Peer {
			version,
			role,
			wants,
			pending_filter: None,
			outbox: VecDeque::new(),
			busy: None,
			last_was_sync: false,
			sync,
			bucket: Bucket::new(self.config.rate_limit, now),
			filter_bucket: Bucket::new(FILTER_CHANGES_PER_SECOND, now),
			standing: 0,
			filter_due: self.interest.is_some() && version == Version::V2,
			filter_sent_at: None,
		};
		self.peers.insert(id, peer);
		self.update_peer_gauges();
	}

	/// The stream is gone: drop the peer's state and free what it had in flight.
	fn forget(&mut self, now: Time, id: P) {
		let Some(gone) = self.peers.remove(&id) else { return };
		log::info!(target: LOG, "Statement stream closed with {id}");
		match gone.busy {
			Some(peer::Busy::Live { bytes, .. }) => self.in_flight_live -= bytes,
			Some(peer::Busy::Reading { reserved, .. } | peer::Busy::Syncing { reserved, .. }) => {
				self.in_flight_sync -= reserved
			}
			Some(peer::Busy::Filter { .. }) | None => {}
		}
		self.metrics.propagation_in_flight.set(self.in_flight_live as u64);
		self.metrics.initial_sync_in_flight.set(self.in_flight_sync as u64);
		if let Some(sync) = gone.sync {
			self.metrics
				.initial_sync_abandoned
				.observe(now.saturating_sub(sync.started).as_secs_f64());
		}
		self.update_peer_gauges();
	}

	/// Drop a peer for misbehaving, and refuse it for [`BAN_DURATION`].
	fn ban(&mut self, now: Time, id: P, reason: String) {
		let until = now + BAN_DURATION;
		log::warn!(target: LOG, "Dropping peer {id} for {}s: {reason}", BAN_DURATION.as_secs());
		self.bans.insert(id, until);
		self.metrics.peers_banned.add(1);
		self.forget(now, id);
		self.actions.push_back(Action::Ban { peer: id, until, reason });
	}

	/// Add to a peer's standing; a peer that falls below [`BANNED_STANDING`] is banned.
	fn change_standing(&mut self, now: Time, id: P, change: i64, why: &str) {
		let Some(peer) = self.peers.get_mut(&id) else { return };
		peer.standing = peer.standing.saturating_add(change);
		if peer.standing < BANNED_STANDING {
			self.ban(now, id, format!("standing too low ({why})"));
		}
	}

	fn update_peer_gauges(&self) {
		let light = self.peers.values().filter(|peer| peer.role.is_light()).count();
		self.metrics.peers.set(self.peers.len() as u64);
		self.metrics.light_peers.set(light as u64);
		self.metrics
			.initial_sync_peers
			.set(self.peers.values().filter(|peer| peer.sync.is_some()).count() as u64);
	}

	fn tick(&mut self, now: Time) {
		if self.flush_at.is_some_and(|at| at <= now) {
			self.flush_at = None;
		}
		if self.config.propagation == Propagation::Reference && self.next_reference_tick <= now {
			self.next_reference_tick = now + Duration::from_secs(1);
			for (item, sources) in std::mem::take(&mut self.recent) {
				self.queue(item, &sources);
			}
		}
		self.expire_held(now);
		// A sync whose pause is over is simply due; it no longer asks for a wake-up (it may
		// wait for room under the in-flight caps, which a finished send makes).
		for peer in self.peers.values_mut() {
			if let Some(sync) = peer.sync.as_mut() {
				if sync.retry_at.is_some_and(|at| at <= now) {
					sync.retry_at = None;
				}
			}
		}
		if self.next_housekeeping <= now {
			self.next_housekeeping = now + HOUSEKEEPING;
			self.bans.retain(|_, until| *until > now);
			self.sources.retain(|_, (_, since)| now.saturating_sub(*since) < SOURCES_KEPT);
		}
	}
}
