//! One atomic change: every column a submit, removal, eviction or maintenance step touches,
//! staged as one unit (and handed to parity-db inside one commit, see `staging`), then
//! mirrored into the cache and the membership set while readers are held off, so no query
//! sees half of it.

use crate::{
	posting::{decode_segment, encode_segment, segment_base},
	schema::{self, Counters, Id, PostingKey, Record, Usage},
	store::Inner,
	wal::Step,
	Error, Result,
};
use codec::Encode;
use parity_db::ColId;
use statement_primitives::{AccountId, Hash};
use std::collections::{BTreeMap, HashMap};

/// Changes collected for one commit. Built while holding the store's writer lock.
pub struct Batch<'a> {
	inner: &'a Inner,
	ops: Vec<(ColId, Vec<u8>, Option<Vec<u8>>)>,
	segments: BTreeMap<(PostingKey, Id), Vec<Id>>,
	postings: Vec<(PostingKey, Id, bool)>,
	usage: HashMap<AccountId, Usage>,
	counters: Counters,
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
			segments: BTreeMap::new(),
			postings: Vec::new(),
			usage: HashMap::new(),
			counters,
			added: Vec::new(),
			removed: Vec::new(),
			steps: Vec::new(),
		}
	}

	/// Whether the batch changes nothing.
	pub fn is_empty(&self) -> bool {
		self.ops.is_empty() && self.segments.is_empty()
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
		self.ops.push((schema::COL_BODY, schema::body_key(id).to_vec(), Some(encoding.clone())));
		self.ops.push((schema::COL_HASH, hash.to_vec(), Some(record.encode())));
		self.ops.push((schema::COL_JOURNAL, schema::id_key(id).to_vec(), Some(hash.to_vec())));
		self.ops.push((
			schema::COL_ACCOUNT,
			schema::account_key(&account, record.expiry, id).to_vec(),
			Some(hash.to_vec()),
		));
		self.ops.push((
			schema::COL_EXPIRY,
			schema::expiry_key(record.expiry, id).to_vec(),
			Some(hash.to_vec()),
		));
		if let Some(channel) = &record.channel {
			// A replaced holder of this channel may have queued a delete of the same key.
			let key = schema::channel_key(&account, channel);
			self.ops.retain(|(col, k, _)| !(*col == schema::COL_CHANNEL && k[..] == key[..]));
			let mut value = id.to_le_bytes().to_vec();
			value.extend_from_slice(&record.expiry.to_le_bytes());
			self.ops.push((schema::COL_CHANNEL, key.to_vec(), Some(value)));
		}
		for key in record.posting_keys() {
			self.posting(key, id, true)?;
		}
		self.postings.push((PostingKey::All, id, true));
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
		self.ops.push((
			schema::COL_ACCOUNT,
			schema::account_key(&record.account, record.expiry, id).to_vec(),
			None,
		));
		self.ops.push((schema::COL_EXPIRY, schema::expiry_key(record.expiry, id).to_vec(), None));
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
			if holder.as_deref().and_then(schema::le_u64_prefix) == Some(id) {
				self.ops.push((schema::COL_CHANNEL, key.to_vec(), None));
			}
		}
		for key in record.posting_keys() {
			self.posting(key, id, false)?;
		}
		self.postings.push((PostingKey::All, id, false));
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
		self.inner.banned.store(true, std::sync::atomic::Ordering::Release);
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
		self.ops.push((schema::COL_BAN, hash.to_vec(), None));
		self.ops.push((schema::COL_BAN_ORDER, schema::ban_order_key(until, hash).to_vec(), None));
	}

	fn usage_mut(&mut self, account: &AccountId) -> Result<&mut Usage> {
		if !self.usage.contains_key(account) {
			let stored = match self.inner.db.get(schema::COL_USAGE, account)? {
				Some(bytes) => schema::decode_value(schema::COL_USAGE, &bytes)?,
				None => Usage::default(),
			};
			self.usage.insert(*account, stored);
		}
		Ok(self.usage.entry(*account).or_default())
	}

	fn posting(&mut self, key: PostingKey, id: Id, add: bool) -> Result<()> {
		let base = segment_base(id);
		if !self.segments.contains_key(&(key, base)) {
			let mut ids = Vec::new();
			if let Some(bytes) = self.inner.db.get(schema::COL_POSTING, &key.segment_key(base))? {
				decode_segment(&bytes, &mut ids).ok_or(Error::BadValue {
					column: schema::COL_POSTING,
					detail: "posting segment does not decode".into(),
				})?;
			}
			self.segments.insert((key, base), ids);
		}
		let ids = self.segments.entry((key, base)).or_default();
		match (ids.binary_search(&id), add) {
			(Err(at), true) => ids.insert(at, id),
			(Ok(at), false) => {
				ids.remove(at);
			}
			_ => {}
		}
		self.postings.push((key, id, add));
		Ok(())
	}

	/// Write everything in one commit and publish it to cache, membership and subscribers
	/// while readers wait; then, with readers free again, append the batch to the intent log.
	/// Returns (the counters after the commit) only once the batch is durable.
	pub fn commit(self) -> Result<Counters> {
		self.commit_as(None)
	}

	/// Redo a batch read from the intent log, under its original sequence number. The caller
	/// drains the processor before relying on it.
	pub fn commit_replayed(self, seq: u64) -> Result<Counters> {
		self.commit_as(Some(seq))
	}

	/// Redo `steps` (a batch from the intent log) against the current state.
	pub fn redo(mut self, steps: Vec<Step>) -> Result<Self> {
		for step in steps {
			match step {
				Step::Add { account, encoding } => {
					let statement = statement_primitives::Statement::from_bytes(&encoding)
						.map_err(|err| Error::BadValue {
							column: schema::COL_BODY,
							detail: format!("intent log statement: {err}"),
						})?;
					let hash = statement_primitives::hash_encoded(&encoding);
					self.add(hash, account, &statement, encoding)?;
				}
				Step::Remove { hash, ban_until } => {
					let record = self.inner.record(&hash)?.ok_or_else(|| Error::Corrupt {
						path: self.inner.config.path.display().to_string(),
						detail: "the intent log removes a statement the database lacks".into(),
					})?;
					self.remove(&hash, &record, ban_until)?;
				}
				Step::Unban { hash, until } => self.unban(&hash, until),
			}
		}
		Ok(self)
	}

	/// Append the batch's removals to the removal log (see [`schema::removal_segment_key`]);
	/// returns the log's new position if there were any.
	fn log_removals(&mut self) -> Result<Option<u64>> {
		if self.removed.is_empty() {
			return Ok(None);
		}
		let mut position = self.inner.removals.load(std::sync::atomic::Ordering::Acquire);
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

	fn commit_as(mut self, replayed: Option<u64>) -> Result<Counters> {
		let inner = self.inner;
		for ((key, base), ids) in std::mem::take(&mut self.segments) {
			let value = (!ids.is_empty()).then(|| encode_segment(&ids));
			self.ops.push((schema::COL_POSTING, key.segment_key(base), value));
		}
		for (account, usage) in std::mem::take(&mut self.usage) {
			let value = (usage.count > 0).then(|| usage.encode());
			self.ops.push((schema::COL_USAGE, account.to_vec(), value));
		}
		self.ops.push((
			schema::COL_META,
			schema::KEY_COUNTERS.to_vec(),
			Some(self.counters.encode()),
		));
		let removals = self.log_removals()?;
		let seq = replayed.unwrap_or_else(|| inner.intent.allocate());
		self.ops.push((schema::COL_META, schema::KEY_INTENT.to_vec(), Some(seq.encode())));

		let view = inner.view.write();
		inner.db.stage(self.ops);
		if let Some(removals) = removals {
			inner.removals.store(removals, std::sync::atomic::Ordering::Release);
		}
		if !self.postings.is_empty() {
			inner.cache.changed();
		}
		for (key, id, add) in &self.postings {
			inner.cache.update(key, |list| if *add { list.insert(*id) } else { list.remove(*id) });
		}
		if self.added.iter().any(|(_, record, _)| record.decryption_key.is_some()) {
			inner.keyed.store(true, std::sync::atomic::Ordering::Relaxed);
		}
		for (hash, id) in &self.removed {
			inner.membership.remove(hash);
			inner.bodies.remove(*id);
		}
		for (hash, _, _) in &self.added {
			inner.membership.insert(hash);
		}
		inner
			.subscriptions
			.notify(self.added.iter().map(|(_, record, encoding)| (record, encoding)));
		inner.metrics.set_totals(self.counters.count, self.counters.total_size);
		drop(view);
		// Readers already see the batch (it is staged); the writer lock, still held by our
		// caller, keeps intent records in commit order.
		if replayed.is_none() {
			inner.intent.append(seq, &self.steps)?;
			if inner.processor.backlogged() {
				inner.processor.drain()?;
			}
		}
		Ok(self.counters)
	}
}
