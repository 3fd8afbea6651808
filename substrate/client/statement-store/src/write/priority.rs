//! An account's statements in the order eviction takes them: lowest expiry first, and
//! statements of one expiry by hash, as the reference evicts them.

use crate::{
	error::bad,
	error::Result,
	index::posting::decode_pairs,
	index::schema::{self, Id, Record},
	store::Inner,
};
use statement_primitives::{AccountId, Hash};

impl Inner {
	/// `account`'s statements, lowest expiry (lowest priority) first: the order in which
	/// eviction takes them.
	pub fn by_priority(&self, account: &AccountId) -> Result<AccountWalk<'_>> {
		let prefix = schema::account_lists(account);
		let mut iter = self.db.iter(schema::COL_POSTING)?;
		iter.seek(&prefix)?;
		Ok(AccountWalk {
			inner: self,
			iter,
			account: *account,
			prefix,
			ahead: None,
			second: Vec::new(),
			tied: Vec::new(),
		})
	}
}

/// An account's statements in priority order (see [`Inner::by_priority`]).
pub struct AccountWalk<'a> {
	inner: &'a Inner,
	iter: parity_db::BTreeIterator<'a>,
	account: AccountId,
	prefix: Vec<u8>,
	/// A list read past the end of the second being walked.
	ahead: Option<(Vec<u8>, Vec<u8>)>,
	/// What is left of the second being walked, as (expiry, id), highest first.
	second: Vec<(u64, Id)>,
	/// Statements of one expiry, read and ordered by hash, highest first: the next ones.
	tied: Vec<(u64, Hash, Record)>,
}

impl AccountWalk<'_> {
	/// The next statement: its expiry, hash and record; statements of one expiry in hash order,
	/// as the reference evicts them. A quarantined statement (its body damaged, see
	/// [`Inner::record`]) is stepped over.
	pub fn next(&mut self) -> Result<Option<(u64, Hash, Record)>> {
		loop {
			if let Some(next) = self.tied.pop() {
				return Ok(Some(next));
			}
			let Some(&(expiry, _)) = self.second.last() else {
				if self.next_second()? {
					continue;
				}
				return Ok(None);
			};
			// Every statement of this expiry (the list is sorted, so they are at its end).
			let tied = self.second.iter().rev().take_while(|(other, _)| *other == expiry).count();
			let start = self.second.len() - tied;
			for (expiry, id) in self.second.split_off(start) {
				match self.inner.record_by_id(id)? {
					Some((hash, record)) if record.account == self.account => {
						self.tied.push((expiry, hash, record))
					}
					// Damaged, or (a damaged list) another account's: `check-db` names it.
					_ => continue,
				}
			}
			// Popped from the back: lowest hash last.
			self.tied.sort_unstable_by_key(|tied| std::cmp::Reverse(tied.1));
		}
	}

	/// Read every list of the account's next expiry second; false past its last.
	fn next_second(&mut self) -> Result<bool> {
		let Some((key, value)) =
			self.ahead.take().map_or_else(|| self.iter.next(), |kv| Ok(Some(kv)))?
		else {
			return Ok(false);
		};
		if !key.starts_with(&self.prefix) {
			return Ok(false);
		}
		if key.len() != schema::ACCOUNT_LIST_KEY {
			return Err(bad(schema::COL_POSTING, "account list key"));
		}
		let group = key[..schema::ACCOUNT_LIST_KEY - 8].to_vec();
		let second = schema::be_u64(&group, 1 + 32).unwrap_or_default();
		let mut pairs = Vec::new();
		decode_pairs(&value, &mut pairs).ok_or_else(|| bad(schema::COL_POSTING, "account list"))?;
		while let Some((key, value)) = self.iter.next()? {
			if !key.starts_with(&group) {
				self.ahead = Some((key, value));
				break;
			}
			decode_pairs(&value, &mut pairs)
				.ok_or_else(|| bad(schema::COL_POSTING, "account list"))?;
		}
		self.second =
			pairs.into_iter().map(|(id, low)| ((second << 32) | u64::from(low), id)).collect();
		// Popped from the back: lowest expiry (then lowest id) last.
		self.second.sort_unstable_by(|a, b| b.cmp(a));
		Ok(true)
	}
}
