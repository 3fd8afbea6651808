//! Topic-routed storage: each statement kept by the K live nodes nearest its topics, found by
//! an iterative lookup, instead of by every node (`--statement-replication-factor K`;
//! `docs/scaling.md` has the why and the figures).
//!
//! # The rule
//! - A node's key is `blake2_256` of its PeerId's bytes; a topic's key is its own 32 bytes; a
//!   statement without topics is keyed by its hash.
//! - Distance is XOR, compared as big-endian bytes; ties go to the smaller PeerId. This is
//!   upstream's rule (polkadot-sdk's `v2dht`), so both agree on who the K nearest are when
//!   every node is known.
//! - A node holds a statement when it is among the K nearest of one of its keys, or when a
//!   local subscription names one of its topics (or a one-shot query named one a moment
//!   ago, and its topic was fetched from the holders). Any other node that admits it forwards it
//!   to the holders and drops it after [`RoutingConfig::drop_after`].
//!
//! # The parts
//! - [`Known`]: the peers this node can route through, with their keys and addresses.
//! - [`Lookup`]: one iterative lookup (Kademlia's, over [`Known`] tables and the
//!   `/statement/route/1` protocol of [`wire`]) that converges on the K nearest live nodes.
//! - [`router::Router`]: one routed node: lookups, forwarding, holding, hand-over, watches,
//!   fetches for one-shot queries, and releases.
//! - [`memory::Network`]: routers in one process, for tests and the simulator.
//!
//! All are state machines without sockets or clocks; the litep2p driver runs them.

mod key;
mod known;
mod lookup;
pub mod memory;
pub mod router;
pub mod wire;

pub use key::{distance, key_of, keys_of, nearest, Key};
pub use known::{Known, MAX_KNOWN};
pub use lookup::Lookup;

use std::time::Duration;

/// Default of [`RoutingConfig::refresh`].
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(60);

/// Default of [`RoutingConfig::drop_after`].
pub const DEFAULT_DROP_AFTER: Duration = Duration::from_secs(60);

/// Lookups a node runs at once; more wait their turn.
pub const LOOKUPS_AT_ONCE: usize = 8;

/// Queries one lookup has in flight at once (Kademlia's alpha).
pub const ALPHA: usize = 3;

/// Fewest peers a lookup converges on, and a `Nearest` answer names, whatever K: with K = 2
/// a lookup that stopped at the 2 nearest answers it had would end short of the true
/// nearest too often in a small network. The holders are the first K of them.
pub const MIN_WIDTH: usize = 8;

/// How topic-routed storage runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingConfig {
	/// K: the nodes that hold each statement.
	pub replication_factor: usize,
	/// How often holders look their keys up again and hand over to new members, and readers
	/// renew their watches; also how long a lookup's answer is reused.
	pub refresh: Duration,
	/// How long a node that does not hold a statement keeps it after admitting it.
	pub drop_after: Duration,
}

impl RoutingConfig {
	/// How many peers lookups converge on and answers name: K, at least [`MIN_WIDTH`].
	pub fn width(&self) -> usize {
		self.replication_factor.max(MIN_WIDTH)
	}

	/// K holders, with the default intervals.
	pub fn new(replication_factor: usize) -> Self {
		RoutingConfig {
			replication_factor: replication_factor.max(1),
			refresh: DEFAULT_REFRESH,
			drop_after: DEFAULT_DROP_AFTER,
		}
	}
}
