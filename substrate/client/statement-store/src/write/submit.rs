//! The submit pipeline and removals.
//!
//! size and expiry -> duplicate and ban -> proof -> allowance -> plan under the writer lock
//! (channel replacement, eviction of the account's lowest-expiry statements, global limits)
//! -> one commit -> cache and membership update -> subscribers.

use crate::{
	error::bad,
	error::Error,
	error::Result,
	index::schema::{self, Id, Record},
	store::Store,
};
use statement_primitives::{
	hash_encoded, AccountId, Hash, InvalidReason, RejectionReason, SignatureVerificationResult,
	Statement, StatementAllowance, StatementSource, SubmitResult, MAX_STATEMENT_SIZE,
};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the last submit that reached the store failed (for logging a run of failures once).
static SUBMITS_FAILING: AtomicBool = AtomicBool::new(false);

/// Statements the plan removes to make room, with their records.
type Evictions = Vec<(Hash, Record)>;

impl Store {
	pub(crate) fn submit_statement(
		&self,
		statement: Statement,
		source: StatementSource,
	) -> SubmitResult {
		let began = std::time::Instant::now();
		let submitted = crate::error::catch_db_panic(|| self.try_submit(statement, source));
		// A full disk fails every submit alike: the first failure is a warning, the rest
		// are debug lines until a submit gets through again.
		let result = match submitted {
			Ok(result) => {
				if SUBMITS_FAILING.swap(false, Ordering::Relaxed) {
					log::info!(target: "statement-store", "submits are stored again");
				}
				result
			}
			Err(err) => {
				if SUBMITS_FAILING.swap(true, Ordering::Relaxed) {
					log::debug!(target: "statement-store", "submit failed: {err}");
				} else {
					log::warn!(
						target: "statement-store",
						"submit failed: {err} (further failures are logged at debug level until \
						 a submit is stored)"
					);
				}
				self.inner.metrics.internal_error(err.source_label());
				SubmitResult::InternalError(err.into())
			}
		};
		self.inner.metrics.submitted(result.label());
		self.inner.metrics.submit_took(began.elapsed());
		result
	}

	fn try_submit(&self, statement: Statement, source: StatementSource) -> Result<SubmitResult> {
		let inner = &self.inner;
		if let Some(full) = inner.writes.disk.refusal() {
			inner.metrics.internal_error(full.source_label());
			return Ok(SubmitResult::InternalError(full.into()));
		}
		let encoding = statement.encode();
		if encoding.len() > MAX_STATEMENT_SIZE {
			return Ok(SubmitResult::Invalid(InvalidReason::EncodingTooLarge {
				submitted_size: encoding.len(),
				max_size: MAX_STATEMENT_SIZE,
			}));
		}
		if u64::from(statement.expiration_timestamp_secs()) < inner.config.clock.now() {
			return Ok(SubmitResult::Invalid(InvalidReason::AlreadyExpired));
		}
		let hash = hash_encoded(&encoding);
		if inner.membership.contains(&hash) && inner.db.get(schema::COL_HASH, &hash)?.is_some() {
			return Ok(SubmitResult::Known);
		}
		let ban = self.ban_of(&hash)?;
		if ban.is_some() && !source.can_be_resubmitted() {
			return Ok(SubmitResult::KnownExpired);
		}
		let account = match statement.verify_signature() {
			SignatureVerificationResult::Valid(account) => account,
			SignatureVerificationResult::Invalid => {
				return Ok(SubmitResult::Invalid(InvalidReason::BadProof))
			}
			SignatureVerificationResult::NoSignature => {
				return Ok(SubmitResult::Invalid(InvalidReason::NoProof))
			}
		};
		let allowance = match inner.writes.allowances.allowance(&account)? {
			Some(allowance) if !allowance.is_depleted() => allowance,
			_ => return Ok(SubmitResult::Rejected(RejectionReason::NoAllowance)),
		};
		if statement.data_len() as u64 > u64::from(allowance.max_size) {
			return Ok(SubmitResult::Rejected(RejectionReason::DataTooLarge {
				submitted_size: statement.data_len(),
				available_size: allowance.max_size as usize,
			}));
		}

		let evicted = inner.write(|batch| {
			// Another writer may have stored it while we verified. Membership has no false
			// negatives and is updated before the writer lock is released.
			if inner.membership.contains(&hash) && inner.db.get(schema::COL_HASH, &hash)?.is_some()
			{
				return Ok(Err(SubmitResult::Known));
			}
			let evictions = match self.plan(&statement, &account, &allowance)? {
				Ok(evictions) => evictions,
				Err(reason) => return Ok(Err(SubmitResult::Rejected(reason))),
			};
			let counters = batch.counters_before();
			let freed_size: u64 = evictions.iter().map(|(_, r)| u64::from(r.encoded_len)).sum();
			let count_after = counters.count - evictions.len() as u64 + 1;
			let size_after = counters.total_size - freed_size + encoding.len() as u64;
			if count_after > inner.config.max_total_statements
				|| size_after > inner.config.max_total_size
			{
				return Ok(Err(SubmitResult::Rejected(RejectionReason::StoreFull)));
			}
			let ban_until = inner.ban_until();
			for (evicted, record) in &evictions {
				batch.remove(evicted, record, Some(ban_until))?;
			}
			if let Some(until) = ban {
				batch.unban(&hash, until);
			}
			batch.add(hash, account, &statement, encoding)?;
			Ok(Ok(evictions.len() as u64))
		})?;
		match evicted {
			Ok(evicted) => {
				inner.metrics.add_evicted(evicted);
				Ok(SubmitResult::New)
			}
			Err(refused) => Ok(refused),
		}
	}

	/// Decide what must go for `statement` to fit its account, or why it cannot.
	fn plan(
		&self,
		statement: &Statement,
		account: &AccountId,
		allowance: &StatementAllowance,
	) -> Result<std::result::Result<Evictions, RejectionReason>> {
		let inner = &self.inner;
		let expiry = statement.expiry();
		let mut evictions = Evictions::new();
		if let Some(channel) = statement.channel() {
			let key = schema::channel_key(account, &channel);
			if let Some(value) = inner.db.get(schema::COL_CHANNEL, &key)? {
				let holder = schema::ChannelEntry::decode(&value)?;
				if holder.expiry >= expiry {
					return Ok(Err(RejectionReason::ChannelPriorityTooLow {
						submitted_expiry: expiry,
						min_expiry: holder.expiry,
					}));
				}
				evictions.push(self.evictee(account, holder.id)?);
			}
		}

		let usage: schema::Usage = match inner.db.get(schema::COL_USAGE, account)? {
			Some(bytes) => schema::decode_value(schema::COL_USAGE, &bytes)?,
			None => schema::Usage::default(),
		};
		let mut count = u64::from(usage.count) + 1;
		let mut size = usage.data_size + statement.data_len() as u64;
		for (_, record) in &evictions {
			count -= 1;
			size -= u64::from(record.data_len);
		}
		let over = |count: u64, size: u64| {
			count > u64::from(allowance.max_count) || size > u64::from(allowance.max_size)
		};
		if !over(count, size) {
			return Ok(Ok(evictions));
		}
		let mut walk = inner.by_priority(account)?;
		while over(count, size) {
			let Some((entry_expiry, hash, record)) = walk.next()? else { break };
			if evictions.iter().any(|(evicted, _)| *evicted == hash) {
				continue;
			}
			if entry_expiry >= expiry {
				return Ok(Err(RejectionReason::AccountFull {
					submitted_expiry: expiry,
					min_expiry: entry_expiry,
				}));
			}
			count -= 1;
			size -= u64::from(record.data_len);
			evictions.push((hash, record));
		}
		if over(count, size) {
			// Nothing left to evict and still too much: only the data size can cause this,
			// and it was checked against the whole allowance already.
			return Ok(Err(RejectionReason::DataTooLarge {
				submitted_size: statement.data_len(),
				available_size: allowance.max_size as usize,
			}));
		}
		Ok(Ok(evictions))
	}

	/// The statement holding one of `account`'s channels, by the id its channel entry names.
	fn evictee(&self, account: &AccountId, id: Id) -> Result<(Hash, Record)> {
		match self.inner.record_by_id(id)? {
			Some((hash, record)) if record.account == *account => Ok((hash, record)),
			_ => Err(bad(schema::COL_CHANNEL, "channel holder")),
		}
	}

	/// When the ban on `hash` ends, if it is banned.
	pub(crate) fn ban_of(&self, hash: &Hash) -> Result<Option<u64>> {
		if let Some(until) = self.inner.writes.deferred.ban_of(hash) {
			return Ok(Some(until));
		}
		if !self.inner.writes.banned.load(std::sync::atomic::Ordering::Acquire) {
			return Ok(None);
		}
		let Some(value) = self.inner.db.get(schema::COL_BAN, hash)? else { return Ok(None) };
		Ok(Some(schema::le_u64_prefix(&value).ok_or_else(|| bad(schema::COL_BAN, "ban"))?))
	}

	/// Remove `hash` (and ban it), durably before returning; concurrent removals share one
	/// intent record (see `group`), and their index edits are applied later, together (see
	/// `deferred`).
	pub(crate) fn remove_statement(&self, hash: &Hash) -> statement_primitives::Result<()> {
		let inner = &self.inner;
		inner.writes.removing.remove(*hash, |hashes| {
			// A panic inside parity-db (damage to its files) is an error for the batch, as
			// for a submit.
			let removed = crate::error::catch_db_panic(|| {
				inner.remove_acknowledged(hashes, inner.ban_until())
			});
			Ok(removed?)
		})
	}

	/// Remove statements without banning them (see `StatementStore::release`), in one batch.
	pub(crate) fn release_statements(&self, hashes: &[Hash]) -> Result<()> {
		let inner = &self.inner;
		let mut hashes = hashes.to_vec();
		hashes.sort_unstable();
		hashes.dedup();
		crate::error::catch_db_panic(|| {
			inner.write(|batch| {
				for hash in &hashes {
					// Quarantined (its body damaged): left for `repair`, as every walk does.
					let Some((id, body)) = inner.find(hash)? else { continue };
					let Some(record) = inner.record_of_body(id, body.bytes()) else { continue };
					batch.remove(hash, &record, None)?;
				}
				Ok(())
			})
		})
	}

	pub(crate) fn remove_account(&self, account: &AccountId) -> Result<()> {
		let inner = &self.inner;
		inner.write(|batch| {
			let ban_until = inner.ban_until();
			let mut walk = inner.by_priority(account)?;
			while let Some((_, hash, record)) = walk.next()? {
				batch.remove(&hash, &record, Some(ban_until))?;
			}
			Ok(())
		})
	}
}

impl From<Error> for SubmitResult {
	fn from(err: Error) -> Self {
		SubmitResult::InternalError(err.into())
	}
}
