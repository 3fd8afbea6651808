//! Schema migrations: each step brings the database one version up in one commit, so a crash
//! leaves either version, never a mix.

use crate::{
	error::bad,
	posting::{decode_segment, encode_segment, segment_base},
	read::segments_under,
	schema::{self, Id, PostingKey},
	writeback, Result,
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
		let legacy = [schema::LEGACY_NO_KEY_PREFIX];
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
	Ok(())
}

/// Expiry-index entries moved per commit by the move to schema 3.
const MOVE_CHUNK: usize = 65_536;

/// Schema 3 keeps the expiry order as one posting list per expiry second instead of a btree
/// entry per statement (70 bytes a statement on disk), and the id alone under a hash
/// (schema 2's records start with the id and are read the same way, so they stay). The
/// entries move a chunk per commit: each commit deletes a chunk of entries and merges their
/// ids into the lists, so a crash leaves schema 2 with some entries moved, and the next
/// open moves the rest (merging an id that is already listed changes nothing).
fn to_schema_3(db: &parity_db::Db, path: &str, sync: bool) -> Result<()> {
	let started = std::time::Instant::now();
	log::info!(target: "statement-store", "{path}: upgrading the database to schema 3");
	let mut moved = 0u64;
	loop {
		let mut lists: BTreeMap<Vec<u8>, Vec<Id>> = BTreeMap::new();
		let mut ops = Vec::new();
		let mut iter = db.iter(schema::COL_EXPIRY)?;
		iter.seek_to_first()?;
		while ops.len() < MOVE_CHUNK {
			let Some((key, _)) = iter.next()? else { break };
			let (Some(expiry), Some(id)) = (schema::be_u64(&key, 0), schema::be_u64(&key, 8))
			else {
				return Err(bad(schema::COL_EXPIRY, "key"));
			};
			let list = PostingKey::Expiry(expiry >> 32);
			let list = list.segment_key(list.segment_base(id));
			lists.entry(list).or_default().push(id);
			ops.push((schema::COL_EXPIRY, key, None));
		}
		drop(iter);
		if ops.is_empty() {
			break;
		}
		moved += ops.len() as u64;
		for (key, mut ids) in lists {
			if let Some(bytes) = db.get(schema::COL_POSTING, &key)? {
				decode_segment(&bytes, &mut ids)
					.ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
			}
			ids.sort_unstable();
			ids.dedup();
			ops.push((schema::COL_POSTING, key, Some(encode_segment(&ids))));
		}
		writeback::commit(db, ops, sync)?;
		apply_log(db)?;
		log::info!(target: "statement-store", "{path}: schema 3: {moved} expiry entries moved");
	}
	let version = (schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(3u32.encode()));
	writeback::commit(db, vec![version], sync)?;
	apply_log(db)?;
	log::info!(
		target: "statement-store",
		"{path}: upgraded to schema 3 in {:?} ({moved} expiry entries moved)",
		started.elapsed()
	);
	Ok(())
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
