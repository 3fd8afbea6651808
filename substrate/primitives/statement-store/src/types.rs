//! The 32-byte identifiers a statement carries, and the limits on them.

/// A statement topic: 32 bytes an app chooses so that readers can find its statements.
///
/// In JSON it is a `0x`-prefixed hex string, as upstream's RPC writes it.
#[derive(
	Clone,
	Copy,
	Debug,
	Default,
	PartialEq,
	Eq,
	PartialOrd,
	Ord,
	Hash,
	codec::Encode,
	codec::Decode,
	codec::MaxEncodedLen,
)]
pub struct Topic(pub [u8; 32]);

/// Id of the key a statement's data is encrypted to (the recipient's public key, or a hash of it).
pub type DecryptionKey = [u8; 32];
/// A per-account channel: an account keeps at most one live statement per channel.
pub type Channel = [u8; 32];
/// The account a statement is charged to: the signer's key, or blake2-256 of an ecdsa key.
pub type AccountId = [u8; 32];
/// blake2-256 of a statement's encoding.
pub type Hash = [u8; 32];

/// Topics a statement may carry, and a `MatchAll` filter may name.
pub const MAX_TOPICS: usize = 4;
/// Topics a `MatchAny` filter may name.
pub const MAX_ANY_TOPICS: usize = 128;
/// Largest encoding a statement may have: 1 MiB - 1.
pub const MAX_STATEMENT_SIZE: usize = 1024 * 1024 - 1;

impl From<[u8; 32]> for Topic {
	fn from(bytes: [u8; 32]) -> Self {
		Topic(bytes)
	}
}

impl From<Topic> for [u8; 32] {
	fn from(topic: Topic) -> Self {
		topic.0
	}
}

impl AsRef<[u8]> for Topic {
	fn as_ref(&self) -> &[u8] {
		&self.0
	}
}

impl serde::Serialize for Topic {
	fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
		sp_core::bytes::serialize(&self.0, serializer)
	}
}

impl<'de> serde::Deserialize<'de> for Topic {
	fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
		let mut bytes = [0u8; 32];
		sp_core::bytes::deserialize_check_len(
			deserializer,
			sp_core::bytes::ExpectedLen::Exact(&mut bytes[..]),
		)?;
		Ok(Topic(bytes))
	}
}

/// blake2-256 of `data`: a statement's hash when `data` is its encoding.
pub fn hash_encoded(data: &[u8]) -> Hash {
	sp_crypto_hashing::blake2_256(data)
}
