//! Schema migrations, each bringing the database one version up. A step either runs in one
//! commit, or in chunks whose partial state the next open understands, so a crash midway is
//! resumed where it stopped before anything reads the database.

use crate::{
	error::bad,
	error::Result,
	index::lists::{segments_under, stored_ids},
	index::posting::{decode_pairs, decode_segment, encode_pairs, encode_segment},
	index::schema::{self, segment_base, Id, PostingKey, StoredBody},
	write::writeback,
};
use codec::Encode;
use std::collections::BTreeMap;

/// Bring an older schema up to [`schema::SCHEMA_VERSION`], one commit per step, so a crash
/// leaves either version, never a mix.
pub(crate) fn migrate(db: &parity_db::Db, version: u32, path: &str, sync: bool) -> Result<()> {
	if version < 2 {
		// Schema 2 lists the statements that have a decryption key instead of those that do
		// not: the union of the per-key lists replaces the no-key list.
		let started = std::time::Instant::now();
		log::info!(target: "statement-store", "{path}: upgrading the database to schema 2");
		let key_prefix = PostingKey::DecryptionKey([0; 32]).prefix()[..1].to_vec();
		let mut keyed = segments_under(db, &key_prefix, key_prefix.len() + 32 + 8)?;
		keyed.sort_unstable();
		keyed.dedup();
		let mut ops = Vec::new();
		let legacy = [schema::legacy::NO_KEY_PREFIX];
		let mut iter = db.iter(schema::COL_POSTING)?;
		iter.seek(&legacy)?;
		while let Some((segment_key, _)) = iter.next()? {
			if !segment_key.starts_with(&legacy) {
				break;
			}
			ops.push((schema::COL_POSTING, segment_key, None));
		}
		drop(iter);
		for chunk in keyed.chunk_by(|a, b| segment_base(*a) == segment_base(*b)) {
			let key = PostingKey::Keyed.segment_key(segment_base(chunk[0]));
			ops.push((schema::COL_POSTING, key, Some(encode_segment(chunk))));
		}
		ops.push((schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(2u32.encode())));
		writeback::commit(db, ops, sync)?;
		log::info!(
			target: "statement-store",
			"{path}: upgraded to schema 2 in {:?} ({} statements with a key)",
			started.elapsed(),
			keyed.len()
		);
	}
	if version < 3 {
		to_schema_3(db, path, sync)?;
	}
	if version < 5 {
		// Schema 4 gave each body a check; schema 5 a check and its hash. One pass
		// rewrites a schema 3 or 4 body in the schema 5 form.
		to_schema_5(db, version, path, sync)?;
	}
	if version < 6 {
		to_schema_6(db, path, sync)?;
	}
	Ok(())
}

/// Account-list pairs rewritten per commit by the move to schema 6.
const SPLIT_CHUNK: usize = 65_536;

/// Schema 6 spans an account list segment over [`schema::ACCOUNT_LIST_SPAN`] ids instead of
/// 4,096. Every segment holding an id past its first span is split: its own key keeps the
/// pairs of that first span (an old base is a new base too), the rest go to the keys of
/// their spans, merged with what those hold. One old segment is split within one commit,
/// about [`SPLIT_CHUNK`] pairs a commit, so a crash midway leaves segments split and not;
/// the next open walks them all again, and a split segment (its ids all in its first span)
/// is left as it is.
fn to_schema_6(db: &parity_db::Db, path: &str, sync: bool) -> Result<()> {
	let started = std::time::Instant::now();
	log::info!(
		target: "statement-store",
		"{path}: upgrading the database to schema 6: account lists in segments of {} ids",
		schema::ACCOUNT_LIST_SPAN
	);
	let prefix = [schema::ACCOUNT_PREFIX];
	let (mut from, mut split, mut moved) = (prefix.to_vec(), 0u64, 0u64);
	loop {
		// Read a chunk of segments; the walk is dropped before the commit.
		let mut chunk = Vec::new();
		let mut pairs_read = 0;
		let mut iter = db.iter(schema::COL_POSTING)?;
		iter.seek(&from)?;
		// Past the first chunk, the walk starts at the last segment already read.
		let after = (from.len() > 1).then(|| from.clone());
		let mut done = true;
		while let Some((key, value)) = iter.next()? {
			if !key.starts_with(&prefix) {
				break;
			}
			if key.len() != schema::ACCOUNT_LIST_KEY {
				return Err(bad(schema::COL_POSTING, "account list key"));
			}
			if after.as_ref().is_some_and(|after| key <= *after) {
				continue;
			}
			let mut pairs = Vec::new();
			decode_pairs(&value, &mut pairs)
				.ok_or_else(|| bad(schema::COL_POSTING, "account list"))?;
			pairs_read += pairs.len();
			from = key.clone();
			chunk.push((key, pairs));
			if pairs_read >= SPLIT_CHUNK {
				done = false;
				break;
			}
		}
		drop(iter);
		let mut ops = Vec::new();
		for (key, pairs) in chunk {
			let base = schema::be_u64(&key, schema::ACCOUNT_LIST_KEY - 8)
				.ok_or_else(|| bad(schema::COL_POSTING, "account list key"))?;
			if pairs.iter().all(|(id, _)| schema::account_list_base(*id) == base) {
				continue;
			}
			split += 1;
			let mut spans: BTreeMap<Id, Vec<(Id, u32)>> = BTreeMap::new();
			for (id, low) in pairs {
				spans.entry(schema::account_list_base(id)).or_default().push((id, low));
			}
			let group = &key[..schema::ACCOUNT_LIST_KEY - 8];
			if !spans.contains_key(&base) {
				ops.push((schema::COL_POSTING, key.clone(), None));
			}
			for (span, mut pairs) in spans {
				let mut span_key = group.to_vec();
				span_key.extend_from_slice(&span.to_be_bytes());
				if span != base {
					moved += pairs.len() as u64;
					// Only a split writes these keys, in the commit that rewrites the
					// segment split; merged all the same, so that no pair can be lost.
					if let Some(held) = db.get(schema::COL_POSTING, &span_key)? {
						decode_pairs(&held, &mut pairs)
							.ok_or_else(|| bad(schema::COL_POSTING, "account list"))?;
						pairs.sort_unstable();
						pairs.dedup_by_key(|pair| pair.0);
					}
				}
				ops.push((schema::COL_POSTING, span_key, Some(encode_pairs(&pairs))));
			}
		}
		if !ops.is_empty() {
			writeback::commit(db, ops, sync)?;
			apply_log(db)?;
		}
		if done {
			break;
		}
		log::info!(
			target: "statement-store",
			"{path}: schema 6: {split} account list segments split so far"
		);
	}
	let version = (schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(6u32.encode()));
	writeback::commit(db, vec![version], sync)?;
	apply_log(db)?;
	log::info!(
		target: "statement-store",
		"{path}: upgraded to schema 6 in {:?} ({split} account list segments split, {moved} \
		 pairs moved)",
		started.elapsed()
	);
	Ok(())
}

/// Bodies rewritten per commit by the move to schema 5.
const CHECK_CHUNK: usize = 65_536;

/// Schema 5 stores each body with its hash behind a 64-bit check ([`schema::body_value`]):
/// every body in an older form is rewritten, [`CHECK_CHUNK`] a commit, in admission order.
/// A crash midway leaves bodies of both forms; the next open goes on before the store
/// serves anything (bodies already rewritten are read and left), and readers take only the
/// schema 5 form.
///
/// The hash comes from blake2 of the encoding, and must agree with what the body was
/// stored under: a schema 4 body's check, or for an older body the hash column naming its
/// id. A body that disagrees is damaged: it is written with a check that fails, so readers
/// go on finding it damaged (quarantined) and `check-db` names it.
fn to_schema_5(db: &parity_db::Db, from: u32, path: &str, sync: bool) -> Result<()> {
	let started = std::time::Instant::now();
	let total = match db.get(schema::COL_META, schema::KEY_COUNTERS)? {
		Some(bytes) => schema::decode_value::<schema::Counters>(schema::COL_META, &bytes)?.count,
		None => 0,
	};
	log::info!(
		target: "statement-store",
		"{path}: upgrading the database from schema {from} to 5: the hash and a check in each \
		 of {total} bodies"
	);
	let (mut next, mut seen, mut rewritten, mut damaged) = (0, 0usize, 0u64, 0u64);
	loop {
		let ids = stored_ids(db, next, Id::MAX, CHECK_CHUNK)?;
		let Some(&last) = ids.last() else { break };
		let mut ops = Vec::new();
		for id in ids.iter().copied() {
			let key = schema::body_key(id);
			let Some(value) = db.get(schema::COL_BODY, &key)? else { continue };
			let stored = StoredBody::of(value);
			let claimed = match &stored {
				StoredBody::Hashed { .. } => continue,
				StoredBody::Checked { check, encoding } => {
					Some(schema::legacy::claimed(*check, encoding))
				}
				StoredBody::Unchecked(_) => None,
			};
			let encoding = stored.encoding();
			let hash = statement_primitives::hash_encoded(&encoding);
			let intact = match claimed {
				Some(claimed) => claimed == schema::fingerprint(&hash),
				None => {
					let named = db.get(schema::COL_HASH, &hash)?;
					named.as_deref().and_then(schema::le_u64_prefix) == Some(id)
				}
			};
			let mut value = schema::body_value(&hash, &encoding);
			if !intact {
				damaged += 1;
				value[1] ^= 0xff;
			}
			ops.push((schema::COL_BODY, key.to_vec(), Some(value)));
		}
		seen += ids.len();
		rewritten += ops.len() as u64;
		if !ops.is_empty() {
			writeback::commit(db, ops, sync)?;
			apply_log(db)?;
		}
		log::info!(
			target: "statement-store",
			"{path}: schema 5: {seen} of {total} bodies read ({rewritten} rewritten)"
		);
		next = last + 1;
	}
	let version = (schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(5u32.encode()));
	writeback::commit(db, vec![version], sync)?;
	apply_log(db)?;
	if damaged > 0 {
		log::error!(
			target: "statement-store",
			"{path}: {damaged} bodies did not match the hash they were stored under; they stay \
			 out of answers. Run `statement-node check-db` to list them and `statement-node \
			 repair` to rebuild the indexes without them."
		);
	}
	log::info!(
		target: "statement-store",
		"{path}: upgraded to schema 5 in {:?} ({rewritten} bodies rewritten)",
		started.elapsed()
	);
	Ok(())
}

/// Schema 2 index entries moved per commit by the move to schema 3.
const MOVE_CHUNK: usize = 65_536;

/// Schema 3 keeps the expiry order as one posting list per expiry second and each account's
/// statements as lists per account and second, instead of a btree entry per statement in
/// each (70 and 100 bytes a statement on disk), and the id alone under a hash (schema 2's
/// records start with the id and are read the same way, so they stay).
fn to_schema_3(db: &parity_db::Db, path: &str, sync: bool) -> Result<()> {
	let started = std::time::Instant::now();
	log::info!(target: "statement-store", "{path}: upgrading the database to schema 3");
	let expiry = move_entries(
		db,
		(schema::COL_EXPIRY, Source::Delete),
		(path, sync),
		|key| {
			let (expiry, id) = (schema::be_u64(key, 0)?, schema::be_u64(key, 8)?);
			let list = PostingKey::Expiry(expiry >> 32);
			Some((list.segment_key(list.segment_base(id)), id))
		},
		decode_segment,
		encode_segment,
		|a, b| a == b,
	)?;
	let account = move_entries(
		db,
		(schema::COL_ACCOUNT, Source::Delete),
		(path, sync),
		|key| {
			let account = schema::array32(key)?;
			let (expiry, id) = (schema::be_u64(key, 32)?, schema::be_u64(key, 40)?);
			Some((schema::account_list_key(&account, expiry, id), (id, expiry as u32)))
		},
		decode_pairs,
		encode_pairs,
		|a, b| a.0 == b.0,
	)?;
	// Schema 2's journal held every statement: it lists the stored ids, and stays as it is
	// until the next membership snapshot prunes it (a crash midway lists them again).
	let listed = move_entries(
		db,
		(schema::COL_JOURNAL, Source::Keep),
		(path, sync),
		|key| {
			let (all, id) = (PostingKey::All, schema::be_u64(key, 0)?);
			Some((all.segment_key(all.segment_base(id)), id))
		},
		decode_segment,
		encode_segment,
		|a, b| a == b,
	)?;
	let version = (schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(3u32.encode()));
	writeback::commit(db, vec![version], sync)?;
	apply_log(db)?;
	log::info!(
		target: "statement-store",
		"{path}: upgraded to schema 3 in {:?} ({expiry} expiry and {account} account entries \
		 moved, {listed} ids listed; the journal is pruned after the next membership snapshot)",
		started.elapsed()
	);
	Ok(())
}

/// What [`move_entries`] does with the entries it moved.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
	/// Delete them, in the commit that lists them.
	Delete,
	/// Leave them.
	Keep,
}

/// Move every entry of a schema 2 index (`col`) into lists in [`schema::COL_POSTING`]:
/// `locate` names an entry's list and item. A chunk per commit, each merging its items into
/// the lists (and deleting its entries, unless the source is kept), so a crash leaves schema
/// 2 with part moved and the next open moves the rest (merging an item already listed
/// changes nothing). Returns how many entries moved.
fn move_entries<T: Ord + Copy>(
	db: &parity_db::Db,
	(col, source): (u8, Source),
	(path, sync): (&str, bool),
	locate: impl Fn(&[u8]) -> Option<(Vec<u8>, T)>,
	decode: fn(&[u8], &mut Vec<T>) -> Option<()>,
	encode: fn(&[T]) -> Vec<u8>,
	same: fn(&T, &T) -> bool,
) -> Result<u64> {
	let (mut moved, mut after): (u64, Option<Vec<u8>>) = (0, None);
	loop {
		let mut lists: BTreeMap<Vec<u8>, Vec<T>> = BTreeMap::new();
		let (mut ops, mut count) = (Vec::new(), 0);
		let mut iter = db.iter(col)?;
		// Deleted entries are gone from the start; kept ones are passed by their last key.
		match &after {
			Some(last) => iter.seek(last)?,
			None => iter.seek_to_first()?,
		}
		while count < MOVE_CHUNK {
			let Some((key, _)) = iter.next()? else { break };
			if after.as_ref() == Some(&key) {
				continue;
			}
			let (list, item) = locate(&key).ok_or_else(|| bad(col, "key"))?;
			lists.entry(list).or_default().push(item);
			count += 1;
			match source {
				Source::Delete => ops.push((col, key, None)),
				Source::Keep => after = Some(key),
			}
		}
		drop(iter);
		if count == 0 {
			return Ok(moved);
		}
		moved += count as u64;
		for (key, mut items) in lists {
			if let Some(bytes) = db.get(schema::COL_POSTING, &key)? {
				decode(&bytes, &mut items).ok_or_else(|| bad(schema::COL_POSTING, "list"))?;
			}
			items.sort_unstable();
			items.dedup_by(|a, b| same(a, b));
			ops.push((schema::COL_POSTING, key, Some(encode(&items))));
		}
		writeback::commit(db, ops, sync)?;
		apply_log(db)?;
		log::info!(target: "statement-store", "{path}: schema 3: {moved} entries of column {col} moved");
	}
}

/// Close parity-db's log file and apply it to the tables, so that a long migration does not
/// hold every change in memory (the store's writeback is not running yet).
fn apply_log(db: &parity_db::Db) -> Result<()> {
	db.flush_logs()?;
	for _ in 0..2 {
		db.enact_logs()?;
		db.clean_logs()?;
	}
	db.process_reindex()?;
	Ok(())
}

#[cfg(test)]
mod tests;
