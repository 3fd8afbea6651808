//! Topic-affinity filters answer exactly as the reference's do.
//!
//! `tests/vectors/affinity.json` was made by the reference itself: a throwaway crate
//! (`tools/affinity-vectors/` at the repository root, run with `cargo test` there) compiles
//! `sc-network-statement` 0.44.0's own `src/affinity.rs` and `src/config.rs` verbatim from
//! cargo's registry (they are private modules, so they cannot be called as a dependency), with
//! fastbloom 0.17.0 and sp-statement-store 28.0.0. It built filters with the reference's
//! constructor and `insert` (several seeds, sizes and false-positive rates, some high so that
//! many probes land on set bits), and decoded others from random wire bytes (word counts that
//! are not powers of two, 1 to 64 hashes); for each it recorded the reference's `contains`
//! answer on the inserted topics and on 200 random ones, and `matches_statement` on statements
//! with none, one and several topics. Refused encodings are the ones the reference's decoder
//! refused.

use codec::Decode;
use serde_json::Value;
use statement_network::affinity::{AffinityFilter, MAX_BITS};
use statement_primitives::Statement;

fn vectors() -> Value {
	let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/affinity.json");
	let text = std::fs::read_to_string(path).expect("the vectors are in the repository");
	serde_json::from_str(&text).expect("the vectors are JSON")
}

fn bytes(value: &Value) -> Vec<u8> {
	let text = value.as_str().expect("a hex string");
	hex::decode(text.trim_start_matches("0x")).expect("hex")
}

fn topic(value: &Value) -> [u8; 32] {
	bytes(value).try_into().expect("32 bytes")
}

#[test]
fn every_recorded_membership_answer_is_the_references() {
	let vectors = vectors();
	let filters = vectors["filters"].as_array().unwrap();
	assert!(filters.len() >= 14, "{} filters", filters.len());
	let (mut members, mut strangers) = (0, 0);
	for case in filters {
		let name = case["name"].as_str().unwrap();
		let encoded = bytes(&case["encoded"]);
		let filter = AffinityFilter::decode(&encoded).unwrap_or_else(|err| panic!("{name}: {err}"));
		assert_eq!(filter.encode(), encoded, "{name}: re-encoding differs");
		for inserted in case["inserted"].as_array().unwrap() {
			assert!(filter.contains(&topic(inserted)), "{name}: an inserted topic is missing");
		}
		for probe in case["probes"].as_array().unwrap() {
			let expected = probe["member"].as_bool().unwrap();
			assert_eq!(
				filter.contains(&topic(&probe["topic"])),
				expected,
				"{name}: topic {}",
				probe["topic"]
			);
			if expected {
				members += 1;
			} else {
				strangers += 1;
			}
		}
	}
	// Both answers are exercised, so a filter that always said yes (or no) would fail.
	assert!(members > 500 && strangers > 500, "{members} members, {strangers} strangers");
}

#[test]
fn statements_match_as_the_reference_matches_them() {
	let vectors = vectors();
	let filter = AffinityFilter::decode(&bytes(&vectors["statements"]["filter"])).unwrap();
	let cases = vectors["statements"]["cases"].as_array().unwrap();
	let mut answers = Vec::new();
	for case in cases {
		let statement = Statement::decode(&mut &bytes(&case["statement"])[..]).unwrap();
		let expected = case["matches"].as_bool().unwrap();
		assert_eq!(filter.matches(statement.topics()), expected, "{}", case["statement"]);
		answers.push(expected);
	}
	assert!(answers.contains(&true) && answers.contains(&false));
}

#[test]
fn what_the_reference_refuses_is_refused() {
	let vectors = vectors();
	for case in vectors["refused"].as_array().unwrap() {
		assert!(AffinityFilter::decode(&bytes(&case["encoded"])).is_err(), "{}", case["why"]);
	}
	assert_eq!(vectors["max_words"].as_u64().unwrap() as usize * 64, MAX_BITS);
}
