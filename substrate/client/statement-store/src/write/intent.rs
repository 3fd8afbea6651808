//! The intent log: the store's own redo log of acknowledged changes.
//!
//! parity-db queues a commit in memory and writes it to its log later; a process killed in
//! between loses it. Writing parity-db's log record on the submitting thread (what this store
//! did first) costs about half of a submit, because parity-db plans every btree and value
//! table change at that point. Instead, each change the store acknowledges is first appended
//! to a small redo log of its own, the *intent log*: one record per batch with the batch's
//! steps (statements added with their account, statements removed with their ban, bans
//! lifted), in commit order, each with a sequence number and a checksum. Appending is one
//! `write` (plus an fsync with `sync_wal`). The same sequence number goes into the batch's
//! parity-db commit (meta key `intent`), so after a crash opening knows exactly which batches
//! parity-db already holds and redoes the rest, in order, from the same starting state.
//!
//! A batch is appended *before* it is staged and published: nothing is visible to a query,
//! a subscriber or parity-db before it is durable. If the append fails (a full disk), the
//! batch is dropped whole, its sequence number is not used up, and what the failed write left
//! in the file is taken back; the caller gets an error naming the file.
//!
//! Records are self-delimiting (a magic, the length, a checksum over both and the body), so
//! reading after damage resumes at the next intact record; a gap in sequence numbers is
//! reported, never skipped silently (see `open`). Intent files are deleted once parity-db
//! holds every batch in them (see `writeback`).
//!
//! A gap at the end cannot be seen in the records themselves: if the newest intent file is
//! lost, or cut short at a record boundary, what is left reads as a complete log. So every
//! append also writes the batch's number into a small file of its own, the *mark*
//! (`intent.mark`: the number and its checksum in one of two slots, see `mark`; synced with
//! `sync_wal`).
//! The mark only moves forward; opening compares it with the newest batch found in the
//! database and the intent files, and a mark past both is a missing tail.

use crate::{error::Error, error::Result};
use codec::{Decode, Encode};
use parking_lot::Mutex;
use statement_primitives::{AccountId, Hash};
use std::{
	hash::Hasher,
	path::{Path, PathBuf},
	sync::atomic::{AtomicU64, Ordering},
};

/// One step of a batch, enough to redo it exactly against the state it started from.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Step {
	/// A statement admitted for `account`.
	Add {
		/// The signer's account.
		account: AccountId,
		/// The statement's encoding.
		encoding: Vec<u8>,
	},
	/// A stored statement removed, banned until the given time if any.
	Remove {
		/// Its hash.
		hash: Hash,
		/// End of its ban (unix seconds).
		ban_until: Option<u64>,
	},
	/// A ban lifted.
	Unban {
		/// The banned hash.
		hash: Hash,
		/// When the ban would have ended.
		until: u64,
	},
}

/// One batch from the intent log: its sequence number and steps.
pub type Intent = (u64, Vec<Step>);

/// Every record starts with these bytes, so that reading can find the next intact record
/// after a damaged one.
const MAGIC: [u8; 4] = *b"SSi2";
/// Magic, body length (u32 LE), xxh64 of the length and the body (u64 LE).
const RECORD_HEADER: usize = 16;
/// Records of files written before the magic: body length, xxh64 of the body.
const LEGACY_HEADER: usize = 12;

mod file;
mod mark;
use file::IntentFile;
pub use mark::{read_mark, MARK_FILE};

struct Current {
	/// The mark, rewritten after every append.
	mark: mark::Mark,
	/// Intent files are named `intent-<first sequence>.log`.
	file: IntentFile,
	first_seq: u64,
	/// A failed append could not be taken back: the next append starts a new file.
	broken: bool,
	/// Older files still needed, oldest first: (first sequence, path).
	older: Vec<(u64, PathBuf)>,
}

/// The store's redo log (see the module documentation).
pub struct IntentLog {
	dir: PathBuf,
	sync: bool,
	/// Whether intent files are mapped (see `file`).
	mapped: bool,
	current: Mutex<Current>,
	/// The sequence number the next append takes; advanced only by an append that succeeded.
	next_seq: AtomicU64,
	last_appended: AtomicU64,
	/// Appends that fail on purpose, for the tests of what a failed write leaves behind.
	#[cfg(test)]
	pub(super) fail_appends: std::sync::atomic::AtomicUsize,
}

fn intent_path(dir: &Path, first_seq: u64) -> PathBuf {
	dir.join(format!("intent-{first_seq:020}.log"))
}

/// Intent files in `dir`, oldest first.
fn intent_files(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
	let mut files = Vec::new();
	for entry in std::fs::read_dir(dir)? {
		let path = entry?.path();
		let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
		if let Some(seq) = name
			.strip_prefix("intent-")
			.and_then(|rest| rest.strip_suffix(".log"))
			.and_then(|seq| seq.parse::<u64>().ok())
		{
			files.push((seq, path));
		}
	}
	files.sort();
	Ok(files)
}

/// What reading the intent files found.
#[derive(Debug, Default)]
pub struct IntentRead {
	/// Intact records in sequence order. Where two hold the same sequence number, the later
	/// one wins: the earlier was an append that failed and was retried under that number.
	pub records: Vec<Intent>,
	/// The files read, oldest first.
	pub files: Vec<PathBuf>,
	/// Stretches that held no intact record: (file, byte offset, length).
	pub damaged: Vec<(PathBuf, usize, usize)>,
}

impl IntentRead {
	fn push(&mut self, record: Intent) {
		while self.records.last().is_some_and(|(seq, _)| *seq >= record.0) {
			self.records.pop();
		}
		self.records.push(record);
	}

	/// The first run of batches after `held` that no intact record holds, if a later one
	/// does: `(first, last)` missing.
	pub fn gap_after(&self, held: u64) -> Option<(u64, u64)> {
		let newer = self.records.iter().filter(|(seq, _)| *seq > held);
		(held + 1..)
			.zip(newer)
			.find(|(expected, (seq, _))| seq != expected)
			.map(|(expected, (seq, _))| (expected, seq - 1))
	}
}

/// Every intact record in the intent files of `dir`. Records are self-delimiting and
/// checksummed, so a damaged stretch (a flipped byte, a torn append) costs only the records
/// in it: reading goes on at the next intact record. The caller decides what a gap in the
/// sequence numbers means ([`IntentRead::gap_after`]).
pub fn read_intents(dir: &Path) -> Result<IntentRead> {
	let shown = dir.display().to_string();
	let files = intent_files(dir).map_err(|source| Error::Io {
		operation: "list the intent files in",
		path: shown,
		source,
	})?;
	let mut read = IntentRead::default();
	for (_, path) in files {
		let bytes = std::fs::read(&path).map_err(|source| Error::Io {
			operation: "read the intent file",
			path: path.display().to_string(),
			source,
		})?;
		if bytes.iter().all(|byte| *byte == 0) {
			// Empty, or mapped and allocated with no record yet (see `file`).
		} else if bytes.starts_with(&MAGIC) {
			read_records(&bytes, &path, &mut read);
		} else {
			read_legacy_records(&bytes, &path, &mut read);
		}
		read.files.push(path);
	}
	Ok(read)
}

fn read_records(bytes: &[u8], path: &Path, read: &mut IntentRead) {
	let mut at = 0;
	while at < bytes.len() {
		if let Some((len, record)) = parse_record(&bytes[at..]) {
			read.push(record);
			at += RECORD_HEADER + len;
			continue;
		}
		if bytes[at..].iter().all(|byte| *byte == 0) {
			// The unwritten rest of a mapped file (see `file`).
			break;
		}
		let next = (at + 1..bytes.len())
			.filter(|from| bytes[*from..].starts_with(&MAGIC))
			.find(|from| parse_record(&bytes[*from..]).is_some())
			.unwrap_or(bytes.len());
		read.damaged.push((path.to_path_buf(), at, next - at));
		at = next;
	}
}

/// Where the intact records at the start of `bytes` end: the file's length unless it is
/// mapped (then zeros follow, see `file`). Tests cut and damage records there.
#[cfg(test)]
pub(crate) fn records_end(bytes: &[u8]) -> usize {
	let mut at = 0;
	while let Some((len, _)) = parse_record(&bytes[at..]) {
		at += RECORD_HEADER + len;
	}
	at
}

fn parse_record(bytes: &[u8]) -> Option<(usize, Intent)> {
	if !bytes.starts_with(&MAGIC) {
		return None;
	}
	let len_bytes: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
	let len = u32::from_le_bytes(len_bytes) as usize;
	let checksum = u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?);
	let body = bytes.get(RECORD_HEADER..RECORD_HEADER.checked_add(len)?)?;
	if checksum_of(&len_bytes, body) != checksum {
		return None;
	}
	let mut input = body;
	let record = Intent::decode(&mut input).ok()?;
	input.is_empty().then_some((len, record))
}

/// Records written before the magic (an older build that crashed): read up to the first
/// one that does not check out, as that build did.
fn read_legacy_records(bytes: &[u8], path: &Path, read: &mut IntentRead) {
	let mut at = 0;
	while at < bytes.len() {
		let parsed = (|| {
			let rest = &bytes[at..];
			let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
			let checksum = u64::from_le_bytes(rest.get(4..12)?.try_into().ok()?);
			let body = rest.get(LEGACY_HEADER..LEGACY_HEADER.checked_add(len)?)?;
			let mut hasher = twox_hash::XxHash64::with_seed(0);
			hasher.write(body);
			(hasher.finish() == checksum).then_some(())?;
			Some((len, Intent::decode(&mut &body[..]).ok()?))
		})();
		let Some((len, record)) = parsed else {
			read.damaged.push((path.to_path_buf(), at, bytes.len() - at));
			return;
		};
		read.push(record);
		at += LEGACY_HEADER + len;
	}
}

fn checksum_of(len: &[u8; 4], body: &[u8]) -> u64 {
	let mut hasher = twox_hash::XxHash64::with_seed(0);
	hasher.write(len);
	hasher.write(body);
	hasher.finish()
}

fn create_file(path: &Path, mapped: bool, first: usize) -> Result<IntentFile> {
	IntentFile::create(path, mapped, first).map_err(|source| Error::Io {
		operation: "create the intent file",
		path: path.display().to_string(),
		source,
	})
}

impl IntentLog {
	/// Start a new intent file in `dir`; the first batch gets sequence `next_seq`.
	pub fn create(dir: &Path, sync: bool, next_seq: u64) -> Result<IntentLog> {
		// Truncate: opening read every intent file, and a file of this name can only hold
		// a record that was never acknowledged.
		// Opening has compared the mark with what it found, and starts numbering after the
		// newest batch: the mark says that one (a skipped missing tail included).
		let mark = mark::Mark::open(dir, sync, next_seq - 1).map_err(|source| Error::Io {
			operation: "write the intent mark",
			path: dir.join(MARK_FILE).display().to_string(),
			source,
		})?;
		// Intent files are mapped where the mark is (the same directory and `sync`).
		let mapped = mark.is_mapped();
		let file = create_file(&intent_path(dir, next_seq), mapped, 0)?;
		Ok(IntentLog {
			dir: dir.to_path_buf(),
			sync,
			mapped,
			current: Mutex::new(Current {
				mark,
				file,
				first_seq: next_seq,
				broken: false,
				older: Vec::new(),
			}),
			next_seq: AtomicU64::new(next_seq),
			last_appended: AtomicU64::new(next_seq - 1),
			#[cfg(test)]
			fail_appends: Default::default(),
		})
	}

	/// The sequence number the next batch takes. Callers hold the store's writer lock, so
	/// batches take numbers in commit order, and a number is used up only by an append that
	/// succeeded: a failed batch leaves no gap.
	pub fn next_seq(&self) -> u64 {
		self.next_seq.load(Ordering::Acquire)
	}

	/// Append batch `seq` (from [`IntentLog::next_seq`]). On return it survives the process
	/// being killed (and, with `sync_wal`, power loss). On error nothing of it is left for a
	/// later read to find, as far as the file system lets that be undone (see below).
	pub fn append(&self, seq: u64, steps: &[Step]) -> Result<()> {
		let body = (seq, steps).encode();
		let len = (body.len() as u32).to_le_bytes();
		let mut record = Vec::with_capacity(RECORD_HEADER + body.len());
		record.extend_from_slice(&MAGIC);
		record.extend_from_slice(&len);
		record.extend_from_slice(&checksum_of(&len, &body).to_le_bytes());
		record.extend_from_slice(&body);
		let mut current = self.current.lock();
		if current.broken || !current.file.fits(record.len()) {
			let path = intent_path(&self.dir, seq);
			current.file = create_file(&path, self.mapped, record.len())?;
			let old_first = std::mem::replace(&mut current.first_seq, seq);
			// A broken file that held nothing but the failed record has this very name.
			if old_first != seq {
				current.older.push((old_first, intent_path(&self.dir, old_first)));
			}
			current.broken = false;
		}
		let written = current
			.file
			.append(&record, self.sync, self.cut(record.len()))
			.and_then(|()| current.mark.write(seq));
		if let Err(source) = written {
			// Take back whatever reached the file, so that neither a crash reopen nor the
			// next record finds it. If even that fails (the file descriptor is gone, say),
			// the next append starts a new file, where its record, under the same sequence
			// number, supersedes any copy of this one.
			if current.file.take_back().is_err() {
				current.broken = true;
			}
			return Err(Error::Io {
				operation: "append to the intent log",
				path: intent_path(&self.dir, current.first_seq).display().to_string(),
				source,
			});
		}
		self.next_seq.store(seq + 1, Ordering::Release);
		self.last_appended.store(seq, Ordering::Release);
		Ok(())
	}

	/// How much of a record of `len` bytes an append that fails on purpose writes: half of
	/// it, as when a disk fills up mid-write (tests).
	fn cut(&self, len: usize) -> Option<usize> {
		#[cfg(test)]
		if self
			.fail_appends
			.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(1))
			.is_ok()
		{
			return Some(len / 2);
		}
		let _ = len;
		None
	}

	/// The file appends go to now.
	pub fn current_path(&self) -> PathBuf {
		intent_path(&self.dir, self.current.lock().first_seq)
	}

	/// The newest appended sequence number.
	pub fn last_appended(&self) -> u64 {
		self.last_appended.load(Ordering::Acquire)
	}

	/// parity-db holds every batch up to `seq`: delete the intent files that hold only those.
	pub fn release_through(&self, seq: u64) {
		let mut current = self.current.lock();
		let mut keep = Vec::new();
		let older = std::mem::take(&mut current.older);
		let firsts: Vec<u64> =
			older.iter().map(|(first, _)| *first).skip(1).chain([current.first_seq]).collect();
		for ((first, path), next_first) in older.into_iter().zip(firsts) {
			if next_first - 1 <= seq {
				if let Err(err) = std::fs::remove_file(&path) {
					log::warn!(target: "statement-store", "cannot delete {}: {err}", path.display());
				}
			} else {
				keep.push((first, path));
			}
		}
		current.older = keep;
	}

	/// Delete every intent file: the caller has made parity-db hold all of them.
	pub fn release_all(&self) {
		let current = self.current.lock();
		let newest = intent_path(&self.dir, current.first_seq);
		for path in current.older.iter().map(|(_, path)| path).chain([&newest]) {
			if let Err(err) = std::fs::remove_file(path) {
				log::warn!(target: "statement-store", "cannot delete {}: {err}", path.display());
			}
		}
	}
}

#[cfg(test)]
mod tests;
