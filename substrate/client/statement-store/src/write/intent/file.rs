//! One intent file, appended to.
//!
//! Every batch the store acknowledges is one append, so its cost shows in every submit and
//! removal: a `write` of a small record took about 1 us on the 2-core VM. Where the mark is
//! mapped (see `mark`: no `sync_wal`, a file system that rewrites allocated blocks in place),
//! intent files are mapped too: created at their full size with `fallocate`, so that every
//! block is allocated before anything is copied in, and a record is copied into the mapping
//! (tens of ns). The page cache holds it from then on, as it holds a `write`, so it survives
//! the process being killed. A file that cannot be allocated (a full disk) fails the append
//! that needed it with an error, and nothing of it is left.
//!
//! A mapped file ends in zeros after its last record; reading stops there (see
//! `read_records`). Elsewhere a record is written with `write`, and fsynced with `sync_wal`.

use std::{fs::File, io::Write, path::Path};

/// Intent files are started past this size, or mapped at this size.
pub const INTENT_FILE_BYTES: u64 = 4 << 20;

/// The file appends go to, and how.
pub struct IntentFile {
	file: File,
	/// The whole file mapped, allocated up front (see the module documentation).
	mapped: Option<memmap2::MmapMut>,
	/// Bytes of records in it.
	bytes: u64,
	/// Bytes a failed append copied into the mapping after them.
	dirty: usize,
}

impl IntentFile {
	/// Create (or truncate) the file at `path`. `map`: allocate it whole, large enough for
	/// a record of `first` bytes, and map it; on failure the file is deleted again.
	pub fn create(path: &Path, map: bool, first: usize) -> std::io::Result<IntentFile> {
		let file = File::options().read(true).write(true).create(true).truncate(true).open(path)?;
		if !map {
			return Ok(IntentFile { file, mapped: None, bytes: 0, dirty: 0 });
		}
		let size = INTENT_FILE_BYTES.max(first as u64);
		match allocate(&file, size).and_then(|()| map_file(&file)) {
			Ok(mapped) => Ok(IntentFile { file, mapped: Some(mapped), bytes: 0, dirty: 0 }),
			Err(err) => {
				drop(file);
				let _ = std::fs::remove_file(path);
				Err(err)
			}
		}
	}

	/// Whether a record of `len` bytes goes into this file, rather than a new one.
	pub fn fits(&self, len: usize) -> bool {
		match &self.mapped {
			Some(map) => self.bytes + len as u64 <= map.len() as u64,
			None => self.bytes < INTENT_FILE_BYTES,
		}
	}

	/// Append `record` (which [`IntentFile::fits`]); fsync it with `sync` (never mapped).
	/// `cut`: write only that many of its bytes and fail, as a full disk would (tests).
	pub fn append(&mut self, record: &[u8], sync: bool, cut: Option<usize>) -> std::io::Result<()> {
		let written = &record[..cut.unwrap_or(record.len())];
		match &mut self.mapped {
			Some(map) => {
				let at = self.bytes as usize;
				map[at..at + written.len()].copy_from_slice(written);
				self.dirty = written.len();
			}
			None => {
				self.file.write_all(written)?;
				if sync {
					self.file.sync_data()?;
				}
			}
		}
		if cut.is_some() {
			return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "injected failure"));
		}
		self.bytes += record.len() as u64;
		Ok(())
	}

	/// Take back whatever a failed append left after the records, so that neither a reopen
	/// nor the next record finds it.
	pub fn take_back(&mut self) -> std::io::Result<()> {
		let good = self.bytes;
		match &mut self.mapped {
			Some(map) => {
				// Zeros are the file's end.
				let at = good as usize;
				map[at..at + self.dirty].fill(0);
				self.dirty = 0;
				Ok(())
			}
			None => {
				use std::io::{Seek, SeekFrom};
				self.file.set_len(good)?;
				self.file.seek(SeekFrom::Start(good)).map(|_| ())
			}
		}
	}
}

/// Give `file` `size` bytes, every block allocated.
fn allocate(file: &File, size: u64) -> std::io::Result<()> {
	#[cfg(target_os = "linux")]
	{
		rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, size)
			.map_err(std::io::Error::from)
	}
	#[cfg(not(target_os = "linux"))]
	{
		// Never reached: files are mapped only on Linux (see `mark`).
		file.set_len(size)
	}
}

fn map_file(file: &File) -> std::io::Result<memmap2::MmapMut> {
	// SAFETY: a mapping is unsound only if the file changes size under it. This is the
	// store's own file (parity-db holds the directory's lock while the store is open), given
	// its size before it is mapped and never truncated while mapped.
	#[allow(unsafe_code)]
	unsafe {
		memmap2::MmapMut::map_mut(file)
	}
}
