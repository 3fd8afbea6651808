//! An account's statements in the order eviction takes them: lowest expiry first, and
//! statements of one expiry by hash, as the reference evicts them.
//!
//! The account lists hold ids and expiries, not hashes, so ordering statements of one expiry
//! reads every one of them. A walk that orders a long tie keeps the order (hash and id) for
//! the walks after it ([`super::ties::Ties`]), so that an account of 65,536 statements of one
//! expiry does not cost 65,536 reads on every submit that evicts from it. A kept order stays
//! true: ids are never reused, a statement removed since is told by the membership set, and
//! admitting a statement to the account at or below the tie's expiry drops it.

use super::ties::Tie;
use crate::{
	error::bad,
	error::Result,
	index::lists::Walk as _,
	index::posting::decode_pairs,
	index::schema::{self, Id, Record},
	store::Inner,
	write::staging::Overlay,
};
use statement_primitives::{AccountId, Hash};
use std::sync::atomic::Ordering;

/// Ties from which a walk keeps their order for the next walks.
const KEEP_FROM: usize = 64;

impl Inner {
	/// `account`'s statements, lowest expiry (lowest priority) first: the order in which
	/// eviction takes them.
	pub fn by_priority(&self, account: &AccountId) -> Result<AccountWalk<'_>> {
		let kept = self.writes.ties.take(account);
		Ok(AccountWalk {
			inner: self,
			lists: None,
			account: *account,
			prefix: schema::account_lists(account),
			ahead: None,
			second: Vec::new(),
			tied: Vec::new(),
			at: kept.as_ref().map_or(0, |tie| tie.order.len()),
			live_to: kept.as_ref().map_or(0, |tie| tie.order.len()),
			kept,
			past: None,
			rest: Vec::new(),
			lowest: true,
		})
	}
}

/// An account's statements in priority order (see [`Inner::by_priority`]).
pub struct AccountWalk<'a> {
	inner: &'a Inner,
	/// The account's lists, staged changes laid over parity-db's; opened when a walk first
	/// needs them, which a submit evicting from a kept tie does not.
	lists: Option<Overlay<'a>>,
	account: AccountId,
	prefix: Vec<u8>,
	/// A list read past the end of the second being walked.
	ahead: Option<(Vec<u8>, Vec<u8>)>,
	/// What is left of the second being walked, as (expiry, id), highest first.
	second: Vec<(u64, Id)>,
	/// Statements of one expiry, read and ordered by hash, highest first: the next ones.
	tied: Vec<(u64, Hash, Record)>,
	/// A kept tie the walk starts with (see [`super::ties::Ties`]); given back when the walk
	/// ends.
	kept: Option<Tie>,
	/// How much of `kept.order` is left to take.
	at: usize,
	/// `kept.order[live_to..]` is known removed (trimmed when the tie is given back).
	live_to: usize,
	/// What a kept tie covered, once taken: its expiry and, if it held only the lowest
	/// hashes of the tie, the highest of them. The lists are walked past it.
	past: Option<(u64, Option<Hash>)>,
	/// The part of a tie this walk read beyond what it kept, highest hash first.
	rest: Vec<(u64, Hash, Record)>,
	/// Whether no expiry has been read from the lists yet: only the account's lowest is kept.
	lowest: bool,
}

impl Drop for AccountWalk<'_> {
	fn drop(&mut self) {
		self.give_back();
	}
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
			if let Some(kept) = self.next_kept()? {
				return Ok(Some(kept));
			}
			// The kept tie is done and the rest of it, read by this walk, is next.
			if !self.tied.is_empty() {
				continue;
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
			if let Some((_, Some(highest))) = self.past.filter(|past| past.0 == expiry) {
				self.tied.retain(|tied| tied.1 > highest);
			}
			// Popped from the back: lowest hash last.
			self.tied.sort_unstable_by_key(|tied| std::cmp::Reverse(tied.1));
			if std::mem::take(&mut self.lowest)
				&& self.past.is_none()
				&& self.tied.len() >= KEEP_FROM
			{
				self.keep(expiry);
			}
		}
	}

	/// The next statement of the kept tie that is still stored, if one is left; once none
	/// is, the walk goes on past what the tie covered.
	fn next_kept(&mut self) -> Result<Option<(u64, Hash, Record)>> {
		let Some(tie) = &self.kept else { return Ok(None) };
		while self.at > 0 {
			self.at -= 1;
			let (hash, id) = tie.order[self.at];
			if !self.inner.membership.holds(schema::fingerprint(&hash), id) {
				if self.live_to == self.at + 1 {
					self.live_to = self.at;
				}
				continue;
			}
			match self.inner.record_by_id(id)? {
				Some((found, record)) if found == hash => {
					return Ok(Some((tie.expiry, hash, record)))
				}
				// Damaged since it was kept: stepped over, as below.
				_ => continue,
			}
		}
		let past = (tie.expiry, (!tie.complete).then(|| tie.order[0].0));
		if self.rest.is_empty() {
			self.past = Some(past);
		} else {
			// Kept by this walk: the rest of the tie is at hand, and the lists are past it.
			self.tied = std::mem::take(&mut self.rest);
		}
		self.give_back();
		Ok(None)
	}

	/// Keep the order of the tie just read (`tied`, at `expiry`) and take it from there.
	fn keep(&mut self, expiry: u64) {
		let mut tied = std::mem::take(&mut self.tied);
		let per_tie = self.inner.writes.ties.per_tie.load(Ordering::Relaxed);
		let complete = tied.len() <= per_tie;
		let lowest = tied.split_off(tied.len().saturating_sub(per_tie));
		// Higher hashes than the kept ones, for this walk once the kept ones are taken.
		self.rest = tied;
		let order: Vec<(Hash, Id)> =
			lowest.iter().map(|(_, hash, record)| (*hash, record.id)).collect();
		// The records of the ones taken are read again from the bodies' cache or disk: a
		// few a submit, against the whole tie.
		(self.at, self.live_to) = (order.len(), order.len());
		self.kept = Some(Tie { expiry, order, complete });
	}

	/// Give the kept tie back for the next walk, without what is known removed.
	fn give_back(&mut self) {
		let Some(mut tie) = self.kept.take() else { return };
		tie.order.truncate(self.live_to);
		if !tie.order.is_empty() {
			self.inner.writes.ties.put(self.account, tie);
		}
	}

	/// Read every list of the account's next expiry second; false past its last.
	fn next_second(&mut self) -> Result<bool> {
		let lists = match &mut self.lists {
			Some(lists) => lists,
			None => {
				let mut lists = self.inner.db.overlay(schema::COL_POSTING, &self.prefix)?;
				lists.seek(&self.prefix)?;
				self.lists.insert(lists)
			}
		};
		let Some((key, value)) =
			self.ahead.take().map_or_else(|| lists.next(), |kv| Ok(Some(kv)))?
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
		while let Some((key, value)) = lists.next()? {
			if !key.starts_with(&group) {
				self.ahead = Some((key, value));
				break;
			}
			decode_pairs(&value, &mut pairs)
				.ok_or_else(|| bad(schema::COL_POSTING, "account list"))?;
		}
		self.second =
			pairs.into_iter().map(|(id, low)| ((second << 32) | u64::from(low), id)).collect();
		// Past what a kept tie covered: below its expiry, nothing is left (it was the lowest);
		// at it, nothing if it held the whole tie, else what hashes higher (see `next`).
		if let Some((expiry, highest)) = self.past {
			self.second
				.retain(|&(other, _)| other > expiry || (other == expiry && highest.is_some()));
		}
		// Popped from the back: lowest expiry (then lowest id) last.
		self.second.sort_unstable_by(|a, b| b.cmp(a));
		Ok(true)
	}
}

#[cfg(test)]
mod tests {
	use super::KEEP_FROM;
	use crate::write::ties::KEPT_PER_TIE;
	use crate::{allowance::MapAllowances, store::Store};
	use statement_primitives::testing::{ed25519_pair, TestStatement};
	use statement_primitives::{
		Statement, StatementAllowance, StatementSource, StatementStore, SubmitResult,
	};
	use std::sync::{atomic::Ordering, Arc};

	const LOCAL: StatementSource = StatementSource::Local;

	/// A store admitting 150 statements and 600 data bytes an account, whose walks keep at
	/// most `per_tie` statements of a tie, holding a tie of 150 statements of account 1
	/// (4 data bytes each), lowest hash last.
	fn tied(dir: &std::path::Path, per_tie: usize) -> (Store, Vec<Statement>) {
		let allowances = MapAllowances::new().with_default(StatementAllowance::new(150, 600));
		let store = Store::open(crate::config::Config::new(dir), Arc::new(allowances)).unwrap();
		store.inner.writes.ties.per_tie.store(per_tie, Ordering::Relaxed);
		let mut tie: Vec<_> = (0..150u32).map(|i| expiring(1, 100, &i.to_le_bytes())).collect();
		for s in &tie {
			assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
		}
		tie.sort_by_key(|s| std::cmp::Reverse(s.hash()));
		(store, tie)
	}

	fn expiring(signer: u32, at: u32, data: &[u8]) -> Statement {
		TestStatement::new()
			.expiry(u32::MAX - 1000 + at, 0)
			.data(data)
			.signed_ed25519(&ed25519_pair(signer))
	}

	#[test]
	fn one_submit_evicts_in_hash_order_past_a_partly_kept_tie() {
		// The first eviction keeps the lowest 64 hashes of the 150; the second frees 320
		// bytes, 80 statements: the 63 kept ones left, then 17 of the rest read again.
		let dir = tempfile::tempdir().unwrap();
		let (store, mut tie) = tied(dir.path(), KEEP_FROM);
		let first = expiring(1, 200, b"four");
		assert_eq!(store.submit(first.clone(), LOCAL), SubmitResult::New);
		assert!(!store.has_statement(&tie.pop().unwrap().hash()));
		let second = expiring(1, 300, &[7; 320]);
		assert_eq!(store.submit(second.clone(), LOCAL), SubmitResult::New);
		let kept = tie.split_off(tie.len() - 80);
		assert!(kept.iter().all(|s| !store.has_statement(&s.hash())), "the lowest 80 go");
		assert!(tie.iter().all(|s| store.has_statement(&s.hash())), "the other 69 stay");
		assert!(store.has_statement(&first.hash()) && store.has_statement(&second.hash()));
	}

	#[test]
	fn removing_an_account_past_a_kept_tie_removes_each_statement_once() {
		// Past a tie kept whole and past the lowest 64 kept of it: the walk reads the lists
		// again from the tie's expiry and must leave out what the kept order gave.
		for per_tie in [KEPT_PER_TIE, KEEP_FROM] {
			removing_an_account_removes_each_statement_once(per_tie);
		}
	}

	#[test]
	fn removing_an_account_whose_last_expiry_is_a_tie_longer_than_is_kept_removes_all_of_it() {
		// The walk keeps the lowest 64 hashes of the 150 and reads the other 86 again once
		// those are taken; with no later expiry after the tie, it once ended there.
		let dir = tempfile::tempdir().unwrap();
		let (store, tie) = tied(dir.path(), KEEP_FROM);
		let others: Vec<_> = (0..5u8).map(|i| expiring(2, 100, &[i])).collect();
		for s in &others {
			assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
		}
		store.remove_by(expiring(1, 0, &[]).account_id().unwrap()).unwrap();
		let left = tie.iter().filter(|s| store.has_statement(&s.hash())).count();
		assert_eq!(left, 0, "every statement of the tie is removed");
		assert_eq!(store.len(), 5, "the other account's statements are all left");
	}

	fn removing_an_account_removes_each_statement_once(per_tie: usize) {
		let dir = tempfile::tempdir().unwrap();
		let (store, mut tie) = tied(dir.path(), per_tie);
		let others: Vec<_> = (0..5u8).map(|i| expiring(2, 100, &[i])).collect();
		for s in &others {
			assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
		}
		assert_eq!(store.submit(expiring(1, 200, b"four"), LOCAL), SubmitResult::New);
		tie.pop();
		store.remove_by(expiring(1, 0, &[]).account_id().unwrap()).unwrap();
		assert_eq!(store.len(), 5, "the other account's statements are all left ({per_tie} kept)");
		assert!(others.iter().all(|s| store.has_statement(&s.hash())));
		assert_eq!(store.submit(tie[0].clone(), LOCAL), SubmitResult::New);
		assert_eq!(store.len(), 6);
	}

	/// An evicting submit walks the account's lists as staged, without handing the staged
	/// batches to parity-db under the writer lock (a parity-db commit every submit that
	/// evicts), both when it reads the lists and when a kept tie spares it them.
	#[test]
	fn evictions_walk_the_staged_lists_and_hand_nothing_over() {
		let dir = tempfile::tempdir().unwrap();
		let allowances = MapAllowances::new().with_default(StatementAllowance::new(100, 1 << 20));
		let store =
			Store::open(crate::config::Config::new(dir.path()), Arc::new(allowances)).unwrap();
		let held = store.inner.writes.writeback.hold();
		let opened = store.inner.db.staged_batches();
		let mut tie: Vec<_> = (0..100u32).map(|i| expiring(1, 100, &i.to_le_bytes())).collect();
		for s in &tie {
			assert_eq!(store.submit(s.clone(), LOCAL), SubmitResult::New);
		}
		tie.sort_by_key(|s| std::cmp::Reverse(s.hash()));
		for n in 0..3u32 {
			// The first reads the staged lists and keeps the tie; the next take from it.
			let newer = expiring(1, 200 + n, b"newer");
			assert_eq!(store.submit(newer.clone(), LOCAL), SubmitResult::New, "submit {n}");
			let lowest = tie.pop().unwrap();
			assert!(!store.has_statement(&lowest.hash()), "submit {n} evicts the lowest hash");
			assert!(store.has_statement(&newer.hash()));
		}
		assert_eq!(store.len(), 100);
		assert_eq!(
			store.inner.db.staged_batches(),
			opened + 103,
			"every submit staged one batch and none was handed over"
		);
		drop(held);
	}
}
