//! Schema migrations: each step brings the database one version up in one commit, so a crash
//! leaves either version, never a mix.

use crate::{
	posting::{encode_segment, segment_base},
	read::segments_under,
	schema::{self, PostingKey},
	writeback, Result,
};
use codec::Encode;

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
		// Schema 3 stores the id alone under a hash; schema 2's records start with the id and
		// are read the same way, so only the version changes. parity-db never shrinks its
		// tables: the space of old records is reused by values of their size, not given back.
		log::info!(target: "statement-store", "{path}: upgrading the database to schema 3");
		let version = (schema::COL_META, schema::KEY_SCHEMA.to_vec(), Some(3u32.encode()));
		writeback::commit(db, vec![version], sync)?;
	}
	Ok(())
}
