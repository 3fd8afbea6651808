//! Substrate's `system_*` methods, for a node whose only chain is its genesis block.

use crate::error::Error;
use jsonrpsee::{types::ErrorObjectOwned, RpcModule};
use statement_network::Network;
use std::sync::Arc;

/// What the `system_*` methods report.
pub struct System {
	/// `system_name`.
	pub name: String,
	/// `system_chain`: the chain spec's name.
	pub chain: String,
	/// Peers and local identity; `None` in unit tests.
	pub network: Option<Arc<Network>>,
	/// `shouldHavePeers` in `system_health`: whether boot or reserved nodes are configured,
	/// as Substrate says it of a node that has someone to dial.
	pub should_have_peers: bool,
	/// The genesis hash, which is every peer's best block.
	pub genesis_hash: String,
}

impl System {
	/// Register the methods; `system_peers` answers only if unsafe methods are allowed, as in
	/// Substrate.
	pub fn register(self, module: &mut RpcModule<()>, unsafe_allowed: bool) -> Result<(), Error> {
		let System { name, chain, network, should_have_peers, genesis_hash } = self;
		module.register_method("system_name", move |_, _, _| name.clone())?;
		module.register_method("system_version", |_, _, _| env!("CARGO_PKG_VERSION"))?;
		module.register_method("system_chain", move |_, _, _| chain.clone())?;
		let health = network.clone();
		module.register_method("system_health", move |_, _, _| {
			let peers = health.as_ref().map_or(0, |network| network.statement_peers());
			serde_json::json!({
				"peers": peers,
				"isSyncing": false,
				"shouldHavePeers": should_have_peers,
			})
		})?;
		let Some(network) = network else { return Ok(()) };
		let local = network.clone();
		module.register_method("system_localPeerId", move |_, _, _| {
			local.local_peer_id().to_base58()
		})?;
		let local = network.clone();
		module.register_method("system_localListenAddresses", move |_, _, _| {
			local.listen_addresses().iter().map(ToString::to_string).collect::<Vec<_>>()
		})?;
		module.register_method("system_peers", move |_, _, _| {
			statement_rpc::ensure_unsafe_allowed(unsafe_allowed)?;
			// Substrate's shape; there is no block sync, so every peer's best block is genesis.
			Ok::<_, ErrorObjectOwned>(
				network
					.peers()
					.into_iter()
					.filter_map(|peer| {
						let (_, role) = peer.statement_stream?;
						let roles = match role {
							statement_network::Role::Full => "FULL",
							statement_network::Role::Light => "LIGHT",
							statement_network::Role::Authority => "AUTHORITY",
						};
						Some(serde_json::json!({
							"peerId": peer.peer_id.to_base58(),
							"roles": roles,
							"bestHash": genesis_hash,
							"bestNumber": 0,
						}))
					})
					.collect::<Vec<_>>(),
			)
		})?;
		Ok(())
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn system() -> System {
		System {
			name: "node".into(),
			chain: "chain".into(),
			network: None,
			should_have_peers: false,
			genesis_hash: "0x00".into(),
		}
	}

	#[test]
	fn a_method_name_registered_twice_is_an_error_not_a_silent_skip() {
		let mut module = RpcModule::new(());
		system().register(&mut module, true).unwrap();
		let err = system().register(&mut module, true).unwrap_err();
		assert!(matches!(err, Error::RpcMethod(_)), "{err:?}");
		assert!(err.to_string().contains("system_name"), "{err}");
	}
}
