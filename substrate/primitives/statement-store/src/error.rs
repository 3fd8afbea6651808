//! The crate's one error type.

/// Why a statement, a filter or a store call could not be taken.
///
/// Decoding errors name the first thing that was wrong with the bytes, so a peer or an app
/// that sent them can be told exactly what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum Error {
	/// The input ended before the statement did.
	#[error("statement encoding is truncated: {needed} more bytes needed at offset {offset}")]
	Truncated {
		/// Offset at which the read started.
		offset: usize,
		/// Bytes the read needed.
		needed: usize,
	},
	/// A field tag outside 0..=8.
	#[error("unknown statement field tag {tag}")]
	UnknownField {
		/// The tag that was read.
		tag: u8,
	},
	/// A field tag not greater than the one before it (duplicate or out of order).
	#[error("statement field {tag} follows field {previous}: fields must be unique and in increasing tag order")]
	FieldOrder {
		/// The tag that was read.
		tag: u8,
		/// The tag of the field before it.
		previous: u8,
	},
	/// A proof kind outside sr25519 (0), ed25519 (1) and secp256k1 ecdsa (2).
	#[error("unknown proof kind {kind}")]
	UnknownProof {
		/// The proof discriminant that was read.
		kind: u8,
	},
	/// Bytes left over after a complete statement.
	#[error("{count} trailing bytes after the statement")]
	TrailingBytes {
		/// How many bytes were left.
		count: usize,
	},
	/// The encoding is larger than [`crate::MAX_STATEMENT_SIZE`].
	#[error("statement encoding is {size} bytes, more than the maximum {max}")]
	TooLarge {
		/// Size of the encoding.
		size: usize,
		/// The maximum allowed.
		max: usize,
	},
	/// A compact integer that is not in its canonical (shortest) form or overflows `u32`.
	#[error("malformed compact integer at offset {offset}")]
	BadCompact {
		/// Offset of the compact's first byte.
		offset: usize,
	},
	/// A topic filter with more topics than its kind allows.
	#[error("{given} topics given, at most {max} allowed")]
	TooManyTopics {
		/// Number of topics given.
		given: usize,
		/// Limit for this kind of filter.
		max: usize,
	},
	/// The store's database failed in a way not classified below; the call may succeed if
	/// made again.
	#[error("database error: {0}")]
	Db(String),
	/// The disk holding the store is (nearly) full: writes are refused until space is freed,
	/// reads go on. Made again later, the call may succeed. Serialized as upstream's
	/// `Storage` (inside a submission's `internalError`), so upstream's types read it.
	#[error("{0}")]
	#[serde(rename = "Storage", skip_deserializing)]
	DiskFull(String),
	/// The store's files are damaged: made again, the call fails again until the operator
	/// checks and repairs the database. Serialized as upstream's `Db`.
	#[error("{0}")]
	#[serde(rename = "Db", skip_deserializing)]
	Damaged(String),
	/// Reading chain state failed.
	#[error("storage error: {0}")]
	Storage(String),
	/// A stored value could not be decoded.
	#[error("decoding error: {0}")]
	Decode(String),
	/// A subscriber fell behind: its live queue would have passed its bound, so it was
	/// dropped and missed statements (see [`crate::StatementSubscription`]).
	#[error("subscription dropped: the subscriber fell more than {queue_bytes} bytes behind")]
	Lagged {
		/// The queue's bound.
		queue_bytes: usize,
	},
	/// Opening one more subscription would take the store's subscriptions past their share
	/// of its memory budget (see [`crate::SUBSCRIPTION_STATE_BYTES`]).
	#[error("too many subscriptions: the {open} open take their share ({share} bytes) of the store's subscription memory budget; close some, or raise the budget")]
	TooManySubscriptions {
		/// Subscriptions open (counted in the budget).
		open: usize,
		/// The part of the budget their own state may take.
		share: usize,
	},
	/// The store does not offer this call (a test or comparison store).
	#[error("this statement store does not support {0}")]
	Unsupported(String),
	/// An ECIES destination that is not an ed25519 public key (not a curve point).
	#[error("not an ed25519 public key: the bytes are not a point of the curve")]
	NotEd25519Public,
	/// ECIES data shorter than its header (ephemeral key and nonce).
	#[error("encrypted data is {len} bytes, shorter than the {min}-byte ECIES header")]
	EncryptedTooShort {
		/// Bytes given.
		len: usize,
		/// Ephemeral key and nonce.
		min: usize,
	},
	/// An ECIES key of low order (the destination, or the ephemeral key in encrypted data): the
	/// shared secret would be known to anyone, so it is refused.
	#[error("a low-order key: the shared secret would be known to anyone")]
	WeakKey,
	/// ECIES data that does not decrypt: another key, or altered on the way.
	#[error("the data does not decrypt with this key (another key, or altered)")]
	DecryptionFailed,
	/// AES-GCM refused to encrypt (only for data of many gigabytes).
	#[error("the data cannot be encrypted: it is too large for AES-GCM")]
	EncryptionFailed,
}

/// Result with the crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
	use super::Error;

	#[test]
	fn a_full_disk_and_damage_keep_upstreams_json_inside_an_internal_error() {
		let full = serde_json::to_value(Error::DiskFull("full".into())).unwrap();
		assert_eq!(full, serde_json::json!({"Storage": "full"}));
		let damaged = serde_json::to_value(Error::Damaged("bad".into())).unwrap();
		assert_eq!(damaged, serde_json::json!({"Db": "bad"}));
		// Read back, they are upstream's kinds.
		let back: Error = serde_json::from_value(full).unwrap();
		assert_eq!(back, Error::Storage("full".into()));
	}
}
