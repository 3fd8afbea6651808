//! The node's one error type. Each variant carries what the operator needs to act on it (the
//! path, the address, the flag), and `main` prints it once.

use std::{net::SocketAddr, path::PathBuf};

/// Why the node, or one of its subcommands, stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
	/// Networking could not start: a bad node key or address, or a port taken.
	#[error("{0}")]
	Network(#[from] statement_network::Error),
	/// The chain spec file could not be read.
	#[error("cannot read chain spec {path}: {source}")]
	ChainSpecRead {
		/// File.
		path: String,
		/// Cause.
		source: std::io::Error,
	},
	/// The chain spec file is not a chain spec.
	#[error("chain spec {path} is not valid: {detail}")]
	ChainSpecInvalid {
		/// File.
		path: String,
		/// What is wrong.
		detail: String,
	},
	/// A genesis storage entry is not `0x`-hex.
	#[error("genesis {what} {text} is not hex: {source}")]
	GenesisHex {
		/// `key` or `value`.
		what: &'static str,
		/// The entry as written in the spec.
		text: String,
		/// Cause.
		source: hex::FromHexError,
	},
	/// The chain spec could not be written as JSON.
	#[error("cannot write the chain spec as JSON: {0}")]
	ChainSpecJson(#[source] serde_json::Error),
	/// The store refused to open, or an operation on it failed.
	#[error(transparent)]
	Store(#[from] statement_store::Error),
	/// Another process holds the database's lock file.
	#[error(
		"the database at {} is in use by another process; is another node running with this \
		 base path?",
		path.display()
	)]
	DatabaseInUse {
		/// Database directory.
		path: PathBuf,
	},
	/// `check-db` or `repair` was pointed at a directory with no database.
	#[error("no statement database at {}", path.display())]
	NoDatabase {
		/// Where the database was looked for.
		path: PathBuf,
	},
	/// `check-db` found damage.
	#[error(
		"{}: {problems} problems in {statements} statements{}; `statement-node repair` rebuilds \
		 the indexes from the intact statements",
		path.display(),
		if *truncated { " (first ones above)" } else { "" }
	)]
	DatabaseDamaged {
		/// Database directory.
		path: PathBuf,
		/// Problems found.
		problems: u64,
		/// Statements checked.
		statements: u64,
		/// Whether only the first problems were printed.
		truncated: bool,
	},
	/// The JSON-RPC server could not listen.
	#[error("cannot serve JSON-RPC on {addr}: {source}")]
	Rpc {
		/// Address asked for.
		addr: SocketAddr,
		/// Cause.
		source: std::io::Error,
	},
	/// Two JSON-RPC methods have the same name: a bug in how the node builds its methods.
	#[error("cannot register the JSON-RPC methods: {0}")]
	RpcMethod(#[from] jsonrpsee::core::RegisterMethodError),
	/// The Prometheus endpoint could not listen.
	#[error("cannot serve Prometheus metrics on {addr}: {source}")]
	Metrics {
		/// Address asked for.
		addr: SocketAddr,
		/// Cause.
		source: std::io::Error,
	},
	/// The async runtime could not start.
	#[error("cannot start the async runtime: {0}")]
	Runtime(#[source] std::io::Error),
	/// SIGINT or SIGTERM could not be caught.
	#[error("cannot install a signal handler: {0}")]
	Signal(#[source] std::io::Error),
	/// A file operation failed.
	#[error("cannot {operation} {}: {source}", path.display())]
	Io {
		/// What the node was doing, e.g. "create a temporary base path in".
		operation: &'static str,
		/// The file or directory.
		path: PathBuf,
		/// Cause.
		source: std::io::Error,
	},
	/// `sign --suri` is not a usable sr25519 secret.
	#[error("bad secret URI {suri:?}: {detail}")]
	Keys {
		/// The URI given.
		suri: String,
		/// Why it was refused.
		detail: String,
	},
	/// A `sign` argument meant as 32 bytes is `0x`-hex but not 32 bytes of it.
	#[error("{text}: {detail}")]
	Bytes32 {
		/// The argument.
		text: String,
		/// What is wrong.
		detail: String,
	},
	/// A `build-spec --allowance` that is not `WHO=COUNT,BYTES`.
	#[error("bad --allowance {text:?}: {detail}")]
	Grant {
		/// The argument.
		text: String,
		/// What is wrong.
		detail: String,
	},
	/// `sign` was given more topics than a statement holds.
	#[error("{given} topics given, at most {max}")]
	TooManyTopics {
		/// Topics given.
		given: usize,
		/// Most a statement holds.
		max: usize,
	},
	/// The statement's expiry cannot be written: the clock is wrong or the expiry too far.
	#[error("cannot set the expiry: {0}")]
	Expiry(String),
}

impl Error {
	/// `err` from opening the store at `path`, with parity-db's held lock named as such: that
	/// is nearly always a second node on the same base path, and the operator should hear so.
	pub fn opening(err: statement_store::Error, path: PathBuf) -> Error {
		match err {
			statement_store::Error::Locked(_) => Error::DatabaseInUse { path },
			other => Error::Store(other),
		}
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_held_lock_reads_as_database_in_use_and_other_db_errors_pass_through() {
		let locked = statement_store::Error::Locked(std::io::Error::other(
			"Resource temporarily unavailable",
		));
		let err = Error::opening(locked, PathBuf::from("/base/chains/dev/statements"));
		assert!(matches!(err, Error::DatabaseInUse { .. }), "{err:?}");
		assert!(err.to_string().contains("in use by another process"), "{err}");

		let corrupt = statement_store::Error::Damaged("in use".into());
		let err = Error::opening(corrupt, PathBuf::from("/base"));
		assert!(matches!(err, Error::Store(_)), "text is not what decides: {err:?}");
	}
}
