//! Reading many statements without holding the view lock for long: ids are taken a page at a
//! time under the lock, bodies are read after it is let go.
//!
//! Ids are never given out twice, so the body stored under an id is that statement's or
//! none. A body read without the lock is therefore either the right one or missing because
//! the statement was removed after its id was taken; the page skips it, as it would had the
//! removal come before. A walk that holds the lock only while it takes ids delays a writer
//! by one page's id lookup, not by the whole walk and its body reads.

use crate::{
	error::Result,
	index::lists::stored_ids,
	index::posting::intersect,
	index::schema::{Id, PostingKey},
	read::read_ahead::{read_threads, HASH_GROUP},
	store::{Inner, StatementsPage, Store},
};
use statement_primitives::{Hash, Statement, TopicFilter};

/// Most ids one page takes under the view lock: a few hundred microseconds of lookups.
pub const PAGE_IDS: usize = 512;

/// Ids taken for a page: the ids, and how far the walk looked (the next page starts after
/// it), `None` when nothing is left.
pub struct Ids<T> {
	/// What the page will read.
	pub entries: Vec<T>,
	/// The highest id looked at.
	pub scanned_to: Option<Id>,
}

/// Bodies read for a page, and the id after which the next page starts.
pub struct Bodies {
	/// What was read: id, hash (of the body, checked) and body.
	pub read: Vec<(Id, Hash, Vec<u8>)>,
	/// Bytes in `read`.
	pub bytes: usize,
	/// Where the next page starts.
	pub cursor: Id,
	/// Whether every id was dealt with (else the byte budget ran out).
	pub complete: bool,
}

impl Inner {
	/// Stored ids in `(after, below)`, at most `limit`, in admission order. Takes the view
	/// lock.
	pub fn journal_page(&self, after: Id, below: Id, limit: usize) -> Result<Ids<Id>> {
		let _view = self.reads.view();
		let entries = stored_ids(&*self.db, after.saturating_add(1), below, limit)?;
		let scanned_to = entries.last().copied();
		Ok(Ids { entries, scanned_to })
	}

	/// Whether `id` is listed among the stored statements (through the staged batches).
	pub fn is_stored_id(&self, id: Id) -> Result<bool> {
		let all = PostingKey::All;
		Ok(self.segment_ids(&all.segment_key(all.segment_base(id)))?.binary_search(&id).is_ok())
	}

	/// Ids in `(after, below)` of stored statements matching `filter`, a page of at most
	/// `limit` looked at. Takes the view lock.
	pub fn filter_page(
		&self,
		filter: &TopicFilter,
		after: Id,
		below: Id,
		limit: usize,
	) -> Result<Ids<Id>> {
		let topics = match filter {
			TopicFilter::Any => None,
			TopicFilter::MatchAll(topics) | TopicFilter::MatchAny(topics) if topics.is_empty() => {
				if matches!(filter, TopicFilter::MatchAny(_)) {
					return Ok(Ids { entries: Vec::new(), scanned_to: None });
				}
				None
			}
			TopicFilter::MatchAll(topics) | TopicFilter::MatchAny(topics) => Some(topics),
		};
		let Some(topics) = topics else { return self.journal_page(after, below, limit) };
		let _view = self.reads.view();
		let mut lists = Vec::with_capacity(topics.len());
		for topic in topics {
			lists.push(self.posting_list(PostingKey::Topic(topic.0))?);
		}
		let mut slices: Vec<&[Id]> =
			lists.iter().map(|list| within(list.ids(), after, below)).collect();
		if matches!(filter, TopicFilter::MatchAll(_)) {
			// Every match is in the smallest list: look at `limit` of its ids.
			slices.sort_by_key(|slice| slice.len());
			let smallest = slices[0];
			slices[0] = &smallest[..smallest.len().min(limit)];
			let scanned_to = slices[0].last().copied();
			return Ok(Ids { entries: intersect(&mut slices), scanned_to });
		}
		let mut entries: Vec<Id> =
			slices.iter().flat_map(|slice| &slice[..slice.len().min(limit)]).copied().collect();
		entries.sort_unstable();
		entries.dedup();
		entries.truncate(limit);
		let scanned_to = entries.last().copied();
		Ok(Ids { entries, scanned_to })
	}

	/// Bodies of `ids` (taken after `after` by an earlier page), read without the view lock,
	/// in order, skipping statements removed since, until the next would take the page past
	/// `max_bytes` (with `first_free`, the first is read whatever its size).
	pub fn page_bodies(
		&self,
		ids: Ids<Id>,
		after: Id,
		max_bytes: usize,
		first_free: bool,
	) -> Result<Bodies> {
		let mut bodies = Bodies { read: Vec::new(), bytes: 0, cursor: after, complete: true };
		let Some(scanned_to) = ids.scanned_to else { return Ok(bodies) };
		// Read a group at a time and hashed together (see `Inner::read_hashed`); a page that
		// ends inside a group read at most `HASH_GROUP - 1` bodies it does not use.
		for group in ids.entries.chunks(HASH_GROUP) {
			for (&id, found) in group.iter().zip(self.read_hashed(group)?) {
				let Some((body, hash)) = found else {
					bodies.cursor = id;
					continue;
				};
				// Checked against the stored hashes, as every body read from disk without
				// its hash (see `Inner::bodies_from_disk`). Without the view lock a hash that
				// is no longer stored may be a removal since: the list of stored ids tells
				// removal from damage.
				if !self.membership.contains(&hash) {
					// Asked in this order: a waiting removal leaves `deferred` only once no
					// list holds its id (see `write::deferred`).
					if !self.writes.removal_waits(id) && self.is_stored_id(id)? {
						self.quarantine(id, "has a body that does not match its hash");
					}
					bodies.cursor = id;
					continue;
				}
				let free = first_free && bodies.read.is_empty();
				if !free && bodies.bytes + body.len() > max_bytes {
					bodies.complete = false;
					return Ok(bodies);
				}
				bodies.bytes += body.len();
				bodies.read.push((id, hash, body));
				bodies.cursor = id;
			}
		}
		bodies.cursor = scanned_to;
		Ok(bodies)
	}
}

impl Store {
	/// Statements admitted after `after` (an id from an earlier call, or 0 for all), oldest
	/// first, at most `limit`: `(id, hash, encoding)`. For gossip and replay.
	pub fn statements_since(&self, after: Id, limit: usize) -> Result<Vec<(Id, Hash, Vec<u8>)>> {
		self.inner.journal_since(after, Id::MAX, limit, usize::MAX).map(|page| page.statements)
	}

	/// A page of the stored statements in admission order: those admitted after `after` (0
	/// for the first page, else the previous page's `next`), at most `max_count` and, past
	/// the first, `max_bytes` of encodings. The view lock is held only while each few hundred
	/// ids are looked up, never across pages, so writers and readers go on meanwhile; a
	/// statement admitted during the walk comes in a later page, one removed before its page
	/// is read does not come.
	pub fn statements_page(
		&self,
		after: Id,
		max_count: usize,
		max_bytes: usize,
	) -> Result<StatementsPage> {
		self.inner.journal_since(after, Id::MAX, max_count, max_bytes)
	}

	/// The id of the newest admitted statement, 0 before the first. Every statement up to it
	/// is readable: the writer lock is free only between batches, and a batch is published
	/// before it lets go. Every statement up to it has also been queued for the subscriptions
	/// and watches it matches (this waits for the matcher thread), so a watch drained after
	/// this call has delivered all of them.
	pub fn admission_watermark(&self) -> Id {
		let watermark = self.inner.writes.counters().next_id - 1;
		self.inner.subscriptions.flush();
		watermark
	}

	/// Statements admitted in `(after, upto]`, oldest first, at most `max_bytes` past the
	/// first; `next` is `None` once none is left.
	pub fn admitted_page(&self, after: Id, upto: Id, max_bytes: usize) -> Result<StatementsPage> {
		self.inner.journal_since(after, upto.saturating_add(1), usize::MAX, max_bytes)
	}

	/// Every stored statement with its hash, in admission order: what `statements()`
	/// returns. The ids are taken a page at a time under the view lock (see
	/// [`Store::walk_id_pages`]); the pages' bodies are then read, checked against their
	/// hashes and decoded on up to [`READ_THREADS`] threads, contiguous runs of pages each,
	/// since a dump of a large store is one independent read, hash and decode per statement.
	/// A statement removed after its page was taken is left out, as a later page would.
	pub(crate) fn all_statements(&self) -> Result<Vec<(Hash, Statement)>> {
		let mut pages = Vec::new();
		self.walk_id_pages(|after, ids| {
			pages.push((after, ids));
			Ok(())
		})?;
		let threads = read_threads().min(pages.len().max(1));
		let per_thread = pages.len().div_ceil(threads).max(1);
		let mut runs = Vec::with_capacity(threads);
		let mut pages = pages.into_iter();
		loop {
			let run: Vec<_> = pages.by_ref().take(per_thread).collect();
			if run.is_empty() {
				break;
			}
			runs.push(run);
		}
		let inner = &*self.inner;
		let read = |run: Vec<(Id, Ids<Id>)>| -> Result<Vec<(Hash, Statement)>> {
			crate::error::catch_db_panic(|| {
				// Statements are large: growing the answer by doubling copied it over and
				// over (a quarter of a dump's time in profiles).
				let mut out =
					Vec::with_capacity(run.iter().map(|(_, ids)| ids.entries.len()).sum());
				for (after, ids) in run {
					for (_, hash, body) in inner.page_bodies(ids, after, usize::MAX, true)?.read {
						if let Ok(statement) = inner.decode_body(&body) {
							out.push((hash, statement));
						}
					}
				}
				Ok(out)
			})
		};
		let mut runs = runs.into_iter();
		let first = runs.next();
		let parts = std::thread::scope(|scope| {
			let others: Vec<_> = runs.map(|run| scope.spawn(move || read(run))).collect();
			// This thread reads the first run meanwhile.
			let mut parts = vec![first.map_or_else(|| Ok(Vec::new()), read)];
			for other in others {
				parts.push(other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
			}
			parts
		});
		let mut parts = parts.into_iter();
		let mut all = parts.next().transpose()?.unwrap_or_default();
		let parts = parts.collect::<Result<Vec<_>>>()?;
		all.reserve_exact(parts.iter().map(Vec::len).sum());
		for part in parts {
			all.extend(part);
		}
		Ok(all)
	}

	/// The stored ids, a page at a time in admission order, each with the id the page starts
	/// after: `each` runs between pages, with no lock held, so writers go on meanwhile.
	pub(crate) fn walk_id_pages(
		&self,
		mut each: impl FnMut(Id, Ids<Id>) -> Result<()>,
	) -> Result<()> {
		let mut after = 0;
		loop {
			let ids = self.inner.journal_page(after, Id::MAX, PAGE_IDS)?;
			let Some(last) = ids.scanned_to else { return Ok(()) };
			each(after, ids)?;
			after = last;
		}
	}
}

/// The part of a sorted id list in `(after, below)`.
fn within(ids: &[Id], after: Id, below: Id) -> &[Id] {
	let start = ids.partition_point(|id| *id <= after);
	let end = ids.partition_point(|id| *id < below);
	&ids[start..end.max(start)]
}

#[cfg(test)]
mod tests;
