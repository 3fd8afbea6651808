//! The store's one error type.

/// What went wrong opening or using the store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
	/// parity-db refused an operation (its damage reports become [`Error::Damaged`], its held
	/// lock [`Error::Locked`]).
	#[error("database error: {0}")]
	Db(parity_db::Error),
	/// The database is open elsewhere: nearly always a second node on the same base path.
	#[error("database is in use by another process: {0}")]
	Locked(std::io::Error),
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
	#[error("database at {path} is inconsistent: {detail}. Nothing was deleted; `statement-node check-db` lists the damage and `statement-node repair` rebuilds the database from its intact statements (or restore a backup).")]
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
	/// A file operation failed: a full disk, a missing or unwritable file.
	#[error("cannot {operation} {path}: {source}")]
	Io {
		/// What the store was doing, e.g. "append to the intent log".
		operation: &'static str,
		/// The file or directory.
		path: String,
		/// Why.
		source: std::io::Error,
	},
	/// parity-db failed inside while reading its own files: they are damaged.
	#[error("the database files are damaged: {0}. Stop the node and run `statement-node check-db` to see what is damaged, then `statement-node repair` to rebuild from the intact statements.")]
	Damaged(String),
	/// The disk holding the database is nearly full: new statements are refused until space
	/// is freed (see [`crate::config::Config::min_free_bytes`]).
	#[error("the disk holding {path} is nearly full: {} free; new statements are refused until {} are free (the reserve of {} kept for the database, and a quarter more so that submits do not flap on and off)", mib(*free), mib(*resume), mib(*reserve))]
	DiskFull {
		/// Database directory.
		path: String,
		/// Bytes free at the last measurement.
		free: u64,
		/// Bytes the store keeps free.
		reserve: u64,
		/// Bytes that must be free before new statements are taken again.
		resume: u64,
	},
	/// The intent log lacks acknowledged changes the database does not hold either (a file
	/// removed by hand, or damaged records), so opening would silently lose them.
	#[error("the intent log in {path} lacks batches {first} to {last}, which the database does not hold either ({detail}). Nothing was changed. Restore the missing intent files, or open with the option to skip intent gaps (statement-node: --statement-store-skip-intent-gaps) to redo the intact batches and keep the intent files aside.")]
	IntentGap {
		/// Database directory.
		path: String,
		/// First missing batch.
		first: u64,
		/// Last missing batch.
		last: u64,
		/// Where the damage was found.
		detail: String,
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

impl From<parity_db::Error> for Error {
	/// parity-db's own corruption reports (a bad log record, a table address past its end)
	/// are damage to the files: they say so, and point to `check-db` and `repair`.
	fn from(err: parity_db::Error) -> Self {
		match err {
			parity_db::Error::Corruption(detail) => Error::Damaged(detail),
			parity_db::Error::Locked(err) => Error::Locked(err),
			other => Error::Db(other),
		}
	}
}

/// Run `work`, turning a panic (parity-db panics on some kinds of damage to its own files)
/// into [`Error::Damaged`].
pub(crate) fn catch_db_panic<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
	std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
		let message = panic
			.downcast_ref::<&str>()
			.map(|text| text.to_string())
			.or_else(|| panic.downcast_ref::<String>().cloned())
			.unwrap_or_else(|| "unknown panic".into());
		Err(Error::Damaged(message))
	})
}

/// A stored value in `column` that is not what the layout says (`what` names it).
pub(crate) fn bad(column: u8, what: &str) -> Error {
	Error::BadValue { column, detail: format!("malformed {what}") }
}

/// Result with the store's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl From<Error> for statement_primitives::Error {
	fn from(err: Error) -> Self {
		match err {
			Error::Query(inner) => inner,
			Error::Allowance(detail) => statement_primitives::Error::Storage(detail),
			Error::DiskFull { .. } => statement_primitives::Error::Storage(err.to_string()),
			Error::BadValue { .. } => statement_primitives::Error::Decode(err.to_string()),
			other => statement_primitives::Error::Db(other.to_string()),
		}
	}
}

/// `bytes` in MiB with one decimal, for messages: "4.5 MiB" (a whole-MiB figure would say
/// "4 MiB free, below the reserve of 4 MiB").
pub fn mib(bytes: u64) -> String {
	format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}
