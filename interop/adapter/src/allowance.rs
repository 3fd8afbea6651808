//! Allowances read from chain state through the client a polkadot-sdk node already has, as the
//! reference store reads them: the `:statement_allowance:` key of the account at the best block.

use sc_client_api::{StorageKey, StorageProvider};
use sp_blockchain::HeaderBackend;
use sp_runtime::traits::Block as BlockT;
use statement_primitives::{statement_allowance_key, AccountId, StatementAllowance};
use std::{marker::PhantomData, sync::Arc};

/// Our store's [`statement_store::AllowanceProvider`] over a node's client.
pub struct ClientAllowances<Block, Client, BE> {
	client: Arc<Client>,
	_types: PhantomData<fn() -> (Block, BE)>,
}

impl<Block, Client, BE> ClientAllowances<Block, Client, BE> {
	/// Read through `client`.
	pub fn new(client: Arc<Client>) -> Self {
		ClientAllowances { client, _types: PhantomData }
	}
}

impl<Block, Client, BE> statement_store::AllowanceProvider for ClientAllowances<Block, Client, BE>
where
	Block: BlockT,
	BE: sc_client_api::Backend<Block> + 'static,
	Client: HeaderBackend<Block> + StorageProvider<Block, BE> + Send + Sync + 'static,
{
	fn allowance(
		&self,
		account: &AccountId,
	) -> statement_store::Result<Option<StatementAllowance>> {
		let best = self.client.info().best_hash;
		let key = StorageKey(statement_allowance_key(account));
		let value = self.client.storage(best, &key).map_err(|err| {
			statement_store::Error::Allowance(format!("state at {best:?}: {err}"))
		})?;
		value
			.map(|data| {
				<StatementAllowance as codec::Decode>::decode(&mut &data.0[..]).map_err(|err| {
					statement_store::Error::Allowance(format!("reading allowance: {err}"))
				})
			})
			.transpose()
	}
}
