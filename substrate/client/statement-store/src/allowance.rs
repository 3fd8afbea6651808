//! Where per-account allowances come from: a fixed map (genesis, tests) here, chain state in
//! `chain_allowance`.

use crate::{error::Error, error::Result};
use codec::Decode;
use statement_primitives::{AccountId, StatementAllowance};
use std::collections::HashMap;

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

	/// A map that gives every account the largest allowance there is: repair re-admits what
	/// was admitted once, and tests admit anyone.
	pub fn unlimited() -> Self {
		MapAllowances::new().with_default(StatementAllowance::new(u32::MAX, u32::MAX))
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

pub(crate) fn decode_allowance(mut value: &[u8]) -> Result<StatementAllowance> {
	StatementAllowance::decode(&mut value)
		.map_err(|err| Error::Allowance(format!("malformed allowance value: {err}")))
}
