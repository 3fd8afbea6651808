//! The order of long eviction ties, kept from walk to walk (see [`super::priority`]): kept
//! apart from the walk so that the write path's state does not import the store.

use crate::index::schema::Id;
use parking_lot::Mutex;
use statement_primitives::{AccountId, Hash};
use std::{collections::HashMap, sync::atomic::AtomicUsize};

/// Most statements the kept orders hold (40 bytes each: 5 MiB), and most one of them holds:
/// the lowest hashes of a longer tie, the rest read again once those are gone, so that a tie
/// of 65,536 costs 8 reads an eviction and 16 accounts evicting from long ties at once keep
/// theirs.
pub(super) const KEPT_IDS: usize = 1 << 17;
pub(super) const KEPT_PER_TIE: usize = 1 << 13;

/// The order of the statements of an account's lowest expiry, kept from walk to walk (see the
/// module's comment of [`super::priority`]), for a few accounts at most: those evicting from
/// long ties.
pub(crate) struct Ties {
	pub(super) held: Mutex<HashMap<AccountId, Tie>>,
	/// Most statements one tie keeps: [`KEPT_PER_TIE`], lowered by tests to reach the
	/// walk past a partly kept tie without 65,536 statements.
	pub(super) per_tie: AtomicUsize,
}

impl Default for Ties {
	fn default() -> Self {
		Ties { held: Default::default(), per_tie: AtomicUsize::new(KEPT_PER_TIE) }
	}
}

/// One account's kept tie.
pub(super) struct Tie {
	/// The expiry every statement of the tie has: the account's lowest when it was kept.
	pub(super) expiry: u64,
	/// Hash and id of the tie's statements, highest hash first (taken from the back).
	pub(super) order: Vec<(Hash, Id)>,
	/// Whether `order` holds the whole tie, rather than its lowest hashes.
	pub(super) complete: bool,
}

impl Ties {
	pub(super) fn take(&self, account: &AccountId) -> Option<Tie> {
		self.held.lock().remove(account)
	}

	/// Keep `tie`, dropping others held (any) while over the bound.
	pub(super) fn put(&self, account: AccountId, tie: Tie) {
		let mut held = self.held.lock();
		let mut holding: usize = held.values().map(|tie| tie.order.len()).sum();
		while holding + tie.order.len() > KEPT_IDS {
			let Some(other) = held.keys().next().copied() else { break };
			holding -= held.remove(&other).map_or(0, |dropped| dropped.order.len());
		}
		held.insert(account, tie);
	}

	/// A statement of `account` expiring at `expiry` is being admitted: a kept tie at or above
	/// that expiry may no longer be the account's lowest, or whole.
	pub fn admitting(&self, account: &AccountId, expiry: u64) {
		let mut held = self.held.lock();
		if held.get(account).is_some_and(|tie| expiry <= tie.expiry) {
			held.remove(account);
		}
	}
}

#[cfg(test)]
mod tests {
	use super::{Tie, Ties, KEPT_IDS, KEPT_PER_TIE};

	#[test]
	fn the_kept_ties_stay_within_their_bound_and_keep_the_newest() {
		let ties = Ties::default();
		let tie = |expiry| Tie { expiry, order: vec![([0; 32], 0); KEPT_PER_TIE], complete: false };
		let accounts = KEPT_IDS / KEPT_PER_TIE + 3;
		for n in 0..accounts {
			ties.put([n as u8; 32], tie(n as u64));
			let held = ties.held.lock();
			let holding: usize = held.values().map(|tie| tie.order.len()).sum();
			assert!(holding <= KEPT_IDS, "{holding} ids held after {} ties", n + 1);
			assert_eq!(held.len(), (n + 1).min(KEPT_IDS / KEPT_PER_TIE));
		}
		assert_eq!(
			ties.take(&[accounts as u8 - 1; 32]).map(|tie| tie.expiry),
			Some(accounts as u64 - 1)
		);
		// Admitting at or below a tie's expiry drops it; above, keeps it.
		ties.put([0; 32], tie(10));
		ties.admitting(&[0; 32], 11);
		assert!(ties.held.lock().contains_key(&[0; 32]));
		ties.admitting(&[0; 32], 10);
		assert!(!ties.held.lock().contains_key(&[0; 32]));
	}
}
