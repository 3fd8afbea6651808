//! Which hashes the store holds, answered from memory for every gossiped statement.
//!
//! Keeps a 64-bit fingerprint of each hash (its first 8 bytes). A hash that is not stored is
//! reported as stored only if it shares its fingerprint with a stored one: about n / 2^64,
//! 2e-13 at 4M statements. The set is a multiset, so removing one of two hashes that share a
//! fingerprint does not hide the other.
//!
//! Layout, sized for millions of statements: the top 16 bits of a fingerprint pick one of
//! 65,536 buckets (and so one of 64 lock shards); a bucket is a sorted vector of the remaining
//! 48 bits, 6 bytes each. At 4.19M statements that is 24 MiB plus 1.5 MiB of bucket headers,
//! where a hash set of 64-bit values would take about 72 MiB.
//!
//! The set is written to a snapshot file when the store closes and every so often while it
//! runs (see `Store::maintain`), and read back when it opens, so that reopening does not walk
//! the admission journal: after a clean stop the snapshot is exact; after a crash the store
//! adds what the journal admitted and takes out what the removal log removed since it.

use crate::schema::Id;
use parking_lot::RwLock;
use statement_primitives::Hash;
use std::{
	hash::Hasher,
	io::{BufReader, BufWriter, Read, Write},
	path::Path,
};

const SHARDS: usize = 64;
const BUCKET_BITS: u32 = 16;
const BUCKETS: usize = 1 << BUCKET_BITS;
const BUCKETS_PER_SHARD: usize = BUCKETS / SHARDS;

/// The low 48 bits of a fingerprint, big-endian so that byte order is numeric order.
type Rest = [u8; 6];

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

/// Version 2 added [`SnapshotTag::removals`]; a version 1 file is not read (the store reads
/// the journal once instead).
const MAGIC: &[u8; 8] = b"SSMEMB02";

/// Sharded multiset of hash fingerprints.
pub struct Membership {
	shards: Vec<RwLock<Vec<Vec<Rest>>>>,
}

impl Default for Membership {
	fn default() -> Self {
		Membership {
			shards: (0..SHARDS)
				.map(|_| RwLock::new((0..BUCKETS_PER_SHARD).map(|_| Vec::new()).collect()))
				.collect(),
		}
	}
}

/// Shard, bucket within the shard, and the remaining bits of `hash`'s fingerprint.
fn split(hash: &Hash) -> (usize, usize, Rest) {
	let bucket = (usize::from(hash[0]) << 8) | usize::from(hash[1]);
	let mut rest = [0u8; 6];
	rest.copy_from_slice(&hash[2..8]);
	(bucket % SHARDS, bucket / SHARDS, rest)
}

impl Membership {
	/// Whether `hash` is (almost certainly) stored.
	pub fn contains(&self, hash: &Hash) -> bool {
		let (shard, bucket, rest) = split(hash);
		self.shards[shard].read()[bucket].binary_search(&rest).is_ok()
	}

	/// Record a stored hash.
	pub fn insert(&self, hash: &Hash) {
		let (shard, bucket, rest) = split(hash);
		let mut shard = self.shards[shard].write();
		let bucket = &mut shard[bucket];
		let at = bucket.binary_search(&rest).unwrap_or_else(|at| at);
		if bucket.len() == bucket.capacity() {
			// Grow by an eighth rather than doubling: buckets stay small and the set tight.
			bucket.reserve_exact((bucket.len() / 8).max(2));
		}
		bucket.insert(at, rest);
	}

	/// Forget one stored hash.
	pub fn remove(&self, hash: &Hash) {
		let (shard, bucket, rest) = split(hash);
		let mut shard = self.shards[shard].write();
		let bucket = &mut shard[bucket];
		if let Ok(at) = bucket.binary_search(&rest) {
			bucket.remove(at);
			if bucket.capacity() > bucket.len() + bucket.len() / 4 + 4 {
				bucket.shrink_to(bucket.len() + bucket.len() / 8);
			}
		}
	}

	/// Forget one stored hash known only by its fingerprint (the removal log keeps those).
	pub fn remove_fingerprint(&self, fingerprint: [u8; 8]) {
		let mut hash = [0u8; 32];
		hash[..8].copy_from_slice(&fingerprint);
		self.remove(&hash);
	}

	/// A copy of the set as it is now (about 6 bytes a statement).
	pub fn copy(&self) -> Membership {
		Membership {
			shards: self.shards.iter().map(|shard| RwLock::new(shard.read().clone())).collect(),
		}
	}

	/// Fingerprints held.
	pub fn len(&self) -> u64 {
		self.shards
			.iter()
			.map(|shard| shard.read().iter().map(|bucket| bucket.len() as u64).sum::<u64>())
			.sum()
	}

	/// Heap bytes held by the set.
	#[cfg(test)]
	pub fn heap_bytes(&self) -> usize {
		self.shards
			.iter()
			.map(|shard| {
				let shard = shard.read();
				shard.capacity() * std::mem::size_of::<Vec<Rest>>()
					+ shard.iter().map(|b| b.capacity() * 6).sum::<usize>()
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
		for bucket in 0..BUCKETS {
			let shard = self.shards[bucket % SHARDS].read();
			let rests = &shard[bucket / SHARDS];
			out.write_all(&(rests.len() as u32).to_le_bytes())?;
			for rest in rests {
				out.write_all(rest)?;
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
		let set = Membership::default();
		let mut total = 0u64;
		for bucket in 0..BUCKETS {
			let mut len = [0u8; 4];
			if input.read_exact(&mut len).is_err() {
				return Ok(None);
			}
			let len = u32::from_le_bytes(len) as u64;
			total += len;
			if total > expected.count {
				return Ok(None);
			}
			let mut rests = Vec::with_capacity(len as usize);
			for _ in 0..len {
				let mut rest = [0u8; 6];
				if input.read_exact(&mut rest).is_err() {
					return Ok(None);
				}
				rests.push(rest);
			}
			if !rests.is_sorted() {
				return Ok(None);
			}
			set.shards[bucket % SHARDS].write()[bucket / SHARDS] = rests;
		}
		let computed = input.hasher.finish();
		let mut stored = [0u8; 8];
		if input.inner.read_exact(&mut stored).is_err()
			|| u64::from_le_bytes(stored) != computed
			|| total != expected.count
			|| input.inner.read(&mut [0u8; 1])? != 0
		{
			return Ok(None);
		}
		Ok(Some((set, expected)))
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
		set.insert(&[1; 32]);
		assert!(set.contains(&[1; 32]));
		assert!(!set.contains(&[2; 32]));
		set.remove(&[1; 32]);
		assert!(!set.contains(&[1; 32]));
	}

	#[test]
	fn removing_one_of_two_hashes_with_one_fingerprint_keeps_the_other() {
		let set = Membership::default();
		let a = [7u8; 32];
		let mut b = a;
		b[31] = 0;
		set.insert(&a);
		set.insert(&b);
		set.remove(&a);
		assert!(set.contains(&b));
		set.remove(&b);
		assert!(!set.contains(&b));
	}

	#[test]
	fn many_hashes_stay_findable_through_growth_and_shrinking() {
		let set = Membership::default();
		for n in 0..200_000 {
			set.insert(&hash(n));
		}
		assert_eq!(set.len(), 200_000);
		// 6 bytes a fingerprint plus bucket headers, with little slack.
		assert!(set.heap_bytes() < 200_000 * 6 + BUCKETS * (24 + 12), "{}", set.heap_bytes());
		for n in (0..200_000).step_by(2) {
			set.remove(&hash(n));
		}
		for n in 0..200_000 {
			assert_eq!(set.contains(&hash(n)), n % 2 == 1, "hash {n}");
		}
		assert!(!set.contains(&hash(1_000_000)));
	}

	#[test]
	fn a_snapshot_round_trips_only_with_its_tag() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("membership");
		let set = Membership::default();
		for n in 0..5000 {
			set.insert(&hash(n));
		}
		set.save(&path, &tag(5000)).unwrap();
		let (loaded, read) = Membership::load(&path, |t| *t == tag(5000)).unwrap().expect("loaded");
		assert_eq!(read, tag(5000));
		assert_eq!(loaded.len(), 5000);
		assert!((0..5000).all(|n| loaded.contains(&hash(n))));
		assert!(!loaded.contains(&hash(5000)));
		assert!(Membership::load(&path, |t| *t == tag(4999)).unwrap().is_none());
		assert!(Membership::load(&dir.path().join("absent"), |t| *t == tag(5000))
			.unwrap()
			.is_none());
	}

	#[test]
	fn a_copy_is_independent_and_fingerprints_remove() {
		let set = Membership::default();
		for n in 0..100 {
			set.insert(&hash(n));
		}
		let copy = set.copy();
		set.remove(&hash(1));
		assert!(copy.contains(&hash(1)));
		let mut fingerprint = [0u8; 8];
		fingerprint.copy_from_slice(&hash(2)[..8]);
		copy.remove_fingerprint(fingerprint);
		assert!(!copy.contains(&hash(2)));
		assert_eq!((set.len(), copy.len()), (99, 99));
	}

	#[test]
	fn a_damaged_snapshot_is_ignored() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("membership");
		let set = Membership::default();
		for n in 0..1000 {
			set.insert(&hash(n));
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
}
