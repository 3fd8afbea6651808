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

/// Version 2 added [`SnapshotTag::removals`], version 3 the ids; an older file is not read
/// (the store reads every body once instead).
const MAGIC: &[u8; 8] = b"SSMEMB03";

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
	/// Per table, the slot after the last one filled.
	pub(super) next: Vec<usize>,
	/// False once a bucket came out of order.
	sound: bool,
	/// Bytes an entry takes: 6 of fingerprint, then the id.
	pub(super) entry: usize,
}

impl Filler {
	pub(super) fn new(first: usize, step: usize, homes: usize, entry: usize) -> Filler {
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
