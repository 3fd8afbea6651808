//! The store's one error type.

/// What went wrong opening or using the store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
	/// parity-db refused an operation.
	#[error("database error: {0}")]
	Db(#[from] parity_db::Error),
	/// The database directory holds data this build cannot read.
	#[error("database at {path} has schema version {found}; this build reads versions up to {supported}. Nothing was changed; use a newer build.")]
	NewerSchema {
		/// Database directory.
		path: String,
		/// Version found in the database.
		found: u32,
		/// Newest version this build knows.
		supported: u32,
	},
	/// The database contents contradict each other (a corrupt or truncated directory).
	#[error("database at {path} is inconsistent: {detail}. Nothing was deleted; restore it from a backup or move it aside.")]
	Corrupt {
		/// Database directory.
		path: String,
		/// What did not add up.
		detail: String,
	},
	/// A stored value did not decode (a corrupt value table).
	#[error("stored value in column {column} does not decode: {detail}")]
	BadValue {
		/// parity-db column.
		column: u8,
		/// Decoder message.
		detail: String,
	},
	/// The configuration cannot work.
	#[error("invalid configuration: {0}")]
	Config(String),
	/// A query the primitives refuse (for example more than four topics).
	#[error(transparent)]
	Query(#[from] statement_primitives::Error),
	/// A file next to the database (the membership snapshot) could not be written.
	#[error("cannot write {path}: {source}")]
	File {
		/// The file.
		path: String,
		/// Why.
		source: std::io::Error,
	},
	/// A subscriber fell behind: its live queue would have passed its bound, so it was
	/// dropped (as Substrate closes lagging subscriptions).
	#[error("subscription dropped: the subscriber fell more than {queue_bytes} bytes behind")]
	Lagged {
		/// The queue's bound.
		queue_bytes: usize,
	},
	/// Reading allowances from chain state failed.
	#[error("allowance lookup failed: {0}")]
	Allowance(String),
}

/// Result with the store's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for statement_primitives::Error {
	fn from(err: Error) -> Self {
		match err {
			Error::Query(inner) => inner,
			Error::Allowance(detail) => statement_primitives::Error::Storage(detail),
			Error::BadValue { .. } => statement_primitives::Error::Decode(err.to_string()),
			other => statement_primitives::Error::Db(other.to_string()),
		}
	}
}
