//! Maintenance: drop expired statements, purge old bans, re-check allowances.
//!
//! Each kind of work walks an ordered index from its start (expiry order, purge-time order,
//! account order), in slices of at most [`SLICE`] items, each slice one commit taken under
//! the writer lock and released before the next, so submits interleave. The whole call stops
//! when its time budget is spent and carries on where it left off next time.

use crate::{
	error::bad,
	error::Result,
	index::{
		lists::Walk,
		schema::{self, Usage},
	},
	store::Store,
};
use statement_primitives::AccountId;
use std::time::{Duration, Instant};

/// Most items one slice handles before releasing the writer lock.
pub const SLICE: usize = 256;

/// What one maintenance call did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaintenanceReport {
	/// Expired statements removed.
	pub expired: usize,
	/// Bans purged.
	pub bans_purged: usize,
	/// Statements evicted because their account's allowance shrank or vanished.
	pub evicted: usize,
	/// Accounts whose allowance was re-checked.
	pub accounts_checked: usize,
	/// Whether the budget ran out before all work was done.
	pub incomplete: bool,
	/// Whether a membership snapshot was written (see [`crate::store::Store::write_snapshot`]).
	pub snapshot_written: bool,
}

/// Run `slice` until it does less than a full slice of work or `deadline` passes. Returns the
/// work done and whether it ran out of work (rather than time).
fn drain(deadline: Instant, mut slice: impl FnMut() -> Result<usize>) -> Result<(usize, bool)> {
	let mut total = 0;
	loop {
		let done = slice()?;
		total += done;
		if done < SLICE {
			return Ok((total, true));
		}
		if Instant::now() >= deadline {
			return Ok((total, false));
		}
	}
}

impl Store {
	/// Run maintenance for at most the configured budget.
	pub fn maintain(&self) -> Result<MaintenanceReport> {
		self.maintain_for(self.inner.config.maintenance_budget)
	}

	/// Run maintenance for at most `budget` (at least one slice of each kind runs).
	pub fn maintain_for(&self, budget: Duration) -> Result<MaintenanceReport> {
		let mut report = MaintenanceReport::default();
		let mut outcome = self.maintain_until(Instant::now() + budget, &mut report);
		if outcome.is_ok() && self.snapshot_due() {
			outcome = self.write_snapshot();
			report.snapshot_written = outcome.is_ok();
		}
		// Counted even when a later slice failed: earlier slices were committed.
		self.inner.metrics.add_expired(report.expired as u64);
		self.inner.metrics.add_evicted(report.evicted as u64);
		self.inner.metrics.add_pruned(report.bans_purged as u64);
		if report.expired + report.evicted + report.bans_purged > 0 {
			log::debug!(target: "statement-store", "maintenance: {report:?}");
		}
		outcome.map(|()| report)
	}

	fn maintain_until(&self, deadline: Instant, report: &mut MaintenanceReport) -> Result<()> {
		let mut cursor = None;
		let pass = Instant::now();
		let (expired, done) = drain(deadline, || self.expire_slice(&mut cursor))?;
		self.inner.metrics.expiry_took(pass.elapsed());
		report.expired = expired;
		if !done {
			report.incomplete = true;
			return Ok(());
		}
		let (purged, done) = drain(deadline, || self.purge_bans_slice())?;
		report.bans_purged = purged;
		if !done {
			report.incomplete = true;
			return Ok(());
		}
		loop {
			let (checked, evicted, finished) = self.allowance_slice()?;
			report.accounts_checked += checked;
			report.evicted += evicted;
			if finished {
				return Ok(());
			}
			if Instant::now() >= deadline {
				report.incomplete = true;
				return Ok(());
			}
		}
	}

	/// Remove up to one slice of statements whose expiry second has passed, walking the
	/// expiry lists (one per second, oldest first) from `cursor` (the segment an earlier
	/// slice of this call stopped in) and moving it on.
	///
	/// The walk is parity-db's expiry lists with the staged batches laid over them
	/// ([`crate::write::staging::Database::overlay`]), so it sees what was admitted a moment
	/// ago and not what earlier slices removed, without handing the staged batches over
	/// first: that is a parity-db commit on this thread, which cost an expiry round of
	/// statements just submitted a sixth of its time, and the drain thread does it anyway.
	fn expire_slice(&self, cursor: &mut Option<Vec<u8>>) -> Result<usize> {
		let inner = &self.inner;
		let now = inner.config.clock.now();
		inner.write(|batch| {
			// The segments of seconds before `now`.
			let end = schema::PostingKey::Expiry(now).prefix();
			let mut iter = inner.db.overlay_below(
				schema::COL_POSTING,
				&[schema::EXPIRY_PREFIX],
				Some(&end),
			)?;
			iter.seek(cursor.as_deref().unwrap_or(&[schema::EXPIRY_PREFIX]))?;
			let ban_until = inner.ban_until();
			let mut removed = 0;
			while removed < SLICE {
				let Some((key, _)) = iter.next()? else { break };
				let Some(second) = expiry_second(&key)? else { break };
				if second >= now {
					break;
				}
				*cursor = Some(key.clone());
				for id in inner.segment_ids(&key)? {
					if removed == SLICE {
						break;
					}
					// Quarantined (its body damaged) is stepped over and left for `repair`,
					// so that one damaged statement does not hold up expiry.
					let Some((hash, record)) = inner.record_by_id(id)? else { continue };
					batch.remove(&hash, &record, Some(ban_until))?;
					removed += 1;
				}
			}
			Ok(removed)
		})
	}

	/// Evict the lowest-priority statements (lowest expiry first, over all accounts) until the
	/// store fits [`crate::config::Config::max_total_statements`] and
	/// [`crate::config::Config::max_total_size`]: opening runs this, so a restart with lower limits
	/// takes effect at once. Returns how many were evicted.
	pub(crate) fn trim_to_limits(&self) -> Result<u64> {
		let inner = &self.inner;
		let config = &inner.config;
		let over = |counters: &schema::Counters| {
			counters.count > config.max_total_statements
				|| counters.total_size > config.max_total_size
		};
		let before = inner.writes.counters();
		if !over(&before) {
			return Ok(0);
		}
		log::info!(
			target: "statement-store",
			"{}: {} statements of {} bytes exceed the limits ({} statements, {} bytes); \
			 evicting the lowest-priority ones",
			config.path.display(),
			before.count,
			before.total_size,
			config.max_total_statements,
			config.max_total_size
		);
		let mut evicted = 0;
		loop {
			let removed = inner.write(|batch| {
				let (mut count, mut size) =
					(batch.counters_before().count, batch.counters_before().total_size);
				let mut iter = inner.db.iter(schema::COL_POSTING)?;
				iter.seek(&[schema::EXPIRY_PREFIX])?;
				let mut removed = 0;
				let over = |count: u64, size: u64| {
					count > config.max_total_statements || size > config.max_total_size
				};
				'segments: while removed < SLICE && over(count, size) {
					let Some((key, _)) = iter.next()? else { break };
					if expiry_second(&key)?.is_none() {
						break;
					}
					for id in inner.segment_ids(&key)? {
						if removed == SLICE || !over(count, size) {
							break 'segments;
						}
						// A quarantined statement (see `Inner::record`) is stepped over.
						let Some((hash, record)) = inner.record_by_id(id)? else { continue };
						batch.remove(&hash, &record, None)?;
						count -= 1;
						size = size.saturating_sub(u64::from(record.encoded_len));
						removed += 1;
					}
				}
				Ok(removed)
			})?;
			if removed == 0 {
				break;
			}
			evicted += removed as u64;
		}
		inner.metrics.add_evicted(evicted);
		log::info!(target: "statement-store", "evicted {evicted} statements to fit the limits");
		Ok(evicted)
	}

	/// Lift up to one slice of bans whose period has ended.
	fn purge_bans_slice(&self) -> Result<usize> {
		let inner = &self.inner;
		let now = inner.config.clock.now();
		inner.write(|batch| {
			// As the expiry walk: parity-db's index with the staged batches laid over it.
			// The bans due by `now`.
			let end = now.saturating_add(1).to_be_bytes();
			let mut iter = inner.db.overlay_below(schema::COL_BAN_ORDER, &[], Some(&end))?;
			iter.seek(&[])?;
			let mut purged = 0;
			while purged < SLICE {
				let Some((key, _)) = iter.next()? else { break };
				let until =
					schema::be_u64(&key, 0).ok_or_else(|| bad(schema::COL_BAN_ORDER, "key"))?;
				if until > now {
					break;
				}
				let hash =
					schema::array32(&key[8..]).ok_or_else(|| bad(schema::COL_BAN_ORDER, "key"))?;
				batch.unban(&hash, until);
				purged += 1;
			}
			Ok(purged)
		})
	}

	/// Re-check up to one slice of accounts against their current allowance, evicting their
	/// lowest-expiry statements until they fit. Returns (checked, evicted, reached the end).
	fn allowance_slice(&self) -> Result<(usize, usize, bool)> {
		let inner = &self.inner;
		let mut cursor = inner.writes.allowance_cursor.lock();
		inner.write(|batch| {
			// Accounts and their usage as the staged batches left them.
			let mut accounts = inner.db.overlay(schema::COL_USAGE, &[])?;
			match &*cursor {
				Some(last) => {
					let mut next = last.to_vec();
					next.push(0);
					accounts.seek(&next)?;
				}
				None => accounts.seek(&[])?,
			}
			let ban_until = inner.ban_until();
			let (mut checked, mut evicted) = (0, 0);
			let mut finished = true;
			while let Some((key, value)) = accounts.next()? {
				let account: AccountId =
					schema::array32(&key).ok_or_else(|| bad(schema::COL_USAGE, "key"))?;
				let usage: Usage = schema::decode_value(schema::COL_USAGE, &value)?;
				let allowance = inner.writes.allowances.allowance(&account)?.unwrap_or_default();
				let (mut count, mut size) = (u64::from(usage.count), usage.data_size);
				let over = |count: u64, size: u64| {
					count > u64::from(allowance.max_count) || size > u64::from(allowance.max_size)
				};
				if over(count, size) {
					let mut walk = inner.by_priority(&account)?;
					while over(count, size) {
						let Some((_, hash, record)) = walk.next()? else { break };
						batch.remove(&hash, &record, Some(ban_until))?;
						count -= 1;
						size -= u64::from(record.data_len);
						evicted += 1;
					}
				}
				checked += 1;
				*cursor = Some(account);
				if checked >= SLICE || evicted >= SLICE {
					finished = false;
					break;
				}
			}
			if finished {
				*cursor = None;
			}
			Ok((checked, evicted, finished))
		})
	}

	/// Run [`Store::maintain`] every `period` on a tokio runtime until the returned handle is
	/// aborted or the runtime stops. Each run happens on a blocking thread.
	pub fn spawn_maintenance(
		&self,
		handle: &tokio::runtime::Handle,
		period: Duration,
	) -> tokio::task::JoinHandle<()> {
		let store = self.clone();
		handle.spawn(async move {
			let mut ticks = tokio::time::interval(period);
			ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
			loop {
				ticks.tick().await;
				let store = store.clone();
				match tokio::task::spawn_blocking(move || store.maintain()).await {
					Ok(Ok(_)) => {}
					Ok(Err(err)) => {
						log::warn!(target: "statement-store", "maintenance failed: {err}")
					}
					Err(err) => log::warn!(target: "statement-store", "maintenance task: {err}"),
				}
			}
		})
	}
}

/// The second of an expiry segment's key; `None` past the expiry lists.
fn expiry_second(key: &[u8]) -> Result<Option<u64>> {
	if key.first() != Some(&schema::EXPIRY_PREFIX) {
		return Ok(None);
	}
	if key.len() != schema::EXPIRY_SEGMENT_KEY {
		return Err(bad(schema::COL_POSTING, "expiry segment key"));
	}
	Ok(schema::be_u64(key, 1))
}

#[cfg(test)]
mod tests {
	use crate::{
		allowance::MapAllowances,
		config::{Clock, Config},
		store::Store,
	};
	use statement_primitives::{
		testing::{ed25519_pair, TestStatement},
		Statement, StatementAllowance, StatementSource, StatementStore, SubmitResult, Topic,
	};
	use std::{
		sync::{
			atomic::{AtomicU64, Ordering},
			Arc,
		},
		time::Duration,
	};

	const NOW: u64 = 1_700_000_000;

	fn statement(n: u8, expires: u32) -> Statement {
		TestStatement::new()
			.expiry(expires, u32::from(n))
			.topic(0, Topic([n; 32]))
			.data(vec![n; 3])
			.signed_ed25519(&ed25519_pair(u32::from(n)))
	}

	/// Maintenance walks the expiry lists and the bans with what was staged a moment ago
	/// laid over them: with the background thread kept from handing anything over, it
	/// still finds the statements submitted just before it and the bans it staged itself,
	/// and hands nothing over to do so.
	#[test]
	fn maintenance_finds_what_is_staged_and_not_yet_handed_over() {
		let dir = tempfile::tempdir().unwrap();
		let now = Arc::new(AtomicU64::new(NOW));
		let clock = now.clone();
		let mut config = Config::new(dir.path());
		config.clock = Clock::from_fn(move || clock.load(Ordering::Relaxed));
		let allowances = MapAllowances::new().with_default(StatementAllowance::new(100, 1 << 20));
		let store = Store::open(config, Arc::new(allowances)).unwrap();
		let held = store.inner.writes.writeback.hold();
		let opened = store.inner.db.staged_batches();

		let short: Vec<_> = (1..=3).map(|n| statement(n, (NOW + 10) as u32)).collect();
		let long = statement(4, u32::MAX);
		for statement in short.iter().chain([&long]) {
			assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		}
		let staged = store.inner.db.staged_batches();
		assert_eq!(staged, opened + 4, "each submit staged one batch and none was handed over");

		now.store(NOW + 11, Ordering::Relaxed);
		let report = store.maintain_for(Duration::from_secs(60)).unwrap();
		assert_eq!(report.expired, 3, "the staged expiry lists were walked: {report:?}");
		assert!(short.iter().all(|statement| !store.has_statement(&statement.hash())));
		assert!(store.has_statement(&long.hash()));
		assert!(
			store.inner.db.staged_batches() > staged,
			"maintenance staged its removals and handed nothing over"
		);

		now.store(NOW + 12 + store.inner.config.ban_period.as_secs(), Ordering::Relaxed);
		let report = store.maintain_for(Duration::from_secs(60)).unwrap();
		assert_eq!(report.bans_purged, 3, "the staged bans were walked: {report:?}");
		assert_eq!(report.expired, 0);
		assert!(store.inner.db.staged_batches() > staged, "still nothing handed over");
		drop(held);
		assert!(store.has_statement(&long.hash()));
	}
}
