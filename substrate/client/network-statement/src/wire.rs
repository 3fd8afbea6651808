//! The wire: protocol name, and notifications as SCALE `Vec<Statement>` of whole statements.

use codec::{Compact, Decode, Encode};
use statement_primitives::Statement;

/// Largest notification: 1 MiB, upstream's `MAX_STATEMENT_NOTIFICATION_SIZE`.
pub const MAX_NOTIFICATION_SIZE: usize = 1024 * 1024;

/// Bytes the `Vec` length prefix may take (a `Compact<u32>`).
const LENGTH_PREFIX: usize = 5;

/// Smallest encoding a valid statement can have: a length prefix, a proof and an expiry.
pub const MIN_ENCODED_STATEMENT: usize = 108;

/// Most statements a notification may declare; a larger count is refused before decoding
/// (upstream's figure: whatever could fit in 1 MiB at the smallest size).
pub const MAX_STATEMENTS_PER_NOTIFICATION: u32 =
	((MAX_NOTIFICATION_SIZE - LENGTH_PREFIX) / MIN_ENCODED_STATEMENT) as u32;

/// The notification protocol of the chain with this genesis hash: `/{hex}/statement/1`.
pub fn protocol_name(genesis_hash: &[u8; 32]) -> String {
	format!("/{}/statement/1", hex::encode(genesis_hash))
}

/// What [`decode`] refuses.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
	/// The declared count is over [`MAX_STATEMENTS_PER_NOTIFICATION`].
	#[error("declares {0} statements, more than a notification may hold")]
	TooMany(u32),
	/// The bytes are not a `Vec<Statement>`.
	#[error("is not a SCALE Vec<Statement>: {0}")]
	Malformed(String),
}

/// The statements of a notification, with their encodings; the count is checked before
/// anything else is decoded.
pub fn decode(mut input: &[u8]) -> Result<Vec<(Statement, Vec<u8>)>, DecodeError> {
	let malformed = |err: codec::Error| DecodeError::Malformed(err.to_string());
	let count = Compact::<u32>::decode(&mut input).map_err(malformed)?.0;
	if count > MAX_STATEMENTS_PER_NOTIFICATION {
		return Err(DecodeError::TooMany(count));
	}
	let mut statements = Vec::with_capacity(count as usize);
	for _ in 0..count {
		let before = input;
		let statement = Statement::decode(&mut input).map_err(malformed)?;
		let encoding = before[..before.len() - input.len()].to_vec();
		statements.push((statement, encoding));
	}
	if !input.is_empty() {
		return Err(DecodeError::Malformed(format!(
			"{} bytes after the last statement",
			input.len()
		)));
	}
	Ok(statements)
}

/// A notification of these encoded statements.
pub fn encode<'a>(statements: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
	let mut out = Compact(statements.len() as u32).encode();
	for statement in statements {
		out.extend_from_slice(statement);
	}
	out
}

/// Whether a statement of `len` bytes can ever travel (alone in a notification).
pub fn fits_alone(len: usize) -> bool {
	len + LENGTH_PREFIX <= MAX_NOTIFICATION_SIZE
}

#[cfg(test)]
mod tests {
	use super::*;
	use sp_core::{sr25519, Pair};

	fn statement(n: u8, data_len: usize) -> Statement {
		let mut statement = Statement::new();
		statement.set_expiry_from_parts(u32::MAX, n as u32);
		statement.set_plain_data(vec![n; data_len]);
		statement.sign_sr25519_private(&sr25519::Pair::from_seed(&[n; 32]));
		statement
	}

	#[test]
	fn the_protocol_is_named_by_the_genesis_hash_in_lower_case_hex() {
		assert_eq!(protocol_name(&[0xAB; 32]), format!("/{}/statement/1", "ab".repeat(32)));
	}

	#[test]
	fn a_notification_is_exactly_a_scale_vec_of_statements() {
		let statements = vec![statement(1, 10), statement(2, 20)];
		let encodings: Vec<Vec<u8>> = statements.iter().map(Encode::encode).collect();
		let notification = encode(encodings.iter().map(Vec::as_slice));
		assert_eq!(notification, statements.encode());
		let decoded = decode(&notification).unwrap();
		assert_eq!(decoded.iter().map(|(s, _)| s.clone()).collect::<Vec<_>>(), statements);
		assert_eq!(decoded.into_iter().map(|(_, e)| e).collect::<Vec<_>>(), encodings);
	}

	#[test]
	fn a_count_over_the_limit_is_refused_before_decoding() {
		assert_eq!(MAX_STATEMENTS_PER_NOTIFICATION, 9_708);
		let mut notification = Compact(MAX_STATEMENTS_PER_NOTIFICATION + 1).encode();
		notification.extend_from_slice(&[0; 16]);
		assert_eq!(decode(&notification), Err(DecodeError::TooMany(9_709)));
	}

	#[test]
	fn garbage_and_trailing_bytes_are_malformed() {
		assert!(matches!(decode(&[]), Err(DecodeError::Malformed(_))));
		assert!(matches!(decode(&[4, 1, 2, 3]), Err(DecodeError::Malformed(_))));
		let mut notification = vec![statement(1, 4)].encode();
		notification.push(0);
		assert!(matches!(decode(&notification), Err(DecodeError::Malformed(_))));
	}

	#[test]
	fn a_statement_travels_only_if_it_fits_a_notification_alone() {
		assert!(!fits_alone(MAX_NOTIFICATION_SIZE - 4));
		assert!(fits_alone(MAX_NOTIFICATION_SIZE - 5));
	}
}
