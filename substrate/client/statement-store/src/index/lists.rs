//! Whole id lists read by ordered iteration: the stored ids in admission order, the highest
//! stored id, and a list's segments. They walk anything [`Ordered`]: parity-db as it stands
//! (opening, upgrades, `check-db`), or the store's database with its staged batches laid over
//! parity-db (queries, walks, subscriptions), so that a reader never has to hand the staged
//! batches to parity-db to see them.

use crate::{
	error::{bad, Result},
	index::posting::decode_segment,
	index::schema::{self, Id, PostingKey},
};
use parity_db::ColId;

/// An ordered walk over one column's keys, as parity-db's iterator walks: [`Walk::seek`] to
/// a key, then [`Walk::next`] (ascending from it, itself included) or [`Walk::prev`]
/// (descending from it, itself included).
pub(crate) trait Walk {
	/// Go to `key`.
	fn seek(&mut self, key: &[u8]) -> Result<()>;
	/// The next key and value ascending.
	fn next(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
	/// The next key and value descending.
	fn prev(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>>;
}

/// What the list readers walk.
pub(crate) trait Ordered {
	/// Its walk.
	type Walk<'a>: Walk
	where
		Self: 'a;

	/// A walk over `col` that yields every key starting with `prefix` that the source holds;
	/// keys outside `prefix` may or may not come, and the readers stop at the prefix's end.
	fn walk(&self, col: ColId, prefix: &[u8]) -> Result<Self::Walk<'_>>;
}

impl Walk for parity_db::BTreeIterator<'_> {
	fn seek(&mut self, key: &[u8]) -> Result<()> {
		Ok(parity_db::BTreeIterator::seek(self, key)?)
	}

	fn next(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
		Ok(parity_db::BTreeIterator::next(self)?)
	}

	fn prev(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
		Ok(parity_db::BTreeIterator::prev(self)?)
	}
}

impl Ordered for parity_db::Db {
	type Walk<'a> = parity_db::BTreeIterator<'a>;

	fn walk(&self, col: ColId, _prefix: &[u8]) -> Result<Self::Walk<'_>> {
		Ok(self.iter(col)?)
	}
}

/// Stored ids in `[from, below)` in admission order, at most `limit`, from the segments of
/// [`PostingKey::All`] as `db` holds them.
pub(crate) fn stored_ids(db: &impl Ordered, from: Id, below: Id, limit: usize) -> Result<Vec<Id>> {
	let all = PostingKey::All;
	let prefix = all.prefix();
	let mut iter = db.walk(schema::COL_POSTING, &prefix)?;
	iter.seek(&all.segment_key(all.segment_base(from)))?;
	let (mut ids, mut segment) = (Vec::new(), Vec::new());
	while ids.len() < limit {
		let Some((key, value)) = iter.next()? else { break };
		if !key.starts_with(&prefix) {
			break;
		}
		segment.clear();
		decode_segment(&value, &mut segment).ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
		for &id in segment.iter().filter(|id| **id >= from) {
			if id >= below || ids.len() == limit {
				return Ok(ids);
			}
			ids.push(id);
		}
	}
	Ok(ids)
}

/// The highest stored id, from the last segment of [`PostingKey::All`] as `db` holds it.
pub(crate) fn last_stored_id(db: &impl Ordered) -> Result<Option<Id>> {
	let prefix = PostingKey::All.prefix();
	let mut past = prefix.clone();
	past[0] += 1;
	let mut iter = db.walk(schema::COL_POSTING, &prefix)?;
	iter.seek(&past)?;
	while let Some((key, value)) = iter.prev()? {
		if key >= past {
			continue;
		}
		if !key.starts_with(&prefix) {
			return Ok(None);
		}
		let mut ids = Vec::new();
		decode_segment(&value, &mut ids).ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
		// Segments are deleted when they empty; an empty one is passed over all the same.
		if let Some(last) = ids.last() {
			return Ok(Some(*last));
		}
	}
	Ok(None)
}

/// Whether `key` has any segment on disk.
pub(crate) fn has_segments(db: &impl Ordered, key: PostingKey) -> Result<bool> {
	let prefix = key.prefix();
	let mut iter = db.walk(schema::COL_POSTING, &prefix)?;
	iter.seek(&prefix)?;
	Ok(iter.next()?.is_some_and(|(segment_key, _)| segment_key.starts_with(&prefix)))
}

/// The ids in `key`'s segments on disk.
pub(crate) fn segments(db: &impl Ordered, key: PostingKey) -> Result<Vec<Id>> {
	let prefix = key.prefix();
	segments_under(db, &prefix, prefix.len() + 8)
}

/// The ids in the posting segments whose keys start with `prefix` and are `key_len` long.
pub(crate) fn segments_under(db: &impl Ordered, prefix: &[u8], key_len: usize) -> Result<Vec<Id>> {
	let mut iter = db.walk(schema::COL_POSTING, prefix)?;
	iter.seek(prefix)?;
	let mut ids = Vec::new();
	while let Some((segment_key, value)) = iter.next()? {
		if !segment_key.starts_with(prefix) {
			break;
		}
		if segment_key.len() == key_len {
			decode_segment(&value, &mut ids).ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
		}
	}
	Ok(ids)
}
