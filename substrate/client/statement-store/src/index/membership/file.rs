//! The membership snapshot file: written at close and every so often, read back at open on
//! up to four threads while it is checked.

use super::{table::*, Membership, SnapshotTag};
use crate::index::schema::Id;
use parking_lot::RwLock;
use std::{
	hash::Hasher,
	io::{BufReader, BufWriter, Read, Write},
	path::Path,
};

/// Buckets in a snapshot file.
const BUCKETS: usize = 1 << 16;

/// Version 2 added [`SnapshotTag::removals`], version 3 the ids, version 4 the smallest id
/// (after the ids' width, u64 LE) and lists the buckets shard by shard (the tables keep no
/// order to list them in across shards); a version 3 file is still read, an older one is not
/// (the store reads every body once instead).
const MAGIC: &[u8; 8] = b"SSMEMB04";
/// See [`MAGIC`]: buckets in numeric order.
const MAGIC_3: &[u8; 8] = b"SSMEMB03";

/// Snapshot buckets of one shard.
const SHARD_BUCKETS: usize = BUCKETS / SHARDS;

/// The snapshot bucket (top 16 bits of its fingerprints) listed `at`th in a file of version
/// 4 (`shard_major`) or 3.
fn bucket_at(at: usize, shard_major: bool) -> usize {
	if shard_major {
		(at % SHARD_BUCKETS) * SHARDS + at / SHARD_BUCKETS
	} else {
		at
	}
}

impl Membership {
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
		let smallest = self.shards.iter().filter_map(|table| table.read().smallest_id()).min();
		out.write_all(&smallest.unwrap_or(0).to_le_bytes())?;
		let mut entries = Vec::new();
		for (shard, table) in self.shards.iter().enumerate() {
			entries.clear();
			entries.extend(table.read().entries());
			entries.sort_unstable();
			let mut rest = &entries[..];
			for top in 0..SHARD_BUCKETS as u64 {
				let count = rest.iter().take_while(|(kept, _)| kept >> 42 == top).count();
				out.write_all(&(count as u32).to_le_bytes())?;
				for &(kept, id) in &rest[..count] {
					out.write_all(&fingerprint_of(shard, kept).to_be_bytes()[2..])?;
					// Every id is below the tag's `next_id`; one that is not would lose its
					// top bytes, so no snapshot is written (the next open reads the bodies
					// instead).
					if id_bytes < 8 && id >> (8 * id_bytes) != 0 {
						return Err(std::io::Error::new(
							std::io::ErrorKind::InvalidData,
							format!("id {id} is not below the snapshot's next id {}", tag.next_id),
						));
					}
					out.write_all(&id.to_le_bytes()[..id_bytes])?;
				}
				rest = &rest[count..];
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
	pub(super) fn load_on(
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
		let shard_major = match input.read_exact(&mut magic) {
			Ok(()) if &magic == MAGIC => true,
			Ok(()) if &magic == MAGIC_3 => false,
			_ => return Ok(None),
		};
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
		let mut smallest = [0u8; 8];
		if shard_major && input.read_exact(&mut smallest).is_err() {
			return Ok(None);
		}
		let smallest = u64::from_le_bytes(smallest);
		// Each table is sized for its share of the count and the ids below the tag's next
		// id. The tables are filled on helper threads (each a share of the shards) while this
		// one reads and checks the file: filling is most of an open's work at millions of
		// statements, much of it the kernel handing out the tables' fresh pages.
		let per_shard = (expected.count / SHARDS as u64) as usize;
		let ids = (smallest, expected.next_id);
		std::thread::scope(|scope| -> std::io::Result<_> {
			let mut lanes: Vec<Lane> = (0..fillers)
				.map(|first| {
					let (send, receive) = std::sync::mpsc::sync_channel::<Vec<u8>>(2);
					let spawned = std::thread::Builder::new()
						.name("statement-open".into())
						.spawn_scoped(scope, move || {
							let mut filler = Filler::new(first, fillers, per_shard, ids, entry);
							for batch in receive {
								filler.fill(&batch);
							}
							filler.done()
						});
					match spawned {
						Ok(thread) => Lane::Thread(send, thread),
						// No thread: this one fills the lane's tables too.
						Err(_) => Lane::Here(Filler::new(first, fillers, per_shard, ids, entry)),
					}
				})
				.collect();
			let read = read_buckets(&mut input, &expected, entry, shard_major, &mut lanes);
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
	shard_major: bool,
	lanes: &mut [Lane],
) -> std::io::Result<bool> {
	let mut batches: Vec<Vec<u8>> =
		lanes.iter().map(|_| Vec::with_capacity(BATCH_BYTES + 1024)).collect();
	let mut total = 0u64;
	for at in 0..BUCKETS {
		let bucket = bucket_at(at, shard_major);
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
	pub(super) fn finish(self) -> Option<Filler> {
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
	pub(super) first: usize,
	step: usize,
	pub(super) tables: Vec<Table>,
	/// False once a bucket came out of order.
	sound: bool,
	/// Bytes an entry takes: 6 of fingerprint, then the id.
	pub(super) entry: usize,
}

impl Filler {
	/// Tables for `per_shard` entries each, of ids from `ids.0` to below `ids.1`.
	pub(super) fn new(
		first: usize,
		step: usize,
		per_shard: usize,
		(smallest, next_id): (Id, Id),
		entry: usize,
	) -> Filler {
		let shards = (first..SHARDS).step_by(step).count();
		Filler {
			first,
			step,
			tables: (0..shards).map(|_| Table::sized(per_shard, smallest, next_id)).collect(),
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
			let table = &mut self.tables[(bucket % SHARDS - self.first) / self.step];
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
				table.insert(fingerprint, id);
			}
		}
	}

	/// Once every bucket is in: ids in fewer bits where a table's span allows more a bucket.
	fn done(mut self) -> Filler {
		for table in &mut self.tables {
			table.compact();
		}
		self
	}
}

/// Bytes a snapshot stores of each id: as few as ids below `next_id` need (at least one).
pub(super) fn id_bytes(next_id: Id) -> usize {
	(8 - (next_id.saturating_sub(1).leading_zeros() / 8) as usize).max(1)
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
	pub(super) fn new(inner: W) -> Self {
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
	pub(super) fn new(inner: R) -> Self {
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
