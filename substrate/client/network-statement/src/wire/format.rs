//! What both versions of the wire share: the limits, the versions and roles, the decoded
//! message and its error.

use crate::affinity::AffinityFilter;
use statement_primitives::Statement;

/// statement/1: bytes the `Vec` length prefix may take (a `Compact<u32>`).
pub const V1_ENVELOPE: usize = 5;

/// statement/2: bytes a notification spends around its statements, the variant byte and the
/// length prefix.
pub const V2_ENVELOPE: usize = 1 + V1_ENVELOPE;

/// Largest notification: 1 MiB, upstream's `MAX_STATEMENT_NOTIFICATION_SIZE`.
pub const MAX_NOTIFICATION_SIZE: usize = 1024 * 1024;

// A filter may fill a notification and no more.
const _: () = assert!(crate::affinity::MAX_BITS == MAX_NOTIFICATION_SIZE * 8);

/// Smallest encoding a valid statement can have: a length prefix, a proof and an expiry.
pub const MIN_ENCODED_STATEMENT: usize = 108;

/// Most statements a notification may declare; a larger count is refused before decoding
/// (upstream's figure: whatever could fit in 1 MiB at the smallest size).
pub const MAX_STATEMENTS_PER_NOTIFICATION: u32 =
	((MAX_NOTIFICATION_SIZE - V1_ENVELOPE) / MIN_ENCODED_STATEMENT) as u32;

/// A version of the statement protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
	/// `statement/1`: statements only.
	V1,
	/// `statement/2`: statements and topic affinity.
	V2,
}

impl Version {
	/// Bytes a notification spends around its statements.
	pub fn envelope(self) -> usize {
		match self {
			Version::V1 => V1_ENVELOPE,
			Version::V2 => V2_ENVELOPE,
		}
	}

	/// The protocol's suffix, `statement/1` or `statement/2`.
	pub fn suffix(self) -> &'static str {
		match self {
			Version::V1 => "statement/1",
			Version::V2 => "statement/2",
		}
	}
}

/// The notification protocol of a chain: `/{genesis hash as lower-case hex, no 0x}/statement/N`,
/// or with the chain spec's fork id `/{hex}/{fork id}/statement/N`, so nodes of different chains
/// never exchange statements.
pub fn protocol_name(genesis_hash: &[u8; 32], fork_id: Option<&str>, version: Version) -> String {
	let hex = hex::encode(genesis_hash);
	match fork_id {
		Some(fork) => format!("/{hex}/{fork}/{}", version.suffix()),
		None => format!("/{hex}/{}", version.suffix()),
	}
}

/// What a peer says it is, in the one-byte handshake (Substrate's `Roles` bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
	/// Holds everything (`1`).
	Full,
	/// A light client (`2`): on statement/2 it gets nothing until it sends a filter.
	Light,
	/// An authority (`4`), served as a full node.
	Authority,
}

impl Role {
	/// The handshake this role sends.
	pub fn handshake(self) -> Vec<u8> {
		vec![match self {
			Role::Full => 1,
			Role::Light => 2,
			Role::Authority => 4,
		}]
	}

	/// The role a handshake declares, as the reference reads it: exactly one byte of known
	/// bits; `4` alone is an authority, any other with the full or authority bit is full, and
	/// the rest (`2`, also `0`) light. `None` refuses the peer.
	pub fn from_handshake(handshake: &[u8]) -> Option<Role> {
		match handshake {
			[4] => Some(Role::Authority),
			[bits] if bits & !0b111 == 0 && bits & 0b101 != 0 => Some(Role::Full),
			[bits] if bits & !0b111 == 0 => Some(Role::Light),
			_ => None,
		}
	}

	/// Whether the peer is a light client.
	pub fn is_light(self) -> bool {
		self == Role::Light
	}
}

/// A received notification, decoded.
#[derive(Debug)]
pub enum Message {
	/// Statements, each with its encoding.
	Statements(Vec<(Statement, Vec<u8>)>),
	/// The topics the peer wants from now on (statement/2 only).
	Affinity(AffinityFilter),
}

/// What decoding refuses.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
	/// The declared count is over [`MAX_STATEMENTS_PER_NOTIFICATION`].
	#[error("declares {0} statements, more than a notification may hold")]
	TooMany(u32),
	/// The bytes are not a message of the version.
	#[error("is not a statement message: {0}")]
	Malformed(String),
	/// An affinity filter that breaks the limits, or is not one.
	#[error("carries an affinity filter that {0}")]
	Filter(#[from] crate::affinity::FilterError),
}
