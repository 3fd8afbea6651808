//! Which hashes the store holds, answered from memory for every gossiped statement.
//!
//! Keeps a 64-bit fingerprint of each hash (its first 8 bytes, big-endian) and the statement's
//! id beside it. A hash that is not stored is reported as stored only if it shares its
//! fingerprint with a stored one: about n / 2^64, 2e-13 at 4M statements. The set is a
//! multiset, so removing one of two hashes that share a fingerprint does not hide the other.
//! The ids make a lookup by hash one read: the set gives the id, the body (which holds its
//! hash, see `schema::body_value`) confirms it.
//!
//! Layout, for few memory accesses a lookup: 64 shards, each behind its own lock, each a
//! table of fingerprints in ascending order with gaps ("ordered linear probing"), and beside
//! it a byte per slot, a tag of what the slot holds. A fingerprint's home slot is its
//! position (the fingerprint without the bits its table's fingerprints share) scaled to the
//! table's size; it sits at its home or a little after it, with no gap between, so a lookup
//! reads the tags from the home slot to the next gap (usually a few bytes of one cache line)
//! and a slot only where the tag matches: a hash that is not stored usually costs one read
//! of the tags, a seventeenth of the memory and so far more often in the CPU's caches and
//! TLB; a stored one costs that and its slot. (The set was 65,536 sorted buckets before: a
//! bucket header, then the bucket, then a binary search in it, each a cache miss once the
//! set no longer fits the caches, which is most of the time in a node streaming bodies.)
//! Each slot holds the statement's id beside its fingerprint, so finding the one reads the
//! other in the same cache line. Tables are kept between 75% and 85% full, so the set takes
//! about 21 bytes a statement, 85 MiB at 4.19M.
//!
//! The set is written to a snapshot file when the store closes and every so often while it
//! runs (see `Store::maintain`), and read back when it opens, so that reopening does not walk
//! the admission journal: after a clean stop the snapshot is exact; after a crash the store
//! adds what the journal admitted and takes out what the removal log removed since it. The
//! file lists 65,536 buckets (by the fingerprint's top 16 bits), each its count and then its
//! fingerprints' low 48 bits in order, each followed by its id in as few bytes as the largest
//! id needs (the header says how many). Loading it fills the tables on up to four threads while
//! the file is read and checked.

use crate::index::schema::{fingerprint, Id};
use parking_lot::RwLock;
use statement_primitives::Hash;
use std::{
	hash::Hasher,
	io::{BufReader, BufWriter, Read, Write},
	path::Path,
};

const SHARDS: usize = 64;
/// Buckets in a snapshot file.
const BUCKETS: usize = 1 << 16;

/// Tables grow past this fullness (in 1/100ths)...
const MAX_FULL: usize = 85;
/// ...by an eighth, and shrink to 80% full below half full.
const SHRUNK_FULL: usize = 80;
/// Home slots of a table that has never held anything.
const MIN_HOMES: usize = 64;

/// What the newest membership snapshot covers, to decide when the next one is due.
pub struct SnapshotMark {
	/// The journal position it covers.
	pub next_id: Id,
	/// The removal-log position it covers.
	pub removals: u64,
	/// When it was written (or the store opened).
	pub at: std::time::Instant,
	/// Removal-log segments below this one are deleted.
	pub trimmed_below: u64,
}

/// What a snapshot was taken of: it is used only if the database still says the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotTag {
	/// Statements stored.
	pub count: u64,
	/// The id the next admitted statement gets.
	pub next_id: u64,
	/// Hash of the newest journal entry (zero when empty).
	pub last_hash: Hash,
	/// Position of the removal log: removals before it are reflected in the set.
	pub removals: u64,
}

/// Version 2 added [`SnapshotTag::removals`], version 3 the ids; an older file is not read
/// (the store reads every body once instead).
const MAGIC: &[u8; 8] = b"SSMEMB03";

/// Sharded multiset of hash fingerprints, each with its statement's id.
pub struct Membership {
	shards: Vec<RwLock<Table>>,
}

impl Default for Membership {
	fn default() -> Self {
		Membership { shards: (0..SHARDS).map(|_| RwLock::new(Table::default())).collect() }
	}
}

/// The shard of a fingerprint: every fingerprint of one snapshot bucket is in one shard.
fn shard_of(fingerprint: u64) -> usize {
	(fingerprint >> 48) as usize % SHARDS
}

/// One shard: fingerprints in ascending order, each at or after its home slot with no empty
/// slot between (0 marks an empty slot; the fingerprint 0 is counted apart). The last slot
/// is always empty, so a scan ends inside the table. Beside each slot a one-byte tag of
/// what it holds (0 when empty): a lookup of a hash that is not stored reads only tags, a
/// seventeenth of the memory, which the CPU's caches and TLB hold far more of.
#[derive(Clone, Default)]
struct Table {
	slots: Vec<Slot>,
	/// [`tag_of`] of each slot's fingerprint, 0 for an empty slot.
	tags: Vec<u8>,
	/// Home slots: a fingerprint's home is its [`position`]'s fraction of 2^64 times this.
	homes: usize,
	/// Non-zero fingerprints held.
	len: usize,
	/// The ids of the statements whose fingerprint is 0.
	zeros: Vec<Id>,
}

/// A fingerprint and its statement's id, side by side so that a lookup that finds the one
/// has the other in the same cache line (a third array of ids cost a lookup another miss).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Slot {
	/// 0 when empty.
	fingerprint: u64,
	id: Id,
}

/// The tag of a non-zero fingerprint: the top byte of it times an odd constant, so that
/// every bit of the fingerprint moves it (a hash one bit away from a stored one gets another
/// tag 255 times in 256), and never 0.
fn tag_of(fingerprint: u64) -> u8 {
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
fn position(fingerprint: u64) -> u64 {
	let above = 48 + SHARD_BITS;
	(fingerprint >> above << above) | ((fingerprint & ((1 << 48) - 1)) << SHARD_BITS)
}

impl Table {
	fn home(&self, fingerprint: u64) -> usize {
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

	fn contains(&self, fingerprint: u64) -> bool {
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
	fn ids_of(&self, fingerprint: u64, mut each: impl FnMut(Id)) {
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

	fn insert(&mut self, fingerprint: u64, id: Id) {
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
	fn remove(&mut self, fingerprint: u64, id: Id) {
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

	fn with_homes(homes: usize, zeros: Vec<Id>) -> Table {
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
	fn push_largest(&mut self, fingerprint: u64, id: Id, next: &mut usize) {
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
	fn finish(&mut self) {
		if self.len * 100 > self.homes * MAX_FULL {
			self.rebuild(self.len * 100 / SHRUNK_FULL + MIN_HOMES);
		}
	}

	/// The fingerprints whose top 16 bits are `bucket` (all in this shard), in order, each
	/// with its id.
	fn bucket(&self, bucket: u64, out: &mut Vec<(u64, Id)>) {
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

impl Membership {
	/// Whether `hash` is (almost certainly) stored.
	pub fn contains(&self, hash: &Hash) -> bool {
		self.contains_fingerprint(fingerprint(hash))
	}

	/// Whether a hash with this fingerprint (its first 8 bytes, big-endian) is stored.
	pub fn contains_fingerprint(&self, fingerprint: u64) -> bool {
		self.shards[shard_of(fingerprint)].read().contains(fingerprint)
	}

	/// The ids of the stored statements whose hash has this hash's fingerprint: usually
	/// none or one; two or more only where hashes share their first 8 bytes.
	pub fn ids(&self, hash: &Hash) -> Ids {
		let fingerprint = fingerprint(hash);
		let mut ids = Ids::default();
		self.shards[shard_of(fingerprint)].read().ids_of(fingerprint, |id| ids.push(id));
		ids
	}

	/// Whether statement `id` is held under this fingerprint.
	pub fn holds(&self, fingerprint: u64, id: Id) -> bool {
		let mut held = false;
		self.shards[shard_of(fingerprint)].read().ids_of(fingerprint, |found| held |= found == id);
		held
	}

	/// Record a stored hash and its statement's id.
	pub fn insert(&self, hash: &Hash, id: Id) {
		let fingerprint = fingerprint(hash);
		self.shards[shard_of(fingerprint)].write().insert(fingerprint, id);
	}

	/// Forget stored statement `id` with this hash.
	pub fn remove(&self, hash: &Hash, id: Id) {
		self.remove_fingerprint(hash[..8].try_into().expect("8 of 32 bytes"), id);
	}

	/// Forget stored statement `id` known only by its hash's fingerprint (the removal log
	/// keeps those).
	pub fn remove_fingerprint(&self, fingerprint: [u8; 8], id: Id) {
		let fingerprint = u64::from_be_bytes(fingerprint);
		self.shards[shard_of(fingerprint)].write().remove(fingerprint, id);
	}

	/// A copy of the set as it is now (about 21 bytes a statement).
	pub fn copy(&self) -> Membership {
		Membership {
			shards: self.shards.iter().map(|shard| RwLock::new(shard.read().clone())).collect(),
		}
	}

	/// Fingerprints held.
	pub fn len(&self) -> u64 {
		self.shards
			.iter()
			.map(|shard| {
				let shard = shard.read();
				(shard.len + shard.zeros.len()) as u64
			})
			.sum()
	}

	/// Heap bytes held by the set.
	#[cfg(test)]
	pub fn heap_bytes(&self) -> usize {
		self.shards
			.iter()
			.map(|shard| {
				let shard = shard.read();
				shard.slots.capacity() * 16 + shard.tags.capacity()
			})
			.sum()
	}

	/// Write the set to `path` (through a temporary file and a rename, so a crash leaves
	/// either the old snapshot or the new one), tagged with what the database says now.
	pub fn save(&self, path: &Path, tag: &SnapshotTag) -> std::io::Result<()> {
		let temporary = path.with_extension("tmp");
		let file = std::fs::File::create(&temporary)?;
		let mut out = ChecksumWriter::new(BufWriter::with_capacity(1 << 20, file));
		out.write_all(MAGIC)?;
		write_tag(&mut out, tag)?;
		let id_bytes = id_bytes(tag.next_id);
		out.write_all(&[id_bytes as u8])?;
		let mut entries = Vec::new();
		for bucket in 0..BUCKETS {
			self.shards[bucket % SHARDS].read().bucket(bucket as u64, &mut entries);
			out.write_all(&(entries.len() as u32).to_le_bytes())?;
			for (fingerprint, id) in &entries {
				out.write_all(&fingerprint.to_be_bytes()[2..])?;
				// Every id is below the tag's `next_id`; one that is not would lose its top
				// bytes, so no snapshot is written (the next open reads the bodies instead).
				if id_bytes < 8 && *id >> (8 * id_bytes) != 0 {
					return Err(std::io::Error::new(
						std::io::ErrorKind::InvalidData,
						format!("id {id} is not below the snapshot's next id {}", tag.next_id),
					));
				}
				out.write_all(&id.to_le_bytes()[..id_bytes])?;
			}
		}
		let checksum = out.hasher.finish();
		let mut inner = out.inner;
		inner.write_all(&checksum.to_le_bytes())?;
		let file = inner.into_inner().map_err(|err| err.into_error())?;
		file.sync_all()?;
		std::fs::rename(&temporary, path)
	}

	/// Read a snapshot written by [`Membership::save`], with its tag, if it exists, is intact
	/// and its tag passes `usable`; `Ok(None)` otherwise (the caller then rebuilds the set).
	pub fn load(
		path: &Path,
		usable: impl FnOnce(&SnapshotTag) -> bool,
	) -> std::io::Result<Option<(Membership, SnapshotTag)>> {
		let fillers =
			std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, LOAD_THREADS);
		Membership::load_on(path, usable, fillers)
	}

	/// [`Membership::load`] with the tables filled on `fillers` threads.
	fn load_on(
		path: &Path,
		usable: impl FnOnce(&SnapshotTag) -> bool,
		fillers: usize,
	) -> std::io::Result<Option<(Membership, SnapshotTag)>> {
		let file = match std::fs::File::open(path) {
			Ok(file) => file,
			Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
			Err(err) => return Err(err),
		};
		let mut input = ChecksumReader::new(BufReader::with_capacity(1 << 20, file));
		let mut magic = [0u8; 8];
		if input.read_exact(&mut magic).is_err() || &magic != MAGIC {
			return Ok(None);
		}
		let expected = match read_tag(&mut input) {
			Ok(tag) if usable(&tag) => tag,
			_ => return Ok(None),
		};
		let mut width = [0u8; 1];
		if input.read_exact(&mut width).is_err()
			|| usize::from(width[0]) != id_bytes(expected.next_id)
		{
			return Ok(None);
		}
		let entry = 6 + usize::from(width[0]);
		// Each shard's buckets come in ascending order, each sorted, so each table fills in
		// order, sized for its share of the count. The tables are filled on helper threads
		// (each a share of the shards) while this one reads and checks the file: filling is
		// most of an open's work at millions of statements, much of it the kernel handing
		// out the tables' fresh pages.
		let per_shard = (expected.count / SHARDS as u64) as usize;
		let homes = (per_shard * 100 / SHRUNK_FULL + MIN_HOMES).max(MIN_HOMES);
		std::thread::scope(|scope| -> std::io::Result<_> {
			let mut lanes: Vec<Lane> = (0..fillers)
				.map(|first| {
					let (send, receive) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
					let spawned = std::thread::Builder::new()
						.name("statement-open".into())
						.spawn_scoped(scope, move || {
							let mut filler = Filler::new(first, fillers, homes, entry);
							for batch in receive {
								filler.fill(&batch);
							}
							filler.done()
						});
					match spawned {
						Ok(thread) => Lane::Thread(send, thread),
						// No thread: this one fills the lane's tables too.
						Err(_) => Lane::Here(Filler::new(first, fillers, homes, entry)),
					}
				})
				.collect();
			let read = read_buckets(&mut input, &expected, entry, &mut lanes);
			// Every lane finishes, whatever the file turned out to be.
			let filled: Option<Vec<Filler>> = lanes.into_iter().map(Lane::finish).collect();
			let mut filled: Vec<Vec<Table>> = match (read?, filled) {
				(true, Some(filled)) if filled.iter().all(|filler| filler.sound) => {
					filled.into_iter().map(|filler| filler.tables).collect()
				}
				_ => return Ok(None),
			};
			let mut tables = Vec::with_capacity(SHARDS);
			for shard in 0..SHARDS {
				tables.push(std::mem::take(&mut filled[shard % fillers][shard / fillers]));
			}
			Ok(Some((
				Membership { shards: tables.into_iter().map(RwLock::new).collect() },
				expected,
			)))
		})
	}
}

/// Threads filling a loaded snapshot's tables, at most.
const LOAD_THREADS: usize = 4;
/// Bytes of buckets handed to a filling thread at a time.
const BATCH_BYTES: usize = 256 << 10;

/// The buckets of a snapshot after its tag, read and checked (counts, checksum, nothing
/// after it) while each goes to the lane filling its shard, as bucket (u32 LE) ++ count
/// (u32 LE) ++ entries of `entry` bytes (a fingerprint's low 48 bits, its id). `Ok(false)`
/// if the file is short, damaged or disagrees with its tag.
fn read_buckets(
	input: &mut ChecksumReader<BufReader<std::fs::File>>,
	expected: &SnapshotTag,
	entry: usize,
	lanes: &mut [Lane],
) -> std::io::Result<bool> {
	let mut batches: Vec<Vec<u8>> =
		lanes.iter().map(|_| Vec::with_capacity(BATCH_BYTES + 1024)).collect();
	let mut total = 0u64;
	for bucket in 0..BUCKETS {
		let mut len = [0u8; 4];
		if input.read_exact(&mut len).is_err() {
			return Ok(false);
		}
		let count = u32::from_le_bytes(len) as u64;
		total += count;
		if total > expected.count {
			return Ok(false);
		}
		let lane = bucket % SHARDS % lanes.len();
		let batch = &mut batches[lane];
		batch.extend_from_slice(&(bucket as u32).to_le_bytes());
		batch.extend_from_slice(&len);
		let at = batch.len();
		batch.resize(at + count as usize * entry, 0);
		if input.read_exact(&mut batch[at..]).is_err() {
			return Ok(false);
		}
		if batch.len() >= BATCH_BYTES {
			let full = std::mem::replace(batch, Vec::with_capacity(BATCH_BYTES + 1024));
			if !lanes[lane].give(full) {
				return Ok(false);
			}
		}
	}
	for (lane, batch) in lanes.iter_mut().zip(batches) {
		if !batch.is_empty() && !lane.give(batch) {
			return Ok(false);
		}
	}
	let computed = input.hasher.finish();
	let mut stored = [0u8; 8];
	Ok(input.inner.read_exact(&mut stored).is_ok()
		&& u64::from_le_bytes(stored) == computed
		&& total == expected.count
		&& input.inner.read(&mut [0u8; 1])? == 0)
}

/// Where one share of a loading snapshot's shards is filled.
enum Lane<'scope> {
	Thread(std::sync::mpsc::SyncSender<Vec<u8>>, std::thread::ScopedJoinHandle<'scope, Filler>),
	Here(Filler),
}

impl Lane<'_> {
	/// Hand over a batch of buckets; false if the filling thread is gone.
	fn give(&mut self, batch: Vec<u8>) -> bool {
		match self {
			Lane::Thread(send, _) => send.send(batch).is_ok(),
			Lane::Here(filler) => {
				filler.fill(&batch);
				true
			}
		}
	}

	/// The filled tables, once every batch is in; `None` if the thread panicked.
	fn finish(self) -> Option<Filler> {
		match self {
			Lane::Thread(send, thread) => {
				drop(send);
				thread.join().ok()
			}
			Lane::Here(filler) => Some(filler.done()),
		}
	}
}

/// The tables of shards `first`, `first + step`, ... of a loading snapshot.
struct Filler {
	first: usize,
	step: usize,
	tables: Vec<Table>,
	/// Per table, the slot after the last one filled.
	next: Vec<usize>,
	/// False once a bucket came out of order.
	sound: bool,
	/// Bytes an entry takes: 6 of fingerprint, then the id.
	entry: usize,
}

impl Filler {
	fn new(first: usize, step: usize, homes: usize, entry: usize) -> Filler {
		let shards = (first..SHARDS).step_by(step).count();
		Filler {
			first,
			step,
			tables: (0..shards).map(|_| Table::with_homes(homes, Vec::new())).collect(),
			next: vec![0; shards],
			sound: true,
			entry,
		}
	}

	/// Add the buckets of `batch` (see [`read_buckets`]) to their tables.
	fn fill(&mut self, mut batch: &[u8]) {
		while !batch.is_empty() && self.sound {
			let word = |at: usize| u32::from_le_bytes(batch[at..at + 4].try_into().expect("4"));
			let (bucket, count) = (word(0) as usize, word(4) as usize);
			let entries = &batch[8..8 + count * self.entry];
			batch = &batch[8 + count * self.entry..];
			let index = (bucket % SHARDS - self.first) / self.step;
			let (table, next) = (&mut self.tables[index], &mut self.next[index]);
			let mut previous = None;
			for entry in entries.chunks_exact(self.entry) {
				let mut bytes = [0u8; 8];
				bytes[..2].copy_from_slice(&(bucket as u16).to_be_bytes());
				bytes[2..].copy_from_slice(&entry[..6]);
				let fingerprint = u64::from_be_bytes(bytes);
				let mut id = [0u8; 8];
				id[..self.entry - 6].copy_from_slice(&entry[6..]);
				let id = u64::from_le_bytes(id);
				if previous.is_some_and(|previous| previous > fingerprint) {
					self.sound = false;
					return;
				}
				previous = Some(fingerprint);
				if fingerprint == 0 {
					table.zeros.push(id);
				} else {
					table.push_largest(fingerprint, id, next);
				}
			}
		}
	}

	/// Once every bucket is in: grow any table that came out fuller than tables are kept.
	fn done(mut self) -> Filler {
		for table in &mut self.tables {
			table.finish();
		}
		self
	}
}

/// Bytes a snapshot stores of each id: as few as ids below `next_id` need (at least one).
fn id_bytes(next_id: Id) -> usize {
	(8 - (next_id.saturating_sub(1).leading_zeros() / 8) as usize).max(1)
}

/// The ids [`Membership::ids`] found: the first inline, any more (shared fingerprints) apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ids {
	first: Option<Id>,
	more: Vec<Id>,
}

impl Ids {
	fn push(&mut self, id: Id) {
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

fn write_tag(out: &mut impl Write, tag: &SnapshotTag) -> std::io::Result<()> {
	out.write_all(&tag.count.to_le_bytes())?;
	out.write_all(&tag.next_id.to_le_bytes())?;
	out.write_all(&tag.last_hash)?;
	out.write_all(&tag.removals.to_le_bytes())
}

fn read_tag(input: &mut impl Read) -> std::io::Result<SnapshotTag> {
	let mut word = [0u8; 8];
	input.read_exact(&mut word)?;
	let count = u64::from_le_bytes(word);
	input.read_exact(&mut word)?;
	let next_id = u64::from_le_bytes(word);
	let mut last_hash = [0u8; 32];
	input.read_exact(&mut last_hash)?;
	input.read_exact(&mut word)?;
	let removals = u64::from_le_bytes(word);
	Ok(SnapshotTag { count, next_id, last_hash, removals })
}

/// Passes bytes through while hashing them (xxHash64).
struct ChecksumWriter<W> {
	inner: W,
	hasher: twox_hash::XxHash64,
}

impl<W> ChecksumWriter<W> {
	fn new(inner: W) -> Self {
		ChecksumWriter { inner, hasher: twox_hash::XxHash64::with_seed(0) }
	}
}

impl<W: Write> Write for ChecksumWriter<W> {
	fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
		let written = self.inner.write(bytes)?;
		self.hasher.write(&bytes[..written]);
		Ok(written)
	}
	fn flush(&mut self) -> std::io::Result<()> {
		self.inner.flush()
	}
}

struct ChecksumReader<R> {
	inner: R,
	hasher: twox_hash::XxHash64,
}

impl<R> ChecksumReader<R> {
	fn new(inner: R) -> Self {
		ChecksumReader { inner, hasher: twox_hash::XxHash64::with_seed(0) }
	}
}

impl<R: Read> Read for ChecksumReader<R> {
	fn read(&mut self, bytes: &mut [u8]) -> std::io::Result<usize> {
		let read = self.inner.read(bytes)?;
		self.hasher.write(&bytes[..read]);
		Ok(read)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn hash(n: u64) -> Hash {
		statement_primitives::hash_encoded(&n.to_le_bytes())
	}

	fn tag(count: u64) -> SnapshotTag {
		SnapshotTag { count, next_id: count + 1, last_hash: hash(count), removals: count / 2 }
	}

	#[test]
	fn insert_contains_remove() {
		let set = Membership::default();
		set.insert(&[1; 32], 7);
		assert!(set.contains(&[1; 32]));
		assert!(!set.contains(&[2; 32]));
		assert_eq!(set.ids(&[1; 32]).iter().collect::<Vec<_>>(), vec![7]);
		assert!(set.holds(fingerprint(&[1; 32]), 7) && !set.holds(fingerprint(&[1; 32]), 8));
		assert_eq!(set.ids(&[2; 32]).iter().count(), 0);
		set.remove(&[1; 32], 8);
		assert!(set.contains(&[1; 32]), "held for another id: kept");
		set.remove(&[1; 32], 7);
		assert!(!set.contains(&[1; 32]));
	}

	#[test]
	fn removing_one_of_two_hashes_with_one_fingerprint_keeps_the_other() {
		let set = Membership::default();
		let a = [7u8; 32];
		let mut b = a;
		b[31] = 0;
		set.insert(&a, 1);
		set.insert(&b, 2);
		let mut ids: Vec<Id> = set.ids(&a).iter().collect();
		ids.sort();
		assert_eq!(ids, vec![1, 2], "both ids under the one fingerprint");
		set.remove(&a, 1);
		assert!(set.contains(&b));
		assert_eq!(set.ids(&b).iter().collect::<Vec<_>>(), vec![2], "the other id stays");
		set.remove(&b, 2);
		assert!(!set.contains(&b));
	}

	#[test]
	fn many_hashes_stay_findable_through_growth_and_shrinking() {
		let set = Membership::default();
		for n in 0..200_000 {
			set.insert(&hash(n), n + 10);
		}
		assert_eq!(set.len(), 200_000);
		// 17 bytes a fingerprint and id in tables at least 75% full, a little slack at the
		// ends.
		assert!(set.heap_bytes() < 200_000 * 17 * 100 / 75 + SHARDS * 2048, "{}", set.heap_bytes());
		for n in (0..200_000).step_by(2) {
			set.remove(&hash(n), n + 10);
		}
		for n in 0..200_000 {
			assert_eq!(set.contains(&hash(n)), n % 2 == 1, "hash {n}");
			let ids: Vec<Id> = set.ids(&hash(n)).iter().collect();
			assert_eq!(ids, if n % 2 == 1 { vec![n + 10] } else { vec![] }, "hash {n}");
		}
		assert!(!set.contains(&hash(1_000_000)));
	}

	/// A hash with this fingerprint.
	fn with_fingerprint(fingerprint: u64) -> Hash {
		let mut hash = [0xa5u8; 32];
		hash[..8].copy_from_slice(&fingerprint.to_be_bytes());
		hash
	}

	/// Fingerprints that crowd the tables: many equal, many in one shard at the very top of
	/// the range (past the last home slot), the fingerprint 0, and spread ones.
	fn crowded(n: u64) -> Vec<u64> {
		(0..n)
			.map(|i| match i % 5 {
				0 => u64::MAX - (i % 97) * (1 << 54),
				1 => (i % 7) << 48,
				2 => 0,
				3 => 0x0040_0000_0000_0000 | (i % 3),
				_ => fingerprint(&hash(i)),
			})
			.collect()
	}

	#[test]
	fn tables_agree_with_a_sorted_multiset_through_inserts_removals_and_resizes() {
		use std::collections::BTreeMap;
		let set = Membership::default();
		let mut model: BTreeMap<u64, Vec<Id>> = BTreeMap::new();
		let fingerprints = crowded(20_000);
		let id = |round: usize, i: usize| (round * 100_000 + i) as Id;
		// Inserted twice over, then removed in another order, so tables grow and shrink.
		for round in 0..2 {
			for (i, &f) in fingerprints.iter().enumerate() {
				set.insert(&with_fingerprint(f), id(round, i));
				model.entry(f).or_default().push(id(round, i));
			}
			for (i, &f) in fingerprints.iter().enumerate().rev() {
				if (i + round) % 3 != 0 {
					set.remove(&with_fingerprint(f), id(round, i));
					let ids = model.get_mut(&f).unwrap();
					ids.retain(|&held| held != id(round, i));
					if ids.is_empty() {
						model.remove(&f);
					}
				}
			}
			assert_eq!(set.len(), model.values().map(Vec::len).sum::<usize>() as u64);
			for &f in fingerprints.iter().chain(&[1, 2, u64::MAX, 1 << 48]) {
				assert_eq!(set.contains(&with_fingerprint(f)), model.contains_key(&f), "{f:x}");
				let mut ids: Vec<Id> = set.ids(&with_fingerprint(f)).iter().collect();
				ids.sort();
				let mut expected = model.get(&f).cloned().unwrap_or_default();
				expected.sort();
				assert_eq!(ids, expected, "{f:x}");
			}
			for shard in &set.shards {
				let table = shard.read();
				let fingerprints: Vec<u64> = table.slots.iter().map(|s| s.fingerprint).collect();
				let held: Vec<u64> = fingerprints.iter().copied().filter(|&s| s != 0).collect();
				assert!(held.is_sorted());
				assert_eq!(fingerprints.last(), Some(&0));
				let tags: Vec<u8> =
					fingerprints.iter().map(|&s| if s == 0 { 0 } else { tag_of(s) }).collect();
				assert!(table.tags == tags, "every slot's tag is its fingerprint's");
				for (at, &slot) in fingerprints.iter().enumerate().filter(|(_, &s)| s != 0) {
					let home = table.home(slot);
					assert!(home <= at && fingerprints[home..at].iter().all(|&s| s != 0));
				}
			}
		}
		// Removing what is not held changes nothing.
		set.remove(&with_fingerprint(3), 0);
		set.remove(&with_fingerprint(fingerprints[1]), 99_999);
		assert_eq!(set.len(), model.values().map(Vec::len).sum::<usize>() as u64);
	}

	/// A set of `crowded(n)` saved under `dir`, tagged `tag(n)`: the set, its file and its
	/// fingerprints.
	fn crowded_snapshot(dir: &Path, n: u64) -> (Membership, std::path::PathBuf, Vec<u64>) {
		let path = dir.join("membership");
		let set = Membership::default();
		let fingerprints = crowded(n);
		for (id, &f) in fingerprints.iter().enumerate() {
			set.insert(&with_fingerprint(f), id as Id);
		}
		set.save(&path, &tag(n)).unwrap();
		(set, path, fingerprints)
	}

	#[test]
	fn a_crowded_snapshot_round_trips() {
		let dir = tempfile::tempdir().unwrap();
		let (set, path, fingerprints) = crowded_snapshot(dir.path(), 10_000);
		let (loaded, _) = Membership::load(&path, |t| *t == tag(10_000)).unwrap().expect("loaded");
		assert_eq!(loaded.len(), 10_000);
		for (id, &f) in fingerprints.iter().enumerate() {
			assert!(loaded.holds(f, id as Id), "{f:x} with id {id}");
			loaded.remove(&with_fingerprint(f), id as Id);
			set.remove(&with_fingerprint(f), id as Id);
			assert_eq!(loaded.len(), set.len());
		}
		assert_eq!(loaded.len(), 0);
	}

	#[test]
	fn a_snapshot_loads_the_same_whatever_the_threads_filling_it() {
		let dir = tempfile::tempdir().unwrap();
		let (_, path, fingerprints) = crowded_snapshot(dir.path(), 20_000);
		// Shards split unevenly between threads too (64 over 3 or 7).
		for fillers in [1, 2, 3, 7, SHARDS] {
			let (loaded, _) = Membership::load_on(&path, |t| *t == tag(20_000), fillers)
				.unwrap()
				.expect("loaded");
			assert_eq!(loaded.len(), 20_000, "{fillers} threads");
			assert!(!loaded.contains(&hash(1)), "{fillers} threads");
			for (id, &f) in fingerprints.iter().enumerate() {
				assert!(loaded.holds(f, id as Id), "{f:x} with {fillers} threads");
			}
			// Every one of them once: removing them all empties the set.
			for (id, &f) in fingerprints.iter().enumerate() {
				loaded.remove(&with_fingerprint(f), id as Id);
			}
			assert_eq!(loaded.len(), 0, "{fillers} threads");
		}
	}

	#[test]
	fn a_snapshot_round_trips_only_with_its_tag() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("membership");
		let set = Membership::default();
		for n in 0..5000 {
			set.insert(&hash(n), n);
		}
		set.save(&path, &tag(5000)).unwrap();
		let (loaded, read) = Membership::load(&path, |t| *t == tag(5000)).unwrap().expect("loaded");
		assert_eq!(read, tag(5000));
		assert_eq!(loaded.len(), 5000);
		assert!((0..5000).all(|n| loaded.holds(fingerprint(&hash(n)), n)));
		assert!(!loaded.contains(&hash(5000)));
		assert!(Membership::load(&path, |t| *t == tag(4999)).unwrap().is_none());
		assert!(Membership::load(&dir.path().join("absent"), |t| *t == tag(5000))
			.unwrap()
			.is_none());
	}

	#[test]
	fn a_snapshot_keeps_ids_in_as_few_bytes_as_its_largest_needs_and_refuses_a_larger_one() {
		assert_eq!((id_bytes(0), id_bytes(256), id_bytes(257), id_bytes(1 << 40)), (1, 1, 2, 5));
		assert_eq!(id_bytes(u64::MAX), 8);
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("membership");
		let set = Membership::default();
		let ids = [0, 255, 256, 65_536, (1 << 40) - 1];
		for (n, &id) in ids.iter().enumerate() {
			set.insert(&hash(n as u64), id);
		}
		let tag = SnapshotTag { count: 5, next_id: 1 << 40, last_hash: [0; 32], removals: 0 };
		set.save(&path, &tag).unwrap();
		let (loaded, _) = Membership::load(&path, |t| *t == tag).unwrap().expect("loaded");
		for (n, &id) in ids.iter().enumerate() {
			assert_eq!(loaded.ids(&hash(n as u64)).iter().collect::<Vec<_>>(), vec![id]);
		}
		// An id the tag says was never given out would lose its top byte: no snapshot.
		set.insert(&hash(9), 1 << 40);
		let tag = SnapshotTag { count: 6, ..tag };
		assert!(set.save(&path, &tag).is_err());
	}

	#[test]
	fn a_copy_is_independent_and_fingerprints_remove() {
		let set = Membership::default();
		for n in 0..100 {
			set.insert(&hash(n), n);
		}
		let copy = set.copy();
		set.remove(&hash(1), 1);
		assert!(copy.contains(&hash(1)));
		let mut fingerprint = [0u8; 8];
		fingerprint.copy_from_slice(&hash(2)[..8]);
		copy.remove_fingerprint(fingerprint, 2);
		assert!(!copy.contains(&hash(2)));
		assert_eq!((set.len(), copy.len()), (99, 99));
	}

	#[test]
	fn a_damaged_snapshot_is_ignored() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("membership");
		let set = Membership::default();
		for n in 0..1000 {
			set.insert(&hash(n), n);
		}
		set.save(&path, &tag(1000)).unwrap();
		let bytes = std::fs::read(&path).unwrap();
		let mut flipped = bytes.clone();
		let middle = flipped.len() / 2;
		flipped[middle] ^= 1;
		std::fs::write(&path, &flipped).unwrap();
		assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_none());
		std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
		assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_none());
		let mut longer = bytes.clone();
		longer.push(0);
		std::fs::write(&path, &longer).unwrap();
		assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_none());
		std::fs::write(&path, &bytes).unwrap();
		assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_some());
	}

	#[test]
	fn a_tables_fingerprints_spread_over_its_home_slots() {
		// Every fingerprint of a table shares the bits that chose its shard: 200,000 of
		// them, as one shard holds at about 12.8M statements, otherwise random.
		let mut state = 0x2545_f491_4f6c_dd1du64;
		let mut next = move || {
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			(state & !(63 << 48)) | (5 << 48)
		};
		let mut table = Table::default();
		for _ in 0..200_000 {
			table.insert(next(), 1);
		}
		// Tags a lookup of an absent fingerprint reads: to the end of the run from its home.
		let probes = 10_000;
		let read: usize = (0..probes)
			.map(|_| table.tags[table.home(next())..].iter().position(|&tag| tag == 0).unwrap() + 1)
			.sum();
		// About 13 at 80% full when spread; from the whole fingerprint the table held 1,024
		// runs of ~195, and a lookup read the whole run from its start (194 tags, tried).
		assert!(read / probes < 32, "{} tags a lookup", read / probes);
	}
}
