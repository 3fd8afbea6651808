//! Checking a database against itself, and rebuilding it from its statements.
//!
//! Every index is derived from the statement bodies, and every body is pinned by its hash
//! (blake2-256 of the encoding) and its signature. So [`check`] can verify everything against
//! everything, and [`repair`] can rebuild every index from the bodies that still check out,
//! keeping the others in a side file. Both run on a stopped node (`statement-node check-db`,
//! `statement-node repair`).
//!
//! parity-db panics on some kinds of damage to its own files (an index entry pointing into a
//! table that is not there). Both functions catch that and report it as damage
//! ([`Error::Damaged`]).

use crate::{
	allowance::MapAllowances,
	config::Config,
	error::bad,
	error::catch_db_panic,
	error::Error,
	error::Result,
	index::posting::{decode_pairs, decode_segment},
	index::schema::{self, Id, Record, StoredBody},
	store::Store,
};
use statement_primitives::{
	hash_encoded, SignatureVerificationResult, Statement, StatementSource, StatementStore,
	SubmitResult,
};
use std::{
	io::Write,
	path::{Path, PathBuf},
};

/// Problems [`check`] lists in full; past this it only counts them.
const LISTED: usize = 50;
/// Statements between two progress lines in the log.
const PROGRESS: u64 = 100_000;

/// What [`check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
	/// Statements in the admission journal.
	pub statements: u64,
	/// Problems found, in total.
	pub problem_count: u64,
	/// The first problems, each in one line.
	pub problems: Vec<String>,
}

impl CheckReport {
	fn problem(&mut self, line: String) {
		self.problem_count += 1;
		if self.problems.len() < LISTED {
			self.problems.push(line);
		}
	}

	/// Whether the database is consistent.
	pub fn is_clean(&self) -> bool {
		self.problem_count == 0
	}
}

/// Verify the database at `config.path`: every journal entry has a body that hashes to it,
/// decodes and carries a valid signature; its record, account, expiry and posting entries
/// exist and agree; no index entry points at a statement that is not there; the counters add
/// up. Opening the store first redoes what a crash left in the intent log.
pub fn check(config: Config) -> Result<CheckReport> {
	catch_db_panic(|| {
		let store = Store::open_checked(config, unlimited(), false)?;
		check_open(&store)
	})
}

pub(crate) fn check_open(store: &Store) -> Result<CheckReport> {
	let inner = &store.inner;
	// Removals acknowledged and waiting for their index edits are applied first (see
	// `write::deferred`): the check reads what parity-db holds.
	inner.settle_waiting()?;
	inner.writes.checkpoint()?;
	let db = inner.db.raw();
	let mut report = CheckReport::default();
	let (mut total_size, mut sizes_known) = (0u64, true);
	let entries = crate::index::lists::stored_ids(db, 0, Id::MAX, usize::MAX)?;
	report.statements = entries.len() as u64;
	for (n, id) in entries.iter().enumerate() {
		if (n as u64 + 1).is_multiple_of(PROGRESS) {
			log::info!(target: "statement-store", "check: verified {} of {} statements", n + 1, entries.len());
		}
		let Some(record) = check_statement(db, *id, &mut report)? else {
			// The counters still count it, with the size of the body it was admitted with:
			// a damaged body keeps its length, a missing one leaves the size unknown.
			match db.get(schema::COL_BODY, &schema::body_key(*id))? {
				Some(value) => total_size += StoredBody::of(value).encoding().len() as u64,
				None => sizes_known = false,
			}
			continue;
		};
		total_size += u64::from(record.encoded_len);
		let mut pairs = Vec::new();
		let key = schema::account_list_key(&record.account, record.expiry, *id);
		if let Some(bytes) = db.get(schema::COL_POSTING, &key)? {
			decode_pairs(&bytes, &mut pairs);
		}
		if !pairs.contains(&(*id, record.expiry as u32)) {
			report.problem(format!("statement {id}: missing from its account list"));
		}
		for posting in record.posting_keys() {
			let mut listed = Vec::new();
			if let Some(bytes) =
				db.get(schema::COL_POSTING, &posting.segment_key(posting.segment_base(*id)))?
			{
				decode_segment(&bytes, &mut listed)
					.ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
			}
			if listed.binary_search(id).is_err() {
				report
					.problem(format!("statement {id}: missing from the posting list {posting:?}"));
			}
		}
	}
	check_index_targets(db, &entries, &mut report)?;
	let mut bodies = 0u64;
	db.iter_column_while(schema::COL_BODY, |_| {
		bodies += 1;
		true
	})?;
	if bodies != report.statements {
		report.problem(format!(
			"the body table holds {bodies} statements, the list of stored ids {}",
			report.statements
		));
	}
	let counters = inner.writes.counters();
	if counters.count != report.statements || (sizes_known && counters.total_size != total_size) {
		report.problem(format!(
			"the counters say {} statements of {} bytes; the stored ids are {} of {total_size}",
			counters.count, counters.total_size, report.statements
		));
	}
	Ok(report)
}

/// Check statement `id`'s body and record; returns the record if both are sound.
fn check_statement(db: &parity_db::Db, id: Id, report: &mut CheckReport) -> Result<Option<Record>> {
	let Some(value) = db.get(schema::COL_BODY, &schema::body_key(id))? else {
		report.problem(format!("statement {id}: its body is missing"));
		return Ok(None);
	};
	// The full hash, whatever the body's check says; then the check too.
	let stored_body = StoredBody::of(value);
	let (sound, claimed) = match &stored_body {
		StoredBody::Hashed { sound, hash, .. } => (*sound, Some(schema::fingerprint(hash))),
		StoredBody::Checked { check, encoding } => {
			(true, Some(schema::legacy::claimed(*check, encoding)))
		}
		StoredBody::Unchecked(_) => (true, None),
	};
	let held = stored_body.stored_hash();
	let body = stored_body.encoding();
	let hash = hash_encoded(&body);
	if !sound || claimed.is_some_and(|claimed| claimed != schema::fingerprint(&hash)) {
		report
			.problem(format!("statement {id}: its body does not match its hash (its check fails)"));
		return Ok(None);
	}
	if held.is_some_and(|held| held != hash) {
		report.problem(format!(
			"statement {id}: its body does not match its hash (it holds another statement's)"
		));
		return Ok(None);
	}
	let Some(stored) = db.get(schema::COL_HASH, &hash)? else {
		report.problem(format!(
			"statement {id}: its body does not match its hash (nothing is stored under the \
			 body's hash)"
		));
		return Ok(None);
	};
	let statement = match Statement::from_bytes(&body) {
		Ok(statement) => statement,
		Err(err) => {
			report.problem(format!("statement {id}: its body does not decode: {err}"));
			return Ok(None);
		}
	};
	if !matches!(statement.verify_signature(), SignatureVerificationResult::Valid(_)) {
		report.problem(format!("statement {id}: its signature does not verify"));
		return Ok(None);
	}
	match schema::le_u64_prefix(&stored) {
		Some(stored) if stored == id => Ok(Record::of(id, &statement, body.len())),
		_ => {
			report.problem(format!("statement {id}: its hash entry names another id"));
			Ok(None)
		}
	}
}

/// Every id in the posting lists and every hash in the account and expiry indexes must be a
/// stored statement.
fn check_index_targets(db: &parity_db::Db, entries: &[Id], report: &mut CheckReport) -> Result<()> {
	let stored = |id: &Id| entries.binary_search(id).is_ok();
	let mut iter = db.iter(schema::COL_POSTING)?;
	iter.seek_to_first()?;
	let (mut expiring, mut accounted) = (0u64, 0u64);
	while let Some((key, value)) = iter.next()? {
		let mut listed = Vec::new();
		let decoded = if key.first() == Some(&schema::ACCOUNT_PREFIX) {
			let mut pairs = Vec::new();
			let decoded = decode_pairs(&value, &mut pairs);
			listed.extend(pairs.iter().map(|(id, _)| *id));
			accounted += listed.len() as u64;
			decoded
		} else {
			decode_segment(&value, &mut listed)
		};
		if decoded.is_none() {
			report.problem(format!("posting segment {}: does not decode", hex::encode(&key)));
			continue;
		}
		if key.first() == Some(&schema::EXPIRY_PREFIX) {
			expiring += listed.len() as u64;
		}
		for id in listed.iter().filter(|id| !stored(id)) {
			report.problem(format!(
				"posting segment {}: lists {id}, which is not stored",
				hex::encode(&key)
			));
		}
	}
	drop(iter);
	for (what, count) in [("expiry", expiring), ("account", accounted)] {
		if count != entries.len() as u64 {
			report.problem(format!(
				"the {what} lists hold {count} entries for {} statements",
				entries.len()
			));
		}
	}
	let mut journal = db.iter(schema::COL_JOURNAL)?;
	journal.seek_to_first()?;
	while let Some((key, value)) = journal.next()? {
		let (id, hash) = schema::journal_entry(&key, &value)?;
		if !stored(&id)
			|| db.get(schema::COL_HASH, &hash)?.as_deref().and_then(schema::le_u64_prefix)
				!= Some(id)
		{
			report.problem(format!("journal entry {id}: not a stored statement"));
		}
	}
	drop(journal);
	// Schema 2's indexes, moved into the lists when the database was upgraded.
	for (col, name) in [(schema::COL_ACCOUNT, "account"), (schema::COL_EXPIRY, "expiry")] {
		let mut iter = db.iter(col)?;
		iter.seek_to_first()?;
		if let Some((key, _)) = iter.next()? {
			report.problem(format!(
				"schema 2 {name} index entry {} was not moved",
				hex::encode(&key)
			));
		}
	}
	Ok(())
}

/// What [`repair`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepairReport {
	/// Statements kept: intact, and admitted again into the rebuilt database.
	pub kept: u64,
	/// Statements left out (damaged, expired, or in conflict), written to the side file.
	pub removed: u64,
	/// Where the database as it was before the repair now is.
	pub previous: PathBuf,
	/// The side file with the statements left out, one per line: reason, tab, `0x`-hex.
	pub removed_file: PathBuf,
}

/// Rebuild the database at `config.path` from the statement bodies that still check out:
/// each body is read from the body table (not through any index), checked and admitted
/// again into a new database beside it, which then takes the old one's place; the old one
/// is kept as `<path>.before-repair`, and every body left out is written to
/// `<path>.repair-removed.txt`. Bans are not carried over.
pub fn repair(config: Config) -> Result<RepairReport> {
	let path = config.path.clone();
	let shown = path.display().to_string();
	let sibling = |suffix: &str| {
		let mut name = path.file_name().unwrap_or_default().to_os_string();
		name.push(suffix);
		path.with_file_name(name)
	};
	let (rebuilt, previous, removed_file) =
		(sibling(".repairing"), sibling(".before-repair"), sibling(".repair-removed.txt"));
	if previous.exists() {
		return Err(Error::Config(format!(
			"{} exists from an earlier repair; move it away first",
			previous.display()
		)));
	}
	// Redo what a crash left in the intent log, if the store still opens.
	if let Err(err) = Store::open_checked(config.clone(), unlimited(), false).map(drop) {
		log::warn!(target: "statement-store", "{shown} does not open ({err}); repairing from the body table as it is");
	}
	let io = |operation: &'static str, at: &Path| {
		let at = at.display().to_string();
		move |source| Error::Io { operation, path: at, source }
	};
	if rebuilt.exists() {
		std::fs::remove_dir_all(&rebuilt)
			.map_err(io("remove an unfinished repair at", &rebuilt))?;
	}
	let mut new_config = config.clone();
	new_config.path = rebuilt.clone();
	new_config.max_total_statements = u64::MAX;
	new_config.max_total_size = u64::MAX;
	new_config.skip_intent_gaps = false;
	let target = Store::open(new_config, unlimited())?;
	let mut side = std::io::BufWriter::new(
		std::fs::File::create(&removed_file).map_err(io("create", &removed_file))?,
	);
	let mut report = RepairReport {
		previous: previous.clone(),
		removed_file: removed_file.clone(),
		..Default::default()
	};
	let mut failure = None;
	catch_db_panic(|| {
		let db = parity_db::Db::open(&schema::db_options(&path, false))?;
		db.iter_column_while(schema::COL_BODY, |state| {
			let body = StoredBody::of(state.value.clone()).encoding();
			let verdict = match Statement::from_bytes(&body) {
				Err(err) => Some(format!("does not decode: {err}")),
				Ok(statement) => match target.submit(statement, StatementSource::Local) {
					SubmitResult::New | SubmitResult::Known => None,
					other => Some(format!("{other:?}")),
				},
			};
			match verdict {
				None => report.kept += 1,
				Some(reason) => {
					report.removed += 1;
					if let Err(err) = writeln!(side, "{reason}\t0x{}", hex::encode(&state.value)) {
						failure = Some(io("write", &removed_file)(err));
						return false;
					}
				}
			}
			if (report.kept + report.removed).is_multiple_of(PROGRESS) {
				log::info!(target: "statement-store", "repair: {} kept, {} removed", report.kept, report.removed);
			}
			true
		})?;
		Ok(())
	})?;
	if let Some(err) = failure {
		return Err(err);
	}
	side.flush().map_err(io("write", &removed_file))?;
	drop(target);
	std::fs::rename(&path, &previous).map_err(io("move aside", &path))?;
	std::fs::rename(&rebuilt, &path).map_err(io("move into place", &rebuilt))?;
	Ok(report)
}

/// Allowances that admit anything: checking and repairing re-admit what was admitted once.
fn unlimited() -> std::sync::Arc<MapAllowances> {
	std::sync::Arc::new(MapAllowances::unlimited())
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::index::schema::PostingKey;
	use statement_primitives::testing::{ed25519_pair, TestStatement};
	use statement_primitives::Topic;

	fn signed(n: u8) -> Statement {
		TestStatement::new()
			.expiry(u32::MAX, u32::from(n))
			.topic(0, Topic([n % 3; 32]))
			.data(vec![n; 8])
			.signed_ed25519(&ed25519_pair(u32::from(n % 5)))
	}

	#[test]
	fn a_sound_database_checks_clean() {
		let dir = tempfile::tempdir().unwrap();
		let store = Store::open(Config::new(dir.path()), unlimited()).unwrap();
		for n in 0..30 {
			assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
		}
		store.remove(&signed(4).hash()).unwrap();
		drop(store);
		let report = check(Config::new(dir.path())).unwrap();
		assert_eq!(report.statements, 29);
		assert!(report.is_clean(), "{:?}", report.problems);
	}

	#[test]
	fn damaged_indexes_are_found_and_repair_rebuilds_them_from_the_bodies() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("statements");
		let store = Store::open(Config::new(&path), unlimited()).unwrap();
		for n in 0..30 {
			assert_eq!(store.submit(signed(n), StatementSource::Local), SubmitResult::New);
		}
		drop(store);
		// Damage: a posting segment lists a statement that is not there, one statement is
		// missing from its expiry list, another's body is replaced by a valid statement of other content.
		let db = parity_db::Db::open(&schema::db_options(&path, false)).unwrap();
		let topic = PostingKey::Topic([0; 32]).segment_key(0);
		let mut listed = Vec::new();
		decode_segment(&db.get(schema::COL_POSTING, &topic).unwrap().unwrap(), &mut listed);
		listed.push(10_000);
		let id =
			schema::le_u64_prefix(&db.get(schema::COL_HASH, &signed(7).hash()).unwrap().unwrap())
				.unwrap();
		let record = Record::of(id, &signed(7), signed(7).encode().len()).unwrap();
		let list = PostingKey::Expiry(record.expiry >> 32);
		let expiring = list.segment_key(list.segment_base(id));
		let mut expiry_list = Vec::new();
		decode_segment(&db.get(schema::COL_POSTING, &expiring).unwrap().unwrap(), &mut expiry_list);
		expiry_list.retain(|listed| *listed != id);
		crate::write::writeback::commit(
			&db,
			vec![
				(
					schema::COL_POSTING,
					topic.to_vec(),
					Some(crate::index::posting::encode_segment(&listed)),
				),
				(
					schema::COL_POSTING,
					expiring,
					Some(crate::index::posting::encode_segment(&expiry_list)),
				),
				(schema::COL_BODY, schema::body_key(3).to_vec(), Some(signed(200).encode())),
				(schema::COL_BODY, schema::body_key(5).to_vec(), Some(vec![1, 2, 3])),
			],
			false,
		)
		.unwrap();
		drop(db);
		let report = check(Config::new(&path)).unwrap();
		let all = report.problems.join("\n");
		assert!(all.contains("lists 10000, which is not stored"), "{all}");
		assert!(
			all.contains(&format!("statement {id}: missing from the posting list Expiry(")),
			"{all}"
		);
		assert!(all.contains("statement 3: its body does not match its hash"), "{all}");

		assert!(all.contains("statement 5: its body does not match its hash"), "{all}");

		let repaired = repair(Config::new(&path)).unwrap();
		// Body 3 holds a valid statement (200) now; the ones stored as 3 and 5 are gone.
		assert_eq!((repaired.kept, repaired.removed), (29, 1));
		assert!(repaired.previous.is_dir());
		let side = std::fs::read_to_string(&repaired.removed_file).unwrap();
		assert_eq!(side.lines().count(), 1);
		assert!(side.ends_with("\t0x010203\n"), "{side}");
		let report = check(Config::new(&path)).unwrap();
		assert!(report.is_clean(), "{:?}", report.problems);
		let store = Store::open(Config::new(&path), unlimited()).unwrap();
		assert_eq!(store.len(), 29);
		assert!(store.has_statement(&signed(200).hash()));
		assert!(!store.has_statement(&signed(2).hash()));
		assert!(!store.has_statement(&signed(4).hash()));
		assert_eq!(store.broadcasts(&[Topic([0; 32])]).unwrap().len(), 10);
	}
}
