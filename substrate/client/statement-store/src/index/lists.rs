//! Whole id lists read from parity-db's tables by ordered iteration: the stored ids in
//! admission order, the highest stored id, and a list's segments. They read parity-db as it
//! stands; a caller that needs the staged batches in it hands them over first.

use crate::{
	error::{bad, Result},
	index::posting::decode_segment,
	index::schema::{self, Id, PostingKey},
};

/// Stored ids in `[from, below)` in admission order, at most `limit`, from the segments of
/// [`PostingKey::All`] as parity-db holds them (callers hand the staged batches over first).
pub(crate) fn stored_ids(db: &parity_db::Db, from: Id, below: Id, limit: usize) -> Result<Vec<Id>> {
	let all = PostingKey::All;
	let prefix = all.prefix();
	let mut iter = db.iter(schema::COL_POSTING)?;
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

/// The highest stored id, from the last segment of [`PostingKey::All`] as parity-db holds it.
pub(crate) fn last_stored_id(db: &parity_db::Db) -> Result<Option<Id>> {
	let prefix = PostingKey::All.prefix();
	let mut past = prefix.clone();
	past[0] += 1;
	let mut iter = db.iter(schema::COL_POSTING)?;
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
pub(crate) fn has_segments(db: &parity_db::Db, key: PostingKey) -> Result<bool> {
	let prefix = key.prefix();
	let mut iter = db.iter(schema::COL_POSTING)?;
	iter.seek(&prefix)?;
	Ok(iter.next()?.is_some_and(|(segment_key, _)| segment_key.starts_with(&prefix)))
}

/// The ids in `key`'s segments on disk.
pub(crate) fn segments(db: &parity_db::Db, key: PostingKey) -> Result<Vec<Id>> {
	let prefix = key.prefix();
	segments_under(db, &prefix, prefix.len() + 8)
}

/// The ids in the posting segments whose keys start with `prefix` and are `key_len` long.
pub(crate) fn segments_under(db: &parity_db::Db, prefix: &[u8], key_len: usize) -> Result<Vec<Id>> {
	let mut iter = db.iter(schema::COL_POSTING)?;
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
