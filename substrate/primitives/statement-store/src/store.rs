//! The store-facing trait: what a statement store offers to RPC, networking and the node.

use crate::{
	AccountId, DecryptionKey, Hash, Result, Statement, StatementSource, SubmitResult, Topic,
};

/// A statement store, as RPC servers, gossip and the node see it.
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
}
