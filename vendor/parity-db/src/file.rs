// Copyright 2021-2022 Parity Technologies (UK) Ltd.
// This file is dual-licensed as Apache-2.0 or MIT.

//! Utilities for db file.

use crate::{
	error::{try_io, Result},
	mmap::Mmap,
	parking_lot::RwLock,
	table::TableId,
};
use std::{
	cell::RefCell,
	sync::{
		atomic::{AtomicBool, AtomicU64, Ordering},
		Arc,
	},
};

trait OpenOptionsExt {
	fn disable_read_ahead(&mut self) -> &mut Self;
}

impl OpenOptionsExt for std::fs::OpenOptions {
	#[cfg(not(windows))]
	fn disable_read_ahead(&mut self) -> &mut Self {
		// Not supported
		self
	}

	#[cfg(windows)]
	fn disable_read_ahead(&mut self) -> &mut Self {
		use std::os::windows::fs::OpenOptionsExt;
		self.custom_flags(winapi::um::winbase::FILE_FLAG_RANDOM_ACCESS)
	}
}

#[cfg(target_os = "linux")]
fn disable_read_ahead(file: &std::fs::File) -> std::io::Result<()> {
	use std::os::unix::io::AsRawFd;
	let err = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
	if err != 0 {
		Err(std::io::Error::from_raw_os_error(err))
	} else {
		Ok(())
	}
}

#[cfg(target_os = "macos")]
fn disable_read_ahead(file: &std::fs::File) -> std::io::Result<()> {
	use std::os::unix::io::AsRawFd;
	if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_RDAHEAD, 0) } != 0 {
		Err(std::io::Error::last_os_error())
	} else {
		Ok(())
	}
}

#[cfg(not(any(target_os = "macos", target_os = "linux")))]
fn disable_read_ahead(_file: &std::fs::File) -> std::io::Result<()> {
	Ok(())
}

const GROW_SIZE_BYTES: u64 = 256 * 1024;

// Full disks (statement-store patch).
//
// Tables are written through memory maps. A page of a map whose file has no block behind it
// (a sparse file extended with `set_len`) faults with SIGBUS when it is first written and the
// file system has no block left to give it: the process dies, with nothing to catch. So every
// file that is mapped gets its blocks allocated before it is mapped or grown ([`reserve`]),
// and a full disk becomes an error of the call that grows the file.
//
// An error in a background worker stops the database for good, which would turn a disk that
// is full for a minute into a database that must be reopened. So the background workers wait
// for space instead ([`until_space`]): the commit stays queued, reads go on, and the work
// resumes where it stopped once the disk has room again, or fails when the database shuts
// down.

/// Allocate the blocks of `file` from `from` to `to` (extending the file to `to` if it is
/// shorter), so that writing anywhere in that range through a map cannot fault for lack of
/// space. A full disk is an `Err` (ENOSPC), and the file's length is then left as it was.
pub fn reserve(file: &std::fs::File, from: u64, to: u64) -> std::io::Result<()> {
	if to <= from {
		return Ok(())
	}
	reserve_range(file, from, to)
}

#[cfg(target_os = "linux")]
fn reserve_range(file: &std::fs::File, from: u64, to: u64) -> std::io::Result<()> {
	use std::os::unix::io::AsRawFd;
	let (offset, len) = (from as libc::off_t, (to - from) as libc::off_t);
	// posix_fallocate returns the error number instead of setting errno. glibc falls back to
	// writing a byte into every block where the file system has no fallocate.
	match unsafe { libc::posix_fallocate(file.as_raw_fd(), offset, len) } {
		0 => Ok(()),
		err => Err(std::io::Error::from_raw_os_error(err)),
	}
}

#[cfg(all(unix, not(target_os = "linux")))]
fn reserve_range(file: &std::fs::File, from: u64, to: u64) -> std::io::Result<()> {
	// No portable fallocate: writing zeros makes the file system allocate the blocks, and a
	// full disk fails the write. Zeros are written only past the end (the range below it was
	// allocated when it was first reserved), and a failure leaves the length as it was.
	use std::os::unix::fs::FileExt;
	let len = file.metadata()?.len();
	let start = from.max(len);
	let zeros = vec![0u8; 64 * 1024];
	let mut at = start;
	while at < to {
		let n = (to - at).min(zeros.len() as u64) as usize;
		if let Err(e) = file.write_all_at(&zeros[..n], at) {
			let _ = file.set_len(len);
			return Err(e)
		}
		at += n as u64;
	}
	Ok(())
}

#[cfg(not(unix))]
fn reserve_range(file: &std::fs::File, _from: u64, to: u64) -> std::io::Result<()> {
	// NTFS allocates the clusters of a file extended with SetEndOfFile unless it is sparse.
	if file.metadata()?.len() < to {
		file.set_len(to)?;
	}
	Ok(())
}

/// Blocks of a fixed-size sparse file (an index or reference count table, mostly empty while
/// a column is small) allocated a region at a time, the first time a write goes there.
/// Reserving the whole file would take tens of MiB per column on a new database; reserving
/// nothing would let the first write to a page fault on a full disk. (statement-store patch)
#[derive(Debug)]
pub struct Regions {
	file: std::fs::File,
	len: u64,
	done: Vec<AtomicU64>,
}

/// Whether reading a hole of `file` through a map allocates a block (tmpfs).
#[cfg(target_os = "linux")]
fn reads_allocate(file: &std::fs::File) -> bool {
	use std::os::unix::io::AsRawFd;
	const TMPFS_MAGIC: i64 = 0x0102_1994;
	let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
	unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) == 0 && stat.f_type as i64 == TMPFS_MAGIC }
}

#[cfg(not(target_os = "linux"))]
fn reads_allocate(_file: &std::fs::File) -> bool {
	false
}

/// Bytes allocated at once by [`Regions::ensure`].
const REGION_BYTES: u64 = 64 * 1024;

impl Regions {
	/// `file`, `len` bytes long (sparse), with no region allocated yet.
	pub fn new(file: std::fs::File, len: u64) -> Regions {
		let regions = len.div_ceil(REGION_BYTES);
		Regions { file, len, done: (0..regions.div_ceil(64)).map(|_| AtomicU64::new(0)).collect() }
	}

	/// Allocate what must be there before the file is used: the first `header` bytes (written
	/// in place), or, on a file system where even *reading* a hole through a map takes a
	/// block (tmpfs: a read fault allocates a page, and faults with SIGBUS when it is full),
	/// the whole file.
	pub fn ensure_initial(&self, header: u64, what: &dyn std::fmt::Display) -> Result<()> {
		let len = if reads_allocate(&self.file) { self.len } else { header };
		self.ensure(0, len, what)
	}

	/// Allocate the blocks under `offset..offset + len` that no earlier call did. On a full
	/// disk an error (on a background worker: a wait, see [`until_space`]).
	pub fn ensure(&self, offset: u64, len: u64, what: &dyn std::fmt::Display) -> Result<()> {
		if len == 0 {
			return Ok(())
		}
		for region in offset / REGION_BYTES..=(offset + len - 1) / REGION_BYTES {
			let (word, bit) = ((region / 64) as usize, 1u64 << (region % 64));
			let Some(done) = self.done.get(word) else { continue };
			if done.load(Ordering::Acquire) & bit != 0 {
				continue
			}
			let start = region * REGION_BYTES;
			let end = (start + REGION_BYTES).min(self.len);
			until_space(what, || reserve(&self.file, start, end))?;
			done.fetch_or(bit, Ordering::Release);
		}
		Ok(())
	}
}

/// Whether `error` says the disk (or the user's quota) has no room left.
pub fn is_out_of_space(error: &std::io::Error) -> bool {
	#[cfg(unix)]
	if matches!(error.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT)) {
		return true
	}
	matches!(error.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
}

thread_local! {
	/// On a background worker's thread: the database's shutdown flag, see [`until_space`].
	static WAIT_FOR_SPACE: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Make the calling thread (a background worker) wait for disk space in [`until_space`] for
/// as long as `shutdown` is false.
pub fn wait_for_space_on_this_thread(shutdown: Arc<AtomicBool>) {
	WAIT_FOR_SPACE.with(|wait| *wait.borrow_mut() = Some(shutdown));
}

/// Run `op`; while it fails for lack of disk space on a background worker's thread, wait and
/// run it again, until it succeeds or the database shuts down. `op` must be safe to repeat
/// after a failure. Elsewhere (opening, a caller's thread) the first failure is returned.
pub fn until_space<T>(
	what: &dyn std::fmt::Display,
	mut op: impl FnMut() -> std::io::Result<T>,
) -> Result<T> {
	let mut waited = None;
	let mut pause = std::time::Duration::from_millis(10);
	loop {
		let error = match op() {
			Ok(value) => {
				if let Some(since) = waited {
					log::info!(
						target: "parity-db",
						"Disk space is back: {what} done after waiting {:.1?}",
						std::time::Instant::now().duration_since(since),
					);
				}
				return Ok(value)
			},
			Err(error) => error,
		};
		let keep_waiting = is_out_of_space(&error) &&
			WAIT_FOR_SPACE.with(|wait| {
				wait.borrow().as_ref().map_or(false, |shutdown| !shutdown.load(Ordering::SeqCst))
			});
		if !keep_waiting {
			return try_io!(Err(error))
		}
		if waited.is_none() {
			log::warn!(
				target: "parity-db",
				"No disk space for {what} ({error}): waiting for space; reads go on",
			);
			waited = Some(std::time::Instant::now());
		}
		std::thread::sleep(pause);
		pause = (pause * 2).min(std::time::Duration::from_millis(500));
	}
}

#[derive(Debug)]
pub struct TableFile {
	pub map: RwLock<Option<(Mmap, std::fs::File)>>,
	pub path: std::path::PathBuf,
	pub capacity: AtomicU64,
	pub id: TableId,
	entry_size: u16,
}

impl TableFile {
	pub fn open(filepath: std::path::PathBuf, entry_size: u16, id: TableId) -> Result<Self> {
		let mut capacity = 0u64;
		let map = if let Err(error) = std::fs::metadata(&filepath) {
			match error.kind() {
				std::io::ErrorKind::NotFound => None,
				_ => return try_io!(Err(error)),
			}
		} else {
			let file = try_io!(std::fs::OpenOptions::new()
				.read(true)
				.write(true)
				.disable_read_ahead()
				.open(filepath.as_path()));
			try_io!(disable_read_ahead(&file));
			let mut len = try_io!(file.metadata()).len();
			if len == 0 {
				// Preallocate.
				capacity += GROW_SIZE_BYTES / entry_size as u64;
				len = GROW_SIZE_BYTES;
			} else {
				capacity = len / entry_size as u64;
			}
			// Blocks for the whole file: one grown with `set_len` by an older version has holes
			// that a write through the map could fault on (cheap where there are none).
			try_io!(reserve(&file, 0, len));
			let map = Mmap::map_growable(&file, len as usize)?;
			Some((map, file))
		};
		Ok(TableFile {
			path: filepath,
			map: RwLock::new(map),
			capacity: AtomicU64::new(capacity),
			id,
			entry_size,
		})
	}

	fn create_file(&self) -> Result<std::fs::File> {
		log::debug!(target: "parity-db", "Created value table {}", self.id);
		let file = try_io!(std::fs::OpenOptions::new()
			.create(true)
			.read(true)
			.write(true)
			.disable_read_ahead()
			.open(self.path.as_path()));
		try_io!(disable_read_ahead(&file));
		Ok(file)
	}

	/// A read of `len` bytes at `offset` must lie inside the file: the map reaches past its end
	/// (address space reserved for growth), where reading faults with SIGBUS. An address out
	/// of the file comes from a damaged index or entry, so it is a corruption error.
	/// (statement-store patch)
	fn check_read(&self, offset: u64, len: usize, mapped: bool) -> Result<()> {
		let end = offset.checked_add(len as u64);
		let file_len = self.capacity.load(Ordering::Acquire) * self.entry_size as u64;
		match end {
			Some(end) if mapped && end <= file_len => Ok(()),
			_ => Err(crate::error::Error::Corruption(format!(
				"{}: read of {len} bytes at {offset} is outside the table file ({file_len} bytes)",
				self.path.display(),
			))),
		}
	}

	pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
		let map = self.map.read();
		self.check_read(offset, buf.len(), map.is_some())?;
		let (map, _) = map.as_ref().unwrap();
		map.read_at(buf, offset as usize);
		Ok(())
	}

	#[cfg(not(feature = "loom"))]
	pub fn slice_at(&self, offset: u64, len: usize) -> Result<MappedBytesGuard<'_>> {
		let map = self.map.read();
		self.check_read(offset, len, map.is_some())?;
		Ok(parking_lot::RwLockReadGuard::map(map, |map| {
			let (map, _) = map.as_ref().unwrap();
			map.slice(offset as usize, len)
		}))
	}

	#[cfg(feature = "loom")]
	pub fn slice_at(&self, offset: u64, len: usize) -> Result<MappedBytesGuard> {
		let map = self.map.read();
		self.check_read(offset, len, map.is_some())?;
		let (map, _) = map.as_ref().unwrap();
		Ok(MappedBytesGuard::new(map.slice(offset as usize, len).to_vec()))
	}

	pub fn write_at(&self, buf: &[u8], offset: u64) -> Result<()> {
		let map = self.map.read();
		let (map, _) = map.as_ref().unwrap();
		let offset = offset as usize;

		// SAFETY: Writes happen under a shared lock, but all entries that are being written are
		// accessed through the log overlay in other threads, so no other slice of this range
		// exists.
		unsafe { map.write_at(buf, offset) };
		Ok(())
	}

	pub fn grow(&self, entry_size: u16) -> Result<()> {
		// The blocks are reserved before the map is touched, and without the map's write lock:
		// waiting for disk space must not stop readers. Only the commit worker grows a table.
		// (statement-store patch)
		let what = format_args!("growing {}", self.path.display());
		let existing = self.map.read().as_ref().map(|(_, file)| file.try_clone());
		let (file, new_len) = match existing {
			None => {
				let file = self.create_file()?;
				until_space(&what, || reserve(&file, 0, GROW_SIZE_BYTES))?;
				(Some(file), GROW_SIZE_BYTES)
			},
			Some(file) => {
				let file = try_io!(file);
				let len = try_io!(file.metadata()).len();
				let new_len = len + GROW_SIZE_BYTES;
				until_space(&what, || reserve(&file, len, new_len))?;
				(None, new_len)
			},
		};
		let mut map_and_file = self.map.write();
		match map_and_file.as_mut() {
			None => {
				let file = file.expect("created above when there was no map");
				let map = Mmap::map_growable(&file, 0)?;
				*map_and_file = Some((map, file));
			},
			Some((map, file)) =>
				if map.len() < new_len as usize {
					let new_map = Mmap::map_growable(file, new_len as usize)?;
					let old_map = std::mem::replace(map, new_map);
					old_map.flush()?;
				},
		}
		let capacity = new_len / entry_size as u64;
		self.capacity.store(capacity, Ordering::Release);
		Ok(())
	}

	pub fn flush(&self) -> Result<()> {
		if let Some((map, _)) = self.map.read().as_ref() {
			map.flush()?;
		}
		Ok(())
	}

	pub fn remove(&self) -> Result<()> {
		let mut map = self.map.write();
		if let Some((map, file)) = map.take() {
			drop(map);
			drop(file);
			try_io!(std::fs::remove_file(&self.path));
		}
		Ok(())
	}
}

// Loom is missing support for guard projection, so we copy the data as a workaround.
#[cfg(feature = "loom")]
pub struct MappedBytesGuard<'a> {
	_phantom: std::marker::PhantomData<&'a ()>,
	data: Vec<u8>,
}

#[cfg(feature = "loom")]
impl<'a> MappedBytesGuard<'a> {
	pub fn new(data: Vec<u8>) -> Self {
		Self { _phantom: std::marker::PhantomData, data }
	}
}

#[cfg(feature = "loom")]
impl<'a> std::ops::Deref for MappedBytesGuard<'a> {
	type Target = [u8];

	fn deref(&self) -> &Self::Target {
		self.data.as_slice()
	}
}

#[cfg(not(feature = "loom"))]
pub type MappedBytesGuard<'a> = parking_lot::MappedRwLockReadGuard<'a, [u8]>;
