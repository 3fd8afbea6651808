//! Where per-account allowances come from: chain state, or a fixed map (genesis, tests).

use crate::{Error, Result};
use codec::Decode;
use sc_client_api::{backend::StateBackend, Backend, HeaderBackend, TrieCacheContext};
use sp_runtime::traits::Block as BlockT;
use statement_primitives::{statement_allowance_key, AccountId, StatementAllowance};
use std::{collections::HashMap, marker::PhantomData, sync::Arc};

/// Tells the store what each account may keep. A missing allowance is no allowance.
pub trait AllowanceProvider: Send + Sync {
	/// The allowance of `account`, `None` if it has none.
	fn allowance(&self, account: &AccountId) -> Result<Option<StatementAllowance>>;
}

/// A fixed table of allowances, e.g. read from a chain spec's genesis storage.
#[derive(Clone, Debug, Default)]
pub struct MapAllowances {
	allowances: HashMap<AccountId, StatementAllowance>,
	default: Option<StatementAllowance>,
}

impl MapAllowances {
	/// An empty table: nobody may store anything.
	pub fn new() -> Self {
		Self::default()
	}

	/// Give `account` an allowance.
	pub fn set(&mut self, account: AccountId, allowance: StatementAllowance) {
		self.allowances.insert(account, allowance);
	}

	/// Give every account not in the table this allowance.
	pub fn with_default(mut self, allowance: StatementAllowance) -> Self {
		self.default = Some(allowance);
		self
	}

	/// Read allowances out of raw storage pairs (`":statement_allowance:" ++ account` keys);
	/// other keys are skipped, a malformed allowance value is an error.
	pub fn from_storage<'a>(pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Result<Self> {
		let prefix = statement_primitives::STATEMENT_ALLOWANCE_PREFIX;
		let mut table = Self::new();
		for (key, value) in pairs {
			let Some(account) = key.strip_prefix(prefix) else { continue };
			let account: AccountId = account.try_into().map_err(|_| {
				Error::Allowance(format!("allowance key with a {}-byte account", account.len()))
			})?;
			table.set(account, decode_allowance(value)?);
		}
		Ok(table)
	}
}

impl AllowanceProvider for MapAllowances {
	fn allowance(&self, account: &AccountId) -> Result<Option<StatementAllowance>> {
		Ok(self.allowances.get(account).copied().or(self.default))
	}
}

fn decode_allowance(mut value: &[u8]) -> Result<StatementAllowance> {
	StatementAllowance::decode(&mut value)
		.map_err(|err| Error::Allowance(format!("malformed allowance value: {err}")))
}

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
