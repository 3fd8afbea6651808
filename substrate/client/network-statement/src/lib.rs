//! Statement gossip between nodes over litep2p: upstream's `/statement/2` protocol with topic
//! affinity and light peers, `/statement/1` as its fallback, and nodes that find each other.
//!
//! # Protocol (byte for byte upstream's, `sc-network-statement` 0.44)
//! - Notification protocol `/{genesis hash as lower-case hex, no 0x}/statement/2` (with the
//!   chain spec's fork id: `/{hex}/{fork id}/statement/2`), falling back to `.../statement/1`;
//!   which one a stream speaks is known per peer ([`PeerInfo::statement_stream`]). Nodes of
//!   different chains never exchange statements. The handshake is one role byte: `1` full,
//!   `2` light, `4` authority ([`Role`]).
//! - statement/1: each notification is a SCALE `Vec<Statement>`. statement/2: the SCALE enum
//!   `StatementMessage`, `0: Statements(Vec<Statement>)` or
//!   `1: ExplicitTopicAffinity(AffinityFilter)` ([`wire`], [`affinity`]).
//! - A notification is at most 1 MiB of whole statements; a statement too large to travel
//!   alone is skipped and counted (`substrate_sync_skipped_oversized_statements`). A received
//!   batch declaring more than [`MAX_STATEMENTS_PER_NOTIFICATION`] statements is refused before
//!   decoding.
//!
//! # Topic affinity and light peers
//! - A statement/2 peer may send an affinity filter, a bloom filter of the topics it wants; from
//!   then on it is sent only statements with one of those topics, or with none. A filter with no
//!   bits, more than 8 Mi bits or a hash count outside 1..=64 is refused and costs the sender
//!   standing as any bad message does.
//! - A light peer (role `2`) on statement/2 is sent nothing until it sends a filter; then the
//!   matching stored statements (initial sync) and, from then on, matching new ones. A peer that
//!   changes its filter is sent the matching statements it has not had.
//! - A peer may change its filter [`FILTER_CHANGES_PER_SECOND`] times a second, in bursts of
//!   five times that; past it, it is flooding (`substrate_sync_statement_flooding_detected`) and
//!   dropped and banned.
//! - The node can be the light side ([`Config::light_topics`], `--statement-topics`): it
//!   declares role `2` and sends its statement/2 peers a filter of those topics, widened by the
//!   subscriptions opened on it ([`Network::interest`]).
//!
//! # Peers and discovery
//! Kademlia under `/{genesis}/kad`, identify and ping, as a Substrate node has them: boot nodes
//! seed discovery and random walks find the rest. Statement streams take slots as Substrate's
//! peer sets do: [`Config::out_peers`] (8) we open, filled from the peers discovered, and
//! [`Config::in_peers`] (32) peers open to us; reserved peers are kept open on top, and
//! [`Config::reserved_only`] takes nobody else. Peers that cannot be reached are backed off
//! (2 s doubling up to 5 min). `substrate_sub_libp2p_peers_count` counts the statement streams.
//!
//! # Propagation
//! A statement the store admits (from RPC or from a peer) is queued for every peer that wants it
//! but those it came from, and sent within [`Config::propagation`]'s coalescing window (20 ms by
//! default; upstream sends once a second, which [`Propagation::Reference`] reproduces for
//! comparison). Each peer has an outbox of at most [`MAX_OUTBOX`] statements (the oldest is
//! dropped and counted when it overflows) and at most one notification in flight; all peers
//! together have at most [`MAX_IN_FLIGHT_BYTES`] in flight; a send that takes longer than
//! [`SEND_TIMEOUT`] drops the peer. Expired statements are not sent.
//!
//! # Initial sync
//! A newly connected peer (also one that restarted) is sent every stored statement it wants: a
//! cursor walks the store's admission journal up to where it stood when the peer connected, one
//! notification of at most 1 MiB at a time, taking turns with live propagation so neither
//! starves. Whatever is admitted later reaches the peer by propagation.
//!
//! # Receiving
//! - Each peer may send at most [`Config::rate_limit`] statements a second, in bursts of five
//!   times that; a peer over it is disconnected and banned for [`BAN_DURATION`], and
//!   `substrate_sync_statement_flooding_detected` counts it.
//! - Statements the store already has are skipped without a signature check; the others wait
//!   in a validation queue of at most [`Config::validation_queue`] and are submitted with
//!   [`Config::source`], so allowances and limits apply as for RPC. A full queue holds back
//!   received notifications for up to 2 s without progress (which slows senders down through
//!   the transport's backpressure, so an initial sync faster than validation loses nothing),
//!   then drops what does not fit and counts it (`substrate_sync_ignored_statements`).
//! - Undecodable or oversized notifications and invalid statements lower the peer's standing;
//!   a peer whose standing falls below [`BANNED_STANDING`] is dropped and banned.
//!
//! # Topic-routed storage
//! With [`Config::routing`] (`--statement-replication-factor K`) a node keeps each statement
//! only if it is among the K routed nodes nearest one of the statement's topics (upstream's
//! placement rule: `blake2_256` of a PeerId against the topic, XOR, big-endian), or if a
//! subscription on it names one of them ([`routing`]):
//! - The nearest are found by iterative lookups over `/{genesis}/statement/route/1` (a
//!   request-response protocol only routed nodes offer), never from the node's own list.
//! - A node that admits a statement it did not get from a holder sends it to the holders,
//!   and drops it after [`routing::RoutingConfig::drop_after`].
//! - Holders look their topics up again every [`routing::RoutingConfig::refresh`] and push
//!   what new holders lack.
//! - Subscriptions on a node that holds none of their topics watch the topics on their
//!   holders: the stored statements, then the new ones.
//! - On gossip a routed node declares the light role with a filter of its subscriptions'
//!   topics, so routed nodes do not gossip everything to each other. A full node without
//!   routing is asked for everything instead ([`core::Event::KeepsEverything`]), so that
//!   statements submitted to it reach the holders, and it still gets everything.
//!
//! Metrics: `substrate_sync_statement_v2dht_*`, as upstream's gated path names them.
//!
//! # The core and its drivers
//! The protocol is a state machine, [`core::Core`] (and [`peerset::Peerset`] for the slots),
//! with no sockets, threads or clock of its own: events in, actions out. The litep2p driver
//! here is one driver; `benches`' `simulate` is another, which runs thousands of cores under a
//! virtual clock (`docs/scaling.md`), and another host's network service could be a third.
//!
//! # Running nodes by hand
//! ```text
//! # terminal 1: the first node, which the others use as their boot node
//! statement-node --dev -d /tmp/alice --port 30333 --rpc-port 9944 \
//!   --node-key 2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90
//! # terminals 2, 3, ...: each finds the others through the boot node
//! statement-node --dev -d /tmp/bob --port 30334 --rpc-port 9945 --bootnodes \
//!   /ip4/127.0.0.1/tcp/30333/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm
//! # a light node that wants one topic
//! statement-node --dev -d /tmp/light --port 30340 --rpc-port 9950 --statement-topics greetings \
//!   --bootnodes /ip4/127.0.0.1/tcp/30333/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm
//! ```
//! A statement submitted to any full node's RPC is then served by all of them; the light node
//! holds only those on its topic (and those of the subscriptions opened on it).
//!
//! The crate knows the store only through [`statement_primitives::StatementStore`].

#![forbid(unsafe_code)]

pub mod affinity;
pub mod core;
mod driver;
pub mod identity;
mod interest;
pub mod metrics;
pub mod peerset;
mod rate;
pub mod routing;
pub mod wire;

pub use core::FILTER_CHANGES_PER_SECOND;
pub use driver::{start, Network, PeerInfo, FETCHES_AT_ONCE, FETCH_WAIT};
pub use interest::{Interest, InterestGuard};
pub use litep2p::{types::multiaddr::Multiaddr, PeerId};
pub use metrics::Metrics;
pub use peerset::{DEFAULT_IN_PEERS, DEFAULT_OUT_PEERS};

/// Default of [`Config::max_connections_per_ip`]: a node behind one address that runs a few
/// dozen peers still fits; a single host cannot take the inbound slots.
pub const DEFAULT_MAX_CONNECTIONS_PER_IP: usize = 32;

/// Default of [`Config::max_inbound_connections`].
pub const DEFAULT_MAX_INBOUND_CONNECTIONS: usize = 1_024;
pub use wire::{
	protocol_name, Role, Version, MAX_NOTIFICATION_SIZE, MAX_STATEMENTS_PER_NOTIFICATION,
	MIN_ENCODED_STATEMENT,
};

use statement_primitives::{StatementSource, Topic};
use std::time::Duration;

/// Statements a peer may keep waiting to be sent to it; past it the oldest is dropped.
pub const MAX_OUTBOX: usize = 64 * 1024;

/// Bytes of notifications in flight to all peers together.
pub const MAX_IN_FLIGHT_BYTES: usize = 16 * 1024 * 1024;

/// Of [`MAX_IN_FLIGHT_BYTES`], what live propagation may not take, so that initial syncs go
/// on under a full live load.
pub const INITIAL_SYNC_RESERVED_BYTES: usize = 4 * 1024 * 1024;

/// Longest a notification may take to be sent before the peer is dropped.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`Config::validation_queue`]: received statements waiting for their signature
/// check and submission.
pub const MAX_PENDING_VALIDATIONS: usize = 64 * 1024;

/// How long a peer that flooded us or misbehaved may not connect again.
pub const BAN_DURATION: Duration = Duration::from_secs(60);

/// Standing below which a peer is dropped and banned.
pub const BANNED_STANDING: i64 = -(1 << 16);

/// Default of [`Config::watch_queue_bytes`]: 64 MiB.
pub const DEFAULT_WATCH_QUEUE_BYTES: usize = 64 * 1024 * 1024;

/// Default of [`Config::rate_limit`], upstream's: 50,000 statements a second.
pub const DEFAULT_RATE_LIMIT: u32 = 50_000;

/// How statements are propagated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
	/// Send what was admitted within this window (coalescing a burst into one notification).
	Immediate(Duration),
	/// Upstream's way: everything admitted since the last tick, once a second.
	Reference,
}

impl Default for Propagation {
	fn default() -> Self {
		Propagation::Immediate(Duration::from_millis(20))
	}
}

/// How to run the network.
#[derive(Clone, Debug)]
pub struct Config {
	/// Genesis hash of the chain: names the protocols.
	pub genesis_hash: [u8; 32],
	/// The chain spec's fork id, when it has one: it joins the protocols' names.
	pub fork_id: Option<String>,
	/// Reported to peers by identify.
	pub node_name: String,
	/// The node's ed25519 secret key (see [`identity`]).
	pub node_key: [u8; identity::SECRET_LEN],
	/// Addresses to listen on: `/ip4/A/tcp/P` (TCP) and `/ip4/A/tcp/P/ws` (WebSocket).
	pub listen_addresses: Vec<Multiaddr>,
	/// Where discovery starts: `.../p2p/<PeerId>`; they are the first candidates for the
	/// outbound slots and seed Kademlia.
	pub boot_nodes: Vec<Multiaddr>,
	/// Peers to keep a statement stream with at all times, outside the slots.
	pub reserved_nodes: Vec<Multiaddr>,
	/// Accept only reserved nodes (and boot nodes) as peers.
	pub reserved_only: bool,
	/// Statement streams peers may open to us (reserved peers not counted).
	pub in_peers: usize,
	/// Statement streams we open, filled from discovered peers (reserved peers not counted).
	pub out_peers: usize,
	/// Find peers with Kademlia random walks; without it only boot and reserved nodes and
	/// those that connect are known.
	pub discovery: bool,
	/// The highest protocol version offered: [`Version::V2`] (with statement/1 as fallback), or
	/// [`Version::V1`] alone.
	pub version: Version,
	/// Run as a light node that asks its peers for statements on these topics (and on those of
	/// its subscriptions); `None` for a full node, which takes everything.
	pub light_topics: Option<Vec<Topic>>,
	/// Seed of the light node's filter (its bloom hashes); random per node when `None`, so
	/// that the topics one filter confuses differ from node to node.
	pub affinity_seed: Option<u128>,
	/// Statements a second each peer may send (bursts of five times as many).
	pub rate_limit: u32,
	/// How statements are propagated.
	pub propagation: Propagation,
	/// Source given to the store for received statements.
	pub source: StatementSource,
	/// Bytes of new statements the store may queue for gossip before gossip counts as fallen
	/// behind; it then catches every peer up from the journal instead.
	pub watch_queue_bytes: usize,
	/// Received statements that may wait for validation ([`MAX_PENDING_VALIDATIONS`]).
	pub validation_queue: usize,
	/// Accepted connections one remote address (an IPv4 address, an IPv6 /64) may hold at
	/// once, handshaking or established. More are closed as soon as they are accepted.
	pub max_connections_per_ip: usize,
	/// Accepted connections all addresses together may hold at once. Keep it well below the
	/// file descriptor limit: each takes one.
	pub max_inbound_connections: usize,
	/// Topic-routed storage: keep each statement on the K nodes nearest its topics
	/// ([`routing`]); `None` (the default) keeps every statement on every full node.
	pub routing: Option<routing::RoutingConfig>,
}

impl Config {
	/// A config with the defaults and no addresses.
	pub fn new(genesis_hash: [u8; 32], node_key: [u8; identity::SECRET_LEN]) -> Self {
		Config {
			genesis_hash,
			fork_id: None,
			node_name: "statement-node".into(),
			node_key,
			listen_addresses: Vec::new(),
			boot_nodes: Vec::new(),
			reserved_nodes: Vec::new(),
			reserved_only: false,
			in_peers: DEFAULT_IN_PEERS,
			out_peers: DEFAULT_OUT_PEERS,
			discovery: true,
			version: Version::V2,
			light_topics: None,
			affinity_seed: None,
			rate_limit: DEFAULT_RATE_LIMIT,
			propagation: Propagation::default(),
			source: StatementSource::Network,
			watch_queue_bytes: DEFAULT_WATCH_QUEUE_BYTES,
			validation_queue: MAX_PENDING_VALIDATIONS,
			max_connections_per_ip: DEFAULT_MAX_CONNECTIONS_PER_IP,
			max_inbound_connections: DEFAULT_MAX_INBOUND_CONNECTIONS,
			routing: None,
		}
	}
}

/// What can go wrong starting the network.
#[derive(Debug, thiserror::Error)]
pub enum Error {
	/// A bad node key.
	#[error("bad node key: {0}")]
	NodeKey(String),
	/// The node key file cannot be used.
	#[error("cannot {operation} the node key file {path}: {source}")]
	NodeKeyFile {
		/// The file.
		path: std::path::PathBuf,
		/// What was being done.
		operation: &'static str,
		/// Why it failed.
		source: std::io::Error,
	},
	/// A bad multiaddress.
	#[error("bad network address `{text}`: {detail}")]
	Address {
		/// What was given.
		text: String,
		/// Why it is refused.
		detail: String,
	},
	/// litep2p refused to start (most often: a listen port is taken).
	#[error("cannot start networking: {0}")]
	Start(String),
	/// The store failed.
	#[error("statement store: {0}")]
	Store(#[from] statement_primitives::Error),
}

/// Parse a multiaddress as the CLI takes it; a boot node must end in `/p2p/<PeerId>`.
pub fn parse_address(text: &str, needs_peer: bool) -> Result<Multiaddr, Error> {
	let bad = |detail: String| Error::Address { text: text.into(), detail };
	let address: Multiaddr = text.trim().parse().map_err(|err| bad(format!("{err}")))?;
	if needs_peer && PeerId::try_from_multiaddr(&address).is_none() {
		return Err(bad("it must end in /p2p/<PeerId>".into()));
	}
	Ok(address)
}
