//! The wire: protocol names, the role handshake, and the message formats of each version.
//!
//! - `format` (re-exported here): the limits, versions, roles, decoded message and error
//!   both versions share.
//! - [`v1`]: `/{genesis}/statement/1`, a notification is a SCALE `Vec<Statement>`.
//! - [`v2`]: `/{genesis}/statement/2`, a notification is the SCALE enum `StatementMessage`:
//!   `0: Statements(Vec<Statement>)`, `1: ExplicitTopicAffinity(AffinityFilter)`.
//!
//! A node offers statement/2 with statement/1 as its fallback, as the reference (0.44) does;
//! which one a stream speaks is settled per peer when it opens.

mod format;
pub mod v1;
pub mod v2;

pub use format::*;

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
