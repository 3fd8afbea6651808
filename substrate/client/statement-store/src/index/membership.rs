//! Which hashes the store holds, answered from memory for every gossiped statement.
//!
//! Keeps 58 bits of each hash (its first 8 bytes, big-endian, less the lowest 6: the
//! fingerprint) and the statement's id beside them. A hash that is not stored is reported as
//! stored only if it shares those bits with a stored one: about n / 2^58, 1.5e-11 at 4.19M
//! statements. Admission does not rely on it (it confirms a hit in the hash column); gossip's
//! `has_statement` does, and would skip such a statement. The set is a multiset, so removing
//! one of two hashes that share a fingerprint does not hide the other. The ids make a lookup
//! by hash one read: the set gives the id, the body (which holds its hash, see
//! `schema::body_value`) confirms it.
//!
//! Layout, for few bytes and few memory accesses a lookup: 64 shards, each behind its own
//! lock, each a table of 64-byte buckets (see `table`). A fingerprint's home bucket is its
//! fraction of the table's buckets, so the bucket carries its top bits and an entry stores
//! the rest, beside the id's offset from the table's smallest id, in as few bits as the two
//! need: 63 bits at 4.19M statements (39 of fingerprint, 22 of id, 2 of state), eight
//! entries to a bucket. A lookup reads the home bucket, one cache line, and the entry's
//! second bucket only where a filter of what the home holds away says it could be there
//! (about one miss in ten). Tables are kept 84-95% full and read back 90% full, so the set
//! takes about 9.2 bytes a statement at 4.19M (36 MiB; it took 21 bytes, 85 MiB, with whole
//! 64-bit fingerprints and ids beside a tag byte). Ids that span more take more: past 2^23
//! (statements that stay while 8M others come and go) 7 entries to a bucket, 10.5 bytes;
//! past 2^31, 6 and 12 bytes.
//!
//! The set is written to a snapshot file when the store closes and every so often while it
//! runs (see `Store::maintain`), and read back when it opens, so that reopening does not walk
//! the admission journal: after a clean stop the snapshot is exact; after a crash the store
//! adds what the journal admitted and takes out what the removal log removed since it. The
//! file lists 65,536 buckets (by the fingerprint's top 16 bits), shard by shard, each its
//! count and then its fingerprints' low 48 bits in order, each followed by its id in as few
//! bytes as the largest id needs (the header says how many). Loading it fills the tables on
//! up to four threads while the file is read and checked.

use crate::index::schema::{fingerprint, Id, REMOVAL_SEGMENT};
use parking_lot::{Mutex, RwLock};
use statement_primitives::Hash;
use std::{
	ops::Range,
	time::{Duration, Instant},
};
use table::{shard_of, Ids, Table, SHARDS};

/// What the newest membership snapshot covers, to decide when the next one is due, and
/// what opening read from one.
pub struct Snapshots {
	mark: Mutex<SnapshotMark>,
	/// Whether opening read the set from its snapshot instead of hashing every body.
	reopened: bool,
	/// Statements admitted and removed since that snapshot, which opening caught up on.
	caught_up: (u64, u64),
}

/// See [`Snapshots`].
struct SnapshotMark {
	/// The journal position it covers.
	next_id: Id,
	/// The removal-log position it covers.
	removals: u64,
	/// When it was written (or the store opened).
	at: Instant,
	/// Removal-log segments below this one are deleted.
	trimmed_below: u64,
}

impl Snapshots {
	/// `read` is the tag of the snapshot opening read (`None`: it read none, and the first
	/// maintenance run writes one), `caught_up` what opening added and removed since it.
	pub fn new(read: Option<&SnapshotTag>, caught_up: (u64, u64)) -> Snapshots {
		let mark = match read {
			Some(tag) => SnapshotMark {
				next_id: tag.next_id,
				removals: tag.removals,
				at: Instant::now(),
				trimmed_below: tag.removals / REMOVAL_SEGMENT,
			},
			None => SnapshotMark { next_id: 0, removals: 0, at: Instant::now(), trimmed_below: 0 },
		};
		Snapshots { mark: Mutex::new(mark), reopened: read.is_some(), caught_up }
	}

	/// Whether opening took the set from its snapshot.
	pub fn reopened(&self) -> bool {
		self.reopened
	}

	/// Statements admitted and removed since the snapshot, which opening caught up on.
	pub fn caught_up(&self) -> (u64, u64) {
		self.caught_up
	}

	/// Whether, with the journal at `next_id` and the removal log at `removals`, `changes`
	/// changes have been made since the newest snapshot, or `period` has passed with at
	/// least one.
	pub fn due(&self, next_id: Id, removals: u64, changes: u64, period: Duration) -> bool {
		let mark = self.mark.lock();
		let changed = next_id.saturating_sub(mark.next_id) + removals.saturating_sub(mark.removals);
		changed >= changes || (changed > 0 && mark.at.elapsed() >= period)
	}

	/// A snapshot covering `tag` was written: `trim` is called with the removal-log segments
	/// it no longer needs (one call at a time), then the mark moves to `tag`.
	pub fn written(&self, tag: &SnapshotTag, trim: impl FnOnce(Range<u64>)) {
		let mut mark = self.mark.lock();
		let below = tag.removals / REMOVAL_SEGMENT;
		if below > mark.trimmed_below {
			trim(mark.trimmed_below..below);
		}
		*mark = SnapshotMark {
			next_id: tag.next_id,
			removals: tag.removals,
			at: Instant::now(),
			trimmed_below: below.max(mark.trimmed_below),
		};
	}
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

/// Sharded multiset of hash fingerprints, each with its statement's id.
pub struct Membership {
	shards: Vec<RwLock<Table>>,
}

impl Default for Membership {
	fn default() -> Self {
		Membership { shards: (0..SHARDS).map(|_| RwLock::new(Table::default())).collect() }
	}
}

impl Membership {
	/// An empty set sized for `count` statements of ids below `next_id`, so that filling it
	/// lays no table out twice.
	pub fn sized(count: u64, next_id: Id) -> Membership {
		let per_shard = (count / SHARDS as u64) as usize;
		Membership {
			shards: (0..SHARDS).map(|_| RwLock::new(Table::sized(per_shard, 0, next_id))).collect(),
		}
	}

	/// Once filled: each table's ids in fewer bits where their span allows more a bucket.
	pub fn compact(&self) {
		for shard in &self.shards {
			shard.write().compact();
		}
	}

	/// Whether `hash` is (almost certainly) stored.
	pub fn contains(&self, hash: &Hash) -> bool {
		self.contains_fingerprint(fingerprint(hash))
	}

	/// Whether a hash with this fingerprint (its first 8 bytes, big-endian; bits 0-5 are not
	/// kept) is stored.
	pub fn contains_fingerprint(&self, fingerprint: u64) -> bool {
		self.shards[shard_of(fingerprint)].read().contains(fingerprint)
	}

	/// The ids of the stored statements whose hash has this hash's fingerprint: usually
	/// none or one; two or more only where hashes share the 58 bits the set keeps.
	pub fn ids(&self, hash: &Hash) -> Ids {
		let fingerprint = fingerprint(hash);
		let mut ids = Ids::default();
		self.shards[shard_of(fingerprint)].read().ids_of(fingerprint, |id| ids.push(id));
		ids
	}

	/// Whether statement `id` is held under this fingerprint.
	pub fn holds(&self, fingerprint: u64, id: Id) -> bool {
		self.shards[shard_of(fingerprint)].read().holds(fingerprint, id)
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

	/// A copy of the set as it is now (about 9 bytes a statement).
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
				shard.len as u64
			})
			.sum()
	}

	/// Heap bytes held by the set.
	#[cfg(test)]
	pub fn heap_bytes(&self) -> usize {
		self.shards.iter().map(|shard| shard.read().heap_bytes()).sum()
	}
}
mod file;
mod table;
#[cfg(test)]
mod tests;
