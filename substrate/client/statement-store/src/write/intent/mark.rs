//! The intent mark: the newest acknowledged batch number, in a small file of its own (see
//! the intent log's documentation for why).
//!
//! The file holds two slots of 16 bytes, the number and its xxh64, and batch `n` goes to slot
//! `n % 2`: a write cut short damages one slot only, and the other still holds the number
//! before. Reading takes the larger of the sound slots. A file of one slot (written before
//! the second, 2026-12) still reads.
//!
//! Every append rewrites it, so how it is written shows in every submit and removal: a
//! `pwrite` took about 0.8 us on the 2-core VM, as long as the intent record's own `write`.
//! Without `sync_wal`, on file systems that rewrite a block in place (ext4, XFS, tmpfs), the
//! file is mapped and the slot is copied into the mapping instead (about 40 ns): the page
//! cache holds it from then on, as it holds a `pwrite`, so it survives the process being
//! killed. Elsewhere, and with `sync_wal` (which needs the fsync anyway), the slot is written
//! with `pwrite`. Copy-on-write file systems (btrfs, ZFS) are left out: rewriting a mapped
//! page there allocates a block, and on a full disk the process would get SIGBUS instead of
//! an error.

use std::{fs::File, hash::Hasher, path::Path};

/// The mark's file name, next to the intent files.
pub const MARK_FILE: &str = "intent.mark";

/// One slot: the number and its xxh64.
const SLOT: usize = 16;

/// The bytes of one slot holding `seq`.
fn slot_bytes(seq: u64) -> [u8; SLOT] {
	let mut hasher = twox_hash::XxHash64::with_seed(0);
	hasher.write(&seq.to_le_bytes());
	let mut bytes = [0u8; SLOT];
	bytes[..8].copy_from_slice(&seq.to_le_bytes());
	bytes[8..].copy_from_slice(&hasher.finish().to_le_bytes());
	bytes
}

/// The number a sound slot holds.
fn slot_seq(slot: &[u8]) -> Option<u64> {
	let seq = u64::from_le_bytes(slot.get(..8)?.try_into().ok()?);
	(slot == slot_bytes(seq)).then_some(seq)
}

/// File systems known to rewrite an allocated block in place, where a mapped write cannot
/// fail for lack of space (`statfs` magic numbers: ext2/3/4, XFS, tmpfs).
#[cfg(target_os = "linux")]
const IN_PLACE: [u64; 3] = [0xEF53, 0x5846_5342, 0x0102_1994];

/// The open mark, rewritten after every append.
pub struct Mark {
	file: File,
	/// The file mapped, where that cannot fail (see the module documentation).
	mapped: Option<memmap2::MmapMut>,
	sync: bool,
}

impl Mark {
	/// Open (or create) the mark in `dir` holding `seq` in both slots; map it where that is
	/// safe and `sync` is off.
	pub fn open(dir: &Path, sync: bool, seq: u64) -> std::io::Result<Mark> {
		let file = std::fs::OpenOptions::new()
			.create(true)
			.truncate(false)
			.read(true)
			.write(true)
			.open(dir.join(MARK_FILE))?;
		let both = [slot_bytes(seq), slot_bytes(seq)].concat();
		write_at(&file, &both, 0)?;
		file.set_len(both.len() as u64)?;
		if sync {
			file.sync_data()?;
		}
		let mapped = if !sync && rewrites_in_place(&file) {
			// SAFETY: a mapping is unsound only if the file changes size under it. The file
			// is this store's own: parity-db holds the directory's lock while the store is
			// open, and nothing truncates the mark while it is mapped (opening sets its size
			// before mapping it).
			#[allow(unsafe_code)]
			unsafe { memmap2::MmapMut::map_mut(&file) }.ok()
		} else {
			None
		};
		Ok(Mark { file, mapped, sync })
	}

	/// Whether writes go through a mapping.
	pub fn is_mapped(&self) -> bool {
		self.mapped.is_some()
	}

	/// Hold `seq`, in its slot.
	pub fn write(&mut self, seq: u64) -> std::io::Result<()> {
		let at = (seq % 2) as usize * SLOT;
		let bytes = slot_bytes(seq);
		match &mut self.mapped {
			Some(map) => map[at..at + SLOT].copy_from_slice(&bytes),
			None => {
				write_at(&self.file, &bytes, at as u64)?;
				if self.sync {
					self.file.sync_data()?;
				}
			}
		}
		Ok(())
	}
}

/// Write `bytes` at byte `at` of `file` (one `pwrite` on unix).
fn write_at(file: &File, bytes: &[u8], at: u64) -> std::io::Result<()> {
	#[cfg(unix)]
	return std::os::unix::fs::FileExt::write_all_at(file, bytes, at);
	#[cfg(not(unix))]
	{
		use std::io::{Seek, SeekFrom, Write};
		let mut file = file;
		file.seek(SeekFrom::Start(at))?;
		file.write_all(bytes)
	}
}

/// Whether `file`'s file system rewrites an allocated block in place (see [`IN_PLACE`]).
fn rewrites_in_place(file: &File) -> bool {
	#[cfg(target_os = "linux")]
	{
		rustix::fs::fstatfs(file)
			.map(|stats| IN_PLACE.contains(&(stats.f_type as u64)))
			.unwrap_or(false)
	}
	#[cfg(not(target_os = "linux"))]
	{
		let _ = file;
		false
	}
}

/// The newest acknowledged batch number the mark in `dir` holds; `None` if there is no mark
/// (a database from before it) or no slot of it is sound (logged).
pub fn read_mark(dir: &Path) -> Option<u64> {
	let path = dir.join(MARK_FILE);
	let bytes = std::fs::read(&path).ok()?;
	let seq = match bytes.len() {
		// One slot: written before the second.
		SLOT => slot_seq(&bytes),
		len if len == 2 * SLOT => bytes.chunks(SLOT).filter_map(slot_seq).max(),
		_ => None,
	};
	if seq.is_none() {
		log::warn!(
			target: "statement-store",
			"{}: the intent mark is damaged; a missing end of the intent log cannot be \
			 detected at this open",
			path.display()
		);
	}
	seq
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn the_larger_sound_slot_is_read_and_a_damaged_one_falls_back_to_the_other() {
		let dir = tempfile::tempdir().unwrap();
		let mut mark = Mark::open(dir.path(), false, 6).unwrap();
		assert_eq!(read_mark(dir.path()), Some(6));
		for seq in 7..=10 {
			mark.write(seq).unwrap();
			assert_eq!(read_mark(dir.path()), Some(seq), "read back through the file");
		}
		drop(mark);
		let path = dir.path().join(MARK_FILE);
		let mut bytes = std::fs::read(&path).unwrap();
		assert_eq!(bytes.len(), 2 * SLOT);
		// Batch 10 went to slot 0; cut it short as a killed write would.
		bytes[3] ^= 0xff;
		std::fs::write(&path, &bytes).unwrap();
		assert_eq!(read_mark(dir.path()), Some(9), "the slot before still holds 9");
		bytes[SLOT + 12] ^= 0xff;
		std::fs::write(&path, &bytes).unwrap();
		assert_eq!(read_mark(dir.path()), None, "no sound slot left");
	}

	#[test]
	fn a_mark_of_one_slot_reads_and_opening_rewrites_it_with_two() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join(MARK_FILE);
		std::fs::write(&path, slot_bytes(41)).unwrap();
		assert_eq!(read_mark(dir.path()), Some(41));
		let mut mark = Mark::open(dir.path(), false, 41).unwrap();
		mark.write(42).unwrap();
		assert_eq!(std::fs::read(&path).unwrap().len(), 2 * SLOT);
		assert_eq!(read_mark(dir.path()), Some(42));
	}

	#[test]
	fn with_sync_the_mark_is_written_through_the_file_and_reads_the_same() {
		let dir = tempfile::tempdir().unwrap();
		let mut mark = Mark::open(dir.path(), true, 1).unwrap();
		assert!(!mark.is_mapped());
		mark.write(2).unwrap();
		assert_eq!(read_mark(dir.path()), Some(2));
	}
}
