//! What the stores need of a chain: a block type, a client that answers allowances, and a
//! task spawner on tokio. Shared by the interop tests (`statement-interop`) and the run
//! beside the reference store (`statement-beside-upstream`), which builds no network.

use codec::Encode;
use sc_client_api::{in_mem, StorageData, StorageKey, StorageProvider};
use sp_blockchain::{BlockStatus, HeaderBackend, Info};
use sp_core::{traits::SpawnNamed, H256};
use sp_runtime::{
	generic,
	traits::{BlakeTwo256, Block as BlockT, NumberFor},
	OpaqueExtrinsic,
};
use sp_statement_store::StatementAllowance;

/// A block type with 32-byte hashes, as every Substrate chain has.
pub type Block = generic::Block<generic::Header<u32, BlakeTwo256>, OpaqueExtrinsic>;

/// The in-memory backend type the client trait names.
pub type Backend = in_mem::Backend<Block>;

/// Statements and bytes every account may keep.
pub const ALLOWANCE: StatementAllowance =
	StatementAllowance { max_count: 100_000, max_size: 100 << 20 };

/// A chain of one block whose state gives every account the same allowance.
#[derive(Clone)]
pub struct Client {
	genesis: H256,
	allowance: StatementAllowance,
}

impl Client {
	/// The chain with this genesis hash, every account allowed [`ALLOWANCE`].
	pub fn new(genesis: [u8; 32]) -> Self {
		Client::with_allowance(genesis, ALLOWANCE)
	}

	/// The chain with this genesis hash, every account allowed `allowance`.
	pub fn with_allowance(genesis: [u8; 32], allowance: StatementAllowance) -> Self {
		Client { genesis: H256(genesis), allowance }
	}
}

fn unserved<T>() -> sp_blockchain::Result<T> {
	Err(sp_blockchain::Error::Backend("not served by the test client".into()))
}

impl HeaderBackend<Block> for Client {
	fn header(&self, _hash: H256) -> sp_blockchain::Result<Option<<Block as BlockT>::Header>> {
		Ok(None)
	}

	fn info(&self) -> Info<Block> {
		Info {
			best_hash: self.genesis,
			best_number: 0,
			genesis_hash: self.genesis,
			finalized_hash: self.genesis,
			finalized_number: 0,
			finalized_state: None,
			number_leaves: 1,
			block_gap: None,
		}
	}

	fn status(&self, _hash: H256) -> sp_blockchain::Result<BlockStatus> {
		Ok(BlockStatus::InChain)
	}

	fn number(&self, _hash: H256) -> sp_blockchain::Result<Option<u32>> {
		Ok(Some(0))
	}

	fn hash(&self, number: NumberFor<Block>) -> sp_blockchain::Result<Option<H256>> {
		Ok((number == 0).then_some(self.genesis))
	}
}

impl StorageProvider<Block, Backend> for Client {
	fn storage(&self, _hash: H256, key: &StorageKey) -> sp_blockchain::Result<Option<StorageData>> {
		let allowance = key.0.starts_with(b":statement_allowance:");
		Ok(allowance.then(|| StorageData(self.allowance.encode())))
	}

	fn storage_hash(&self, _hash: H256, _key: &StorageKey) -> sp_blockchain::Result<Option<H256>> {
		unserved()
	}

	fn storage_keys(
		&self,
		_hash: H256,
		_prefix: Option<&StorageKey>,
		_start_key: Option<&StorageKey>,
	) -> sp_blockchain::Result<
		sc_client_api::backend::KeysIter<<Backend as sc_client_api::Backend<Block>>::State, Block>,
	> {
		unserved()
	}

	fn storage_pairs(
		&self,
		_hash: H256,
		_prefix: Option<&StorageKey>,
		_start_key: Option<&StorageKey>,
	) -> sp_blockchain::Result<
		sc_client_api::backend::PairsIter<<Backend as sc_client_api::Backend<Block>>::State, Block>,
	> {
		unserved()
	}

	fn child_storage(
		&self,
		_hash: H256,
		_child_info: &sp_core::storage::ChildInfo,
		_key: &StorageKey,
	) -> sp_blockchain::Result<Option<StorageData>> {
		unserved()
	}

	fn child_storage_keys(
		&self,
		_hash: H256,
		_child_info: sp_core::storage::ChildInfo,
		_prefix: Option<&StorageKey>,
		_start_key: Option<&StorageKey>,
	) -> sp_blockchain::Result<
		sc_client_api::backend::KeysIter<<Backend as sc_client_api::Backend<Block>>::State, Block>,
	> {
		unserved()
	}

	fn child_storage_hash(
		&self,
		_hash: H256,
		_child_info: &sp_core::storage::ChildInfo,
		_key: &StorageKey,
	) -> sp_blockchain::Result<Option<H256>> {
		unserved()
	}

	fn closest_merkle_value(
		&self,
		_hash: H256,
		_key: &StorageKey,
	) -> sp_blockchain::Result<Option<sc_client_api::backend::MerkleValue<H256>>> {
		unserved()
	}

	fn child_closest_merkle_value(
		&self,
		_hash: H256,
		_child_info: &sp_core::storage::ChildInfo,
		_key: &StorageKey,
	) -> sp_blockchain::Result<Option<sc_client_api::backend::MerkleValue<H256>>> {
		unserved()
	}
}

/// Spawns on the current tokio runtime, blocking work on its blocking pool.
#[derive(Clone)]
pub struct TokioSpawner(pub tokio::runtime::Handle);

impl SpawnNamed for TokioSpawner {
	fn spawn_blocking(
		&self,
		_name: &'static str,
		_group: Option<&'static str>,
		future: futures::future::BoxFuture<'static, ()>,
	) {
		let handle = self.0.clone();
		self.0.spawn_blocking(move || handle.block_on(future));
	}

	fn spawn(
		&self,
		_name: &'static str,
		_group: Option<&'static str>,
		future: futures::future::BoxFuture<'static, ()>,
	) {
		self.0.spawn(future);
	}
}
