//! statement/2: a notification is the SCALE enum `StatementMessage`, variant
//! `0: Statements(Vec<Statement>)` or `1: ExplicitTopicAffinity(AffinityFilter)`.

use super::{
	format::{DecodeError, Message},
	v1,
};
use crate::affinity::AffinityFilter;

/// Bytes a notification spends around its statements: the variant byte and the length prefix.
pub use super::format::V2_ENVELOPE as ENVELOPE;

/// Variant index of `Statements`.
const STATEMENTS: u8 = 0;

/// Variant index of `ExplicitTopicAffinity`.
const AFFINITY: u8 = 1;

/// Decode a `StatementMessage`; nothing may follow it.
pub fn decode(notification: &[u8]) -> Result<Message, DecodeError> {
	let Some((&variant, mut rest)) = notification.split_first() else {
		return Err(DecodeError::Malformed("empty".into()));
	};
	let message = match variant {
		STATEMENTS => Message::Statements(v1::decode_from(&mut rest)?),
		AFFINITY => Message::Affinity(AffinityFilter::decode_from(&mut rest)?),
		other => return Err(DecodeError::Malformed(format!("unknown variant {other}"))),
	};
	if !rest.is_empty() {
		return Err(DecodeError::Malformed(format!("{} bytes after the message", rest.len())));
	}
	Ok(message)
}

/// `Statements` of these encoded statements.
pub fn encode_statements<'a>(statements: impl ExactSizeIterator<Item = &'a [u8]>) -> Vec<u8> {
	let body = v1::encode(statements);
	let mut out = Vec::with_capacity(1 + body.len());
	out.push(STATEMENTS);
	out.extend_from_slice(&body);
	out
}

/// `ExplicitTopicAffinity` of this filter.
pub fn encode_affinity(filter: &AffinityFilter) -> Vec<u8> {
	let mut out = vec![AFFINITY];
	out.extend_from_slice(&filter.encode());
	out
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::affinity::FilterError;
	use codec::Encode;
	use statement_primitives::{testing::TestStatement, Statement, Topic};

	/// The reference's own shape, derived, to check ours against byte for byte.
	#[derive(Encode)]
	enum StatementMessage {
		#[codec(index = 0)]
		Statements(Vec<Statement>),
		#[codec(index = 1)]
		ExplicitTopicAffinity { seed: u128, num_hashes: u32, bits: Vec<u64> },
	}

	fn statement(n: u8) -> Statement {
		TestStatement::new()
			.raw_expiry(u64::MAX - n as u64)
			.topic(0, Topic([n; 32]))
			.data(vec![n; 3])
			.unsigned()
	}

	#[test]
	fn statements_are_variant_zero_around_a_v1_vec() {
		let statements = vec![statement(1), statement(2)];
		let encodings: Vec<Vec<u8>> = statements.iter().map(Encode::encode).collect();
		let ours = encode_statements(encodings.iter().map(Vec::as_slice));
		assert_eq!(ours, StatementMessage::Statements(statements.clone()).encode());
		let Message::Statements(back) = decode(&ours).unwrap() else { panic!("not statements") };
		assert_eq!(back.into_iter().map(|(s, _)| s).collect::<Vec<_>>(), statements);
	}

	#[test]
	fn affinity_is_variant_one_around_the_filter() {
		let filter = AffinityFilter::of_topics(5, [Topic([3; 32])].iter());
		let ours = encode_affinity(&filter);
		let wire = filter.encode();
		let mut expected = vec![1];
		expected.extend_from_slice(&wire);
		assert_eq!(ours, expected);
		let Message::Affinity(back) = decode(&ours).unwrap() else { panic!("not affinity") };
		assert!(back.contains(&[3; 32]));
		let reference =
			StatementMessage::ExplicitTopicAffinity { seed: 9, num_hashes: 3, bits: vec![7, 8] };
		assert!(matches!(decode(&reference.encode()), Ok(Message::Affinity(_))));
	}

	#[test]
	fn bad_messages_are_refused() {
		assert!(matches!(decode(&[]), Err(DecodeError::Malformed(_))));
		assert!(matches!(decode(&[2, 0]), Err(DecodeError::Malformed(_))));
		assert!(matches!(decode(&[0, 4, 1]), Err(DecodeError::Malformed(_))));
		let no_bits =
			StatementMessage::ExplicitTopicAffinity { seed: 9, num_hashes: 3, bits: vec![] };
		assert_eq!(
			decode(&no_bits.encode()).unwrap_err(),
			DecodeError::Filter(FilterError::NoBits)
		);
		let mut trailing = encode_statements(std::iter::empty());
		trailing.push(9);
		assert!(matches!(decode(&trailing), Err(DecodeError::Malformed(_))));
	}
}
