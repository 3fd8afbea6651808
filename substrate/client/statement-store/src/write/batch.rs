//! One atomic change: every column a submit, removal, eviction or maintenance step touches,
//! staged as one unit (and handed to parity-db inside one commit, see `staging`), then
//! mirrored into the cache and the membership set while readers are held off, so no query
//! sees half of it.

use crate::{
	error::bad,
	error::Error,
	error::Result,
	index::posting::{decode_pairs, encode_pairs, encode_segment},
	index::schema::{self, Counters, Id, PostingKey, Record, Tallies, Usage},
	store::Inner,
	write::intent::{Intent, Step},
};
use codec::Encode;
use parity_db::ColId;
use statement_primitives::{AccountId, Hash};
use std::time::{Duration, Instant};

/// The maps a batch keeps what it edits in, by key: hashed (a removal or an expiry slice looks
/// one up for every statement it touches, and the order they are staged in does not matter).
type Map<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// A write that waits for the writer lock or holds it this long is logged (debug): every
/// submit queues behind the holder, so these are the stalls a client sees.
const SLOW_WRITE: Duration = Duration::from_millis(5);

impl Inner {
	/// The one write path: take the writer lock, let `build` fill a batch that starts from the
	/// current counters, commit it (unless `build` left it empty) and write the counters back.
	/// Returns what `build` returns; on error nothing of the batch is visible or durable.
	pub fn write<T>(&self, build: impl FnOnce(&mut Batch<'_>) -> Result<T>) -> Result<T> {
		let asked = Instant::now();
		let mut counters = self.writer()?;
		let got = Instant::now();
		let mut batch = Batch::new(self, *counters);
		let out = build(&mut batch)?;
		let built = got.elapsed();
		let steps = batch.steps.len();
		if !batch.is_empty() {
			*counters = batch.commit()?;
		}
		drop(counters);
		let (waited, held) = (got - asked, got.elapsed());
		if waited >= SLOW_WRITE || held >= SLOW_WRITE {
			log::debug!(
				target: "statement-store",
				"slow write: waited {waited:?} for the writer lock, held it {held:?} for {steps} \
				 steps ({built:?} of it reading what to change)"
			);
		}
		Ok(out)
	}

	/// Redo the intent-log batches the database does not hold yet (after a crash), in order,
	/// and make parity-db hold them durably before the store is used. `tolerant` (after a
	/// gap the operator chose to skip) lets a step that no longer applies pass.
	pub(crate) fn redo(
		&self,
		intents: Vec<Intent>,
		held: u64,
		tolerant: bool,
		path: &str,
	) -> Result<()> {
		let pending: Vec<_> = intents.into_iter().filter(|(seq, _)| *seq > held).collect();
		if pending.is_empty() {
			return Ok(());
		}
		log::info!(
			target: "statement-store",
			"{path}: redoing {} changes from the intent log that the database lacks",
			pending.len()
		);
		let mut counters = self.writer()?;
		for (seq, steps) in pending {
			let batch = Batch::new(self, *counters).redo(steps, tolerant)?;
			*counters = batch.commit_replayed(seq)?;
		}
		drop(counters);
		// The old intent files go next: make parity-db hold the batches durably.
		self.writes.checkpoint()
	}

	/// Stage `ops`, which delete what a membership snapshot now covers (removal-log
	/// segments, journal entries), under the writer lock and with readers held off. No
	/// intent record is needed: after a crash they are deleted again.
	pub(crate) fn stage_covered(&self, ops: Vec<(ColId, Vec<u8>, Option<Vec<u8>>)>) {
		let _counters = self.writes.counters.lock();
		let _view = self.reads.publish();
		self.db.stage(ops);
	}

	/// When a ban placed now ends (unix seconds).
	pub fn ban_until(&self) -> u64 {
		self.config.clock.now() + self.config.ban_period.as_secs()
	}
}

/// One posting segment a batch edits: its ids as the batch found them, with those it added,
/// and the ids it removed, taken out once at commit (one pass, instead of shifting the rest
/// of the segment for each: an expiry slice removes up to 256 ids from one segment).
struct SegmentEdit {
	ids: Vec<Id>,
	/// Removed ids, in the order removed (duplicates allowed).
	gone: Vec<Id>,
}

impl SegmentEdit {
	fn add(&mut self, id: Id) {
		// Removed and added again in one batch: the later step wins, as applied in order.
		if !self.gone.is_empty() {
			self.gone.retain(|gone| *gone != id);
		}
		// New ids are the largest, so this is nearly always a push.
		if let Err(at) = self.ids.binary_search(&id) {
			self.ids.insert(at, id);
		}
	}

	/// The segment's ids after the batch.
	fn finish(mut self) -> Vec<Id> {
		match self.gone.len() {
			0 => {}
			1 => {
				if let Ok(at) = self.ids.binary_search(&self.gone[0]) {
					self.ids.remove(at);
				}
			}
			_ => {
				self.gone.sort_unstable();
				let gone = &self.gone;
				self.ids.retain(|id| gone.binary_search(id).is_err());
			}
		}
		self.ids
	}
}

/// Where a committed batch's intent number comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sequence {
	/// The next one: the batch is appended to the intent log as it commits.
	Fresh,
	/// Read from the intent log after a crash (redone).
	Replayed(u64),
	/// The newest of removals acknowledged earlier, each appended then (see `deferred`).
	Acknowledged(u64),
}

/// Changes collected for one commit. Built while holding the store's writer lock.
pub struct Batch<'a> {
	inner: &'a Inner,
	ops: Vec<(ColId, Vec<u8>, Option<Vec<u8>>)>,
	segments: Map<(PostingKey, Id), SegmentEdit>,
	/// Account lists touched, by key: (id, low 32 bits of the expiry), sorted by id.
	account_lists: Map<Vec<u8>, Vec<(Id, u32)>>,
	postings: Vec<(PostingKey, Id, bool)>,
	/// Each account touched: statements it held before the batch, and its usage now.
	usage: Map<AccountId, (u32, Usage)>,
	/// Bans placed less bans lifted.
	bans: i64,
	counters: Counters,
	/// The counters before the batch.
	start: Counters,
	added: Vec<(Hash, Record, Vec<u8>)>,
	removed: Vec<(Hash, Id)>,
	/// What the batch did, for the intent log.
	steps: Vec<Step>,
}

impl<'a> Batch<'a> {
	/// An empty batch starting from the store's current counters.
	pub fn new(inner: &'a Inner, counters: Counters) -> Self {
		Batch {
			inner,
			ops: Vec::new(),
			segments: Map::default(),
			account_lists: Map::default(),
			postings: Vec::new(),
			usage: Map::default(),
			bans: 0,
			counters,
			start: counters,
			added: Vec::new(),
			removed: Vec::new(),
			steps: Vec::new(),
		}
	}

	/// The counters as they stood before this batch.
	pub fn counters_before(&self) -> Counters {
		self.start
	}

	/// Whether the batch changes nothing.
	pub fn is_empty(&self) -> bool {
		self.ops.is_empty() && self.segments.is_empty() && self.account_lists.is_empty()
	}

	/// Admit a statement under the next id.
	pub fn add(
		&mut self,
		hash: Hash,
		account: AccountId,
		statement: &statement_primitives::Statement,
		encoding: Vec<u8>,
	) -> Result<Id> {
		self.steps.push(Step::Add { account, encoding: encoding.clone() });
		let id = self.counters.next_id;
		self.counters.next_id += 1;
		let record = Record::new(id, account, statement, encoding.len());
		self.inner.writes.ties.admitting(&account, record.expiry);
		let body = schema::body_value(&hash, &encoding);
		self.ops.push((schema::COL_BODY, schema::body_key(id).to_vec(), Some(body)));
		self.ops.push((schema::COL_HASH, hash.to_vec(), Some(record.hash_value().to_vec())));
		self.ops.push((schema::COL_JOURNAL, schema::id_key(id).to_vec(), Some(hash.to_vec())));
		self.account_list(&record, true)?;
		if let Some(channel) = &record.channel {
			// A replaced holder of this channel may have queued a delete of the same key.
			let key = schema::channel_key(&account, channel);
			self.ops.retain(|(col, k, _)| !(*col == schema::COL_CHANNEL && k[..] == key[..]));
			let entry = schema::ChannelEntry { id, expiry: record.expiry };
			self.ops.push((schema::COL_CHANNEL, key.to_vec(), Some(entry.encode())));
		}
		for key in record.posting_keys() {
			self.posting(key, id, true)?;
		}
		self.posting(PostingKey::All, id, true)?;
		let usage = self.usage_mut(&account)?;
		usage.count += 1;
		usage.data_size += u64::from(record.data_len);
		self.counters.count += 1;
		self.counters.total_size += u64::from(record.encoded_len);
		self.added.push((hash, record, encoding));
		Ok(id)
	}

	/// Remove a stored statement and its index entries; ban its hash until `ban_until` (unix
	/// seconds) if given.
	pub fn remove(&mut self, hash: &Hash, record: &Record, ban_until: Option<u64>) -> Result<()> {
		self.steps.push(Step::Remove { hash: *hash, ban_until });
		let id = record.id;
		self.ops.push((schema::COL_BODY, schema::body_key(id).to_vec(), None));
		self.ops.push((schema::COL_HASH, hash.to_vec(), None));
		self.ops.push((schema::COL_JOURNAL, schema::id_key(id).to_vec(), None));
		self.account_list(record, false)?;
		if let Some(channel) = &record.channel {
			// Only clear the channel if it still points at this statement.
			let key = schema::channel_key(&record.account, channel);
			let current = self.inner.db.get(schema::COL_CHANNEL, &key)?;
			let pending =
				self.ops.iter().rev().find(|(col, k, _)| {
					*col == schema::COL_CHANNEL && k.as_slice() == key.as_slice()
				});
			let holder = match pending {
				Some((_, _, value)) => value.clone(),
				None => current,
			};
			if holder.as_deref().map(schema::ChannelEntry::decode).transpose()?.map(|e| e.id)
				== Some(id)
			{
				self.ops.push((schema::COL_CHANNEL, key.to_vec(), None));
			}
		}
		for key in record.posting_keys() {
			self.posting(key, id, false)?;
		}
		self.posting(PostingKey::All, id, false)?;
		let usage = self.usage_mut(&record.account)?;
		usage.count = usage.count.saturating_sub(1);
		usage.data_size = usage.data_size.saturating_sub(u64::from(record.data_len));
		self.counters.count = self.counters.count.saturating_sub(1);
		self.counters.total_size =
			self.counters.total_size.saturating_sub(u64::from(record.encoded_len));
		if let Some(until) = ban_until {
			self.ban(hash, until);
		}
		self.removed.push((*hash, id));
		Ok(())
	}

	/// Refuse `hash` from the network until `until` (unix seconds).
	fn ban(&mut self, hash: &Hash, until: u64) {
		// Set before the ban is staged: the flag may be early, never late.
		self.inner.writes.banned.store(true, std::sync::atomic::Ordering::Release);
		self.bans += 1;
		self.ops.push((schema::COL_BAN, hash.to_vec(), Some(until.to_le_bytes().to_vec())));
		self.ops.push((
			schema::COL_BAN_ORDER,
			schema::ban_order_key(until, hash).to_vec(),
			Some(Vec::new()),
		));
	}

	/// Lift a ban that ends at `until`.
	pub fn unban(&mut self, hash: &Hash, until: u64) {
		self.steps.push(Step::Unban { hash: *hash, until });
		self.bans -= 1;
		self.ops.push((schema::COL_BAN, hash.to_vec(), None));
		self.ops.push((schema::COL_BAN_ORDER, schema::ban_order_key(until, hash).to_vec(), None));
	}

	fn usage_mut(&mut self, account: &AccountId) -> Result<&mut Usage> {
		let entry = match self.usage.entry(*account) {
			std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
			std::collections::hash_map::Entry::Vacant(entry) => {
				let stored: Usage = match self.inner.db.get(schema::COL_USAGE, account)? {
					Some(bytes) => schema::decode_value(schema::COL_USAGE, &bytes)?,
					None => Usage::default(),
				};
				entry.insert((stored.count, stored))
			}
		};
		Ok(&mut entry.1)
	}

	fn account_list(&mut self, record: &Record, add: bool) -> Result<()> {
		let key = schema::account_list_key(&record.account, record.expiry, record.id);
		let pairs = match self.account_lists.entry(key) {
			std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
			std::collections::hash_map::Entry::Vacant(entry) => {
				// As the last commit left it: decoded already if a recent batch edited it.
				let pairs = match self.inner.writes.account_lists.take(entry.key()) {
					Some(pairs) => pairs,
					None => {
						let mut pairs = Vec::new();
						if let Some(bytes) = self.inner.db.get(schema::COL_POSTING, entry.key())? {
							decode_pairs(&bytes, &mut pairs)
								.ok_or_else(|| bad(schema::COL_POSTING, "account list"))?;
						}
						pairs
					}
				};
				entry.insert(pairs)
			}
		};
		match (pairs.binary_search_by_key(&record.id, |(id, _)| *id), add) {
			(Err(at), true) => pairs.insert(at, (record.id, record.expiry as u32)),
			(Ok(at), false) => {
				pairs.remove(at);
			}
			_ => {}
		}
		Ok(())
	}

	fn posting(&mut self, key: PostingKey, id: Id, add: bool) -> Result<()> {
		let base = key.segment_base(id);
		let edit = match self.segments.entry((key, base)) {
			std::collections::hash_map::Entry::Occupied(entry) => entry.into_mut(),
			std::collections::hash_map::Entry::Vacant(entry) => {
				// As the last commit left it: decoded already if a recent batch edited it.
				let ids = match self.inner.writes.segments.take(&(key, base)) {
					Some(ids) => ids,
					None => self.inner.segment_ids(&key.segment_key(base))?,
				};
				entry.insert(SegmentEdit { ids, gone: Vec::new() })
			}
		};
		if add {
			edit.add(id);
		} else {
			edit.gone.push(id);
		}
		if !matches!(key, PostingKey::Expiry(_)) {
			// Expiry lists are never queried, so never cached.
			self.postings.push((key, id, add));
		}
		Ok(())
	}

	/// Append the batch to the intent log, then stage it as one commit and publish it to
	/// cache, membership and subscribers while readers wait. Returns the counters after the
	/// commit; on error nothing of the batch is visible or durable.
	pub fn commit(self) -> Result<Counters> {
		self.commit_as(Sequence::Fresh)
	}

	/// Redo a batch read from the intent log, under its original sequence number. The caller
	/// checkpoints before relying on it.
	pub fn commit_replayed(self, seq: u64) -> Result<Counters> {
		self.commit_as(Sequence::Replayed(seq))
	}

	/// Apply removals acknowledged already (see `deferred`), the newest under intent batch
	/// `seq`: they are out of the membership set and the body cache, and their intent
	/// records are appended.
	pub fn commit_acknowledged(self, seq: u64) -> Result<Counters> {
		self.commit_as(Sequence::Acknowledged(seq))
	}

	/// Redo `steps` (a batch from the intent log) against the current state. `tolerant`
	/// (batches before this one are missing) skips adding what is stored and removing what
	/// is not, instead of calling the database inconsistent.
	pub fn redo(mut self, steps: Vec<Step>, tolerant: bool) -> Result<Self> {
		for step in steps {
			match step {
				Step::Add { account, encoding } => {
					let statement = statement_primitives::Statement::from_bytes(&encoding)
						.map_err(|err| Error::BadValue {
							column: schema::COL_BODY,
							detail: format!("intent log statement: {err}"),
						})?;
					let hash = statement_primitives::hash_encoded(&encoding);
					if tolerant && self.stored(&hash)? {
						continue;
					}
					self.add(hash, account, &statement, encoding)?;
				}
				Step::Remove { hash, ban_until } => {
					if !self.stored(&hash)? {
						if tolerant {
							continue;
						}
						return Err(Error::Corrupt {
							path: self.inner.config.path.display().to_string(),
							detail: "the intent log removes a statement the database lacks".into(),
						});
					}
					// Quarantined (its body damaged): left for `repair`, as every walk does.
					let Some(record) = self.inner.record(&hash)? else { continue };
					self.remove(&hash, &record, ban_until)?;
				}
				Step::Unban { hash, until } => self.unban(&hash, until),
			}
		}
		Ok(self)
	}

	/// Whether this batch removes `hash`.
	pub fn removes(&self, hash: &Hash) -> bool {
		self.removed.iter().any(|(gone, _)| gone == hash)
	}

	/// Whether `hash` is stored, counting this batch's own steps.
	fn stored(&self, hash: &Hash) -> Result<bool> {
		if self.added.iter().any(|(added, _, _)| added == hash) {
			return Ok(true);
		}
		if self.removes(hash) {
			return Ok(false);
		}
		Ok(self.inner.record_id(hash)?.is_some())
	}

	/// Append the batch's removals to the removal log (see [`schema::removal_segment_key`]);
	/// returns the log's new position if there were any.
	fn log_removals(&mut self) -> Result<Option<u64>> {
		if self.removed.is_empty() {
			return Ok(None);
		}
		let mut position = self.inner.writes.removals.load(std::sync::atomic::Ordering::Acquire);
		let mut open: Option<(u64, Vec<u8>)> = None;
		for (hash, id) in &self.removed {
			let segment = position / schema::REMOVAL_SEGMENT;
			if open.as_ref().map(|(at, _)| *at) != Some(segment) {
				if let Some((at, entries)) = open.take() {
					self.ops.push((
						schema::COL_META,
						schema::removal_segment_key(at),
						Some(entries),
					));
				}
				let key = schema::removal_segment_key(segment);
				let mut entries = self.inner.db.get(schema::COL_META, &key)?.unwrap_or_default();
				let logged = (position % schema::REMOVAL_SEGMENT) as usize * schema::REMOVAL_ENTRY;
				entries.truncate(logged);
				open = Some((segment, entries));
			}
			let entries = &mut open.as_mut().expect("opened above").1;
			entries.extend_from_slice(&id.to_le_bytes());
			entries.extend_from_slice(&hash[..8]);
			position += 1;
		}
		if let Some((at, entries)) = open {
			self.ops.push((schema::COL_META, schema::removal_segment_key(at), Some(entries)));
		}
		self.ops.push((schema::COL_META, schema::KEY_REMOVALS.to_vec(), Some(position.encode())));
		Ok(Some(position))
	}

	fn commit_as(mut self, sequence: Sequence) -> Result<Counters> {
		let inner = self.inner;
		let mut edited = Vec::with_capacity(self.segments.len());
		for ((key, base), edit) in std::mem::take(&mut self.segments) {
			let ids = edit.finish();
			let value = (!ids.is_empty()).then(|| encode_segment(&ids));
			self.ops.push((schema::COL_POSTING, key.segment_key(base), value));
			edited.push(((key, base), ids));
		}
		let mut lists = Vec::with_capacity(self.account_lists.len());
		for (key, pairs) in std::mem::take(&mut self.account_lists) {
			let value = (!pairs.is_empty()).then(|| encode_pairs(&pairs));
			self.ops.push((schema::COL_POSTING, key.clone(), value));
			lists.push((key, pairs));
		}
		let mut accounts: i64 = 0;
		for (account, (before, usage)) in std::mem::take(&mut self.usage) {
			accounts += i64::from(usage.count > 0) - i64::from(before > 0);
			let value = (usage.count > 0).then(|| usage.encode());
			self.ops.push((schema::COL_USAGE, account.to_vec(), value));
		}
		let tallies = (accounts != 0 || self.bans != 0).then(|| {
			let now = inner.writes.tallies();
			Tallies {
				accounts: now.accounts.saturating_add_signed(accounts),
				bans: now.bans.saturating_add_signed(self.bans),
			}
		});
		if let Some(tallies) = tallies {
			self.ops.push((schema::COL_META, schema::KEY_TALLIES.to_vec(), Some(tallies.encode())));
		}
		self.ops.push((
			schema::COL_META,
			schema::KEY_COUNTERS.to_vec(),
			Some(self.counters.encode()),
		));
		let removals = self.log_removals()?;
		let seq = match sequence {
			Sequence::Fresh => inner.writes.intent.next_seq(),
			Sequence::Replayed(seq) | Sequence::Acknowledged(seq) => seq,
		};
		self.ops.push((schema::COL_META, schema::KEY_INTENT.to_vec(), Some(seq.encode())));
		let replayed = matches!(sequence, Sequence::Replayed(_));
		if sequence == Sequence::Fresh {
			// Durable before visible: if the append fails, nothing of the batch was staged
			// or published, and its ids and sequence number are given out again.
			inner.writes.intent.append(seq, &self.steps)?;
		}
		if !replayed {
			let bytes: usize = self
				.ops
				.iter()
				.map(|(_, key, value)| key.len() + value.as_ref().map_or(0, Vec::len))
				.sum();
			inner.writes.disk.spend(3 * bytes as u64);
		}

		let publish = inner.reads.publish();
		inner.db.stage(self.ops);
		// Staged: the next batch that edits these segments starts from them as they are now.
		inner.writes.segments.put_all(edited);
		inner.writes.account_lists.put_all(lists);
		inner.writes.writeback.staged(seq);
		if let Some(tallies) = tallies {
			inner.writes.set_tallies(tallies);
		}
		if let Some(removals) = removals {
			inner.writes.removals.store(removals, std::sync::atomic::Ordering::Release);
		}
		publish.lists(&self.postings);
		if self.added.iter().any(|(_, record, _)| record.decryption_key.is_some()) {
			publish.keyed();
		}
		if matches!(sequence, Sequence::Acknowledged(_)) {
			// Out of the set and the cache since they were acknowledged; their ids leave
			// the waiting set only now that no list holds them.
			inner.writes.deferred.settled();
		} else {
			for (hash, id) in &self.removed {
				inner.membership.remove(hash, *id);
				publish.removed(*id);
			}
		}
		for (hash, record, _) in &self.added {
			inner.membership.insert(hash, record.id);
		}
		inner.subscriptions.notify(self.added);
		inner.metrics.set_totals(self.counters.count, self.counters.total_size);
		drop(publish);
		if !replayed {
			// The batch is durable and published: a failed hand-over here must not fail it
			// (the caller would give its ids out again). The background threads retry.
			if let Err(err) = inner.writes.writeback.relieve() {
				log::warn!(target: "statement-store", "handing changes to the database failed: {err}");
			}
		}
		Ok(self.counters)
	}
}

#[cfg(test)]
mod tests;
