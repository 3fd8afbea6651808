//! The RAM-index baseline: every index in hash maps and sets of 32-byte hashes, bodies in
//! parity-db, one store-wide RwLock. Used only to compare against.

use parking_lot::RwLock;
use statement_primitives::{
	check_match_all, AccountId, DecryptionKey, Hash, InvalidReason, RejectionReason,
	SignatureVerificationResult, Statement, StatementSource, StatementStore, StatementSubscription,
	StatementsPage, SubmitResult, Topic, TopicFilter,
};
use std::{
	collections::{BTreeSet, HashMap, HashSet},
	path::Path,
};

struct Entry {
	account: AccountId,
	key: Option<DecryptionKey>,
	topics: Vec<Topic>,
	/// The whole 64-bit expiry (its high half is the unix second it expires at).
	expiry: u64,
}

#[derive(Default)]
struct Index {
	entries: HashMap<Hash, Entry>,
	by_topic: HashMap<Topic, HashSet<Hash>>,
	by_key: HashMap<Option<DecryptionKey>, HashSet<Hash>>,
	by_account: HashMap<AccountId, HashSet<Hash>>,
	/// With a cap: each account's statements by expiry, lowest first, as the reference's
	/// per-account priority map orders them (empty without a cap).
	by_priority: HashMap<AccountId, BTreeSet<(u64, Hash)>>,
	/// Most statements an account may keep; a submit to a full account evicts its
	/// lowest-expiry statement if the new one expires later.
	cap: Option<u32>,
}

/// A store with the reference's in-RAM index and parity-db bodies.
pub struct RamIndexStore {
	db: parity_db::Db,
	index: RwLock<Index>,
}

impl RamIndexStore {
	/// Open (or create) at `path`, rebuilding the index from every stored body.
	pub fn open(path: &Path) -> Result<Self, parity_db::Error> {
		Self::open_with(path, None)
	}

	/// [`RamIndexStore::open`], with each account allowed at most `max_count` statements.
	pub fn open_capped(path: &Path, max_count: u32) -> Result<Self, parity_db::Error> {
		Self::open_with(path, Some(max_count))
	}

	fn open_with(path: &Path, cap: Option<u32>) -> Result<Self, parity_db::Error> {
		let mut options = parity_db::Options::with_columns(path, 1);
		options.columns[0].uniform = true;
		options.sync_wal = false;
		options.stats = false;
		let db = parity_db::Db::open_or_create(&options)?;
		let mut index = Index { cap, ..Index::default() };
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
			.filter(|(_, entry)| entry.expiry >> 32 < now)
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
		let expiry = statement.expiry();
		if self.cap.is_some() {
			self.by_priority.entry(account).or_default().insert((expiry, hash));
		}
		self.entries
			.insert(hash, Entry { account, key, topics: statement.topics().to_vec(), expiry });
	}

	/// With a cap, what admitting a statement of `account` expiring at `expiry` takes: `Ok`
	/// with the statement to evict first (if the account is full), or the rejection.
	fn make_room(&self, account: &AccountId, expiry: u64) -> Result<Option<Hash>, SubmitResult> {
		let Some(cap) = self.cap else { return Ok(None) };
		let Some(held) = self.by_priority.get(account) else { return Ok(None) };
		if held.len() < cap as usize {
			return Ok(None);
		}
		match held.first() {
			Some(&(lowest, hash)) if lowest < expiry => Ok(Some(hash)),
			Some(&(lowest, _)) => Err(SubmitResult::Rejected(RejectionReason::AccountFull {
				submitted_expiry: expiry,
				min_expiry: lowest,
			})),
			None => Ok(None),
		}
	}

	fn remove(&mut self, hash: &Hash) -> bool {
		let Some(Entry { account, key, topics, expiry }) = self.entries.remove(hash) else {
			return false;
		};
		if let Some(set) = self.by_priority.get_mut(&account) {
			set.remove(&(expiry, *hash));
		}
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
		let evict = match index.make_room(&account, statement.expiry()) {
			Ok(evict) => evict,
			Err(rejected) => return rejected,
		};
		let changes = evict.iter().map(|evicted| (0, evicted.to_vec(), None));
		if let Err(err) = self.db.commit(changes.chain([(0, hash.to_vec(), Some(encoding))])) {
			return SubmitResult::InternalError(statement_primitives::Error::Db(err.to_string()));
		}
		if let Some(evicted) = evict {
			index.remove(&evicted);
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

#[cfg(test)]
mod tests {
	use super::*;
	use sp_core::Pair as _;
	use statement_primitives::testing::TestStatement;

	fn expiring(expiry: u64, n: u8) -> Statement {
		let key = sp_core::ed25519::Pair::from_seed(&[7; 32]);
		TestStatement::new().raw_expiry(expiry).data(vec![n; 8]).signed_ed25519(&key)
	}

	/// With a cap, a full account makes room by evicting its lowest-expiry statement, and
	/// refuses one that would not outrank it; without one, it takes any number.
	#[test]
	fn a_capped_account_evicts_its_lowest_expiry_or_refuses() {
		let dir = tempfile::tempdir().unwrap();
		let store = RamIndexStore::open_capped(dir.path(), 2).unwrap();
		let [low, mid, high, lower] =
			[expiring(10, 0), expiring(20, 1), expiring(30, 2), expiring(5, 3)];
		for statement in [&low, &mid, &high] {
			assert_eq!(store.submit(statement.clone(), StatementSource::Local), SubmitResult::New);
		}
		assert!(!store.has_statement(&low.hash()), "the lowest expiry was not evicted");
		assert!(store.has_statement(&mid.hash()) && store.has_statement(&high.hash()));
		assert_eq!(store.statement(&low.hash()).unwrap(), None, "its body stayed");
		assert_eq!(
			store.submit(lower.clone(), StatementSource::Local),
			SubmitResult::Rejected(RejectionReason::AccountFull {
				submitted_expiry: 5,
				min_expiry: 20
			})
		);
		drop(store);
		// Reopened with the cap, the order is rebuilt from the bodies.
		let store = RamIndexStore::open_capped(dir.path(), 2).unwrap();
		assert_eq!(store.submit(expiring(40, 4), StatementSource::Local), SubmitResult::New);
		assert!(!store.has_statement(&mid.hash()));
		drop(store);
		let store = RamIndexStore::open(dir.path()).unwrap();
		assert_eq!(store.submit(lower, StatementSource::Local), SubmitResult::New);
		assert_eq!(store.statements().unwrap().len(), 3);
	}
}
