//! The bodies of a large answer, read ahead on helper threads and handed over in order.
//!
//! An answer of thousands of statements whose bodies are not cached costs one disk read and
//! one check (xxh3) per statement, each
//! independent of the others. A query reads its first
//! ids itself, a window at a time; once a quarter or more of a window came from disk and
//! enough ids are left, helpers read chunks of the rest (chunk k by helper k mod h) while the
//! asking thread turns the bodies already read into the answer, in order. An answer served
//! from the cache never starts helpers. A helper is at most one chunk ahead of the asker, so
//! the bodies in flight are a few chunks whatever the answer's size. The asker holds the view
//! lock throughout, as it does reading alone, so a helper reads what the asker would have.

use crate::{error::Error, error::Result, index::schema::Id, store::Inner};
use statement_primitives::Hash;
use std::sync::{mpsc, Arc};

/// Most threads a large read (a dump, the bodies of a large answer) reads on.
pub const READ_THREADS: usize = 4;

/// Threads a large read may use: the machine's parallelism, at most [`READ_THREADS`]. Asked
/// once: `available_parallelism` reads the cgroup files on every call (about 70 `statx` and
/// some reads: 29 us a call on this project's 2-core VM), which every large answer paid.
pub fn read_threads() -> usize {
	static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
	*THREADS.get_or_init(|| {
		std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, READ_THREADS)
	})
}

/// Fewer ids left are read on the asking thread alone: starting helpers would cost more
/// than they save.
pub const READ_AHEAD_FROM: usize = 1024;

/// Ids a query reads on its own thread before it looks at how many came from disk (a
/// quarter or more: the rest is read ahead).
pub const READ_AHEAD_WINDOW: usize = 128;

/// Ids a helper reads before handing their bodies over.
const CHUNK: usize = 256;

/// Bodies a query reads at a time on its own thread; a page of the journal (which may
/// blake2-hash a damaged body, see `Inner::read_hashed`) reads as many.
pub const HASH_GROUP: usize = 8;

/// A body as it was found.
pub enum Fetched {
	/// In the body cache.
	Cached(Arc<[u8]>),
	/// On disk (checked against the stored hashes), with its hash, not yet offered to the
	/// cache.
	Read(Vec<u8>, Hash),
}

impl Fetched {
	/// The body's encoding.
	pub fn bytes(&self) -> &[u8] {
		match self {
			Fetched::Cached(body) => body,
			Fetched::Read(body, _) => body,
		}
	}
}

impl Inner {
	/// The bodies of indexed `ids`, in order, each from the cache or else from disk (checked
	/// together, see [`Inner::bodies_from_disk`]); `None` for one that is quarantined. All
	/// of them are in memory at once: callers pass a few at a time.
	pub fn fetch_bodies(&self, ids: &[Id]) -> Result<Vec<Option<Fetched>>> {
		let mut fetched: Vec<Option<Fetched>> =
			ids.iter().map(|&id| self.reads.bodies.get(id).map(Fetched::Cached)).collect();
		let uncached: Vec<usize> = (0..ids.len()).filter(|&at| fetched[at].is_none()).collect();
		if uncached.is_empty() {
			return Ok(fetched);
		}
		let read =
			self.bodies_from_disk(&uncached.iter().map(|&at| ids[at]).collect::<Vec<_>>())?;
		for (at, body) in uncached.into_iter().zip(read) {
			fetched[at] = body.map(|(body, hash)| Fetched::Read(body, hash));
		}
		Ok(fetched)
	}

	/// `each` of every id in `ids`, in order, with its body as [`Inner::fetch_bodies`] finds
	/// it, the bodies read on up to [`READ_THREADS`] helper threads. The caller holds the
	/// view lock. A helper that cannot be started leaves its chunks to this thread.
	pub fn read_ahead(&self, ids: &[Id], mut each: impl FnMut(Id, Option<Fetched>)) -> Result<()> {
		let helpers = read_threads();
		let chunks: Vec<&[Id]> = ids.chunks(CHUNK).collect();
		let fetch_all = |chunk: &[Id]| self.fetch_bodies(chunk);
		std::thread::scope(|scope| {
			let mut lanes = Vec::with_capacity(helpers);
			for first in 0..helpers {
				let (send, receive) = mpsc::sync_channel(1);
				let chunks = &chunks;
				let helper = move || {
					for &chunk in chunks.iter().skip(first).step_by(helpers) {
						let read = crate::error::catch_db_panic(|| fetch_all(chunk));
						let failed = read.is_err();
						// The asker stopped (an error in an earlier chunk): so does the helper.
						if send.send(read).is_err() || failed {
							return;
						}
					}
				};
				let spawned = std::thread::Builder::new()
					.name("statement-read".into())
					.spawn_scoped(scope, helper);
				lanes.push(spawned.ok().map(|_| receive));
			}
			for (k, &chunk) in chunks.iter().enumerate() {
				let bodies = match &lanes[k % helpers] {
					Some(receive) => receive.recv().map_err(|_| {
						Error::Damaged("a thread reading an answer's bodies stopped".into())
					})??,
					None => fetch_all(chunk)?,
				};
				for (&id, body) in chunk.iter().zip(bodies) {
					each(id, body);
				}
			}
			Ok(())
		})
	}
}
