//! The read path: MatchAll queries over posting lists (per-thread memo, shared cache, disk),
//! bodies (body cache, else disk, checked against their hash), journal walks.

use crate::{
	error::bad,
	error::Error,
	error::Result,
	index::lists::segments,
	index::posting::{decode_segment, intersect, PostingList},
	index::schema::{self, Id, PostingKey, Record, StoredBody},
	read::paging::PAGE_IDS,
	read::read_ahead::{Fetched, HASH_GROUP, READ_AHEAD_FROM, READ_AHEAD_WINDOW},
	store::{Inner, StatementsPage, Store},
};
use statement_primitives::{
	check_match_all, hash_encoded_each, DecryptionKey, Fields, Hash, Statement, Topic,
};
use std::sync::{atomic::Ordering, Arc};

/// Broadcast candidates from which, when the list of statements posted to a key is not
/// cached, that list is read to take them out; fewer are told apart by their bodies (a
/// wasted body read costs about what reading 300 ids of the list does).
pub(crate) const KEYED_FILTER_FROM: usize = 4096;

/// A body as read from disk, with its hash (see [`Inner::read_hashed`]).
pub type Hashed = (Vec<u8>, Hash);

impl Store {
	/// Ids of statements carrying all `topics` and encrypted to `key`, or (no key) those
	/// without a decryption key.
	pub(crate) fn match_all(
		&self,
		key: Option<DecryptionKey>,
		topics: &[Topic],
	) -> Result<Vec<Id>> {
		check_match_all(topics)?;
		let mut keys = Vec::with_capacity(topics.len() + 1);
		keys.extend(key.map(PostingKey::DecryptionKey));
		keys.extend(topics.iter().map(|topic| PostingKey::Topic(topic.0)));
		if keys.is_empty() {
			keys.push(PostingKey::All);
		}
		let mut ids = self.inner.reads.cache.with_lists(
			&keys,
			|key| self.inner.list_from_disk(key),
			|lists| intersect(&mut lists.iter().map(|list| list.ids()).collect::<Vec<_>>()),
		)?;
		if key.is_none() && !ids.is_empty() && self.inner.reads.keyed.load(Ordering::Relaxed) {
			// Taking out the statements posted to a key only spares reading their bodies
			// (`query` checks each body's key). The list of them can be far longer than the
			// answer, and too long for the cache (a quarter of a store of 4.19M, 8 MiB), and
			// reading it from disk for every query made a broadcast of 6 statements 1,400x
			// the baseline's: a short answer is filtered by the list only when it is cached.
			let keyed = match self.inner.reads.cache.get(&PostingKey::Keyed) {
				Some(list) => Some(list),
				None if ids.len() < KEYED_FILTER_FROM => None,
				None => Some(self.inner.posting_list(PostingKey::Keyed)?),
			};
			if let Some(keyed) = keyed.filter(|keyed| !keyed.is_empty()) {
				ids.retain(|id| keyed.ids().binary_search(id).is_err());
			}
		}
		Ok(ids)
	}

	/// For each matching statement, `map` of its encoding and decoded form. Bodies are taken
	/// one at a time, shared with the body cache, so that an answer of many statements does
	/// not first copy every encoding (the callers that return data never need it). Where an
	/// answer's bodies come from disk and [`READ_AHEAD_FROM`] or more are left, the rest are
	/// read ahead on helper threads (see `read_ahead`); `map` still runs here, in order.
	pub(crate) fn query<T>(
		&self,
		key: Option<DecryptionKey>,
		topics: &[Topic],
		mut map: impl FnMut(&[u8], &Fields<'_>) -> Option<T>,
	) -> Result<Vec<T>> {
		crate::error::catch_db_panic(|| {
			let _view = self.inner.reads.view();
			let ids = self.match_all(key, topics)?;
			let mut out = Vec::with_capacity(ids.len());
			// An answer larger than the cache would evict its own first bodies before the
			// next call asks for them again, and every call would read every body from disk:
			// one call keeps at most half the cache, so a repeated large answer finds that
			// half still cached.
			let mut keep = self.inner.reads.bodies.budget() / 2;
			let mut answer = |id: Id, body: Option<Fetched>| {
				let body = match body {
					None => return,
					Some(Fetched::Cached(body)) => body,
					Some(Fetched::Read(body, hash)) => {
						self.inner.offer_body(id, body, hash, &mut keep)
					}
				};
				// Checked against its hash when read from disk, so this only fails for a
				// statement written by a build with another notion of validity: left out.
				// Only the key, topics and data are read: decoding the whole statement (and
				// copying its data) was two thirds of a cached answer's time.
				let Ok(fields) = Fields::of(&body) else { return };
				// A damaged posting list can name a sound statement under the wrong topic.
				if !carries(&fields, key, topics) {
					return;
				}
				if let Some(item) = map(&body, &fields) {
					out.push(item);
				}
			};
			// Read here a window at a time; once a quarter of a window came from disk and
			// enough is left, the rest is read ahead (an answer served from the cache never
			// starts helpers, one whose first part was cached starts them where it ends).
			let mut at = 0;
			while at < ids.len() {
				let window = &ids[at..ids.len().min(at + READ_AHEAD_WINDOW)];
				let mut from_disk = 0;
				for group in window.chunks(HASH_GROUP) {
					for (&id, body) in group.iter().zip(self.inner.fetch_bodies(group)?) {
						from_disk += usize::from(matches!(body, Some(Fetched::Read(..))));
						answer(id, body);
					}
				}
				at += window.len();
				let left = &ids[at..];
				if left.len() >= READ_AHEAD_FROM && from_disk * 4 >= window.len() {
					self.inner.read_ahead(left, &mut answer)?;
					break;
				}
			}
			Ok(out)
		})
	}

	/// The stored statement with this hash, its body checked against the hash.
	pub(crate) fn stored_statement(&self, hash: &Hash) -> Result<Option<Statement>> {
		let _view = self.inner.reads.view();
		// Not kept in the body cache: nothing in the node looks statements up by hash, and
		// keeping each one evicted another (a third of a lookup's time at 200k statements).
		let Some((_, body)) = self.inner.find(hash)? else { return Ok(None) };
		Ok(self.inner.decode_body(body.bytes()).ok())
	}

	pub(crate) fn decrypt(&self, dest: &DecryptionKey, data: &[u8]) -> Option<Vec<u8>> {
		let decryptor = self.inner.config.decryptor.as_ref()?;
		decryptor.decrypt(dest, data)
	}
}

impl Inner {
	/// Journal entries in `(after, below)` with their bodies, at most `max_count` and, past
	/// the first, `max_bytes`. Takes the view lock a page of ids at a time (see `paging`).
	pub fn journal_since(
		&self,
		mut after: Id,
		below: Id,
		max_count: usize,
		max_bytes: usize,
	) -> Result<StatementsPage> {
		let mut page = StatementsPage { statements: Vec::new(), next: None };
		let mut bytes = 0;
		while page.statements.len() < max_count {
			let wanted = (max_count - page.statements.len()).min(PAGE_IDS);
			let ids = self.journal_page(after, below, wanted)?;
			if ids.scanned_to.is_none() {
				return Ok(page);
			}
			let first_free = page.statements.is_empty();
			let budget = max_bytes.saturating_sub(bytes);
			let bodies = self.page_bodies(ids, after, budget, first_free)?;
			after = bodies.cursor;
			bytes += bodies.bytes;
			page.statements.extend(bodies.read);
			if !bodies.complete {
				break;
			}
		}
		page.next = Some(after);
		Ok(page)
	}

	/// The posting list for `key`, from the cache or read from disk and cached. The caller
	/// holds the view lock (shared), so a list read from disk is current when cached.
	pub fn posting_list(&self, key: PostingKey) -> Result<Arc<PostingList>> {
		self.reads.cache.get_or_load(key, |key| self.list_from_disk(key))
	}

	/// The ids of `key`'s list, read from disk: its segments in order, the staged batches'
	/// laid over parity-db's (see [`Database::overlay`]), so a query never hands them over.
	///
	/// [`Database::overlay`]: crate::write::staging::Database::overlay
	fn list_from_disk(&self, key: PostingKey) -> Result<Vec<Id>> {
		self.reads.lists_read.fetch_add(1, Ordering::Relaxed);
		segments(&*self.db, key)
	}

	/// A body read from disk for an answer, shared: kept in the body cache (with its hash)
	/// while its weight fits in `keep`, which it is taken from.
	pub fn offer_body(&self, id: Id, body: Vec<u8>, hash: Hash, keep: &mut usize) -> Arc<[u8]> {
		let body: Arc<[u8]> = Arc::from(body);
		let weight = crate::read::bodies::BodyCache::weight(&body);
		if weight <= *keep {
			*keep -= weight;
			self.reads.bodies.insert(id, body.clone(), hash);
		}
		body
	}

	/// The id and checked body of the stored statement `hash`, in one read from disk at most:
	/// the membership set names the candidate ids (one, almost always; more only where
	/// stored hashes share their first 8 bytes), and a candidate's body, from the body cache
	/// (kept with its hash) or else from disk, confirms it by the hash it holds (see
	/// [`schema::body_value`]). `None` if no statement with this hash is stored, or if its
	/// body is missing or damaged. The caller holds the view lock, so the latter means the
	/// files were damaged: the statement is quarantined (logged once, counted, left out of answers, see
	/// [`Inner::record`]), so the rest of an answer still comes. `statement-node check-db`
	/// finds all damage, `repair` rebuilds the indexes without it.
	pub fn find(&self, hash: &Hash) -> Result<Option<(Id, Fetched)>> {
		for id in self.membership.ids(hash).iter() {
			if let Some(body) = self.reads.bodies.get_hashed(id, hash) {
				return Ok(Some((id, Fetched::Cached(body))));
			}
			let Some(value) = self.db.get(schema::COL_BODY, &schema::body_key(id))? else {
				self.quarantine(id, "is indexed but its body is missing");
				continue;
			};
			let encoding = match StoredBody::of(value) {
				StoredBody::Hashed { sound: true, hash: held, encoding } => {
					// Otherwise another statement whose hash shares the first 8 bytes.
					(held == *hash).then_some(encoding)
				}
				// Damaged (every body is in the schema 5 form once the store is open).
				_ => {
					self.quarantine(id, "has a body that does not match its hash");
					None
				}
			};
			if let Some(encoding) = encoding {
				return Ok(Some((id, Fetched::Read(encoding, *hash))));
			}
		}
		Ok(None)
	}

	/// The checked bodies of indexed `ids`, in order, each with its hash, where the caller
	/// does not have the hashes: each body's check must hold and the hash it holds must be
	/// stored under its id in the membership set (a damaged body passes the check with odds
	/// of 2^-64, and then the set with about n / 2^58 more; nothing more is read from disk for the check; see [`schema::body_value`]). Every
	/// body is in that form once the store is open (the upgrade to schema 5 runs first), so
	/// one in another is damaged.
	pub fn bodies_from_disk(&self, ids: &[Id]) -> Result<Vec<Option<Hashed>>> {
		ids.iter()
			.map(|&id| {
				let value = self.db.get(schema::COL_BODY, &schema::body_key(id))?;
				Ok(match value.map(StoredBody::of) {
					None => {
						self.quarantine(id, "is indexed but its body is missing");
						None
					}
					Some(StoredBody::Hashed { sound: true, hash, encoding })
						if self.membership.holds(schema::fingerprint(&hash), id) =>
					{
						Some((encoding, hash))
					}
					// Removed, its index edits still to come (see `write::deferred`).
					Some(_) if self.writes.removal_waits(id) => None,
					Some(_) => {
						self.quarantine(id, "has a body that does not match its hash");
						None
					}
				})
			})
			.collect()
	}

	/// The bodies of `ids` as the database has them, in order, each with its hash: the one a
	/// sound body holds, else its blake2-256 (those hashed together, see
	/// [`hash_encoded_each`]), which a damaged body does not share with any stored statement;
	/// `None` where a body is missing. The callers decide what a missing or unknown body
	/// means.
	pub fn read_hashed(&self, ids: &[Id]) -> Result<Vec<Option<Hashed>>> {
		let bodies = ids
			.iter()
			.map(|&id| {
				let value = self.db.get(schema::COL_BODY, &schema::body_key(id))?;
				Ok(value.map(StoredBody::of).map(|body| match body.stored_hash() {
					Some(hash) => (body.encoding(), Some(hash)),
					None => (body.encoding(), None),
				}))
			})
			.collect::<Result<Vec<_>>>()?;
		let unhashed = bodies.iter().flatten().filter(|(_, hash)| hash.is_none());
		let mut hashes = hash_encoded_each(unhashed.map(|(body, _)| body.as_slice())).into_iter();
		Ok(bodies
			.into_iter()
			.map(|body| {
				body.map(|(body, hash)| {
					let hash = hash.unwrap_or_else(|| hashes.next().expect("a hash a body; qed"));
					(body, hash)
				})
			})
			.collect())
	}

	/// Leave statement `id` out of answers from now on; log it the first time.
	pub(crate) fn quarantine(&self, id: Id, problem: &str) {
		let Some(news) = self.reads.quarantine(id) else { return };
		self.metrics.add_corrupt();
		if news {
			log::error!(
				target: "statement-store",
				"{}: statement {id} {problem}; it is left out of answers. Run `statement-node \
				 check-db` to find all damage and `statement-node repair` to rebuild the indexes \
				 from the intact statements.",
				self.config.path.display()
			);
		}
	}

	pub fn decode_body(&self, body: &[u8]) -> Result<Statement> {
		Statement::from_bytes(body)
			.map_err(|err| Error::BadValue { column: schema::COL_BODY, detail: err.to_string() })
	}

	/// The id of a stored statement, read from the front of its record without decoding
	/// the rest (the record's SCALE encoding starts with the id).
	pub fn record_id(&self, hash: &Hash) -> Result<Option<Id>> {
		let Some(bytes) = self.db.get(schema::COL_HASH, hash)? else { return Ok(None) };
		schema::le_u64_prefix(&bytes).map(Some).ok_or_else(|| Error::BadValue {
			column: schema::COL_HASH,
			detail: "record shorter than its id".into(),
		})
	}

	/// The ids of one posting segment as the staged batches left it.
	pub fn segment_ids(&self, segment_key: &[u8]) -> Result<Vec<Id>> {
		let mut ids = Vec::new();
		if let Some(bytes) = self.db.get(schema::COL_POSTING, segment_key)? {
			decode_segment(&bytes, &mut ids).ok_or_else(|| bad(schema::COL_POSTING, "segment"))?;
		}
		Ok(ids)
	}

	/// The hash and record of stored statement `id`, read from its body: from the cache, else
	/// from disk, where the hash it holds (under its check) must be stored under `id` in the
	/// membership set (see [`Inner::bodies_from_disk`]). Neither blake2 nor the hash column
	/// is needed. `None` if it is not stored or is quarantined (see [`Inner::record`]).
	pub fn record_by_id(&self, id: Id) -> Result<Option<(Hash, Record)>> {
		if let Some((body, hash)) = self.reads.bodies.get_with_hash(id) {
			return Ok(self.record_of_body(id, &body).map(|record| (hash, record)));
		}
		let Some(found) = self.bodies_from_disk(&[id])?.pop().flatten() else { return Ok(None) };
		let (body, hash) = found;
		Ok(self.record_of_body(id, &body).map(|record| (hash, record)))
	}

	/// The record of a stored statement, read from its body (cached, else from disk and
	/// checked against the hash). `None` if no statement with this hash is stored, or if its
	/// body is missing or damaged: such a statement is quarantined (out of every answer,
	/// logged, counted) and left in place, ids and index entries, until `repair` rebuilds
	/// the indexes, so that walks over the indexes (expiry, eviction) step over it.
	pub fn record(&self, hash: &Hash) -> Result<Option<Record>> {
		Ok(match self.find(hash)? {
			Some((id, body)) => self.record_of_body(id, body.bytes()),
			None => None,
		})
	}

	/// The record of statement `id` from its checked body; quarantines it if the body does
	/// not give one (its hash matched, so a build that admitted it decoded it and found a
	/// proof).
	pub(crate) fn record_of_body(&self, id: Id, body: &[u8]) -> Option<Record> {
		let record = Statement::from_bytes(body)
			.ok()
			.and_then(|statement| Record::of(id, &statement, body.len()));
		if record.is_none() {
			self.quarantine(id, "has a body this build cannot read a record from");
		}
		record
	}
}

/// Whether a statement has every one of `topics` and the decryption key `key` (none for
/// broadcasts).
fn carries(fields: &Fields<'_>, key: Option<DecryptionKey>, topics: &[Topic]) -> bool {
	fields.decryption_key() == key && topics.iter().all(|topic| fields.topics().contains(topic))
}
