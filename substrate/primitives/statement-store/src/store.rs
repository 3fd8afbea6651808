//! The store-facing trait: what a statement store offers to RPC, networking and the node.

use crate::{
	AccountId, DecryptionKey, Hash, Result, Statement, StatementSource, StatementSubscription,
	SubmitResult, Topic, TopicFilter, DEFAULT_SUBSCRIBER_QUEUE_BYTES,
};

/// One page of [`StatementStore::statements_page`].
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StatementsPage {
	/// `(hash, encoding)` of each statement, in the order the store admitted them.
	pub statements: Vec<(Hash, Vec<u8>)>,
	/// The cursor to pass as `after` for the next page; `None` when the walk is done.
	pub next: Option<u64>,
}

/// A statement store, as RPC servers, gossip and the node see it.
///
/// Users hold it as `Arc<dyn StatementStore>`, so that they never depend on a concrete store.
///
/// Every `match_all_topics` argument selects statements carrying all of the given topics; an
/// empty list selects all, and more than [`crate::MAX_TOPICS`] is an
/// [`crate::Error::TooManyTopics`], never a panic.
pub trait StatementStore: Send + Sync {
	/// Every stored statement with its hash.
	fn statements(&self) -> Result<Vec<(Hash, Statement)>>;

	/// The statement with this hash, if stored.
	fn statement(&self, hash: &Hash) -> Result<Option<Statement>>;

	/// Whether a statement with this hash is stored. Answered from memory: gossip calls it for
	/// every statement a peer announces.
	fn has_statement(&self, hash: &Hash) -> bool;

	/// Data of the statements with all these topics and no decryption key.
	fn broadcasts(&self, match_all_topics: &[Topic]) -> Result<Vec<Vec<u8>>>;

	/// Data of the statements with all these topics, encrypted to `dest`.
	fn posted(&self, match_all_topics: &[Topic], dest: DecryptionKey) -> Result<Vec<Vec<u8>>>;

	/// Decrypted data of the statements with all these topics, encrypted to `dest`, when the
	/// store can reach that key.
	fn posted_clear(&self, match_all_topics: &[Topic], dest: DecryptionKey)
		-> Result<Vec<Vec<u8>>>;

	/// Encodings of the statements with all these topics and no decryption key.
	fn broadcasts_stmt(&self, match_all_topics: &[Topic]) -> Result<Vec<Vec<u8>>>;

	/// Encodings of the statements with all these topics, encrypted to `dest`.
	fn posted_stmt(&self, match_all_topics: &[Topic], dest: DecryptionKey) -> Result<Vec<Vec<u8>>>;

	/// For each statement with all these topics encrypted to `dest`: its encoding followed by
	/// its decrypted data.
	fn posted_clear_stmt(
		&self,
		match_all_topics: &[Topic],
		dest: DecryptionKey,
	) -> Result<Vec<Vec<u8>>>;

	/// Check and store a statement.
	fn submit(&self, statement: Statement, source: StatementSource) -> SubmitResult;

	/// Remove a statement; it may not re-enter from the network until its ban is purged.
	fn remove(&self, hash: &Hash) -> Result<()>;

	/// Remove every statement of `who`.
	fn remove_by(&self, who: AccountId) -> Result<()>;

	/// Drop statements this node kept only for a while: with topic-routed storage, those it
	/// forwarded to their holders without being one. Unlike [`StatementStore::remove`] there
	/// is no ban, so they may come back from the network (when this node becomes one of their
	/// holders). Hashes not stored are skipped. A store that cannot says so
	/// ([`crate::Error::Unsupported`]).
	fn release(&self, hashes: &[Hash]) -> Result<()> {
		let _ = hashes;
		Err(crate::Error::Unsupported("dropping statements without a ban".into()))
	}

	/// A page of the stored statements in admission order: those admitted after the cursor
	/// `after` (`None` for the first page, else the previous page's `next`), at most
	/// `max_count` and, past the first statement, at most `max_bytes` of encodings. A
	/// statement admitted during the walk comes in a later page; one removed before its page
	/// is read does not come.
	fn statements_page(
		&self,
		after: Option<u64>,
		max_count: usize,
		max_bytes: usize,
	) -> Result<StatementsPage>;

	/// Subscribe to the statements matching `filter`: every stored match once, then every new
	/// match once, in admission order, with a live queue of at most `queue_bytes`. A
	/// subscriber that falls further behind is dropped and told so by
	/// [`crate::Error::Lagged`] (the policy is in [`StatementSubscription`]'s module docs).
	fn subscribe_with_queue(
		&self,
		filter: TopicFilter,
		queue_bytes: usize,
	) -> Result<Box<dyn StatementSubscription>>;

	/// The admission journal's watermark: the cursor of the newest admitted statement (0 before
	/// the first). Every statement admitted up to it can be read with
	/// [`StatementStore::admitted_page`]; gossip takes it when a peer connects, to bound that
	/// peer's initial sync.
	fn admission_watermark(&self) -> u64;

	/// Like [`StatementStore::statements_page`], but only statements admitted after `after`
	/// and up to `upto` (a watermark), at most `max_bytes` of encodings past the first. `next`
	/// is `None` once nothing is left up to `upto`.
	fn admitted_page(&self, after: u64, upto: u64, max_bytes: usize) -> Result<StatementsPage>;

	/// Every statement admitted from now on, once, in admission order, with a live queue of
	/// at most `queue_bytes` (no replay of what is stored). For gossip: with
	/// [`StatementStore::admission_watermark`] taken after it, nothing falls between.
	fn watch_admissions(&self, queue_bytes: usize) -> Result<Box<dyn StatementSubscription>>;

	/// [`crate::Error::TooManySubscriptions`] (counted as a refusal) if one more subscription,
	/// beside the `starting` ones the caller is opening, would be refused for the store's
	/// memory budget: a server checks each as it arrives, counting those it has not opened yet,
	/// and so refuses a flood at once rather than queueing the work of opening each. A store
	/// without such a budget has room always. Opening the subscription checks again.
	fn check_subscription_room(&self, starting: usize) -> Result<()> {
		let _ = starting;
		Ok(())
	}

	/// A subscription of a set of filters, none yet, with a live queue of at most
	/// `queue_bytes` (see [`crate::FilterSubscription`]); counted in the store's subscription
	/// budget as any subscription is. A store that does not offer them says so
	/// ([`crate::Error::Unsupported`]).
	fn subscribe_filters(&self, queue_bytes: usize) -> Result<Box<dyn crate::FilterSubscription>> {
		let _ = queue_bytes;
		Err(crate::Error::Unsupported("subscriptions of a set of filters".into()))
	}

	/// [`StatementStore::subscribe_with_queue`] with [`DEFAULT_SUBSCRIBER_QUEUE_BYTES`].
	fn subscribe(&self, filter: TopicFilter) -> Result<Box<dyn StatementSubscription>> {
		self.subscribe_with_queue(filter, DEFAULT_SUBSCRIBER_QUEUE_BYTES)
	}
}
