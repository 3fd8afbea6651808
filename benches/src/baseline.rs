//! The RAM-index baseline: every index in hash maps and sets of 32-byte hashes, bodies in
//! parity-db, one store-wide RwLock. Used only to compare against.

use parking_lot::RwLock;
use statement_primitives::{
	check_match_all, AccountId, DecryptionKey, Hash, InvalidReason, SignatureVerificationResult,
	Statement, StatementSource, StatementStore, StatementSubscription, StatementsPage,
	SubmitResult, Topic, TopicFilter,
};
use std::{
	collections::{HashMap, HashSet},
	path::Path,
};

struct Entry {
	account: AccountId,
	key: Option<DecryptionKey>,
	topics: Vec<Topic>,
	expiry: u64,
}

#[derive(Default)]
struct Index {
	entries: HashMap<Hash, Entry>,
	by_topic: HashMap<Topic, HashSet<Hash>>,
	by_key: HashMap<Option<DecryptionKey>, HashSet<Hash>>,
	by_account: HashMap<AccountId, HashSet<Hash>>,
}

/// A store with the reference's in-RAM index and parity-db bodies.
pub struct RamIndexStore {
	db: parity_db::Db,
	index: RwLock<Index>,
}

impl RamIndexStore {
	/// Open (or create) at `path`, rebuilding the index from every stored body.
	pub fn open(path: &Path) -> Result<Self, parity_db::Error> {
		let mut options = parity_db::Options::with_columns(path, 1);
		options.columns[0].uniform = true;
		options.sync_wal = false;
		options.stats = false;
		let db = parity_db::Db::open_or_create(&options)?;
		let mut index = Index::default();
		db.iter_column_while(0, |item| {
			if let Ok(statement) = Statement::from_bytes(&item.value) {
				if let Some(account) = statement.account_id() {
					index.insert(statement.hash(), account, &statement);
				}
			}
			true
		})?;
		Ok(RamIndexStore { db, index: RwLock::new(index) })
	}

	/// Store a statement whose proof the caller has already checked (building large fixtures
	/// without verifying every signature twice).
	pub fn insert_verified(&self, statement: Statement) -> Result<(), parity_db::Error> {
		let Some(account) = statement.account_id() else { return Ok(()) };
		let encoding = statement.encode();
		let hash = statement_primitives::hash_encoded(&encoding);
		let mut index = self.index.write();
		self.db.commit([(0, hash.to_vec(), Some(encoding))])?;
		index.insert(hash, account, &statement);
		Ok(())
	}

	/// Remove every statement whose expiry time is before `now`, found by scanning the index
	/// (the RAM index has no expiry order). Returns how many were removed.
	pub fn expire(&self, now: u64) -> Result<usize, parity_db::Error> {
		let mut index = self.index.write();
		let expired: Vec<Hash> = index
			.entries
			.iter()
			.filter(|(_, entry)| entry.expiry < now)
			.map(|(hash, _)| *hash)
			.collect();
		for hash in &expired {
			index.remove(hash);
		}
		self.db.commit(expired.iter().map(|hash| (0, hash.to_vec(), None)))?;
		Ok(expired.len())
	}

	fn collect(
		&self,
		key: Option<DecryptionKey>,
		topics: &[Topic],
		mut map: impl FnMut(Vec<u8>, Statement) -> Option<Vec<u8>>,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		check_match_all(topics)?;
		let index = self.index.read();
		let empty = HashSet::new();
		let mut sets: Vec<&HashSet<Hash>> = vec![index.by_key.get(&key).unwrap_or(&empty)];
		for topic in topics {
			sets.push(index.by_topic.get(topic).unwrap_or(&empty));
		}
		sets.sort_by_key(|set| set.len());
		let mut out = Vec::new();
		for hash in sets[0] {
			if sets[1..].iter().all(|set| set.contains(hash)) {
				let body = self
					.db
					.get(0, hash)
					.map_err(|err| statement_primitives::Error::Db(err.to_string()))?;
				if let Some(body) = body {
					let statement = Statement::from_bytes(&body)?;
					if let Some(item) = map(body, statement) {
						out.push(item);
					}
				}
			}
		}
		Ok(out)
	}
}

impl Index {
	fn insert(&mut self, hash: Hash, account: AccountId, statement: &Statement) {
		let key = statement.decryption_key();
		for topic in statement.topics() {
			self.by_topic.entry(*topic).or_default().insert(hash);
		}
		self.by_key.entry(key).or_default().insert(hash);
		self.by_account.entry(account).or_default().insert(hash);
		self.entries.insert(
			hash,
			Entry {
				account,
				key,
				topics: statement.topics().to_vec(),
				expiry: u64::from(statement.expiration_timestamp_secs()),
			},
		);
	}

	fn remove(&mut self, hash: &Hash) -> bool {
		let Some(Entry { account, key, topics, .. }) = self.entries.remove(hash) else {
			return false;
		};
		for topic in &topics {
			if let Some(set) = self.by_topic.get_mut(topic) {
				set.remove(hash);
			}
		}
		if let Some(set) = self.by_key.get_mut(&key) {
			set.remove(hash);
		}
		if let Some(set) = self.by_account.get_mut(&account) {
			set.remove(hash);
		}
		true
	}
}

impl StatementStore for RamIndexStore {
	fn statements(&self) -> statement_primitives::Result<Vec<(Hash, Statement)>> {
		let hashes: Vec<Hash> = self.index.read().entries.keys().copied().collect();
		let mut out = Vec::new();
		for hash in hashes {
			if let Some(statement) = self.statement(&hash)? {
				out.push((hash, statement));
			}
		}
		Ok(out)
	}

	fn statement(&self, hash: &Hash) -> statement_primitives::Result<Option<Statement>> {
		let body =
			self.db.get(0, hash).map_err(|err| statement_primitives::Error::Db(err.to_string()))?;
		body.map(|body| Statement::from_bytes(&body)).transpose()
	}

	fn has_statement(&self, hash: &Hash) -> bool {
		self.index.read().entries.contains_key(hash)
	}

	fn broadcasts(&self, topics: &[Topic]) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.collect(None, topics, |_, statement| statement.into_data())
	}

	fn posted(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.collect(Some(dest), topics, |_, statement| statement.into_data())
	}

	fn posted_clear(
		&self,
		_: &[Topic],
		_: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(Vec::new())
	}

	fn broadcasts_stmt(&self, topics: &[Topic]) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.collect(None, topics, |body, _| Some(body))
	}

	fn posted_stmt(
		&self,
		topics: &[Topic],
		dest: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		self.collect(Some(dest), topics, |body, _| Some(body))
	}

	fn posted_clear_stmt(
		&self,
		_: &[Topic],
		_: DecryptionKey,
	) -> statement_primitives::Result<Vec<Vec<u8>>> {
		Ok(Vec::new())
	}

	fn submit(&self, statement: Statement, _source: StatementSource) -> SubmitResult {
		let encoding = statement.encode();
		let hash = statement_primitives::hash_encoded(&encoding);
		if self.index.read().entries.contains_key(&hash) {
			return SubmitResult::Known;
		}
		let account = match statement.verify_signature() {
			SignatureVerificationResult::Valid(account) => account,
			SignatureVerificationResult::Invalid => {
				return SubmitResult::Invalid(InvalidReason::BadProof)
			}
			SignatureVerificationResult::NoSignature => {
				return SubmitResult::Invalid(InvalidReason::NoProof)
			}
		};
		let mut index = self.index.write();
		if let Err(err) = self.db.commit([(0, hash.to_vec(), Some(encoding))]) {
			return SubmitResult::InternalError(statement_primitives::Error::Db(err.to_string()));
		}
		index.insert(hash, account, &statement);
		SubmitResult::New
	}

	fn remove(&self, hash: &Hash) -> statement_primitives::Result<()> {
		let mut index = self.index.write();
		if index.remove(hash) {
			self.db
				.commit([(0, hash.to_vec(), None)])
				.map_err(|err| statement_primitives::Error::Db(err.to_string()))?;
		}
		Ok(())
	}

	fn remove_by(&self, who: AccountId) -> statement_primitives::Result<()> {
		let hashes: Vec<Hash> =
			self.index.read().by_account.get(&who).into_iter().flatten().copied().collect();
		for hash in hashes {
			self.remove(&hash)?;
		}
		Ok(())
	}
	// The baseline is measured on queries and submits only: it keeps no admission order to
	// page by, and no subscribers.
	fn statements_page(
		&self,
		_: Option<u64>,
		_: usize,
		_: usize,
	) -> statement_primitives::Result<StatementsPage> {
		Err(statement_primitives::Error::Unsupported("paging (the RAM-index baseline)".into()))
	}

	fn admission_watermark(&self) -> u64 {
		0
	}

	fn admitted_page(
		&self,
		_: u64,
		_: u64,
		_: usize,
	) -> statement_primitives::Result<StatementsPage> {
		Err(statement_primitives::Error::Unsupported("gossip (the RAM-index baseline)".into()))
	}

	fn watch_admissions(
		&self,
		_: usize,
	) -> statement_primitives::Result<Box<dyn StatementSubscription>> {
		Err(statement_primitives::Error::Unsupported("gossip (the RAM-index baseline)".into()))
	}

	fn subscribe_with_queue(
		&self,
		_: TopicFilter,
		_: usize,
	) -> statement_primitives::Result<Box<dyn StatementSubscription>> {
		Err(statement_primitives::Error::Unsupported(
			"subscriptions (the RAM-index baseline)".into(),
		))
	}
}
