//! Opening a store: the directory and schema checks, migration, the membership set (from
//! its snapshot, caught up from the journal and the removal log, or from every body), the
//! intent-log redo after a crash, and trimming to the configured limits.

pub(crate) mod check;
#[cfg(test)]
mod fixtures;
mod load;
pub(crate) mod migrate;
pub(crate) mod snapshot;

use crate::{
	allowance::AllowanceProvider,
	config::Config,
	error::Error,
	error::Result,
	index::lists::has_segments,
	index::membership::{Membership, Snapshots},
	index::schema::{self, Counters, PostingKey},
	metrics::Metrics,
	open::snapshot::{snapshot_tag, SNAPSHOT_FILE},
	read::Reads,
	store::{Inner, Store},
	subscription::registry::Subscriptions,
	write::intent,
	write::staging::Database,
	write::writeback,
	write::{Start, Writes},
};
use codec::Encode;
use load::{catch_up, check_samples, hash_every_body, hint_table_headers, meta_position};
use std::sync::Arc;

impl Store {
	/// Open (or create) the store described by `config`, reading allowances from `allowances`.
	///
	/// Refuses, without changing anything on disk, a directory that is not a database of this
	/// store, one written by a newer schema, or one whose counters contradict its journal.
	pub fn open(config: Config, allowances: Arc<dyn AllowanceProvider>) -> Result<Store> {
		Store::open_checked(config, allowances, true)
	}

	/// [`Store::open`]; `sample_bodies` checks a sample of bodies against their hashes and
	/// refuses the database if one does not match (off for `check` and `repair`, which look
	/// at every body themselves).
	pub(crate) fn open_checked(
		config: Config,
		allowances: Arc<dyn AllowanceProvider>,
		sample_bodies: bool,
	) -> Result<Store> {
		crate::error::catch_db_panic(|| Store::open_unguarded(config, allowances, sample_bodies))
	}

	fn open_unguarded(
		config: Config,
		allowances: Arc<dyn AllowanceProvider>,
		sample_bodies: bool,
	) -> Result<Store> {
		let path = config.path.clone();
		let shown = path.display().to_string();
		check_directory(&path)?;
		std::fs::create_dir_all(&path).map_err(|source| Error::Io {
			operation: "create the database directory",
			path: shown.clone(),
			source,
		})?;
		hint_table_headers(&path);
		let db =
			Arc::new(parity_db::Db::open_or_create(&schema::db_options(&path, config.sync_wal))?);
		let counters = read_schema(&db, &shown, config.sync_wal)?;
		// Read before anything else changes, so that a gap refuses the open untouched.
		let intent_seq = meta_position(&db, schema::KEY_INTENT)?;
		let mut intents = intent::read_intents(&path)?;
		let mark = intent::read_mark(&path);
		let gap = check_intents(&intents, intent_seq, mark, config.skip_intent_gaps, &shown)?;
		let removals = meta_position(&db, schema::KEY_REMOVALS)?;
		let tag = snapshot_tag(&db, &counters, removals, &shown)?;
		let snapshot = path.join(SNAPSHOT_FILE);
		// A snapshot from before the database's state can be brought up to date; one from
		// after it (the database lost commits it covers, to power loss) cannot.
		let loaded = match Membership::load(&snapshot, |old| {
			old.next_id <= tag.next_id && old.removals <= tag.removals
		}) {
			Ok(loaded) => loaded,
			Err(err) => {
				log::warn!(target: "statement-store", "cannot read {}: {err}", snapshot.display());
				None
			}
		};
		let mut caught_up = (0, 0);
		let from_snapshot = match loaded {
			Some((set, old)) => {
				let delta = if old == tag {
					Some((0, 0))
				} else {
					catch_up(&db, &set, &old, &tag, &shown)?
				};
				match delta {
					Some(delta)
						if set.len() == counters.count
							&& check_samples(&db, &set, &counters, sample_bodies, &shown)? =>
					{
						caught_up = delta;
						Some((set, old))
					}
					Some(_) => {
						log::warn!(
							target: "statement-store",
							"{shown}: the membership snapshot and the removal log do not add up to \
							 the database; reading every statement"
						);
						None
					}
					None => None,
				}
			}
			None => None,
		};
		let reopened_from_snapshot = from_snapshot.is_some();
		let snapshots = Snapshots::new(from_snapshot.as_ref().map(|(_, old)| old), caught_up);
		let membership = match from_snapshot {
			Some((set, _)) => set,
			None => {
				if counters.count > 0 {
					log::info!(
						target: "statement-store",
						"{shown}: no usable membership snapshot (the last run did not close \
						 cleanly?), reading the bodies of {} statements",
						counters.count
					);
				}
				let set = Membership::sized(counters.count, counters.next_id);
				let stored = hash_every_body(&db, &set, &counters, sample_bodies, &shown)?;
				set.compact();
				if stored.count != counters.count || stored.next_id > counters.next_id {
					return Err(Error::Corrupt {
						path: shown,
						detail: format!(
							"counters say {} statements and next id {}, the stored ids are {} up \
							 to id {}",
							counters.count, counters.next_id, stored.count, stored.next_id
						),
					});
				}
				set
			}
		};
		log::info!(
			target: "statement-store",
			"opened {shown}: {} statements, {} bytes{}",
			counters.count,
			counters.total_size,
			match (reopened_from_snapshot, caught_up) {
				(false, _) => String::new(),
				(true, (0, 0)) => " (membership from snapshot)".into(),
				(true, (added, removed)) => format!(
					" (membership from snapshot, then {added} admitted and {removed} removed since)"
				),
			}
		);
		let keyed = has_segments(&*db, PostingKey::Keyed)?;
		let banned = {
			let mut iter = db.iter(schema::COL_BAN_ORDER)?;
			iter.seek_to_first()?;
			iter.next()?.is_some()
		};
		let tallies = read_tallies(&db, &shown, config.sync_wal)?;
		let next_seq = intents.records.last().map_or(0, |(seq, _)| *seq).max(intent_seq) + 1;
		let db = Arc::new(Database::new(db));
		let writes = Writes::start(
			&db,
			&config,
			allowances,
			Start { counters, next_seq, banned, removals, tallies },
		)?;
		let inner = Inner {
			reads: Reads::new(&config, keyed),
			subscriptions: Subscriptions::with_budget(config.subscription_budget_bytes),
			snapshots,
			config,
			db,
			metrics: Metrics::default(),
			membership,
			writes,
		};
		let old_intent_files = std::mem::take(&mut intents.files);
		inner.redo(intents.records, intent_seq, gap, &shown)?;
		// parity-db now holds every batch they had: delete them, or after a skipped gap keep
		// them aside for the operator.
		let current = inner.writes.intent_path();
		for file in old_intent_files.iter().filter(|file| **file != current) {
			let done = if gap {
				std::fs::rename(file, file.with_extension("log.damaged"))
			} else {
				std::fs::remove_file(file)
			};
			if let Err(err) = done {
				log::warn!(target: "statement-store", "cannot move or delete {}: {err}", file.display());
			}
		}
		let counters = inner.writes.counters();
		inner.metrics.set_totals(counters.count, counters.total_size);
		let store = Store { inner: Arc::new(inner) };
		store.trim_to_limits()?;
		Ok(store)
	}
}

/// Refuse a directory that holds files but no parity-db metadata: opening it would create a
/// fresh database over someone's data.
fn check_directory(path: &std::path::Path) -> Result<()> {
	let Ok(mut entries) = std::fs::read_dir(path) else { return Ok(()) };
	let has_files = entries.next().is_some();
	if has_files && !path.join("metadata").is_file() {
		return Err(Error::Corrupt {
			path: path.display().to_string(),
			detail: "the directory is not empty but has no parity-db metadata file".into(),
		});
	}
	Ok(())
}

/// Read (or, for a new database, write) the schema version and the counters.
fn read_schema(db: &parity_db::Db, path: &str, sync: bool) -> Result<Counters> {
	let corrupt = |detail: String| Error::Corrupt { path: path.into(), detail };
	match db.get(schema::COL_META, schema::KEY_SCHEMA)? {
		None => {
			let mut journal = db.iter(schema::COL_JOURNAL)?;
			journal.seek_to_first()?;
			if journal.next()?.is_some() || has_segments(db, PostingKey::All)? {
				return Err(corrupt(
					"statements are present but the schema version is missing".into(),
				));
			}
			// Id 0 is never given out, so "after 0" means "from the start".
			let counters = Counters { next_id: 1, ..Counters::default() };
			writeback::commit(
				db,
				[
					(
						schema::COL_META,
						schema::KEY_SCHEMA.to_vec(),
						Some(schema::SCHEMA_VERSION.encode()),
					),
					(schema::COL_META, schema::KEY_COUNTERS.to_vec(), Some(counters.encode())),
				],
				sync,
			)?;
			Ok(counters)
		}
		Some(bytes) => {
			let version: u32 = schema::decode_value(schema::COL_META, &bytes)?;
			if version > schema::SCHEMA_VERSION {
				return Err(Error::NewerSchema {
					path: path.into(),
					found: version,
					supported: schema::SCHEMA_VERSION,
				});
			}
			crate::open::migrate::migrate(db, version, path, sync)?;
			let counters = db
				.get(schema::COL_META, schema::KEY_COUNTERS)?
				.ok_or_else(|| corrupt("the counters are missing".into()))?;
			schema::decode_value(schema::COL_META, &counters)
		}
	}
}

/// The [`schema::Tallies`] parity-db holds; a database written before them has them counted
/// (its accounts and its bans, one walk each) and written, once.
fn read_tallies(db: &parity_db::Db, path: &str, sync: bool) -> Result<schema::Tallies> {
	if let Some(bytes) = db.get(schema::COL_META, schema::KEY_TALLIES)? {
		return schema::decode_value(schema::COL_META, &bytes);
	}
	let started = std::time::Instant::now();
	let entries = |col| -> Result<u64> {
		let mut iter = db.iter(col)?;
		iter.seek_to_first()?;
		let mut count = 0;
		while iter.next()?.is_some() {
			count += 1;
		}
		Ok(count)
	};
	let tallies = schema::Tallies {
		accounts: entries(schema::COL_USAGE)?,
		bans: entries(schema::COL_BAN_ORDER)?,
	};
	writeback::commit(
		db,
		[(schema::COL_META, schema::KEY_TALLIES.to_vec(), Some(tallies.encode()))],
		sync,
	)?;
	if tallies != schema::Tallies::default() {
		log::info!(
			target: "statement-store",
			"{path}: counted {} accounts holding statements and {} bans for the metrics, once \
			 (a database from before they were kept), in {:?}",
			tallies.accounts,
			tallies.bans,
			started.elapsed()
		);
	}
	Ok(tallies)
}

/// Log what reading the intent log found; refuse a gap in its sequence numbers after
/// `held` (the newest batch the database holds) unless `skip` says to go on. Returns whether
/// a gap is being skipped.
/// Refuse (or, with `skip`, only log) batches acknowledged but found neither in the database
/// (which holds up to `held`) nor in the intent files: a gap between intent records, or a
/// missing end, which only the `mark` (the newest acknowledged batch) shows.
fn check_intents(
	intents: &intent::IntentRead,
	held: u64,
	mark: Option<u64>,
	skip: bool,
	path: &str,
) -> Result<bool> {
	let last_file = intents.files.last();
	for (file, at, len) in &intents.damaged {
		let at_end = Some(file) == last_file
			&& std::fs::metadata(file).is_ok_and(|meta| meta.len() == (at + len) as u64);
		if at_end {
			log::info!(
				target: "statement-store",
				"{}: the last intent record was cut short at byte {at} (a crash during an \
				 append); it was never acknowledged",
				file.display()
			);
		} else {
			log::warn!(
				target: "statement-store",
				"{}: {len} damaged bytes at byte {at} skipped; reading went on at the next \
				 intact record",
				file.display()
			);
		}
	}
	let newest = intents.records.last().map_or(0, |(seq, _)| *seq).max(held);
	let (first, last, detail) = match (intents.gap_after(held), mark) {
		(Some((first, last)), _) => {
			let detail = match intents.damaged.first() {
				Some((file, at, _)) => {
					format!("damaged records from byte {at} of {}", file.display())
				}
				None => "an intent file is missing".into(),
			};
			(first, last, detail)
		}
		// Nothing missing in between, but batches were acknowledged past the newest one found:
		// the end of the log is gone (its newest file, or records cut off its end).
		(None, Some(mark)) if mark > newest => (
			newest + 1,
			mark,
			format!(
				"the end of the intent log is missing: {} says batch {mark} was acknowledged, \
				 the newest intent record is batch {newest}",
				intent::MARK_FILE
			),
		),
		_ => return Ok(false),
	};
	if !skip {
		return Err(Error::IntentGap { path: path.into(), first, last, detail });
	}
	log::error!(
		target: "statement-store",
		"{path}: the intent log lacks batches {first} to {last} ({detail}); redoing the intact \
		 batches as asked, the intent files are kept as *.damaged"
	);
	Ok(true)
}

#[cfg(test)]
mod tests;
