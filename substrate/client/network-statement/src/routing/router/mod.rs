//! The router: what one routed node does, as a state machine with no sockets, threads or clock
//! of its own (events in, actions out), as [`crate::core::Core`] is for gossip.
//!
//! - `serve`: it answers `Nearest` from its [`Known`] table, has what `Store` brings checked
//!   and submitted, and serves `Watch`es (a page of a topic's statements, then its new ones
//!   for the lease).
//! - `lookups`: it finds the holders of a key by [`Lookup`]s and reuses the answer for
//!   [`RoutingConfig::refresh`]; every `refresh` it looks each key it holds up again and
//!   pushes the key's statements to holders that were not holders before (hand-over), and a
//!   key it no longer holds it pushes on and lets go; it watches, on their holders, the
//!   topics the node's subscriptions name.
//! - `fetch`: a one-shot query on topics the node does not hold waits until one topic's
//!   statements came from its holders (a `Watch` on each), and the topic stays watched for a
//!   short window in which queries are answered at once.
//! - `retention`: a statement the store admits that did not come by `Store` is sent to the
//!   holders of each of its keys; one this node does not hold, and no subscription here
//!   names, is released after [`RoutingConfig::drop_after`].
//!
//! The driver (`driver/route.rs` for litep2p) sends the queries, reads and writes the store,
//! and reports back.

mod fetch;
mod lookups;
mod retention;
mod send;
mod serve;
#[cfg(test)]
mod tests;

use super::{wire, Key, Known, Lookup, RoutingConfig};
use crate::metrics::Metrics;
use statement_primitives::{Encoded, Hash, Statement, Topic};
use std::{
	collections::{BTreeMap, HashMap, VecDeque},
	sync::Arc,
	time::Duration,
};

/// Time since the driver's origin.
pub type Time = Duration;

/// Longest a query may go unanswered before the router counts it failed, whatever the
/// transport does (litep2p 0.16 dropped all but the last request to a peer being dialled,
/// unreported, until the vendored copy's change 3; a guard against any such loss).
pub const QUERY_DEADLINE: Duration = Duration::from_secs(10);

/// Longest a lookup may run; past it, it ends with the nearest that answered.
pub const LOOKUP_DEADLINE: Duration = Duration::from_secs(30);

/// How long the answer of a lookup that had nobody to ask (the node knew no routed peer) is
/// used: it names only this node, and peers may be learnt any moment.
pub const LONELY_FOR: Duration = Duration::from_secs(1);

/// Longest an answer naming new peers waits for [`Event::Learnt`]; past it, it is taken
/// anyway (a query to a peer the transport cannot dial fails as any other).
pub const LEARN_DEADLINE: Duration = Duration::from_secs(2);

/// How long a peer that did not answer a lookup query is left out of lookups, unless it is
/// heard from (it identifies itself, asks, or answers): other nodes keep naming a departed
/// node until they fail on it too, and asking it again would cost a timeout each time. Short,
/// because a live node that was only slow once would be missing from this node's lookups
/// meanwhile, and this node could take itself for a holder in its place.
pub const FAILED_FOR: Duration = Duration::from_secs(20);

/// Longest a query waits for its fetch; past it, it is answered from what the node has.
pub const FETCH_DEADLINE: Duration = Duration::from_secs(10);

/// Keys whose hand-over a node tracks; past it, new ones are held but not handed over.
pub const MAX_HELD_KEYS: usize = 1 << 20;

/// Hashes remembered as having come by `Store` (not forwarded again), and peers remembered
/// as failed.
const MAX_REMEMBERED: usize = 1 << 16;

/// Topics one peer may watch here at once, and watches in all.
const MAX_WATCHES_PER_PEER: usize = 1024;
const MAX_WATCHES: usize = 1 << 16;

/// Statements a watch or fetch pages through from one holder; a holder that would send more
/// (or always says more follow) is asked no further.
const MAX_PAGED: u32 = 1 << 22;

/// Where the page after one of `count` statements from the `skip`th starts, if one is to be
/// asked for.
fn next_page(skip: u32, count: u32, more: bool) -> Option<u32> {
	let next = skip.checked_add(count)?;
	(more && count > 0 && next < MAX_PAGED).then_some(next)
}

/// Admitted statements waiting for their keys' lookups; past it, the oldest is decided by
/// the sweep instead.
const MAX_PARKED: usize = 1 << 16;

/// What happens to the router.
#[derive(Debug)]
pub enum Event<P, A> {
	/// A peer identified itself as a routed node, with its key and addresses.
	Peer {
		/// The peer.
		peer: P,
		/// Its key ([`super::key_of`]).
		key: Key,
		/// Where to dial it.
		addresses: Vec<A>,
	},
	/// The store admitted these statements; `forward` is false for those read back from the
	/// store (at start), which are decided on but not sent again.
	Admitted {
		/// Their encodings.
		encodings: Vec<Encoded>,
		/// Whether to send them to their holders.
		forward: bool,
	},
	/// A peer's request; answer it with [`Action::Respond`] naming `request`.
	Request {
		/// From whom.
		from: P,
		/// Names the answer.
		request: u64,
		/// What it asks.
		body: wire::Request,
	},
	/// The answer to [`Action::Query`] `query`.
	Answer {
		/// The query.
		query: u64,
		/// What came back.
		answer: Answer<P, A>,
	},
	/// [`Action::Query`] `query` could not be sent, was not answered, or was answered with
	/// bytes that do not decode.
	Failed {
		/// The query.
		query: u64,
	},
	/// The addresses of [`Action::Learn`] `then` are in the transport's address book.
	Learnt {
		/// The learn's id.
		then: u64,
	},
	/// [`Action::Submit`] with a request ended.
	Submitted {
		/// The request to answer.
		request: u64,
		/// New and admitted.
		accepted: u32,
		/// Refused by the store.
		refused: u32,
	},
	/// [`Action::ReadTopic`] ended.
	TopicRead {
		/// The request to answer.
		request: u64,
		/// A page of the topic's statements.
		statements: Vec<Encoded>,
		/// Whether more follow.
		more: bool,
	},
	/// [`Action::ReadKey`] ended.
	KeyRead {
		/// The key.
		key: Key,
		/// A page of its statements.
		statements: Vec<Encoded>,
		/// Where the next page starts, if more follow.
		next: Option<u32>,
	},
	/// A one-shot query here names `topics` (all of which its statements carry): fetch them
	/// from their holders unless this node has them, then report [`Action::Fetched`].
	Fetch {
		/// Names the report.
		fetch: u64,
		/// The query's topics.
		topics: Vec<Topic>,
	},
	/// The statements of a fetch's page ([`Action::Submit`] with `fetched`) are stored.
	FetchStored {
		/// The topic and the fetch it was for.
		fetched: (Topic, u64),
	},
	/// Time passed; `wanted` is what the node's subscriptions name now.
	Tick {
		/// Topics wanted here.
		wanted: Vec<Topic>,
	},
}

/// An answer to a query, decoded.
#[derive(Debug)]
pub enum Answer<P, A> {
	/// The peers the answerer knows nearest the key, with their keys and addresses.
	Nearest(Vec<(P, Key, Vec<A>)>),
	/// The statements were taken.
	Stored,
	/// A page of a watched topic's statements.
	Statements {
		/// SCALE-encoded statements.
		statements: Vec<Vec<u8>>,
		/// Whether more follow.
		more: bool,
	},
	/// The request was refused.
	Refused(String),
}

/// An answer to a peer's request, before encoding.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply<P, A> {
	/// The nearest known peers, with their addresses.
	Nearest(Vec<(P, Vec<A>)>),
	/// New and admitted.
	Stored(u32),
	/// A page of statements.
	Statements {
		/// SCALE-encoded statements.
		statements: Vec<Vec<u8>>,
		/// Whether more follow.
		more: bool,
	},
	/// Refused, and why.
	Refused(String),
	/// Undecodable: the driver refuses it at the transport.
	Reject,
}

/// What the router asks its driver to do.
#[derive(Debug)]
pub enum Action<P, A> {
	/// Send a request (dialling the peer if needed); report [`Event::Answer`] or
	/// [`Event::Failed`].
	Query {
		/// Names the report.
		query: u64,
		/// To whom.
		peer: P,
		/// What.
		body: wire::Request,
	},
	/// Answer a peer's request.
	Respond {
		/// The request.
		request: u64,
		/// The answer.
		reply: Reply<P, A>,
	},
	/// Put these addresses in the transport's address book; report [`Event::Learnt`].
	Learn {
		/// Peers and addresses.
		peers: Vec<(P, Vec<A>)>,
		/// Names the report.
		then: u64,
	},
	/// Submit statements to the store as received from the network, skipping those it has;
	/// with a request, report [`Event::Submitted`].
	Submit {
		/// The `Store` request to answer, if any.
		request: Option<u64>,
		/// The statements.
		statements: Vec<Statement>,
		/// A fetch's page: report [`Event::FetchStored`] with it once stored.
		fetched: Option<(Topic, u64)>,
	},
	/// [`Event::Fetch`] `fetch` is done: the node's store has what the holders had (or they
	/// could not be reached in time), and the query can be answered.
	Fetched {
		/// The fetch.
		fetch: u64,
	},
	/// Read a page of a topic's statements past the first `skip`; report
	/// [`Event::TopicRead`].
	ReadTopic {
		/// The request to answer.
		request: u64,
		/// The topic.
		topic: Topic,
		/// Statements to skip.
		skip: u32,
	},
	/// Read a page of a key's statements (a topic's, or the one statement of that hash
	/// without topics) past the first `skip`, at most [`wire::MAX_ANSWER`] bytes; report
	/// [`Event::KeyRead`].
	ReadKey {
		/// The key.
		key: Key,
		/// Statements to skip.
		skip: u32,
	},
	/// Drop these statements from the store, without a ban.
	Release {
		/// Their hashes.
		hashes: Vec<Hash>,
	},
}

/// What a query was for.
#[derive(Debug)]
enum Purpose {
	Nearest {
		key: Key,
	},
	/// The statements sent, how many times they were sent before, and the key whose
	/// hand-over they are part of.
	Store {
		statements: Vec<Encoded>,
		retried: u8,
		handover: Option<Key>,
	},
	Watch {
		topic: Topic,
		skip: u32,
	},
	/// A page of a fetch (the fetch's first id names it).
	Fetch {
		topic: Topic,
		skip: u32,
		id: u64,
	},
}

/// An admitted statement waiting for the lookups of its keys.
struct Parked<P> {
	hash: Hash,
	encoding: Encoded,
	topics: Vec<Topic>,
	keys: Vec<Key>,
	forward: bool,
	/// Who sent it by a `Store`: if this node holds none of its keys and the sender is
	/// not a holder either, the sender's lookup missed the holders, and it is sent on to
	/// those this node finds.
	sent_by: Option<P>,
	waiting: usize,
}

/// A statement to decide on again once `due`.
struct Due {
	due: Time,
	hash: Hash,
	topics: Vec<Topic>,
	keys: Vec<Key>,
}

/// A lookup's key, the peer that answered, and the peers it named (with their keys).
type Learning<P> = (Key, P, Vec<(P, Key)>, Time);

/// A topic being fetched.
struct Fetching {
	/// Names the fetch's queries (the first waiter's id), so that the answers to an earlier
	/// fetch of the topic do not count for a later one.
	id: u64,
	started: Time,
	/// Whether the holders were asked (the topic's lookup may still run).
	asked: bool,
	/// Holders still sending pages.
	chains: usize,
	/// A holder with statements on the topic sent its last page.
	complete: bool,
	/// Some holder sent its last page (perhaps an empty one).
	answered: bool,
	/// Pages handed to the store and not yet stored.
	storing: usize,
	/// The queries waiting.
	waiters: Vec<u64>,
}

/// A key being handed over.
struct Handover<P> {
	peers: Vec<P>,
	/// Whether this node lets the key go.
	release: bool,
	/// `Store`s of the current page not yet ended.
	outstanding: usize,
	/// Where the next page starts, once the current one is sent.
	next: Option<u32>,
	/// When it last moved on.
	progress: Time,
}

/// A key this node holds: its holders at the last lookup, and when to look again.
struct Held<P> {
	holders: Vec<P>,
	refresh_at: Time,
}

/// One routed node.
pub struct Router<P, A> {
	config: RoutingConfig,
	local: P,
	local_key: Key,
	metrics: Arc<Metrics>,
	/// Statements a second one peer may `Store` here.
	rate_limit: u32,
	now: Time,
	known: Known<P, A>,
	failed: HashMap<P, Time>,
	next_id: u64,
	queries: HashMap<u64, (P, Purpose, Time)>,
	/// Answers naming peers new to the transport, waiting for [`Event::Learnt`].
	learning: HashMap<u64, Learning<P>>,
	lookups: HashMap<Key, (Lookup<P>, Time)>,
	queued_lookups: VecDeque<Key>,
	/// Each key's holders at its last lookup, and until when they are used without another.
	cache: HashMap<Key, (Vec<P>, Time)>,
	parked: BTreeMap<u64, Parked<P>>,
	parked_on: HashMap<Key, Vec<u64>>,
	retention: VecDeque<Due>,
	held: HashMap<Key, Held<P>>,
	wanted: Vec<Topic>,
	watching: HashMap<Topic, Time>,
	watchers: HashMap<Topic, HashMap<P, Time>>,
	/// Topics being fetched for one-shot queries.
	fetching: HashMap<Topic, Fetching>,
	/// Topics fetched, with the end of the window in which queries are answered from the
	/// store (their holders' watches keep it current).
	fetched: HashMap<Topic, Time>,
	outgoing: HashMap<P, Vec<Encoded>>,
	/// Failed `Store`s to send again: when, to whom, what, and how often they were already;
	/// and their bytes.
	store_retries: VecDeque<(Time, P, Vec<Encoded>, u8)>,
	retry_bytes: usize,
	/// Keys being handed over, a page at a time, and those waiting their turn.
	handovers: HashMap<Key, Handover<P>>,
	waiting_handovers: VecDeque<Key>,
	/// The new holders of each waiting key, and whether this node lets it go.
	waiting_for: HashMap<Key, (Vec<P>, bool)>,
	/// Hashes that came by a peer's request, not by this node's RPC: with the sender for a
	/// `Store`, without for a page of a watch or fetch.
	arrived: HashMap<Hash, Option<P>>,
	arrived_order: VecDeque<Hash>,
	buckets: HashMap<P, crate::rate::Bucket>,
	/// When this node next looks up its own key.
	next_announce: Time,
	actions: VecDeque<Action<P, A>>,
}

impl<P, A> Router<P, A>
where
	P: Copy + Ord + std::hash::Hash + std::fmt::Debug,
	A: Clone + PartialEq,
{
	/// The router of the node `local` (with key `local_key`), accepting `rate_limit`
	/// statements a second from each peer.
	pub fn new(
		config: RoutingConfig,
		local: P,
		local_key: Key,
		metrics: Arc<Metrics>,
		rate_limit: u32,
	) -> Self {
		metrics.routing_enabled.set(1);
		Router {
			config,
			local,
			local_key,
			metrics,
			rate_limit,
			now: Duration::ZERO,
			known: Known::new(),
			failed: HashMap::new(),
			next_id: 0,
			queries: HashMap::new(),
			learning: HashMap::new(),
			lookups: HashMap::new(),
			queued_lookups: VecDeque::new(),
			cache: HashMap::new(),
			parked: BTreeMap::new(),
			parked_on: HashMap::new(),
			retention: VecDeque::new(),
			held: HashMap::new(),
			wanted: Vec::new(),
			watching: HashMap::new(),
			watchers: HashMap::new(),
			fetching: HashMap::new(),
			fetched: HashMap::new(),
			outgoing: HashMap::new(),
			store_retries: VecDeque::new(),
			retry_bytes: 0,
			handovers: HashMap::new(),
			waiting_handovers: VecDeque::new(),
			waiting_for: HashMap::new(),
			arrived: HashMap::new(),
			arrived_order: VecDeque::new(),
			buckets: HashMap::new(),
			next_announce: Duration::ZERO,
			actions: VecDeque::new(),
		}
	}

	/// Feed an event at `now`.
	pub fn handle(&mut self, now: Time, event: Event<P, A>) {
		self.now = self.now.max(now);
		match event {
			Event::Peer { peer, key, addresses } => {
				self.failed.remove(&peer);
				self.known.learn(peer, key, addresses, self.now);
			}
			Event::Admitted { encodings, forward } => {
				for encoding in encodings {
					self.admit(encoding, forward);
				}
			}
			Event::Request { from, request, body } => self.on_request(from, request, body),
			Event::Answer { query, answer } => self.on_answer(query, answer),
			Event::Failed { query } => {
				if let Some((peer, purpose, _)) = self.queries.remove(&query) {
					self.on_failure(peer, purpose);
				}
			}
			Event::Learnt { then } => {
				if let Some((key, from, peers, _)) = self.learning.remove(&then) {
					self.on_nearest(key, from, peers);
				}
			}
			Event::Submitted { request, accepted, refused } => {
				if refused > 0 {
					self.metrics.invalid_received.add(u64::from(refused));
				}
				self.respond(request, Reply::Stored(accepted));
			}
			Event::TopicRead { request, statements, more } => {
				let statements = statements.iter().map(|s| s.to_vec()).collect();
				self.respond(request, Reply::Statements { statements, more });
			}
			Event::KeyRead { key, statements, next } => self.on_key_read(key, statements, next),
			Event::Fetch { fetch, topics } => self.on_fetch(fetch, topics),
			Event::FetchStored { fetched } => self.on_fetch_stored(fetched),
			Event::Tick { wanted } => {
				self.wanted = wanted;
				self.tick();
			}
		}
		self.flush();
	}

	/// The next thing to do, if any.
	pub fn poll_action(&mut self) -> Option<Action<P, A>> {
		self.actions.pop_front()
	}

	/// The routing table: how many routed nodes this node knows.
	pub fn known_peers(&self) -> usize {
		self.known.len()
	}

	/// The keys this node holds now.
	pub fn held_keys(&self) -> usize {
		self.held.len()
	}

	fn next_id(&mut self) -> u64 {
		self.next_id += 1;
		self.next_id
	}

	fn respond(&mut self, request: u64, reply: Reply<P, A>) {
		self.actions.push_back(Action::Respond { request, reply });
	}

	fn query(&mut self, peer: P, body: wire::Request, purpose: Purpose) {
		let query = self.next_id();
		self.queries.insert(query, (peer, purpose, self.now));
		self.actions.push_back(Action::Query { query, peer, body });
	}

	fn lease_secs(&self) -> u32 {
		self.config.refresh.as_secs().saturating_mul(2).clamp(1, u64::from(u32::MAX)) as u32
	}

	fn remember_arrived(&mut self, hash: Hash, sender: Option<P>) {
		if self.arrived.insert(hash, sender).is_none() {
			self.arrived_order.push_back(hash);
			if self.arrived_order.len() > MAX_REMEMBERED {
				if let Some(old) = self.arrived_order.pop_front() {
					self.arrived.remove(&old);
				}
			}
		}
	}
}
