//! Per-account allowances and where chain state keeps them.

use crate::AccountId;

/// What an account may keep in the store: a number of statements and a number of data bytes.
///
/// Encoded in chain state as SCALE `{max_count: u32, max_size: u32}`.
#[derive(
	Clone,
	Copy,
	Debug,
	Default,
	PartialEq,
	Eq,
	codec::Encode,
	codec::Decode,
	serde::Serialize,
	serde::Deserialize,
)]
#[serde(rename_all = "camelCase")]
pub struct StatementAllowance {
	/// Most statements the account may keep at once.
	pub max_count: u32,
	/// Most data bytes (sum of `data` lengths) the account may keep at once.
	pub max_size: u32,
}

/// Prefix of the chain-state key holding an account's allowance.
pub const STATEMENT_ALLOWANCE_PREFIX: &[u8] = b":statement_allowance:";

impl StatementAllowance {
	/// An allowance of `max_count` statements and `max_size` data bytes.
	pub const fn new(max_count: u32, max_size: u32) -> Self {
		StatementAllowance { max_count, max_size }
	}

	/// Whether the account may keep nothing at all.
	pub const fn is_depleted(&self) -> bool {
		self.max_count == 0 || self.max_size == 0
	}
}

/// The chain-state key of `account`'s allowance: `":statement_allowance:" ++ account`.
pub fn statement_allowance_key(account: &AccountId) -> Vec<u8> {
	let mut key = Vec::with_capacity(STATEMENT_ALLOWANCE_PREFIX.len() + account.len());
	key.extend_from_slice(STATEMENT_ALLOWANCE_PREFIX);
	key.extend_from_slice(account);
	key
}

#[cfg(test)]
mod tests {
	use super::*;
	use codec::{Decode, Encode};

	#[test]
	fn allowance_encodes_as_two_little_endian_u32() {
		let allowance = StatementAllowance::new(0x0102_0304, 5);
		assert_eq!(allowance.encode(), vec![4, 3, 2, 1, 5, 0, 0, 0]);
		assert_eq!(StatementAllowance::decode(&mut &allowance.encode()[..]).ok(), Some(allowance));
	}

	#[test]
	fn allowance_key_is_prefix_then_account() {
		let key = statement_allowance_key(&[7u8; 32]);
		assert_eq!(&key[..21], b":statement_allowance:");
		assert_eq!(&key[21..], &[7u8; 32]);
	}

	#[test]
	fn zero_count_or_size_is_depleted() {
		assert!(StatementAllowance::new(0, 10).is_depleted());
		assert!(StatementAllowance::new(10, 0).is_depleted());
		assert!(!StatementAllowance::new(1, 1).is_depleted());
	}
}
