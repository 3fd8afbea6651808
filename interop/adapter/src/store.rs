//! [`SpStore`]: our store as the reference's `sp_statement_store::StatementStore`.

use crate::convert::{
	error_to_sp, source_to_ours, statement_to_ours, statement_to_sp, submit_result_to_sp,
	topics_to_ours,
};
use codec::Encode;
use parking_lot::Mutex;
use sp_statement_store::{
	self as sp, FilterDecision, Hash, InvalidReason, Statement, StatementSource, SubmitResult,
	Topic,
};
use statement_primitives as ours;
use std::sync::Arc;

/// Bytes of encodings per page while the adapter walks our store.
const PAGE_BYTES: usize = 4 * 1024 * 1024;

/// Statements per page of a full walk.
const PAGE_STATEMENTS: usize = 16 * 1024;

/// Our store behind the reference's trait, answering as `sc-statement-store` 33 does.
///
/// What the reference's trait asks and ours has no method for is built on ours:
/// `take_recent_statements` reads the admission journal from where the last call stopped (the
/// first call starts at the adapter's creation, as the reference's list starts empty at open),
/// `statement_hashes` walks the store, and `statements_by_hashes` reads each statement by hash.
pub struct SpStore {
	inner: Arc<dyn ours::StatementStore>,
	/// The journal position up to which `take_recent_statements` has answered.
	recent_since: Mutex<u64>,
	/// Dropped with the store: ends the maintenance task [`crate::new_shared`] spawned.
	_stop: Option<std::sync::mpsc::Sender<()>>,
}

impl SpStore {
	/// Our `store`, as the reference's trait.
	pub fn new(store: Arc<dyn ours::StatementStore>) -> Self {
		let recent_since = Mutex::new(store.admission_watermark());
		SpStore { inner: store, recent_since, _stop: None }
	}

	/// [`SpStore::new`], ending a maintenance task when dropped.
	pub(crate) fn with_stop(
		store: Arc<dyn ours::StatementStore>,
		stop: std::sync::mpsc::Sender<()>,
	) -> Self {
		SpStore { _stop: Some(stop), ..SpStore::new(store) }
	}

	/// Our store, for everything the reference's trait does not cover (subscriptions, paged
	/// dumps, our RPC crate).
	pub fn inner(&self) -> &Arc<dyn ours::StatementStore> {
		&self.inner
	}

	/// Every stored statement, as `(hash, encoding)`, a page at a time.
	fn walk(&self, mut each: impl FnMut(Hash, &[u8])) -> sp::Result<()> {
		let mut after = None;
		loop {
			let page = self
				.inner
				.statements_page(after, PAGE_STATEMENTS, PAGE_BYTES)
				.map_err(error_to_sp)?;
			for (hash, encoding) in &page.statements {
				each(*hash, encoding);
			}
			match page.next {
				Some(next) => after = Some(next),
				None => return Ok(()),
			}
		}
	}

	/// The reference answers a `MatchAll` of more topics than a statement can carry with
	/// nothing, where ours refuses it.
	fn query(
		&self,
		topics: &[Topic],
		ask: impl FnOnce(&[ours::Topic]) -> ours::Result<Vec<Vec<u8>>>,
	) -> sp::Result<Vec<Vec<u8>>> {
		let mut topics = topics_to_ours(topics);
		topics.sort();
		topics.dedup();
		if topics.len() > ours::MAX_TOPICS {
			return Ok(Vec::new());
		}
		ask(&topics).map_err(error_to_sp)
	}
}

fn decoded(hash: Hash, encoding: &[u8]) -> Option<(Hash, Statement)> {
	statement_to_sp(encoding).map(|statement| (hash, statement))
}

impl sp::StatementStore for SpStore {
	fn statements(&self) -> sp::Result<Vec<(Hash, Statement)>> {
		let mut out = Vec::new();
		self.walk(|hash, encoding| out.extend(decoded(hash, encoding)))?;
		Ok(out)
	}

	fn take_recent_statements(&self) -> sp::Result<Vec<(Hash, Statement)>> {
		let mut since = self.recent_since.lock();
		let upto = self.inner.admission_watermark();
		let mut after = *since;
		let mut out = Vec::new();
		loop {
			let page = self.inner.admitted_page(after, upto, PAGE_BYTES).map_err(error_to_sp)?;
			out.extend(page.statements.iter().filter_map(|(hash, bytes)| decoded(*hash, bytes)));
			match page.next {
				Some(next) => after = next,
				None => break,
			}
		}
		*since = upto;
		Ok(out)
	}

	fn statement(&self, hash: &Hash) -> sp::Result<Option<Statement>> {
		match self.inner.statement(hash).map_err(error_to_sp)? {
			None => Ok(None),
			Some(statement) => statement_to_sp(&statement.encode()).map(Some).ok_or_else(|| {
				sp::Error::Decode("a stored statement the reference cannot decode".into())
			}),
		}
	}

	fn has_statement(&self, hash: &Hash) -> bool {
		self.inner.has_statement(hash)
	}

	fn statement_hashes(&self) -> Vec<Hash> {
		let mut hashes = Vec::new();
		if let Err(err) = self.walk(|hash, _| hashes.push(hash)) {
			// The reference's answer cannot fail; a read error leaves the list short.
			log::warn!(target: "statement-store", "statement_hashes stopped early: {err:?}");
		}
		hashes
	}

	fn statements_by_hashes(
		&self,
		hashes: &[Hash],
		filter: &mut dyn FnMut(&Hash, &[u8], &Statement) -> FilterDecision,
	) -> sp::Result<(Vec<(Hash, Statement)>, usize)> {
		let mut taken = Vec::new();
		let mut processed = 0;
		for hash in hashes {
			let Some(statement) = self.inner.statement(hash).map_err(error_to_sp)? else {
				processed += 1;
				continue;
			};
			let encoding = statement.encode();
			let Some(statement) = statement_to_sp(&encoding) else {
				processed += 1;
				continue;
			};
			match filter(hash, &encoding, &statement) {
				FilterDecision::Skip => processed += 1,
				FilterDecision::Take => {
					processed += 1;
					taken.push((*hash, statement));
				}
				FilterDecision::Abort => break,
			}
		}
		Ok((taken, processed))
	}

	fn broadcasts(&self, match_all_topics: &[Topic]) -> sp::Result<Vec<Vec<u8>>> {
		self.query(match_all_topics, |topics| self.inner.broadcasts(topics))
	}

	fn posted(&self, match_all_topics: &[Topic], dest: [u8; 32]) -> sp::Result<Vec<Vec<u8>>> {
		self.query(match_all_topics, |topics| self.inner.posted(topics, dest))
	}

	fn posted_clear(&self, match_all_topics: &[Topic], dest: [u8; 32]) -> sp::Result<Vec<Vec<u8>>> {
		self.query(match_all_topics, |topics| self.inner.posted_clear(topics, dest))
	}

	fn broadcasts_stmt(&self, match_all_topics: &[Topic]) -> sp::Result<Vec<Vec<u8>>> {
		self.query(match_all_topics, |topics| self.inner.broadcasts_stmt(topics))
	}

	fn posted_stmt(&self, match_all_topics: &[Topic], dest: [u8; 32]) -> sp::Result<Vec<Vec<u8>>> {
		self.query(match_all_topics, |topics| self.inner.posted_stmt(topics, dest))
	}

	fn posted_clear_stmt(
		&self,
		match_all_topics: &[Topic],
		dest: [u8; 32],
	) -> sp::Result<Vec<Vec<u8>>> {
		self.query(match_all_topics, |topics| self.inner.posted_clear_stmt(topics, dest))
	}

	fn submit(&self, statement: Statement, source: StatementSource) -> SubmitResult {
		match statement_to_ours(&statement) {
			Ok(ours) => submit_result_to_sp(self.inner.submit(ours, source_to_ours(source))),
			// Ours refuses to decode what is over its size bound; the reference says so as an
			// invalid statement.
			Err(_) if statement.encoded_size() > ours::MAX_STATEMENT_SIZE => {
				SubmitResult::Invalid(InvalidReason::EncodingTooLarge {
					submitted_size: statement.encoded_size(),
					max_size: ours::MAX_STATEMENT_SIZE,
				})
			}
			Err(err) => SubmitResult::InternalError(error_to_sp(err)),
		}
	}

	fn remove(&self, hash: &Hash) -> sp::Result<()> {
		self.inner.remove(hash).map_err(error_to_sp)
	}

	fn remove_by(&self, who: [u8; 32]) -> sp::Result<()> {
		self.inner.remove_by(who).map_err(error_to_sp)
	}
}
