//! One shard's table: fingerprints in ascending order with gaps, each with its id, and a
//! tag byte a slot, so that a lookup reads few cache lines.

use crate::index::schema::Id;

/// Shards of the set, each a table behind its own lock.
pub(super) const SHARDS: usize = 64;

/// The shard of a fingerprint: every fingerprint of one snapshot bucket is in one shard.
pub(super) fn shard_of(fingerprint: u64) -> usize {
	(fingerprint >> 48) as usize % SHARDS
}

/// Tables grow past this fullness (in 1/100ths)...
const MAX_FULL: usize = 85;
/// ...by an eighth, and shrink to 80% full below half full.
pub(super) const SHRUNK_FULL: usize = 80;
/// Home slots of a table that has never held anything.
pub(super) const MIN_HOMES: usize = 64;

/// One shard: fingerprints in ascending order, each at or after its home slot with no empty
/// slot between (0 marks an empty slot; the fingerprint 0 is counted apart). The last slot
/// is always empty, so a scan ends inside the table. Beside each slot a one-byte tag of
/// what it holds (0 when empty): a lookup of a hash that is not stored reads only tags, a
/// seventeenth of the memory, which the CPU's caches and TLB hold far more of.
#[derive(Clone, Default)]
pub(super) struct Table {
	pub(super) slots: Vec<Slot>,
	/// [`tag_of`] of each slot's fingerprint, 0 for an empty slot.
	pub(super) tags: Vec<u8>,
	/// Home slots: a fingerprint's home is its [`position`]'s fraction of 2^64 times this.
	pub(super) homes: usize,
	/// Non-zero fingerprints held.
	pub(super) len: usize,
	/// The ids of the statements whose fingerprint is 0.
	pub(super) zeros: Vec<Id>,
}

/// A fingerprint and its statement's id, side by side so that a lookup that finds the one
/// has the other in the same cache line (a third array of ids cost a lookup another miss).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Slot {
	/// 0 when empty.
	pub(super) fingerprint: u64,
	pub(super) id: Id,
}

/// The tag of a non-zero fingerprint: the top byte of it times an odd constant, so that
/// every bit of the fingerprint moves it (a hash one bit away from a stored one gets another
/// tag 255 times in 256), and never 0.
pub(super) fn tag_of(fingerprint: u64) -> u8 {
	((fingerprint.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8).max(1)
}

/// Bits of a fingerprint that choose its shard (see [`shard_of`]): bits 48 and up.
const SHARD_BITS: u32 = SHARDS.trailing_zeros();
const _: () = assert!(SHARDS.is_power_of_two());

/// Where a fingerprint falls among its table's home slots: the fingerprint without the bits
/// that chose its shard, which every fingerprint of a table shares. From the whole
/// fingerprint, a table's fingerprints would crowd into 1,024 narrow ranges (one per value
/// of the 10 bits above the shard's), about 64 of them in a run at 4.19M statements, where
/// a lookup scans the whole run. Within a table this keeps their order.
pub(super) fn position(fingerprint: u64) -> u64 {
	let above = 48 + SHARD_BITS;
	(fingerprint >> above << above) | ((fingerprint & ((1 << 48) - 1)) << SHARD_BITS)
}

impl Table {
	pub(super) fn home(&self, fingerprint: u64) -> usize {
		((u128::from(position(fingerprint)) * self.homes as u128) >> 64) as usize
	}

	/// The first slot at or after `fingerprint`'s home that is empty or not below it (with
	/// `after_equal`, not at or below it).
	fn scan(&self, fingerprint: u64, after_equal: bool) -> usize {
		let mut at = self.home(fingerprint);
		while let Some(slot) = self.slots.get(at).map(|slot| slot.fingerprint) {
			if slot == 0 || slot > fingerprint || (slot == fingerprint && !after_equal) {
				break;
			}
			at += 1;
		}
		at
	}

	pub(super) fn contains(&self, fingerprint: u64) -> bool {
		if fingerprint == 0 {
			return !self.zeros.is_empty();
		}
		// Along the run from the home slot, a slot is read only where its tag matches.
		let wanted = tag_of(fingerprint);
		let mut at = self.home(fingerprint);
		while let Some(&found) = self.tags.get(at) {
			if found == 0 {
				return false;
			}
			if found == wanted {
				let slot = self.slots[at].fingerprint;
				if slot >= fingerprint {
					return slot == fingerprint;
				}
			}
			at += 1;
		}
		false
	}

	/// The ids held under `fingerprint`, passed to `each` (usually none or one).
	pub(super) fn ids_of(&self, fingerprint: u64, mut each: impl FnMut(Id)) {
		if fingerprint == 0 {
			return self.zeros.iter().copied().for_each(each);
		}
		let wanted = tag_of(fingerprint);
		let mut at = self.home(fingerprint);
		while let Some(&found) = self.tags.get(at) {
			if found == 0 {
				return;
			}
			if found == wanted {
				let slot = self.slots[at];
				if slot.fingerprint > fingerprint {
					return;
				}
				if slot.fingerprint == fingerprint {
					each(slot.id);
				}
			}
			at += 1;
		}
	}

	pub(super) fn insert(&mut self, fingerprint: u64, id: Id) {
		if fingerprint == 0 {
			self.zeros.push(id);
			return;
		}
		if (self.len + 1) * 100 > self.homes * MAX_FULL {
			self.rebuild((self.homes + self.homes / 8).max(MIN_HOMES));
		}
		let at = self.scan(fingerprint, true);
		// The run from `at` moves up one slot into the first empty one (the last slot is
		// empty, so there is one); the table gets a new empty last slot if that was it.
		let empty =
			at + self.slots[at..].iter().position(|slot| slot.fingerprint == 0).unwrap_or(0);
		if empty + 1 == self.slots.len() {
			self.extend_to(empty + 2);
		}
		self.slots.copy_within(at..empty, at + 1);
		self.tags.copy_within(at..empty, at + 1);
		self.slots[at] = Slot { fingerprint, id };
		self.tags[at] = tag_of(fingerprint);
		self.len += 1;
	}

	/// Forget `fingerprint` held for `id`; nothing if it is not held for `id`.
	pub(super) fn remove(&mut self, fingerprint: u64, id: Id) {
		if fingerprint == 0 {
			if let Some(at) = self.zeros.iter().position(|&held| held == id) {
				self.zeros.swap_remove(at);
			}
			return;
		}
		let mut at = self.scan(fingerprint, false);
		let wanted = Slot { fingerprint, id };
		while self
			.slots
			.get(at)
			.is_some_and(|slot| slot.fingerprint == fingerprint && *slot != wanted)
		{
			at += 1;
		}
		if self.slots.get(at) != Some(&wanted) {
			return;
		}
		// Those after it that are not at their home move down one, up to the first that is
		// (or an empty slot); the slot that frees is emptied.
		let mut end = at + 1;
		while self.slots[end].fingerprint != 0 && self.home(self.slots[end].fingerprint) < end {
			end += 1;
		}
		self.slots.copy_within(at + 1..end, at);
		self.tags.copy_within(at + 1..end, at);
		self.slots[end - 1] = Slot::default();
		self.tags[end - 1] = 0;
		self.len -= 1;
		if self.homes > 4 * MIN_HOMES && self.len * 2 < self.homes {
			self.rebuild(self.len * 100 / SHRUNK_FULL + MIN_HOMES);
		}
	}

	/// Lay the same fingerprints out over `homes` home slots.
	fn rebuild(&mut self, homes: usize) {
		// The old tags go before the new table is allocated.
		let Table { slots, zeros, .. } = std::mem::take(self);
		let mut table = Table::with_homes(homes, zeros);
		let mut next = 0;
		for slot in slots.into_iter().filter(|slot| slot.fingerprint != 0) {
			table.push_largest(slot.fingerprint, slot.id, &mut next);
		}
		table.finish();
		*self = table;
	}

	pub(super) fn with_homes(homes: usize, zeros: Vec<Id>) -> Table {
		// Room for a tail past the last home slot; allocated zeroed (fresh pages need no
		// clearing), then cut to the slots in use.
		let room = homes + homes / 64 + 8;
		let (mut slots, mut tags) = (vec![Slot::default(); room], vec![0u8; room]);
		slots.truncate(homes + 1);
		tags.truncate(homes + 1);
		Table { slots, tags, homes, len: 0, zeros }
	}

	/// Add a non-zero fingerprint not below any held (how a table is filled in order);
	/// `next` is the slot after the last one filled (0 to start).
	pub(super) fn push_largest(&mut self, fingerprint: u64, id: Id, next: &mut usize) {
		let at = self.home(fingerprint).max(*next);
		if at + 1 >= self.slots.len() {
			self.extend_to(at + 2);
		}
		self.slots[at] = Slot { fingerprint, id };
		self.tags[at] = tag_of(fingerprint);
		self.len += 1;
		*next = at + 1;
	}

	/// Empty slots (and their tags) up to `len`, with room for a few more: reserved exactly,
	/// since a doubled table would be mostly empty.
	fn extend_to(&mut self, len: usize) {
		self.slots.reserve_exact(len - self.slots.len() + 8);
		self.slots.resize(len, Slot::default());
		self.tags.reserve_exact(len - self.tags.len() + 8);
		self.tags.resize(len, 0);
	}

	/// After filling in order: grow if it came out fuller than tables are kept.
	pub(super) fn finish(&mut self) {
		if self.len * 100 > self.homes * MAX_FULL {
			self.rebuild(self.len * 100 / SHRUNK_FULL + MIN_HOMES);
		}
	}

	/// The fingerprints whose top 16 bits are `bucket` (all in this shard), in order, each
	/// with its id.
	pub(super) fn bucket(&self, bucket: u64, out: &mut Vec<(u64, Id)>) {
		out.clear();
		let first = bucket << 48;
		if bucket == 0 {
			out.extend(self.zeros.iter().map(|&id| (0, id)));
		}
		let last = first | ((1 << 48) - 1);
		let last_home = self.home(last);
		let mut at = self.home(first);
		while let Some(&Slot { fingerprint: slot, id }) = self.slots.get(at) {
			if slot > last || (slot == 0 && at > last_home) {
				break;
			}
			if slot >= first && slot != 0 {
				out.push((slot, id));
			}
			at += 1;
		}
	}
}

/// The ids [`Membership::ids`] found: the first inline, any more (shared fingerprints) apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ids {
	pub(super) first: Option<Id>,
	pub(super) more: Vec<Id>,
}

impl Ids {
	pub(super) fn push(&mut self, id: Id) {
		match self.first {
			None => self.first = Some(id),
			Some(_) => self.more.push(id),
		}
	}

	/// The ids found, in table order.
	pub fn iter(&self) -> impl Iterator<Item = Id> + '_ {
		self.first.into_iter().chain(self.more.iter().copied())
	}
}
