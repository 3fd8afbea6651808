//! Maintenance: drop expired statements, purge old bans, re-check allowances.
//!
//! Each kind of work walks an ordered index from its start (expiry order, purge-time order,
//! account order), in slices of at most [`SLICE`] items, each slice one commit taken under
//! the writer lock and released before the next, so submits interleave. The whole call stops
//! when its time budget is spent and carries on where it left off next time.

use crate::{
	error::bad,
	error::Result,
	index::schema::{self, Usage},
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
		// Once per call, so that every walk below sees everything admitted before it; the
		// walks then read parity-db's indexes as they stand and skip what their own earlier
		// slices removed (see `expire_slice`), instead of handing over before every slice.
		self.inner.db.hand_over()?;
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
	/// The walk finds segments in parity-db's index as it stands, without first handing the
	/// staged batches over (a parity-db commit on this thread for every slice, which cost
	/// more than the removals), and reads each segment's ids through the staged batches, so
	/// what earlier slices removed is gone from them; the call handed over once before its
	/// first slice, and segments admitted since are left to the next call.
	fn expire_slice(&self, cursor: &mut Option<Vec<u8>>) -> Result<usize> {
		let inner = &self.inner;
		let now = inner.config.clock.now();
		inner.write(|batch| {
			let mut iter = inner.db.iter_behind(schema::COL_POSTING)?;
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
			// As the expiry walk: parity-db's index as it stands, skipping what the staged
			// batches lifted.
			let mut iter = inner.db.iter_behind(schema::COL_BAN_ORDER)?;
			iter.seek_to_first()?;
			let mut purged = 0;
			while purged < SLICE {
				let Some((key, _)) = iter.next()? else { break };
				let until =
					schema::be_u64(&key, 0).ok_or_else(|| bad(schema::COL_BAN_ORDER, "key"))?;
				if until > now {
					break;
				}
				if let Some(None) = inner.db.staged(schema::COL_BAN_ORDER, &key) {
					continue;
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
			// Accounts as parity-db has them (one first seen since the call began is checked
			// next round); each account's usage as the staged batches left it.
			let mut accounts = inner.db.iter_behind(schema::COL_USAGE)?;
			match &*cursor {
				Some(last) => {
					let mut next = last.to_vec();
					next.push(0);
					accounts.seek(&next)?;
				}
				None => accounts.seek_to_first()?,
			}
			let ban_until = inner.ban_until();
			let (mut checked, mut evicted) = (0, 0);
			let mut finished = true;
			while let Some((key, value)) = accounts.next()? {
				let account: AccountId =
					schema::array32(&key).ok_or_else(|| bad(schema::COL_USAGE, "key"))?;
				let value = match inner.db.staged(schema::COL_USAGE, &key) {
					Some(Some(staged)) => staged,
					Some(None) => continue,
					None => value,
				};
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
