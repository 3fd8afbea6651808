//! The wire: protocol names, the role handshake, and the message formats of each version.
//!
//! - [`v1`]: `/{genesis}/statement/1`, a notification is a SCALE `Vec<Statement>`.
//! - [`v2`]: `/{genesis}/statement/2`, a notification is the SCALE enum `StatementMessage`:
//!   `0: Statements(Vec<Statement>)`, `1: ExplicitTopicAffinity(AffinityFilter)`.
//!
//! A node offers statement/2 with statement/1 as its fallback, as the reference (0.44) does;
//! which one a stream speaks is settled per peer when it opens.

pub mod v1;
pub mod v2;

use crate::affinity::AffinityFilter;
use statement_primitives::Statement;

/// Largest notification: 1 MiB, upstream's `MAX_STATEMENT_NOTIFICATION_SIZE`.
pub const MAX_NOTIFICATION_SIZE: usize = 1024 * 1024;

// A filter may fill a notification and no more.
const _: () = assert!(crate::affinity::MAX_BITS == MAX_NOTIFICATION_SIZE * 8);

/// Smallest encoding a valid statement can have: a length prefix, a proof and an expiry.
pub const MIN_ENCODED_STATEMENT: usize = 108;

/// Most statements a notification may declare; a larger count is refused before decoding
/// (upstream's figure: whatever could fit in 1 MiB at the smallest size).
pub const MAX_STATEMENTS_PER_NOTIFICATION: u32 =
	((MAX_NOTIFICATION_SIZE - v1::ENVELOPE) / MIN_ENCODED_STATEMENT) as u32;

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
			Version::V1 => v1::ENVELOPE,
			Version::V2 => v2::ENVELOPE,
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

/// Decode a notification of this version.
pub fn decode(version: Version, notification: &[u8]) -> Result<Message, DecodeError> {
	match version {
		Version::V1 => v1::decode(notification).map(Message::Statements),
		Version::V2 => v2::decode(notification),
	}
}

/// A notification of these encoded statements.
pub fn encode_statements<'a>(
	version: Version,
	statements: impl ExactSizeIterator<Item = &'a [u8]>,
) -> Vec<u8> {
	match version {
		Version::V1 => v1::encode(statements),
		Version::V2 => v2::encode_statements(statements),
	}
}

/// Whether a statement of `len` bytes can travel at all (alone in a notification of
/// `version`).
pub fn fits_alone(version: Version, len: usize) -> bool {
	len + version.envelope() <= MAX_NOTIFICATION_SIZE
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn protocols_are_named_by_the_genesis_hash_in_lower_case_hex_and_the_fork_id() {
		let hex = "ab".repeat(32);
		assert_eq!(protocol_name(&[0xAB; 32], None, Version::V1), format!("/{hex}/statement/1"));
		assert_eq!(protocol_name(&[0xAB; 32], None, Version::V2), format!("/{hex}/statement/2"));
		assert_eq!(
			protocol_name(&[0xAB; 32], Some("fork"), Version::V2),
			format!("/{hex}/fork/statement/2")
		);
	}

	#[test]
	fn roles_read_as_the_reference_reads_them() {
		assert_eq!(Role::from_handshake(&[1]), Some(Role::Full));
		assert_eq!(Role::from_handshake(&[2]), Some(Role::Light));
		assert_eq!(Role::from_handshake(&[4]), Some(Role::Authority));
		assert_eq!(Role::from_handshake(&[3]), Some(Role::Full));
		assert_eq!(Role::from_handshake(&[6]), Some(Role::Full));
		assert_eq!(Role::from_handshake(&[0]), Some(Role::Light));
		assert_eq!(Role::from_handshake(&[8]), None);
		assert_eq!(Role::from_handshake(&[]), None);
		assert_eq!(Role::from_handshake(&[1, 0]), None);
		for role in [Role::Full, Role::Light, Role::Authority] {
			assert_eq!(Role::from_handshake(&role.handshake()), Some(role));
		}
	}

	#[test]
	fn a_statement_travels_only_if_it_fits_a_notification_alone() {
		assert!(!fits_alone(Version::V1, MAX_NOTIFICATION_SIZE - 4));
		assert!(fits_alone(Version::V1, MAX_NOTIFICATION_SIZE - 5));
		assert!(!fits_alone(Version::V2, MAX_NOTIFICATION_SIZE - 5));
		assert!(fits_alone(Version::V2, MAX_NOTIFICATION_SIZE - 6));
	}
}
