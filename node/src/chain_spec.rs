//! Chain specs: the built-in `dev` and `local` ones, and JSON files in Substrate's raw format.
//! Allowances come from `genesis.raw.top`'s `":statement_allowance:" ++ account` keys.

use crate::error::Error;
use codec::Encode;
use serde::{Deserialize, Serialize};
use sp_core::{ecdsa, ed25519, sr25519, Pair};
use statement_primitives::{
	dev::{self, DEV_ACCOUNTS},
	statement_allowance_key, StatementAllowance,
};
use statement_store::MapAllowances;
use std::collections::BTreeMap;

/// A block header as Substrate chains with u32 block numbers and blake2-256 hashes have it.
pub type GenesisHeader = sp_runtime::generic::Header<u32, sp_runtime::traits::BlakeTwo256>;

/// The SS58 prefix of the built-in chains: 42, Substrate's generic one, so clients show the
/// dev accounts as every Substrate dev chain does (`5Grw...` for Alice). They name no token:
/// this chain has none.
pub const DEV_SS58_FORMAT: u16 = 42;

/// What each dev account may keep on the built-in chains: 100,000 statements, 100 MiB.
pub const DEV_ALLOWANCE: StatementAllowance = StatementAllowance::new(100_000, 100 * 1024 * 1024);

/// A chain spec: name, id, boot nodes and raw genesis storage.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainSpec {
	/// Human-readable name.
	pub name: String,
	/// Identifier; names the database directory.
	pub id: String,
	/// `Development`, `Local` or `Live`.
	#[serde(default)]
	pub chain_type: Option<String>,
	/// Peers to connect to first.
	#[serde(default)]
	pub boot_nodes: Vec<String>,
	/// Set when the chain forked from another with the same genesis: it joins the network
	/// protocols' names (`/{genesis}/{forkId}/statement/2`, `/{genesis}/{forkId}/kad`).
	#[serde(default, skip_serializing_if = "Option::is_none")]
	pub fork_id: Option<String>,
	/// What `system_properties` tells clients (`ss58Format`, `tokenSymbol`, ...); `null` or
	/// missing answers `{}`, as Substrate does.
	#[serde(default)]
	pub properties: Option<serde_json::Map<String, serde_json::Value>>,
	/// Genesis storage.
	pub genesis: Genesis,
}

/// Genesis section; only the raw form is read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Genesis {
	/// Raw storage.
	pub raw: RawGenesis,
}

/// Raw genesis storage: hex key -> hex value.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawGenesis {
	/// Top-level storage.
	pub top: BTreeMap<String, String>,
	/// Child tries (unused here, kept so specs round-trip).
	#[serde(default)]
	pub children_default: BTreeMap<String, serde_json::Value>,
}

/// The dev accounts' ids under each signature scheme (sr25519, ed25519, ecdsa).
pub fn dev_account_ids() -> Vec<(String, [u8; 32])> {
	let mut ids = Vec::new();
	for name in DEV_ACCOUNTS {
		let suri = dev::suri(name);
		if let Ok(pair) = sr25519::Pair::from_string(&suri, None) {
			ids.push((format!("{name} (sr25519)"), pair.public().0));
		}
		if let Ok(pair) = ed25519::Pair::from_string(&suri, None) {
			ids.push((format!("{name} (ed25519)"), pair.public().0));
		}
		if let Ok(pair) = ecdsa::Pair::from_string(&suri, None) {
			ids.push((format!("{name} (ecdsa)"), sp_crypto_hashing::blake2_256(&pair.public().0)));
		}
	}
	ids
}

fn built_in(name: &str, id: &str, chain_type: &str) -> ChainSpec {
	let top = dev_account_ids()
		.into_iter()
		.map(|(_, account)| {
			(
				format!("0x{}", hex::encode(statement_allowance_key(&account))),
				format!("0x{}", hex::encode(DEV_ALLOWANCE.encode())),
			)
		})
		.collect();
	ChainSpec {
		name: name.into(),
		id: id.into(),
		chain_type: Some(chain_type.into()),
		boot_nodes: Vec::new(),
		fork_id: None,
		properties: Some(serde_json::Map::from_iter([(
			"ss58Format".to_string(),
			serde_json::Value::from(DEV_SS58_FORMAT),
		)])),
		genesis: Genesis { raw: RawGenesis { top, children_default: BTreeMap::new() } },
	}
}

impl ChainSpec {
	/// `dev`, `local`, or a JSON file at that path.
	pub fn load(chain: &str) -> Result<ChainSpec, Error> {
		match chain {
			"dev" | "" => Ok(built_in("Development", "dev", "Development")),
			"local" => Ok(built_in("Local Testnet", "local_testnet", "Local")),
			path => {
				let text = std::fs::read_to_string(path)
					.map_err(|source| Error::ChainSpecRead { path: path.into(), source })?;
				let invalid =
					|detail: String| Error::ChainSpecInvalid { path: path.into(), detail };
				let spec: ChainSpec =
					serde_json::from_str(&text).map_err(|err| invalid(err.to_string()))?;
				spec.allowances().map_err(|err| invalid(err.to_string()))?;
				Ok(spec)
			}
		}
	}

	/// The allowances in the genesis storage.
	pub fn allowances(&self) -> Result<MapAllowances, Error> {
		let decode = |what: &'static str, text: &str| {
			hex::decode(text.trim_start_matches("0x")).map_err(|source| Error::GenesisHex {
				what,
				text: text.into(),
				source,
			})
		};
		let mut pairs = Vec::new();
		for (key, value) in &self.genesis.raw.top {
			pairs.push((decode("key", key)?, decode("value", value)?));
		}
		Ok(MapAllowances::from_storage(pairs.iter().map(|(k, v)| (k.as_slice(), v.as_slice())))?)
	}

	/// The genesis block's header, as a Substrate node builds it from this raw spec (state
	/// version 1): `{parent: 0, number: 0, state_root, extrinsics_root: the empty trie's root,
	/// no digest}`, where `state_root` is the blake2-256 trie root of `genesis.raw.top`. Specs
	/// with child tries are refused: nothing here writes them.
	pub fn genesis_header(&self) -> Result<GenesisHeader, Error> {
		use sp_runtime::{
			traits::{BlakeTwo256, Hash as _, Header as _},
			StateVersion,
		};
		if !self.genesis.raw.children_default.is_empty() {
			return Err(Error::ChainSpecInvalid {
				path: self.id.clone(),
				detail: "child tries in genesis.raw.childrenDefault are not supported".into(),
			});
		}
		let top = self.genesis_storage()?.into_iter().collect();
		let state_root = BlakeTwo256::trie_root(top, StateVersion::V1);
		let extrinsics_root = BlakeTwo256::trie_root(Vec::new(), StateVersion::V1);
		Ok(GenesisHeader::new(
			0,
			extrinsics_root,
			state_root,
			Default::default(),
			Default::default(),
		))
	}

	/// `genesis.raw.top`, its keys and values decoded from hex: the genesis block's storage,
	/// which `state_getStorage` answers from.
	pub fn genesis_storage(&self) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, Error> {
		let decode = |text: &String| {
			hex::decode(text.trim_start_matches("0x")).map_err(|source| Error::GenesisHex {
				what: "entry",
				text: text.clone(),
				source,
			})
		};
		let mut top = BTreeMap::new();
		for (key, value) in &self.genesis.raw.top {
			top.insert(decode(key)?, decode(value)?);
		}
		Ok(top)
	}

	/// The hash of the [genesis header](Self::genesis_header). It names the gossip protocol,
	/// so nodes of different chains never exchange statements, and clients read it from
	/// `chain_getBlockHash(0)`.
	pub fn genesis_hash(&self) -> Result<[u8; 32], Error> {
		Ok(self.genesis_header()?.hash().0)
	}

	/// Give each grant's accounts its allowance in the genesis storage, replacing what they
	/// had.
	pub fn grant(&mut self, grants: &[crate::grant::Grant]) {
		for grant in grants {
			let value = format!("0x{}", hex::encode(grant.allowance.encode()));
			for account in &grant.accounts {
				let key = format!("0x{}", hex::encode(statement_allowance_key(account)));
				self.genesis.raw.top.insert(key, value.clone());
			}
		}
	}

	/// Pretty JSON.
	pub fn to_json(&self) -> Result<String, Error> {
		serde_json::to_string_pretty(self).map_err(Error::ChainSpecJson)
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store::AllowanceProvider;

	#[test]
	fn dev_spec_gives_alice_an_allowance_and_strangers_none() {
		let spec = ChainSpec::load("dev").unwrap();
		let allowances = spec.allowances().unwrap();
		let alice = sr25519::Pair::from_string("//Alice", None).unwrap().public().0;
		assert_eq!(allowances.allowance(&alice).unwrap(), Some(DEV_ALLOWANCE));
		assert_eq!(allowances.allowance(&[9; 32]).unwrap(), None);
	}

	#[test]
	fn the_genesis_hash_follows_the_genesis_storage_alone() {
		let dev = ChainSpec::load("dev").unwrap();
		let mut renamed = dev.clone();
		renamed.name = "Another name".into();
		renamed.boot_nodes =
			vec!["/ip4/127.0.0.1/tcp/1/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm"
				.into()];
		assert_eq!(dev.genesis_hash().unwrap(), renamed.genesis_hash().unwrap());
		let mut other = dev.clone();
		other.genesis.raw.top.insert("0x00".into(), "0x01".into());
		assert_ne!(dev.genesis_hash().unwrap(), other.genesis_hash().unwrap());
		// The empty state's block: its state root is the empty trie's root (blake2-256 of
		// the one-byte empty node), which pins the trie encoding in use.
		let mut empty = dev.clone();
		empty.genesis.raw.top.clear();
		use sp_runtime::traits::{BlakeTwo256, Hash as _};
		assert_eq!(
			BlakeTwo256::trie_root(Vec::new(), sp_runtime::StateVersion::V1),
			BlakeTwo256::hash(&[0u8])
		);
		assert_ne!(empty.genesis_hash().unwrap(), dev.genesis_hash().unwrap());
	}

	#[test]
	fn properties_may_be_missing_and_never_change_the_genesis() {
		let mut spec = ChainSpec::load("local").unwrap();
		assert_eq!(spec.properties.as_ref().unwrap()["ss58Format"], 42);
		let genesis = spec.genesis_hash().unwrap();
		let mut json: serde_json::Value = serde_json::from_str(&spec.to_json().unwrap()).unwrap();
		json.as_object_mut().unwrap().remove("properties");
		let bare: ChainSpec = serde_json::from_value(json).unwrap();
		assert_eq!(bare.properties, None);
		spec.properties = Some(serde_json::Map::from_iter([("tokenSymbol".into(), "X".into())]));
		assert_eq!(spec.genesis_hash().unwrap(), genesis);
		assert_eq!(bare.genesis_hash().unwrap(), genesis);
	}

	#[test]
	fn a_spec_survives_json_and_bad_files_get_clear_errors() {
		let spec = ChainSpec::load("local").unwrap();
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("spec.json");
		std::fs::write(&path, spec.to_json().unwrap()).unwrap();
		let back = ChainSpec::load(path.to_str().unwrap()).unwrap();
		assert_eq!(back.id, "local_testnet");
		assert_eq!(back.genesis.raw.top, spec.genesis.raw.top);

		std::fs::write(&path, "{\"name\": 1}").unwrap();
		let err = ChainSpec::load(path.to_str().unwrap()).unwrap_err();
		assert!(err.to_string().contains("is not valid"), "{err}");
		let missing = ChainSpec::load("/nonexistent/spec.json").unwrap_err();
		assert!(missing.to_string().contains("cannot read chain spec"), "{missing}");
	}
}
