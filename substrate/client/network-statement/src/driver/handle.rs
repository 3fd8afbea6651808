//! What the node holds of the running network: [`Network`], and the peers it shows.

use crate::{
	interest::Interest,
	metrics::Metrics,
	wire::{Role, Version},
	Multiaddr, PeerId,
};
use parking_lot::Mutex;
use statement_primitives::Topic;
use std::{collections::HashMap, sync::Arc, time::Duration};
use tokio::sync::{mpsc, oneshot, Semaphore};

/// Longest a one-shot query waits for its topics' holders: the router's own deadline, and
/// a margin for the store.
pub const FETCH_WAIT: Duration =
	Duration::from_secs(crate::routing::router::FETCH_DEADLINE.as_secs() + 2);

/// Queries that may wait for a fetch at once; past it, queries are answered from what the
/// node holds at once.
pub const FETCHES_AT_ONCE: usize = 1024;

/// The way to the route task's fetches.
#[derive(Clone)]
pub(super) struct Fetcher {
	tx: mpsc::UnboundedSender<super::route::Fetch>,
	permits: Arc<Semaphore>,
}

impl Fetcher {
	pub(super) fn new(tx: mpsc::UnboundedSender<super::route::Fetch>) -> Self {
		Fetcher { tx, permits: Arc::new(Semaphore::new(FETCHES_AT_ONCE)) }
	}

	async fn fetch(self, topics: Vec<Topic>) {
		let Ok(_permit) = self.permits.try_acquire_owned() else {
			log::debug!(target: crate::core::LOG, "{FETCHES_AT_ONCE} queries wait for their holders; one is answered from what this node holds");
			return;
		};
		let (done, finished) = oneshot::channel();
		if self.tx.send(super::route::Fetch { topics, done }).is_err() {
			return;
		}
		if tokio::time::timeout(FETCH_WAIT, finished).await.is_err() {
			log::debug!(target: crate::core::LOG, "A query's holders did not answer within {FETCH_WAIT:?}; answered from what this node holds");
		}
	}
}

/// A connected peer, as `system_peers` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerInfo {
	/// Its PeerId.
	pub peer_id: PeerId,
	/// Whether we dialled it.
	pub dialed: bool,
	/// The address of the connection.
	pub address: Multiaddr,
	/// The statement stream, when one is open: its version and the role the peer declared.
	pub statement_stream: Option<(Version, Role)>,
}

/// What the node sees of the running network.
pub struct Network {
	pub(super) local_peer_id: PeerId,
	pub(super) listen_addresses: Vec<Multiaddr>,
	pub(super) shared: Arc<Shared>,
	pub(super) interest: Interest,
	pub(super) task: Mutex<Option<tokio::task::JoinHandle<()>>>,
	/// The route task, with topic-routed storage.
	pub(super) route_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
	/// Where one-shot queries' fetches go, with topic-routed storage.
	pub(super) fetcher: Option<Fetcher>,
	/// Validation threads: they hold the store until they end.
	pub(super) validators: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// What the worker and the [`Network`] handle share.
pub(super) struct Shared {
	pub(super) metrics: Arc<Metrics>,
	pub(super) peers: Mutex<HashMap<PeerId, PeerInfo>>,
}

impl Network {
	/// This node's PeerId.
	pub fn local_peer_id(&self) -> PeerId {
		self.local_peer_id
	}

	/// The addresses litep2p listens on (ports resolved), each ending in `/p2p/<PeerId>`.
	pub fn listen_addresses(&self) -> &[Multiaddr] {
		&self.listen_addresses
	}

	/// The connected peers (also those without a statement stream, such as Kademlia's).
	pub fn peers(&self) -> Vec<PeerInfo> {
		let mut peers: Vec<PeerInfo> = self.shared.peers.lock().values().cloned().collect();
		peers.sort_by_key(|peer| peer.peer_id);
		peers
	}

	/// Peers with an open statement stream.
	pub fn statement_peers(&self) -> usize {
		self.shared.metrics.peers.get() as usize
	}

	/// The gossip metrics.
	pub fn metrics(&self) -> &Metrics {
		&self.shared.metrics
	}

	/// What this node asks its peers for: on a light node, subscriptions widen it (see
	/// [`Interest`]); on a full node it does nothing.
	pub fn interest(&self) -> &Interest {
		&self.interest
	}

	/// Have the store hold what the holders of `topics` hold before a one-shot query on them
	/// is answered from it (see [`crate::routing`]): resolves once it does, once no holder
	/// could be reached, or after [`FETCH_WAIT`]. At once on a node without topic-routed
	/// storage, for a query naming no topic, on a node holding one of the topics, and past
	/// [`FETCHES_AT_ONCE`] queries waiting.
	pub fn fetch(
		&self,
		topics: Vec<Topic>,
	) -> impl std::future::Future<Output = ()> + Send + 'static {
		let fetcher = self.fetcher.clone();
		async move {
			if let Some(fetcher) = fetcher {
				fetcher.fetch(topics).await;
			}
		}
	}

	/// Stop networking and wait until nothing of it holds the store any more (the worker and
	/// the validation threads, which end once the worker's queue to them is gone).
	pub async fn stop(&self) {
		let tasks = [self.task.lock().take(), self.route_task.lock().take()];
		for task in tasks.into_iter().flatten() {
			task.abort();
			let _ = task.await;
		}
		let validators = std::mem::take(&mut *self.validators.lock());
		let joined = tokio::task::spawn_blocking(move || {
			for thread in validators {
				let _ = thread.join();
			}
		});
		let _ = joined.await;
	}
}

impl Drop for Network {
	/// Without [`Network::stop`], the worker ends on its own soon after; the validation
	/// threads then end too.
	fn drop(&mut self) {
		let tasks = [self.task.lock().take(), self.route_task.lock().take()];
		for task in tasks.into_iter().flatten() {
			task.abort();
		}
	}
}
