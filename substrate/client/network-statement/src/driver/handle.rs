//! What the node holds of the running network: [`Network`], and the peers it shows.

use crate::{
	interest::Interest,
	metrics::Metrics,
	wire::{Role, Version},
	Multiaddr, PeerId,
};
use parking_lot::Mutex;
use std::{collections::HashMap, sync::Arc};

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
