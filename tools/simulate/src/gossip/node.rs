//! A simulated node: its store and its state beside the core (`churn` adds and removes
//! nodes).

use parking_lot::Mutex;
use statement_network::{
	core::{Core, StoreView},
	peerset::Peerset,
	wire::Role,
	Metrics,
};
use statement_primitives::{Encoded, Hash};
use std::{
	collections::{BTreeSet, HashMap, VecDeque},
	sync::{
		atomic::{AtomicU64, Ordering},
		Arc,
	},
};

/// The store a simulated node has: which statements it holds, and in what order it admitted
/// them (the journal initial sync walks).
pub(super) struct SimStore {
	pub(super) index: Arc<HashMap<Hash, u32>>,
	pub(super) held: Vec<AtomicU64>,
	pub(super) journal: Mutex<Vec<u32>>,
}

impl SimStore {
	pub(super) fn new(index: Arc<HashMap<Hash, u32>>, statements: usize) -> Self {
		let words = statements.div_ceil(64);
		SimStore {
			index,
			held: (0..words).map(|_| AtomicU64::new(0)).collect(),
			journal: Mutex::new(Vec::new()),
		}
	}

	pub(super) fn has(&self, statement: u32) -> bool {
		self.held[statement as usize / 64].load(Ordering::Relaxed) & (1 << (statement % 64)) != 0
	}

	/// Store it; false if it was there.
	pub(super) fn admit(&self, statement: u32) -> bool {
		let bit = 1 << (statement % 64);
		let had = self.held[statement as usize / 64].fetch_or(bit, Ordering::Relaxed);
		if had & bit != 0 {
			return false;
		}
		self.journal.lock().push(statement);
		true
	}
}

impl StoreView for SimStore {
	fn has_statement(&self, hash: &Hash) -> bool {
		self.index.get(hash).is_some_and(|statement| self.has(*statement))
	}

	fn admission_watermark(&self) -> u64 {
		self.journal.lock().len() as u64
	}
}

/// A statement of the load.
pub(super) struct Published {
	pub(super) at: u64,
	pub(super) topic: u32,
	pub(super) hash: Hash,
	pub(super) encoding: Encoded,
}

pub(super) struct Node {
	pub(super) alive: bool,
	pub(super) role: Role,
	/// Topics a light node wants (sorted).
	pub(super) wants: Vec<u32>,
	pub(super) joined_at: u64,
	pub(super) core: Option<Core<u32>>,
	pub(super) peerset: Peerset<u32>,
	pub(super) store: Arc<SimStore>,
	pub(super) metrics: Arc<Metrics>,
	pub(super) streams: BTreeSet<u32>,
	pub(super) cpu_free: u64,
	pub(super) uplink_free: u64,
	pub(super) tick_at: u64,
	pub(super) next_walk: u64,
	pub(super) walk_interval: u64,
	pub(super) walking: bool,
	/// Notifications the core is not ready for (its validation queue is full).
	pub(super) held_back: VecDeque<(u32, Vec<u8>)>,
	pub(super) kad_key: u64,
	/// Statements published before it joined, and how many of those it wants and holds.
	pub(super) published_before: u32,
	pub(super) wanted_before: u32,
	pub(super) held_before: u32,
	/// When the last of those it got arrived.
	pub(super) last_before: u64,
	pub(super) converged_at: Option<u64>,
	pub(super) bytes_sent: u64,
	pub(super) peak_queued: usize,
	pub(super) peak_uplink: u64,
}

impl Node {
	pub(super) fn core(&mut self) -> &mut Core<u32> {
		self.core.as_mut().expect("only live nodes are driven")
	}

	pub(super) fn wants(&self, topic: u32) -> bool {
		self.role != Role::Light || self.wants.binary_search(&topic).is_ok()
	}
}
