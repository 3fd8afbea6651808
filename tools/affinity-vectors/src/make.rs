use crate::affinity::AffinityFilter;
use codec::{Decode, Encode};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use sp_statement_store::{Statement, Topic};

fn hex0x(bytes: &[u8]) -> String {
	format!("0x{}", hex::encode(bytes))
}

/// The wire form, written out by hand (the crate's `EncodedBloomFilter` is private): the
/// decoder below is upstream's, so a wrong layout here fails to decode.
fn raw(seed: u128, num_hashes: u32, bits: &[u64]) -> Vec<u8> {
	let mut out = seed.encode();
	out.extend(num_hashes.encode());
	out.extend(bits.to_vec().encode());
	out
}

fn probes(filter: &AffinityFilter, topics: &[[u8; 32]]) -> Vec<Value> {
	topics
		.iter()
		.map(|t| json!({"topic": hex0x(t), "member": filter.contains(t)}))
		.collect()
}

#[test]
fn make_vectors() {
	let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5747_4D45_4E54);
	let mut filters = Vec::new();
	// Filters built as a node builds them (upstream's constructor and insert), at several sizes
	// and false-positive rates, the high rates so that many probes land on set bits.
	let shapes: &[(u128, f64, usize, usize)] = &[
		(0x5EED_5EED_5EED_5EED, 0.01, 10, 10),
		(0, 0.001, 1, 1),
		(u128::MAX, 0.3, 50, 40),
		(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210, 0.001, 1000, 300),
		(7, 0.5, 4, 4),
		(rng.gen(), 0.05, 200, 200),
	];
	for (i, &(seed, fp, expected, inserted)) in shapes.iter().enumerate() {
		let mut filter = AffinityFilter::new(seed, fp, expected);
		let topics: Vec<[u8; 32]> = (0..inserted).map(|_| rng.gen()).collect();
		for t in &topics {
			filter.insert(t);
		}
		let others: Vec<[u8; 32]> = (0..200).map(|_| rng.gen()).collect();
		let encoded = filter.encode();
		let decoded = AffinityFilter::decode(&mut &encoded[..]).expect("upstream decodes its own");
		let mut all_probes = probes(&decoded, &topics);
		all_probes.extend(probes(&decoded, &others));
		filters.push(json!({
			"name": format!("built-{i}: seed {seed:#x}, false positives {fp}, {expected} expected, {inserted} inserted"),
			"encoded": hex0x(&encoded),
			"inserted": topics.iter().map(|t| hex0x(t)).collect::<Vec<_>>(),
			"probes": all_probes,
		}));
	}
	// Filters straight from wire bytes a peer could send: random bits, word counts that are not
	// powers of two, every edge of num_hashes, half the words set so about half the probes hit.
	let raw_shapes: &[(usize, u32)] =
		&[(1, 1), (1, 64), (3, 7), (17, 2), (64, 33), (1000, 5), (4097, 13), (2, 64)];
	for (i, &(words, hashes)) in raw_shapes.iter().enumerate() {
		let seed: u128 = rng.gen();
		let bits: Vec<u64> = (0..words)
			.map(|_| rng.gen::<u64>() | rng.gen::<u64>() | rng.gen::<u64>())
			.collect();
		let encoded = raw(seed, hashes, &bits);
		let decoded = AffinityFilter::decode(&mut &encoded[..]).expect("within the limits");
		let others: Vec<[u8; 32]> = (0..200).map(|_| rng.gen()).collect();
		assert_eq!(decoded.encode(), encoded, "upstream re-encodes what it decoded");
		filters.push(json!({
			"name": format!("raw-{i}: {words} words, {hashes} hashes"),
			"encoded": hex0x(&encoded),
			"inserted": [],
			"probes": probes(&decoded, &others),
		}));
	}
	// Statements against a filter: no topics (always matches), one or several topics.
	let mut filter = AffinityFilter::new(42, 0.001, 8);
	let wanted: Vec<[u8; 32]> = (0..4).map(|_| rng.gen()).collect();
	for t in &wanted {
		filter.insert(t);
	}
	let encoded_filter = filter.encode();
	let mut statements = Vec::new();
	let topic_sets: Vec<Vec<[u8; 32]>> = vec![
		vec![],
		vec![wanted[0]],
		vec![rng.gen()],
		vec![rng.gen(), rng.gen(), wanted[3]],
		vec![rng.gen(), rng.gen(), rng.gen(), rng.gen()],
		vec![wanted[1], wanted[2]],
	];
	for topics in topic_sets {
		let mut statement = Statement::new();
		statement.set_expiry(u64::MAX);
		statement.set_plain_data(b"affinity".to_vec());
		for (k, t) in topics.iter().enumerate() {
			statement.set_topic(k, Topic::from(*t));
		}
		statements.push(json!({
			"statement": hex0x(&statement.encode()),
			"matches": filter.matches_statement(&statement),
		}));
	}
	// What upstream refuses before use.
	let refused: Vec<Value> = [
		(raw(1, 7, &[]), "no bits"),
		(raw(1, 0, &[1; 16]), "num_hashes 0"),
		(raw(1, 65, &[1; 16]), "num_hashes 65"),
		(raw(1, u32::MAX, &[1; 16]), "num_hashes u32::MAX"),
		(raw(1, 7, &[1; 16])[..30].to_vec(), "truncated"),
	]
	.into_iter()
	.map(|(bytes, why)| {
		assert!(AffinityFilter::decode(&mut &bytes[..]).is_err(), "{why}");
		json!({"encoded": hex0x(&bytes), "why": why})
	})
	.collect();
	// The size limit: 131,072 words (8 Mi bits) pass, one more is refused.
	let max = raw(9, 64, &vec![0; 131_072]);
	assert!(AffinityFilter::decode(&mut &max[..]).is_ok());
	let over = raw(9, 64, &vec![0; 131_073]);
	assert!(AffinityFilter::decode(&mut &over[..]).is_err());
	let out = json!({
		"about": "Topic-affinity bloom filters of the statement/2 protocol, made by sc-network-statement 0.44.0's own src/affinity.rs and src/config.rs, compiled verbatim from cargo's registry into a throwaway crate (fastbloom 0.17.0, sp-statement-store 28.0.0) whose test built each filter with upstream's AffinityFilter::new/insert or decoded it from the bytes, and recorded upstream's contains() and matches_statement() answers. Limits checked there too: 131072 words decode, 131073 do not.",
		"filters": filters,
		"statements": {"filter": hex0x(&encoded_filter), "cases": statements},
		"refused": refused,
		"max_words": 131_072,
	});
	let path = std::env::var("AFFINITY_VECTORS_OUT").unwrap_or_else(|_| "/tmp/affinity.json".into());
	std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
}
