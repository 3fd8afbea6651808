//! statement/1: a notification is a SCALE `Vec<Statement>` of whole statements.

use super::format::{DecodeError, MAX_STATEMENTS_PER_NOTIFICATION};
use codec::{Compact, Decode, Encode};
use statement_primitives::Statement;

/// Bytes the `Vec` length prefix may take (a `Compact<u32>`).
pub use super::format::V1_ENVELOPE as ENVELOPE;

/// The statements of a `Vec<Statement>`, with their encodings; the count is checked before
/// anything else is decoded, and nothing may follow the last statement.
pub fn decode(mut input: &[u8]) -> Result<Vec<(Statement, Vec<u8>)>, DecodeError> {
	let statements = decode_from(&mut input)?;
	if !input.is_empty() {
		return Err(DecodeError::Malformed(format!(
			"{} bytes after the last statement",
			input.len()
		)));
	}
	Ok(statements)
}

/// [`decode`] from the front of `input`, leaving what follows.
pub(super) fn decode_from(input: &mut &[u8]) -> Result<Vec<(Statement, Vec<u8>)>, DecodeError> {
	let malformed = |err: codec::Error| DecodeError::Malformed(err.to_string());
	let count = Compact::<u32>::decode(input).map_err(malformed)?.0;
	if count > MAX_STATEMENTS_PER_NOTIFICATION {
		return Err(DecodeError::TooMany(count));
	}
	let mut statements = Vec::with_capacity(count as usize);
	for _ in 0..count {
		let before = *input;
		let statement = Statement::decode(input).map_err(malformed)?;
		let encoding = before[..before.len() - input.len()].to_vec();
		statements.push((statement, encoding));
	}
	Ok(statements)
}

/// A `Vec<Statement>` of these encoded statements.
pub fn encode<'a>(statements: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
	let mut out = Compact(statements.len() as u32).encode();
	for statement in statements {
		out.extend_from_slice(statement);
	}
	out
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_primitives::testing::{sr25519_pair, TestStatement};

	fn statement(n: u8, data_len: usize) -> Statement {
		let n32 = u32::from(n);
		TestStatement::new()
			.expiry(u32::MAX, n32)
			.data(vec![n; data_len])
			.signed_sr25519(&sr25519_pair(n32))
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
}
