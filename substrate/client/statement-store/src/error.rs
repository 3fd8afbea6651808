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

impl Error {
	/// Where a submission failed with this error, as upstream's
	/// `internal_errors_total{source}` names it: `read_allowance` (chain state), `db_commit`
	/// (writing: the disk, the intent log, parity-db's commit) or `db_read` (reading what is
	/// stored, damaged values included).
	pub fn source_label(&self) -> &'static str {
		match self {
			Error::Allowance(_) => "read_allowance",
			Error::Io { .. } | Error::DiskFull { .. } | Error::IntentGap { .. } => "db_commit",
			Error::Db(_)
			| Error::Locked(_)
			| Error::NewerSchema { .. }
			| Error::Corrupt { .. }
			| Error::BadValue { .. }
			| Error::Config(_)
			| Error::Query(_)
			| Error::Damaged(_)
			| Error::Lagged { .. } => "db_read",
		}
	}
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

impl Error {
	/// Whether this is a full disk: the store's own reserve reached, or a write the file
	/// system refused for want of space.
	pub fn is_disk_full(&self) -> bool {
		let no_space = |err: &std::io::Error| {
			err.kind() == std::io::ErrorKind::StorageFull || err.raw_os_error() == Some(28)
		};
		match self {
			Error::DiskFull { .. } => true,
			Error::Io { source, .. } => no_space(source),
			Error::Db(parity_db::Error::Io(source)) => no_space(source),
			_ => false,
		}
	}

	/// Whether the database's files are damaged: retrying cannot help, the operator must
	/// check and repair them.
	pub fn is_damage(&self) -> bool {
		matches!(self, Error::Damaged(_) | Error::Corrupt { .. } | Error::BadValue { .. })
	}
}

/// What callers of the store-facing trait see: a full disk and damage kept apart from other
/// failures, so that RPC can tell "retry later" from "repair the database".
impl From<Error> for statement_primitives::Error {
	fn from(err: Error) -> Self {
		use statement_primitives::Error as Public;
		if err.is_disk_full() {
			return Public::DiskFull(err.to_string());
		}
		if err.is_damage() {
			return Public::Damaged(err.to_string());
		}
		match err {
			Error::Query(inner) => inner,
			Error::Allowance(detail) => Public::Storage(detail),
			other => Public::Db(other.to_string()),
		}
	}
}

/// `bytes` in MiB with one decimal, for messages: "4.5 MiB" (a whole-MiB figure would say
/// "4 MiB free, below the reserve of 4 MiB").
pub fn mib(bytes: u64) -> String {
	format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_primitives::Error as Public;

	#[test]
	fn a_full_disk_and_damage_reach_callers_apart_from_other_failures() {
		let reserve = Error::DiskFull { path: "/db".into(), free: 1, reserve: 2, resume: 3 };
		assert!(
			matches!(Public::from(reserve), Public::DiskFull(message) if message.contains("nearly full"))
		);
		let refused = Error::Io {
			operation: "append to the intent log",
			path: "/db/intent-1.log".into(),
			source: std::io::Error::from_raw_os_error(28),
		};
		assert!(matches!(Public::from(refused), Public::DiskFull(_)));
		let corrupt = Error::Corrupt { path: "/db".into(), detail: "counters".into() };
		assert!(matches!(Public::from(corrupt), Public::Damaged(_)));
		assert!(matches!(Public::from(Error::Damaged("table".into())), Public::Damaged(_)));
		assert!(matches!(Public::from(bad(1, "body")), Public::Damaged(_)));
		let other = Error::Io {
			operation: "read",
			path: "/db".into(),
			source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
		};
		assert!(matches!(Public::from(other), Public::Db(_)));
		assert!(matches!(Public::from(Error::Allowance("state".into())), Public::Storage(_)));
	}
}
