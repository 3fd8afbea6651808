//! Fixtures that need privileges: a tmpfs of a fixed size to fill (mounting needs root) and
//! a high descriptor limit.
//!
//! Tests that use them are marked `#[ignore = "needs root: ..."]` and live in a module named
//! `needs_root`, so `cargo test` lists them as ignored rather than passing them unrun.
//! `cargo test -- --ignored needs_root::` runs them; without the privilege each fails with a
//! message saying what it lacks, never passes. CI runs them as root and checks that every one
//! ran (`scripts/ran_all.py`).

use std::{
	path::{Path, PathBuf},
	process::Command,
};

/// A tmpfs of a fixed size, unmounted when dropped.
pub struct Tmpfs {
	_dir: tempfile::TempDir,
	path: PathBuf,
}

impl Tmpfs {
	/// Mount a tmpfs of `mib` MiB in a fresh directory; fails the test where that is not
	/// permitted.
	pub fn mount(mib: u64) -> Tmpfs {
		Tmpfs::try_mount(mib).unwrap_or_else(|why| {
			panic!("cannot mount a {mib} MiB tmpfs: {why}. This test needs root: run it as root")
		})
	}

	/// [`Tmpfs::mount`], or why not.
	pub fn try_mount(mib: u64) -> Result<Tmpfs, String> {
		let dir = tempfile::tempdir().map_err(|err| err.to_string())?;
		let path = dir.path().to_path_buf();
		let mounted = Command::new("mount")
			.args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
			.arg(&path)
			.output()
			.map_err(|err| format!("cannot run mount: {err}"))?;
		if !mounted.status.success() {
			return Err(format!(
				"mount: {} {}",
				mounted.status,
				String::from_utf8_lossy(&mounted.stderr).trim()
			));
		}
		Ok(Tmpfs { _dir: dir, path })
	}

	/// Where it is mounted.
	pub fn path(&self) -> &Path {
		&self.path
	}
}

impl Drop for Tmpfs {
	fn drop(&mut self) {
		let _ = Command::new("umount").arg(&self.path).status();
	}
}

/// Bytes free for an unprivileged writer on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> u64 {
	let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
		.expect("a path without NUL bytes");
	// SAFETY: statvfs writes into the struct it is given and reads the NUL-terminated path.
	let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
	let read = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
	assert_eq!(read, 0, "statvfs {}: {}", dir.display(), std::io::Error::last_os_error());
	stat.f_bavail as u64 * stat.f_frsize as u64
}

/// Fill `dir`'s file system with a file `name` until `leave` bytes are free; its path.
pub fn fill(dir: &Path, name: &str, leave: u64) -> PathBuf {
	let filler = dir.join(name);
	let size = free_bytes(dir).saturating_sub(leave);
	let chunk = vec![0x5au8; 1 << 20];
	let mut file = std::fs::File::create(&filler).expect("the filler file is created");
	let mut written = 0;
	while written < size {
		let n = chunk.len().min((size - written) as usize);
		std::io::Write::write_all(&mut file, &chunk[..n]).expect("the filler is written");
		written += n as u64;
	}
	file.sync_all().expect("the filler is synced");
	filler
}

/// Raise this process's descriptor limits so that at least `needed` descriptors may be
/// open: the soft limit to the hard one, and the hard one too where that is permitted (as
/// root). Fails the test where the limit stays below `needed`.
pub fn descriptors(needed: u64) {
	let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
	// SAFETY: getrlimit and setrlimit read and write only the struct they are given.
	assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
	if limit.rlim_max < needed {
		let raised = libc::rlimit { rlim_cur: needed, rlim_max: needed };
		if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
			panic!(
				"the hard descriptor limit is {} and cannot be raised to {needed} ({}): run \
				 this test as root, or raise the limit (ulimit -Hn {needed})",
				limit.rlim_max,
				std::io::Error::last_os_error()
			);
		}
		return;
	}
	limit.rlim_cur = limit.rlim_max;
	assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
}
