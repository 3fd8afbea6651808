//! Statement gossip between nodes, over litep2p, on upstream's `/statement/1` protocol.
//!
//! # Protocol (byte for byte upstream's V1)
//! - Notification protocol `/{genesis hash as lower-case hex, no 0x}/statement/1`, so nodes of
//!   different chains never exchange statements. The handshake is one role byte, `1` (full
//!   node).
//! - Each notification is a SCALE `Vec<Statement>` of at most 1 MiB holding whole statements
//!   only; a statement too large to travel alone is skipped and counted
//!   (`substrate_sync_skipped_oversized_statements`). A received batch declaring more than
//!   [`MAX_STATEMENTS_PER_NOTIFICATION`] statements is refused before decoding.
//!
//! # Propagation
//! A statement the store admits (from RPC or from a peer) is queued for every connected peer
//! but those it came from, and sent within [`Config::propagation`]'s coalescing window (20 ms
//! by default; upstream sends once a second, which [`Propagation::Reference`] reproduces for
//! comparison). Each peer has an outbox of at most [`MAX_OUTBOX`] statements (the oldest is
//! dropped and counted when it overflows) and at most one notification in flight; all peers
//! together have at most [`MAX_IN_FLIGHT_BYTES`] in flight; a send that takes longer than
//! [`SEND_TIMEOUT`] drops the peer. Expired statements are not sent.
//!
//! # Initial sync
//! A newly connected peer (also one that restarted) is sent every stored statement: a cursor
//! walks the store's admission journal up to where it stood when the peer connected, one
//! notification of at most 1 MiB at a time, taking turns with live propagation so neither
//! starves. Whatever is admitted later reaches the peer by propagation.
//!
//! # Receiving
//! - Each peer may send at most [`Config::rate_limit`] statements a second, in bursts of five
//!   times that; a peer over it is disconnected and banned for [`BAN_DURATION`], and
//!   `substrate_sync_statement_flooding_detected` counts it.
//! - Statements the store already has are skipped without a signature check; the others wait
//!   in a validation queue of at most [`MAX_PENDING_VALIDATIONS`] and are submitted with
//!   [`StatementSource::Network`], so allowances and limits apply as for RPC. A full queue
//!   holds back received notifications for up to 2 s (which slows senders down through the
//!   transport's backpressure, so an initial sync faster than validation loses nothing), then
//!   drops what does not fit and counts it (`substrate_sync_ignored_statements`).
//! - Undecodable or oversized notifications and invalid statements lower the peer's standing;
//!   a peer whose standing falls below [`BANNED_STANDING`] is dropped and banned.
//!
//! # Running two nodes by hand
//! ```text
//! # terminal 1
//! statement-node --dev -d /tmp/alice --port 30333 --rpc-port 9944 \
//!   --node-key 2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90
//! # terminal 2
//! statement-node --dev -d /tmp/bob --port 30334 --rpc-port 9945 --bootnodes \
//!   /ip4/127.0.0.1/tcp/30333/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm
//! ```
//! A statement submitted to either node's RPC is then served by both.
//!
//! The crate knows the store only through [`statement_primitives::StatementStore`].

#![forbid(unsafe_code)]

pub mod identity;
mod metrics;
mod rate;
mod wire;
mod worker;

pub use litep2p::{types::multiaddr::Multiaddr, PeerId};
pub use metrics::Metrics;
pub use wire::{
	protocol_name, MAX_NOTIFICATION_SIZE, MAX_STATEMENTS_PER_NOTIFICATION, MIN_ENCODED_STATEMENT,
};
pub use worker::{start, Network, PeerInfo};

use statement_primitives::StatementSource;
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
	/// Genesis hash of the chain: names the protocol.
	pub genesis_hash: [u8; 32],
	/// The node's ed25519 secret key (see [`identity`]).
	pub node_key: [u8; identity::SECRET_LEN],
	/// Addresses to listen on: `/ip4/A/tcp/P` (TCP) and `/ip4/A/tcp/P/ws` (WebSocket).
	pub listen_addresses: Vec<Multiaddr>,
	/// Peers to dial at start and whenever they are not connected: `.../p2p/<PeerId>`.
	pub boot_nodes: Vec<Multiaddr>,
	/// Peers to keep connected to, like boot nodes.
	pub reserved_nodes: Vec<Multiaddr>,
	/// Accept only reserved nodes (and boot nodes) as peers.
	pub reserved_only: bool,
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
}

impl Config {
	/// A config with the defaults and no addresses.
	pub fn new(genesis_hash: [u8; 32], node_key: [u8; identity::SECRET_LEN]) -> Self {
		Config {
			genesis_hash,
			node_key,
			listen_addresses: Vec::new(),
			boot_nodes: Vec::new(),
			reserved_nodes: Vec::new(),
			reserved_only: false,
			rate_limit: DEFAULT_RATE_LIMIT,
			propagation: Propagation::default(),
			source: StatementSource::Network,
			watch_queue_bytes: DEFAULT_WATCH_QUEUE_BYTES,
			validation_queue: MAX_PENDING_VALIDATIONS,
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
