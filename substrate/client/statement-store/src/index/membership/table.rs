//! One shard's table: buckets of one cache line, each entry the part of a fingerprint its
//! bucket does not already say and its id's distance from the table's smallest, packed into
//! as few bits as those need.
//!
//! A fingerprint keeps [`KEPT`] bits of its [`position`] (58 of the hash's first 64 bits,
//! with the 6 that chose the shard). Its home bucket is that value's fraction of the table's
//! home buckets, so the home says the value's top `log2(homes)` bits and an entry stores only
//! the rest (its field): at 4.19M statements a table has ~9,100 homes and an entry stores 39
//! bits of fingerprint, 22 of id and 2 of state, 63 bits, eight to a 64-byte bucket.
//!
//! An entry sits in its home bucket or, when that is full, in a second bucket up to
//! [`WINDOW`] buckets after it, chosen by its field (cuckoo hashing: a full pair makes room
//! by moving an entry to its other bucket). The state bits say which, so every entry's home,
//! and from it the whole kept fingerprint, can be recovered to lay the table out again. Each
//! home keeps a count and a small filter of its entries held in their second bucket
//! ([`Away`]): a lookup reads the home bucket, and the second only where the filter says an
//! entry there could be the one wanted. Tables are kept 84-95% full; one read back from a
//! snapshot is 90% full.

use crate::index::schema::Id;

/// Shards of the set, each a table behind its own lock.
pub(super) const SHARDS: usize = 64;

/// The shard of a fingerprint: every fingerprint of one snapshot bucket is in one shard.
pub(super) fn shard_of(fingerprint: u64) -> usize {
	(fingerprint >> 48) as usize % SHARDS
}

/// Bits of a fingerprint's [`position`] a table keeps: with the shard's 6, 58 bits of the
/// hash. Two hashes whose first 64 bits differ only in bits 0-5 are one fingerprint.
pub(super) const KEPT: u32 = 52;

/// How far after its home an entry's second bucket can be: near enough to share the home's
/// memory page most of the time, far enough that full neighbourhoods are rare (tried: a
/// window of 16 made a table 93% full fail an insertion in 1 of 200; 64 about never).
const WINDOW: usize = 64;

/// Tables grow past this fullness (in 1/100ths of their home buckets' slots)...
const MAX_FULL: usize = 95;
/// ...by an eighth, and shrink to this fullness below [`MIN_FULL`]; a table read back from a
/// snapshot is this full.
pub(super) const SHRUNK_FULL: usize = 90;
/// See [`SHRUNK_FULL`].
const MIN_FULL: usize = 45;
/// Home buckets of the smallest table.
const MIN_HOMES: usize = 4;
/// Entries moved to their other bucket before an insertion gives up and puts the entry it
/// holds in the table's stash.
const MAX_KICKS: usize = 128;

/// State of a slot that holds an entry in its home bucket.
const HOME: u128 = 1;
/// State of a slot that holds an entry in its second bucket (0: an empty slot).
const SECOND: u128 = 2;

/// The 52 bits of `fingerprint` a table keeps: its top 10 bits and bits 6-47 (the bits
/// 48-53 chose the shard), in an order that keeps the fingerprints' order within a shard.
pub(super) fn kept(fingerprint: u64) -> u64 {
	((fingerprint >> 54) << 42) | ((fingerprint >> 6) & ((1 << 42) - 1))
}

/// The fingerprint of shard `shard` whose [`kept`] bits are `kept`, with bits 0-5 zero.
pub(super) fn fingerprint_of(shard: usize, kept: u64) -> u64 {
	((kept >> 42) << 54) | ((shard as u64 % SHARDS as u64) << 48) | ((kept & ((1 << 42) - 1)) << 6)
}

/// What a fingerprint keeps: the fingerprint with bits 0-5 cleared.
#[cfg(test)]
pub(super) fn truncated(fingerprint: u64) -> u64 {
	fingerprint & !63
}

/// One cache line of entries.
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
pub(super) struct Bucket([u64; 8]);

/// How a table packs an entry: state, then field, then the id's offset from the table's
/// base, from the top bit down, `entry` bits in all, `slots` to a bucket. Entries of 57 to
/// 64 bits (those of any table of 1M statements or more, until ids span 2^24 or so) fit eight
/// to a bucket either way, so each takes a word of its own: a lookup compares words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Layout {
	field: u32,
	id: u32,
	entry: u32,
	slots: usize,
	/// One entry a word.
	aligned: bool,
}

impl Layout {
	fn new(homes: usize, id: u32) -> Layout {
		let field = KEPT - homes.max(1).ilog2().min(KEPT - 16);
		let entry = 2 + field + id;
		let slots = (512 / entry) as usize;
		Layout { field, id, entry, slots, aligned: slots == 8 }
	}

	fn id_mask(&self) -> u128 {
		(1u128 << self.id) - 1
	}

	fn field_mask(&self) -> u64 {
		(1u64 << self.field) - 1
	}

	/// An entry's bits above its id: state and field.
	fn key(&self, state: u128, field: u64) -> u128 {
		(state << self.field) | u128::from(field)
	}
}

/// Bits an id offset up to `largest` needs.
fn bits(largest: u64) -> u32 {
	64 - largest.leading_zeros()
}

/// The second bucket of an entry with this home and field.
fn second(home: usize, field: u64) -> usize {
	home + 1 + (field.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize
}

/// What a home bucket knows of its entries held in their second bucket: how many (the low
/// byte, at most 255: an entry that would make more stays home or moves on), and a bit for
/// each of their fields' [`away_bit`] (the high byte), so that a lookup reads the second
/// bucket only when an entry there could be the one it wants: for about 8% of misses at 90%
/// full, where the count alone sends 46% there. A bit stays set when its entry leaves until
/// the count is back to 0 or the table is laid out again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Away(u16);

impl Away {
	fn count(self) -> u16 {
		self.0 & 0xff
	}

	fn add(&mut self, field: u64) {
		self.0 = (self.0 + 1) | away_bit(field);
	}

	fn take(&mut self) {
		self.0 = if self.count() == 1 { 0 } else { self.0 - 1 };
	}

	fn may_hold(self, field: u64) -> bool {
		self.0 & away_bit(field) != 0
	}
}

/// The bit of [`Away`]'s high byte for an entry's field (from other bits of it than
/// [`second`] takes).
fn away_bit(field: u64) -> u16 {
	1 << (8 + (field.wrapping_mul(0xd6e8_feb8_6659_fd93) >> 61))
}

/// One shard of the set.
#[derive(Clone, Default)]
pub(super) struct Table {
	/// Home buckets, then [`WINDOW`] more that only hold entries in their second bucket.
	buckets: Vec<Bucket>,
	/// Per home bucket, its entries held in their second bucket.
	seconds: Vec<Away>,
	homes: usize,
	layout: Layout,
	/// The smallest id an entry can hold: entries store their id less this.
	base: Id,
	/// Entries no bucket had room for (see [`Table::place_entry`]): their kept bits and
	/// ids, in order. Empty but for one in thousands of tables filled 95% full, or where more than 16
	/// entries share all 58 bits.
	stash: Vec<(u64, Id)>,
	/// Entries held, the stash's too.
	pub(super) len: usize,
	/// For the choice of an entry to move (xorshift).
	random: u64,
}

impl Table {
	/// An empty table of `homes` home buckets for ids from `base` to `base + 2^id_bits - 1`.
	pub(super) fn new(homes: usize, base: Id, id_bits: u32) -> Table {
		let homes = homes.max(MIN_HOMES);
		Table {
			buckets: vec![Bucket::default(); homes + WINDOW],
			seconds: vec![Away::default(); homes],
			homes,
			layout: Layout::new(homes, id_bits),
			base,
			stash: Vec::new(),
			len: 0,
			random: 0x2545_f491_4f6c_dd1d,
		}
	}

	/// An empty table sized to hold `count` entries [`SHRUNK_FULL`] full, for ids from
	/// `smallest` to below `next_id` (read back from a snapshot, which states all three).
	pub(super) fn sized(count: usize, smallest: Id, next_id: Id) -> Table {
		let smallest = smallest.min(next_id.saturating_sub(1));
		let id_bits = bits(next_id.saturating_sub(1) - smallest);
		Table::new(homes_for(count, id_bits, SHRUNK_FULL), smallest, id_bits)
	}

	/// Slots in home buckets.
	fn capacity(&self) -> usize {
		self.homes * self.layout.slots
	}

	fn read(&self, bucket: usize, slot: usize) -> u128 {
		let words = &self.buckets[bucket].0;
		if self.layout.aligned {
			return u128::from(words[slot]);
		}
		let at = slot * self.layout.entry as usize;
		let (word, shift) = (at / 64, at % 64);
		let mut value = u128::from(words[word] >> shift);
		let mut have = 64 - shift as u32;
		let mut next = word + 1;
		while have < self.layout.entry {
			value |= u128::from(words[next]) << have;
			have += 64;
			next += 1;
		}
		value & ((1u128 << self.layout.entry) - 1)
	}

	fn write(&mut self, bucket: usize, slot: usize, value: u128) {
		let entry = self.layout.entry;
		let words = &mut self.buckets[bucket].0;
		if self.layout.aligned {
			words[slot] = value as u64;
			return;
		}
		let at = slot * entry as usize;
		let (mut word, mut shift) = (at / 64, (at % 64) as u32);
		let mut done = 0;
		while done < entry {
			let take = (64 - shift).min(entry - done);
			let mask = if take == 64 { u64::MAX } else { ((1u64 << take) - 1) << shift };
			let part = ((value >> done) as u64) << shift;
			words[word] = (words[word] & !mask) | (part & mask);
			done += take;
			word += 1;
			shift = 0;
		}
	}

	/// Home bucket and field of a fingerprint's kept bits.
	fn place(&self, kept: u64) -> (usize, u64) {
		let home = ((u128::from(kept) * self.homes as u128) >> KEPT) as usize;
		(home, kept & self.layout.field_mask())
	}

	/// The kept bits of the entry with this home and field: the one value whose home this
	/// is (an interval at most 2^field wide) with these low bits.
	fn kept_of(&self, home: usize, field: u64) -> u64 {
		let homes = self.homes as u128;
		let low = ((home as u128) << KEPT).div_ceil(homes);
		let low = low as u64;
		low + (field.wrapping_sub(low) & self.layout.field_mask())
	}

	/// The home of the entry `value` held in `bucket`, its field and its id.
	fn decode(&self, bucket: usize, value: u128) -> (usize, u64, Id) {
		let layout = &self.layout;
		let field = ((value >> layout.id) as u64) & layout.field_mask();
		let state = value >> (layout.id + layout.field);
		let home = if state == HOME { bucket } else { bucket - (second(0, field)) };
		(home, field, self.base + (value & layout.id_mask()) as Id)
	}

	/// Calls `each` with the id of every entry in `bucket` whose key (state and field) is
	/// `key`, until it returns false.
	fn matching(&self, bucket: usize, key: u128, mut each: impl FnMut(Id) -> bool) {
		if self.layout.aligned {
			let (key, shift) = (key as u64, self.layout.id);
			let mask = self.layout.id_mask() as u64;
			for &word in &self.buckets[bucket].0 {
				if word >> shift == key && !each(self.base + (word & mask)) {
					return;
				}
			}
			return;
		}
		for slot in 0..self.layout.slots {
			let value = self.read(bucket, slot);
			if value >> self.layout.id == key
				&& !each(self.base + (value & self.layout.id_mask()) as Id)
			{
				return;
			}
		}
	}

	pub(super) fn contains(&self, fingerprint: u64) -> bool {
		let mut found = false;
		self.ids_while(fingerprint, |_| {
			found = true;
			false
		});
		found
	}

	/// Whether `fingerprint` is held for `id`.
	pub(super) fn holds(&self, fingerprint: u64, id: Id) -> bool {
		let mut held = false;
		self.ids_while(fingerprint, |found| {
			held = found == id;
			!held
		});
		held
	}

	/// The ids held under `fingerprint`, passed to `each` (usually none or one).
	pub(super) fn ids_of(&self, fingerprint: u64, mut each: impl FnMut(Id)) {
		self.ids_while(fingerprint, |id| {
			each(id);
			true
		})
	}

	fn ids_while(&self, fingerprint: u64, mut each: impl FnMut(Id) -> bool) {
		if self.len == 0 {
			return;
		}
		let (home, field) = self.place(kept(fingerprint));
		let mut going = true;
		self.matching(home, self.layout.key(HOME, field), |id| {
			going = each(id);
			going
		});
		if going && self.seconds[home].may_hold(field) {
			self.matching(second(home, field), self.layout.key(SECOND, field), |id| {
				going = each(id);
				going
			});
		}
		if going && !self.stash.is_empty() {
			let kept = kept(fingerprint);
			let from = self.stash.partition_point(|&(held, _)| held < kept);
			for &(_, id) in self.stash[from..].iter().take_while(|&&(held, _)| held == kept) {
				if !each(id) {
					return;
				}
			}
		}
	}

	/// The slot of `bucket` holding exactly `value`.
	fn slot_of(&self, bucket: usize, value: u128) -> Option<usize> {
		(0..self.layout.slots).find(|&slot| self.read(bucket, slot) == value)
	}

	pub(super) fn insert(&mut self, fingerprint: u64, id: Id) {
		let kept = kept(fingerprint);
		let fits = self.homes > 0
			&& id >= self.base
			&& u128::from(id - self.base) <= self.layout.id_mask();
		let full = (self.len + 1) * 100 > self.capacity() * MAX_FULL;
		if !fits || full {
			let homes = if full { self.homes + self.homes / 8 + 1 } else { self.homes };
			return self.rebuild(homes, Some((kept, id)));
		}
		self.len += 1;
		if let Err(homeless) = self.place_entry(kept, id) {
			let at = self.stash.partition_point(|&held| held < homeless);
			self.stash.insert(at, homeless);
		}
	}

	/// Put an entry that fits the layout in one of its buckets, moving others to their
	/// other bucket as needed; `Err` with the entry left without a place (perhaps another
	/// one) if [`MAX_KICKS`] moves did not make room.
	fn place_entry(&mut self, mut kept: u64, mut id: Id) -> Result<(), (u64, Id)> {
		for kick in 0..MAX_KICKS {
			let (home, field) = self.place(kept);
			let offset = u128::from(id - self.base);
			let at_home = (self.layout.key(HOME, field) << self.layout.id) | offset;
			let away = (self.layout.key(SECOND, field) << self.layout.id) | offset;
			let other = second(home, field);
			if let Some(slot) = self.slot_of(home, 0) {
				self.write(home, slot, at_home);
				return Ok(());
			}
			let room_away = self.seconds[home].count() < 0xff;
			if room_away {
				if let Some(slot) = self.slot_of(other, 0) {
					self.write(other, slot, away);
					self.seconds[home].add(field);
					return Ok(());
				}
			}
			// Both full: take a slot of one of them and move what it held along, unless
			// all they hold is this entry's fingerprint.
			if kick == 0 && self.crowded(kept) {
				return Err((kept, id));
			}
			self.random ^= self.random << 13;
			self.random ^= self.random >> 7;
			self.random ^= self.random << 17;
			let (bucket, value) =
				if room_away && self.random & 1 == 1 { (other, away) } else { (home, at_home) };
			let slot = (self.random >> 1) as usize % self.layout.slots;
			let moved = self.read(bucket, slot);
			let (moved_home, moved_field, moved_id) = self.decode(bucket, moved);
			if moved_home != bucket {
				self.seconds[moved_home].take();
			}
			if bucket != home {
				self.seconds[home].add(field);
			}
			self.write(bucket, slot, value);
			kept = self.kept_of(moved_home, moved_field);
			id = moved_id;
		}
		Err((kept, id))
	}

	/// Whether both buckets of these kept bits are full of entries with the same bits, where
	/// moving entries cannot make room.
	fn crowded(&self, kept: u64) -> bool {
		let (home, field) = self.place(kept);
		let full_of = |bucket: usize, key: u128| {
			(0..self.layout.slots).all(|slot| self.read(bucket, slot) >> self.layout.id == key)
		};
		full_of(home, self.layout.key(HOME, field))
			&& full_of(second(home, field), self.layout.key(SECOND, field))
	}

	/// Forget `fingerprint` held for `id`; nothing if it is not held for `id`.
	pub(super) fn remove(&mut self, fingerprint: u64, id: Id) {
		if self.len == 0 || id < self.base || u128::from(id - self.base) > self.layout.id_mask() {
			return;
		}
		let (home, field) = self.place(kept(fingerprint));
		let offset = u128::from(id - self.base);
		let at_home = (self.layout.key(HOME, field) << self.layout.id) | offset;
		if let Some(slot) = self.slot_of(home, at_home) {
			self.write(home, slot, 0);
		} else {
			let other = second(home, field);
			let away = (self.layout.key(SECOND, field) << self.layout.id) | offset;
			match self.slot_of(other, away) {
				Some(slot) if self.seconds[home].count() > 0 => {
					self.write(other, slot, 0);
					self.seconds[home].take();
				}
				_ => {
					let Ok(at) = self.stash.binary_search(&(kept(fingerprint), id)) else {
						return;
					};
					self.stash.remove(at);
				}
			}
		}
		self.len -= 1;
		if self.homes > MIN_HOMES && self.len * 100 < self.capacity() * MIN_FULL {
			let id_bits = self.layout.id;
			self.rebuild(homes_for(self.len, id_bits, SHRUNK_FULL), None);
		}
	}

	/// Every entry: its kept bits and its id.
	pub(super) fn entries(&self) -> impl Iterator<Item = (u64, Id)> + '_ {
		let held = (0..self.buckets.len()).flat_map(move |bucket| {
			(0..self.layout.slots).filter_map(move |slot| {
				let value = self.read(bucket, slot);
				(value != 0).then(|| {
					let (home, field, id) = self.decode(bucket, value);
					(self.kept_of(home, field), id)
				})
			})
		});
		held.chain(self.stash.iter().copied())
	}

	/// Lay the same entries (and `extra`) out over `homes` home buckets, with the base and
	/// id width their ids need.
	fn rebuild(&mut self, homes: usize, extra: Option<(u64, Id)>) {
		let (base, id_bits) = span(self.entries().chain(extra))
			.map_or((0, 1), |(smallest, largest)| (smallest, bits(largest - smallest)));
		let mut table = Table::new(homes, base, id_bits);
		table.random = self.random;
		for (kept, id) in self.entries().chain(extra) {
			table.len += 1;
			if let Err(homeless) = table.place_entry(kept, id) {
				table.stash.push(homeless);
			}
		}
		table.stash.sort_unstable();
		*self = table;
	}

	/// After filling a table sized for a range of ids: if the ids it holds span so much less
	/// that a bucket would hold more of them, lay it out again for their span.
	pub(super) fn compact(&mut self) {
		let Some((smallest, largest)) = span(self.entries()) else { return };
		if Layout::new(self.homes, bits(largest - smallest)).slots > self.layout.slots {
			self.rebuild(self.homes, None);
		}
	}

	/// The smallest id held, if any.
	pub(super) fn smallest_id(&self) -> Option<Id> {
		let offsets = (0..self.buckets.len()).flat_map(|bucket| {
			(0..self.layout.slots)
				.map(move |slot| self.read(bucket, slot))
				.filter(|&value| value != 0)
				.map(|value| (value & self.layout.id_mask()) as Id)
		});
		let held = offsets.min().map(|offset| self.base + offset);
		held.into_iter().chain(self.stash.iter().map(|&(_, id)| id)).min()
	}

	/// Heap bytes held.
	#[cfg(test)]
	pub(super) fn heap_bytes(&self) -> usize {
		self.buckets.capacity() * std::mem::size_of::<Bucket>()
			+ self.seconds.capacity() * std::mem::size_of::<Away>()
			+ self.stash.capacity() * std::mem::size_of::<(u64, Id)>()
	}

	/// Whether a lookup of `fingerprint` reads its second bucket (after its home bucket).
	#[cfg(test)]
	pub(super) fn reads_second(&self, fingerprint: u64) -> bool {
		let (home, field) = self.place(kept(fingerprint));
		self.seconds[home].may_hold(field)
	}

	/// Home buckets with entries in their second bucket, and all home buckets.
	#[cfg(test)]
	pub(super) fn homes_with_entries_away(&self) -> (usize, usize) {
		(self.seconds.iter().filter(|away| away.count() > 0).count(), self.homes)
	}

	/// Entries in the stash.
	#[cfg(test)]
	pub(super) fn stashed(&self) -> usize {
		self.stash.len()
	}

	/// Bits an entry takes, and entries a bucket holds.
	#[cfg(test)]
	pub(super) fn entry_bits(&self) -> (u32, usize) {
		(self.layout.entry, self.layout.slots)
	}

	/// Checks every invariant: each entry in its home or second bucket, the counts of
	/// entries away from home, the length.
	#[cfg(test)]
	pub(super) fn check(&self) {
		let mut seconds = vec![0u16; self.homes];
		let mut len = 0;
		for bucket in 0..self.buckets.len() {
			for slot in 0..self.layout.slots {
				let value = self.read(bucket, slot);
				if value == 0 {
					continue;
				}
				len += 1;
				let (home, field, _) = self.decode(bucket, value);
				assert!(home < self.homes, "home {home} of {}", self.homes);
				assert_eq!(self.place(self.kept_of(home, field)), (home, field));
				if home != bucket {
					assert_eq!(second(home, field), bucket);
					seconds[home] += 1;
					assert!(self.seconds[home].may_hold(field), "an away entry's bit is set");
				}
			}
		}
		assert_eq!(len + self.stash.len(), self.len);
		let counts: Vec<u16> = self.seconds.iter().map(|away| away.count()).collect();
		assert!(seconds == counts, "counts of entries away from home");
		assert!(self.seconds.iter().all(|away| away.count() > 0 || away.0 == 0));
	}
}

/// The smallest and largest id of `entries`, `None` if there are none.
fn span(entries: impl Iterator<Item = (u64, Id)>) -> Option<(Id, Id)> {
	entries.fold(None, |span, (_, id)| {
		Some(
			span.map_or((id, id), |(smallest, largest): (Id, Id)| {
				(smallest.min(id), largest.max(id))
			}),
		)
	})
}

/// Home buckets for `count` entries `full` percent full, with ids of `id_bits`.
fn homes_for(count: usize, id_bits: u32, full: usize) -> usize {
	let mut homes = (count * 100 / (8 * full)).max(MIN_HOMES);
	// The layout (slots a bucket) depends on the number of homes; twice is enough.
	for _ in 0..2 {
		let slots = Layout::new(homes, id_bits).slots;
		homes = (count * 100).div_ceil(slots * full).max(MIN_HOMES);
	}
	homes
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
