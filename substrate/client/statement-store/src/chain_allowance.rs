//! Allowances read from chain state through a `sc-client-api` backend.

use crate::{
	allowance::decode_allowance, allowance::AllowanceProvider, error::Error, error::Result,
};
use sc_client_api::{backend::StateBackend, Backend, HeaderBackend, TrieCacheContext};
use sp_runtime::traits::Block as BlockT;
use statement_primitives::{statement_allowance_key, AccountId, StatementAllowance};
use std::{marker::PhantomData, sync::Arc};

/// Which block's state allowances are read at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllowanceAt {
	/// The best block: follows the chain head.
	Best,
	/// The last finalized block: never sees a reverted change.
	Finalized,
}

/// Allowances read from chain state through a client backend, at the best or finalized block.
pub struct ChainAllowances<Block, B> {
	backend: Arc<B>,
	at: AllowanceAt,
	_block: PhantomData<fn() -> Block>,
}

impl<Block: BlockT, B: Backend<Block>> ChainAllowances<Block, B> {
	/// Read allowances from `backend`'s state at `at`.
	pub fn new(backend: Arc<B>, at: AllowanceAt) -> Self {
		ChainAllowances { backend, at, _block: PhantomData }
	}
}

impl<Block: BlockT, B: Backend<Block>> AllowanceProvider for ChainAllowances<Block, B> {
	fn allowance(&self, account: &AccountId) -> Result<Option<StatementAllowance>> {
		let info = self.backend.blockchain().info();
		let hash = match self.at {
			AllowanceAt::Best => info.best_hash,
			AllowanceAt::Finalized => info.finalized_hash,
		};
		let state = self
			.backend
			.state_at(hash, TrieCacheContext::Untrusted)
			.map_err(|err| Error::Allowance(format!("state at {hash:?}: {err}")))?;
		let value = state
			.storage(&statement_allowance_key(account))
			.map_err(|err| Error::Allowance(format!("reading allowance: {err}")))?;
		value.map(|value| decode_allowance(&value)).transpose()
	}
}
