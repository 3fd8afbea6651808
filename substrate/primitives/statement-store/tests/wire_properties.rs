//! Property tests of the wire format: round trips, sizes, and no panics on arbitrary bytes.

use codec::Decode;
use proptest::prelude::*;
use statement_primitives::{Error, Fields, Proof, Statement, Topic, MAX_STATEMENT_SIZE};

/// `Fields::of` must answer exactly as `Statement::from_bytes` does: the same error, or the
/// same key, topics and data.
fn fields_agree(bytes: &[u8]) -> Result<(), TestCaseError> {
	match (Statement::from_bytes(bytes), Fields::of(bytes)) {
		(Ok(statement), Ok(fields)) => {
			prop_assert_eq!(fields.decryption_key(), statement.decryption_key());
			prop_assert_eq!(fields.topics(), statement.topics());
			prop_assert_eq!(fields.data(), statement.data());
		}
		(Err(decoded), Err(read)) => prop_assert_eq!(read, decoded),
		(decoded, read) => {
			prop_assert!(
				false,
				"from_bytes {:?} but Fields::of {:?}",
				decoded.is_ok(),
				read.is_ok()
			)
		}
	}
	Ok(())
}

fn proof() -> impl Strategy<Value = Proof> {
	prop_oneof![
		(any::<[u8; 32]>(), any::<[u8; 32]>()).prop_map(|(a, b)| {
			let mut signature = [0u8; 64];
			signature[..32].copy_from_slice(&a);
			signature[32..].copy_from_slice(&b);
			Proof::Sr25519 { signature, signer: b }
		}),
		(any::<[u8; 32]>(), any::<[u8; 32]>()).prop_map(|(a, b)| {
			let mut signature = [0u8; 64];
			signature[..32].copy_from_slice(&b);
			signature[32..].copy_from_slice(&a);
			Proof::Ed25519 { signature, signer: a }
		}),
		(any::<[u8; 32]>(), any::<u8>()).prop_map(|(a, extra)| {
			let mut signature = [extra; 65];
			signature[..32].copy_from_slice(&a);
			let mut signer = [2u8; 33];
			signer[1..].copy_from_slice(&a);
			Proof::Secp256k1Ecdsa { signature, signer }
		}),
	]
}

prop_compose! {
	fn statement()(
		proof in proptest::option::of(proof()),
		key in proptest::option::of(any::<[u8; 32]>()),
		expiry in any::<u64>(),
		channel in proptest::option::of(any::<[u8; 32]>()),
		topics in proptest::collection::vec(any::<[u8; 32]>(), 0..=4),
		data in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
	) -> Statement {
		let mut statement = Statement::new();
		if let Some(proof) = proof { statement.set_proof(proof); }
		if let Some(key) = key { statement.set_decryption_key(key); }
		statement.set_expiry(expiry);
		if let Some(channel) = channel { statement.set_channel(channel); }
		for (index, topic) in topics.into_iter().enumerate() { statement.set_topic(index, Topic(topic)); }
		if let Some(data) = data { statement.set_plain_data(data); }
		statement
	}
}

proptest! {
	#![proptest_config(ProptestConfig::with_cases(512))]

	#[test]
	fn encode_then_decode_gives_the_same_statement(statement in statement()) {
		let bytes = statement.encode();
		prop_assert_eq!(bytes.len(), statement.encoded_size());
		prop_assert_eq!(Statement::from_bytes(&bytes).unwrap(), statement.clone());
		prop_assert_eq!(Statement::decode(&mut &bytes[..]).unwrap(), statement);
	}

	#[test]
	fn every_proper_prefix_of_an_encoding_is_refused(statement in statement(), cut in any::<prop::sample::Index>()) {
		let bytes = statement.encode();
		let cut = cut.index(bytes.len());
		prop_assert!(Statement::from_bytes(&bytes[..cut]).is_err());
	}

	#[test]
	fn trailing_bytes_are_refused(statement in statement(), extra in proptest::collection::vec(any::<u8>(), 1..8)) {
		let mut bytes = statement.encode();
		bytes.extend_from_slice(&extra);
		prop_assert_eq!(Statement::from_bytes(&bytes), Err(Error::TrailingBytes { count: extra.len() }));
	}

	#[test]
	fn fields_read_what_the_decoder_reads(statement in statement(), cut in any::<prop::sample::Index>(), flip in any::<prop::sample::Index>(), bit in 0u8..8) {
		let bytes = statement.encode();
		fields_agree(&bytes)?;
		// A prefix, and a flipped bit: both must fail (or not) alike.
		fields_agree(&bytes[..cut.index(bytes.len())])?;
		let mut flipped = bytes.clone();
		let at = flip.index(flipped.len());
		flipped[at] ^= 1 << bit;
		fields_agree(&flipped)?;
	}

	#[test]
	fn arbitrary_bytes_read_as_fields_as_the_decoder_reads_them(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
		fields_agree(&bytes)?;
	}

	#[test]
	fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
		if let Ok(statement) = Statement::from_bytes(&bytes) {
			// The canonical encoding of whatever decodes must decode to the same statement.
			let again = Statement::from_bytes(&statement.encode()).unwrap();
			prop_assert_eq!(again, statement);
		}
		let _ = Statement::decode(&mut &bytes[..]);
	}

	#[test]
	fn arbitrary_fields_after_a_valid_prefix_never_panic(
		count in 0u8..12,
		body in proptest::collection::vec(any::<u8>(), 0..512),
	) {
		let mut bytes = vec![count << 2];
		bytes.extend_from_slice(&body);
		let _ = Statement::from_bytes(&bytes);
	}
}

#[test]
fn an_encoding_over_one_mebibyte_is_refused_before_decoding() {
	let mut statement = Statement::new();
	statement.set_plain_data(vec![0; MAX_STATEMENT_SIZE]);
	let bytes = statement.encode();
	assert_eq!(
		Statement::from_bytes(&bytes),
		Err(Error::TooLarge { size: bytes.len(), max: MAX_STATEMENT_SIZE })
	);
}

#[test]
fn a_forged_huge_data_length_is_truncation_not_an_allocation() {
	// One field, data tag, compact length 2^30 in four-byte mode, no data behind it.
	let bytes = [0x04, 0x08, 0x03, 0x00, 0x00, 0x00, 0x40];
	assert!(matches!(Statement::from_bytes(&bytes), Err(Error::Truncated { .. })));
}

#[test]
fn decoding_errors_name_what_was_wrong() {
	let expiry = [0x02, 42, 0, 0, 0, 0, 0, 0, 0];
	let mut unknown = vec![0x04, 0x09];
	unknown.push(0);
	assert_eq!(Statement::from_bytes(&unknown), Err(Error::UnknownField { tag: 9 }));

	let mut duplicate = vec![0x08];
	duplicate.extend_from_slice(&expiry);
	duplicate.extend_from_slice(&expiry);
	assert_eq!(Statement::from_bytes(&duplicate), Err(Error::FieldOrder { tag: 2, previous: 2 }));

	let mut bad_proof = vec![0x04, 0x00, 0x07];
	bad_proof.extend_from_slice(&[0; 96]);
	assert_eq!(Statement::from_bytes(&bad_proof), Err(Error::UnknownProof { kind: 7 }));

	// Compact 1 written in two-byte mode is not canonical.
	assert_eq!(Statement::from_bytes(&[0x05, 0x00]), Err(Error::BadCompact { offset: 0 }));
	assert!(matches!(Statement::from_bytes(&[]), Err(Error::Truncated { offset: 0, .. })));
}

#[test]
fn a_statement_without_expiry_field_decodes_with_expiry_zero() {
	let statement = Statement::from_bytes(&[0x00]).unwrap();
	assert_eq!(statement.expiry(), 0);
	// Upstream always writes the expiry field back.
	assert_eq!(statement.encode(), vec![0x04, 0x02, 0, 0, 0, 0, 0, 0, 0, 0]);
}
