use super::{file::*, table::*, *};
use std::path::Path;

fn hash(n: u64) -> Hash {
	statement_primitives::hash_encoded(&n.to_le_bytes())
}

fn tag(count: u64) -> SnapshotTag {
	SnapshotTag { count, next_id: count + 1, last_hash: hash(count), removals: count / 2 }
}

#[test]
fn insert_contains_remove() {
	let set = Membership::default();
	set.insert(&[1; 32], 7);
	assert!(set.contains(&[1; 32]));
	assert!(!set.contains(&[2; 32]));
	assert_eq!(set.ids(&[1; 32]).iter().collect::<Vec<_>>(), vec![7]);
	assert!(set.holds(fingerprint(&[1; 32]), 7) && !set.holds(fingerprint(&[1; 32]), 8));
	assert_eq!(set.ids(&[2; 32]).iter().count(), 0);
	set.remove(&[1; 32], 8);
	assert!(set.contains(&[1; 32]), "held for another id: kept");
	set.remove(&[1; 32], 7);
	assert!(!set.contains(&[1; 32]));
}

#[test]
fn removing_one_of_two_hashes_with_one_fingerprint_keeps_the_other() {
	let set = Membership::default();
	let a = [7u8; 32];
	let mut b = a;
	b[31] = 0;
	set.insert(&a, 1);
	set.insert(&b, 2);
	let mut ids: Vec<Id> = set.ids(&a).iter().collect();
	ids.sort();
	assert_eq!(ids, vec![1, 2], "both ids under the one fingerprint");
	set.remove(&a, 1);
	assert!(set.contains(&b));
	assert_eq!(set.ids(&b).iter().collect::<Vec<_>>(), vec![2], "the other id stays");
	set.remove(&b, 2);
	assert!(!set.contains(&b));
}

#[test]
fn many_hashes_stay_findable_through_growth_and_shrinking() {
	let set = Membership::default();
	for n in 0..200_000 {
		set.insert(&hash(n), n + 10);
	}
	assert_eq!(set.len(), 200_000);
	// 8 bytes an entry (44 bits of fingerprint, 18 of id, 2 of state) in tables at least 84%
	// full, and the 64 buckets past each table's last home.
	let bound = 200_000 * 8 * 100 / 84 + SHARDS * (64 * 64 + 1024);
	assert!(set.heap_bytes() < bound, "{} bytes, more than {bound}", set.heap_bytes());
	for n in (0..200_000).step_by(2) {
		set.remove(&hash(n), n + 10);
	}
	for n in 0..200_000 {
		assert_eq!(set.contains(&hash(n)), n % 2 == 1, "hash {n}");
		let ids: Vec<Id> = set.ids(&hash(n)).iter().collect();
		assert_eq!(ids, if n % 2 == 1 { vec![n + 10] } else { vec![] }, "hash {n}");
	}
	assert!(!set.contains(&hash(1_000_000)));
}

/// A hash with this fingerprint.
fn with_fingerprint(fingerprint: u64) -> Hash {
	let mut hash = [0xa5u8; 32];
	hash[..8].copy_from_slice(&fingerprint.to_be_bytes());
	hash
}

/// Fingerprints that crowd the tables: some equal (more than two buckets hold), many in one
/// shard at the very top of the range, the fingerprint 0, close ones, and spread ones.
fn crowded(n: u64) -> Vec<u64> {
	(0..n)
		.map(|i| match i % 5 {
			0 => u64::MAX - (i % 997) * (1 << 54),
			1 if i < 1000 => (i % 7) << 48,
			2 if i < 1000 => 0,
			3 => 0x0040_0000_0000_0000 | ((i % 1000) << 6),
			_ => fingerprint(&hash(i)),
		})
		.collect()
}

#[test]
fn tables_agree_with_a_sorted_multiset_through_inserts_removals_and_resizes() {
	use std::collections::BTreeMap;
	let set = Membership::default();
	// The set keeps 58 bits of a fingerprint: the model keys by those.
	let mut model: BTreeMap<u64, Vec<Id>> = BTreeMap::new();
	let fingerprints = crowded(20_000);
	let id = |round: usize, i: usize| (round * 100_000 + i) as Id;
	// Inserted twice over, then removed in another order, so tables grow and shrink.
	for round in 0..2 {
		for (i, &f) in fingerprints.iter().enumerate() {
			set.insert(&with_fingerprint(f), id(round, i));
			model.entry(truncated(f)).or_default().push(id(round, i));
		}
		for (i, &f) in fingerprints.iter().enumerate().rev() {
			if (i + round) % 3 != 0 {
				set.remove(&with_fingerprint(f), id(round, i));
				let ids = model.get_mut(&truncated(f)).unwrap();
				ids.retain(|&held| held != id(round, i));
				if ids.is_empty() {
					model.remove(&truncated(f));
				}
			}
		}
		assert_eq!(set.len(), model.values().map(Vec::len).sum::<usize>() as u64);
		for &f in fingerprints.iter().chain(&[1, 2, 64, u64::MAX, 1 << 48]) {
			let held = model.contains_key(&truncated(f));
			assert_eq!(set.contains(&with_fingerprint(f)), held, "{f:x}");
			let mut ids: Vec<Id> = set.ids(&with_fingerprint(f)).iter().collect();
			ids.sort();
			let mut expected = model.get(&truncated(f)).cloned().unwrap_or_default();
			expected.sort();
			assert_eq!(ids, expected, "{f:x}");
		}
		for shard in &set.shards {
			shard.read().check();
		}
	}
	// Removing what is not held changes nothing.
	set.remove(&with_fingerprint(3 << 6), 0);
	set.remove(&with_fingerprint(fingerprints[1]), 99_999);
	assert_eq!(set.len(), model.values().map(Vec::len).sum::<usize>() as u64);
}

#[test]
fn fingerprints_that_differ_only_in_their_lowest_six_bits_are_one() {
	let set = Membership::default();
	set.insert(&with_fingerprint(0x1234_5678_9abc_de40), 1);
	assert!(set.contains(&with_fingerprint(0x1234_5678_9abc_de7f)), "bits 0-5 are not kept");
	assert!(!set.contains(&with_fingerprint(0x1234_5678_9abc_de80)), "bit 6 is");
	assert!(!set.contains(&with_fingerprint(0x1234_5678_9abc_de00)));
	assert!(set.holds(0x1234_5678_9abc_de7f, 1) && !set.holds(0x1234_5678_9abc_de7f, 2));
}

/// A set of `crowded(n)` saved under `dir`, tagged `tag(n)`: the set, its file and its
/// fingerprints.
fn crowded_snapshot(dir: &Path, n: u64) -> (Membership, std::path::PathBuf, Vec<u64>) {
	let path = dir.join("membership");
	let set = Membership::default();
	let fingerprints = crowded(n);
	for (id, &f) in fingerprints.iter().enumerate() {
		set.insert(&with_fingerprint(f), id as Id);
	}
	set.save(&path, &tag(n)).unwrap();
	(set, path, fingerprints)
}

#[test]
fn a_crowded_snapshot_round_trips() {
	let dir = tempfile::tempdir().unwrap();
	let (set, path, fingerprints) = crowded_snapshot(dir.path(), 10_000);
	let (loaded, _) = Membership::load(&path, |t| *t == tag(10_000)).unwrap().expect("loaded");
	assert_eq!(loaded.len(), 10_000);
	for (id, &f) in fingerprints.iter().enumerate() {
		assert!(loaded.holds(f, id as Id), "{f:x} with id {id}");
		loaded.remove(&with_fingerprint(f), id as Id);
		set.remove(&with_fingerprint(f), id as Id);
		assert_eq!(loaded.len(), set.len());
	}
	assert_eq!(loaded.len(), 0);
}

#[test]
fn a_snapshot_loads_the_same_whatever_the_threads_filling_it() {
	let dir = tempfile::tempdir().unwrap();
	let (_, path, fingerprints) = crowded_snapshot(dir.path(), 20_000);
	// Shards split unevenly between threads too (64 over 3 or 7).
	for fillers in [1, 2, 3, 7, SHARDS] {
		let (loaded, _) =
			Membership::load_on(&path, |t| *t == tag(20_000), fillers).unwrap().expect("loaded");
		assert_eq!(loaded.len(), 20_000, "{fillers} threads");
		assert!(!loaded.contains(&hash(1)), "{fillers} threads");
		for (id, &f) in fingerprints.iter().enumerate() {
			assert!(loaded.holds(f, id as Id), "{f:x} with {fillers} threads");
		}
		// Every one of them once: removing them all empties the set.
		for (id, &f) in fingerprints.iter().enumerate() {
			loaded.remove(&with_fingerprint(f), id as Id);
		}
		assert_eq!(loaded.len(), 0, "{fillers} threads");
	}
}

#[test]
fn a_snapshot_round_trips_only_with_its_tag() {
	let dir = tempfile::tempdir().unwrap();
	let path = dir.path().join("membership");
	let set = Membership::default();
	for n in 0..5000 {
		set.insert(&hash(n), n);
	}
	set.save(&path, &tag(5000)).unwrap();
	let (loaded, read) = Membership::load(&path, |t| *t == tag(5000)).unwrap().expect("loaded");
	assert_eq!(read, tag(5000));
	assert_eq!(loaded.len(), 5000);
	assert!((0..5000).all(|n| loaded.holds(fingerprint(&hash(n)), n)));
	assert!(!loaded.contains(&hash(5000)));
	assert!(Membership::load(&path, |t| *t == tag(4999)).unwrap().is_none());
	assert!(Membership::load(&dir.path().join("absent"), |t| *t == tag(5000)).unwrap().is_none());
}

#[test]
fn a_snapshot_keeps_ids_in_as_few_bytes_as_its_largest_needs_and_refuses_a_larger_one() {
	assert_eq!((id_bytes(0), id_bytes(256), id_bytes(257), id_bytes(1 << 40)), (1, 1, 2, 5));
	assert_eq!(id_bytes(u64::MAX), 8);
	let dir = tempfile::tempdir().unwrap();
	let path = dir.path().join("membership");
	let set = Membership::default();
	let ids = [0, 255, 256, 65_536, (1 << 40) - 1];
	for (n, &id) in ids.iter().enumerate() {
		set.insert(&hash(n as u64), id);
	}
	let tag = SnapshotTag { count: 5, next_id: 1 << 40, last_hash: [0; 32], removals: 0 };
	set.save(&path, &tag).unwrap();
	let (loaded, _) = Membership::load(&path, |t| *t == tag).unwrap().expect("loaded");
	for (n, &id) in ids.iter().enumerate() {
		assert_eq!(loaded.ids(&hash(n as u64)).iter().collect::<Vec<_>>(), vec![id]);
	}
	// An id the tag says was never given out would lose its top byte: no snapshot.
	set.insert(&hash(9), 1 << 40);
	let tag = SnapshotTag { count: 6, ..tag };
	assert!(set.save(&path, &tag).is_err());
}

#[test]
fn a_copy_is_independent_and_fingerprints_remove() {
	let set = Membership::default();
	for n in 0..100 {
		set.insert(&hash(n), n);
	}
	let copy = set.copy();
	set.remove(&hash(1), 1);
	assert!(copy.contains(&hash(1)));
	let mut fingerprint = [0u8; 8];
	fingerprint.copy_from_slice(&hash(2)[..8]);
	copy.remove_fingerprint(fingerprint, 2);
	assert!(!copy.contains(&hash(2)));
	assert_eq!((set.len(), copy.len()), (99, 99));
}

#[test]
fn a_damaged_snapshot_is_ignored() {
	let dir = tempfile::tempdir().unwrap();
	let path = dir.path().join("membership");
	let set = Membership::default();
	for n in 0..1000 {
		set.insert(&hash(n), n);
	}
	set.save(&path, &tag(1000)).unwrap();
	let bytes = std::fs::read(&path).unwrap();
	let mut flipped = bytes.clone();
	let middle = flipped.len() / 2;
	flipped[middle] ^= 1;
	std::fs::write(&path, &flipped).unwrap();
	assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_none());
	std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
	assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_none());
	let mut longer = bytes.clone();
	longer.push(0);
	std::fs::write(&path, &longer).unwrap();
	assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_none());
	std::fs::write(&path, &bytes).unwrap();
	assert!(Membership::load(&path, |t| *t == tag(1000)).unwrap().is_some());
}

/// A random fingerprint of shard 5, from `state`.
fn random_fingerprint(state: &mut u64) -> u64 {
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	(*state & !(63 << 48)) | (5 << 48)
}

#[test]
fn a_table_of_four_million_statements_share_packs_eight_entries_in_a_cache_line() {
	// One shard's share of 4.19M statements, with ids below 2^22, read back from a
	// snapshot: 39 bits of fingerprint, 22 of id, 2 of state, eight to a bucket.
	let count = 4_194_304 / SHARDS;
	let mut table = Table::sized(count, 0, 1 << 22);
	let mut state = 0x2545_f491_4f6c_dd1du64;
	for id in 0..count as Id {
		table.insert(random_fingerprint(&mut state), id * SHARDS as Id);
	}
	table.compact();
	table.check();
	assert_eq!(table.entry_bits(), (63, 8));
	let per_entry = table.heap_bytes() as f64 / count as f64;
	// 64 bytes a bucket of eight entries 90% full, 2 bytes a bucket of what it holds away, and
	// 64 buckets past the last home: 9.23 bytes.
	assert!(per_entry < 9.3, "{per_entry:.2} bytes an entry");
	assert_eq!(table.stashed(), 0, "a table 90% full finds every entry a bucket");
}

#[test]
fn ids_are_kept_as_offsets_from_the_smallest_so_a_narrow_span_far_up_packs_as_tightly() {
	let mut state = 0x9e37_79b9_7f4a_7c15u64;
	let mut near = Table::default();
	let mut far = Table::default();
	for id in 0..10_000 {
		let fingerprint = random_fingerprint(&mut state);
		near.insert(fingerprint, id);
		far.insert(fingerprint, (1 << 40) + id);
	}
	assert_eq!(near.entry_bits(), far.entry_bits());
	assert!(far.entry_bits().0 < 2 + KEPT + 20, "{:?}", far.entry_bits());
	// An id below the smallest, and one far above, each lay the table out again.
	far.insert(random_fingerprint(&mut state), 5);
	far.insert(random_fingerprint(&mut state), u64::MAX);
	far.check();
	let mut ids = Vec::new();
	far.ids_of(random_fingerprint(&mut 0x9e37_79b9_7f4a_7c15u64), |id| ids.push(id));
	assert_eq!(ids, vec![1 << 40]);
	assert_eq!(far.len, 10_002);
}

#[test]
fn more_entries_of_one_fingerprint_than_two_buckets_hold_go_to_the_stash() {
	let mut table = Table::default();
	let fingerprint = 7 << 48;
	for id in 0..100 {
		table.insert(fingerprint, id);
		table.insert(fingerprint + ((id + 1) << 20), id);
	}
	table.check();
	assert!(table.stashed() > 0);
	let mut ids = Vec::new();
	table.ids_of(fingerprint, |id| ids.push(id));
	ids.sort();
	assert_eq!(ids, (0..100).collect::<Vec<_>>());
	for id in (0..100).rev() {
		table.remove(fingerprint, id);
		assert!(table.contains(fingerprint) == (id > 0), "{id}");
	}
	table.check();
	assert_eq!(table.len, 100);
}

#[test]
fn a_lookup_of_an_absent_fingerprint_reads_a_second_bucket_one_time_in_ten() {
	let mut state = 0x2545_f491_4f6c_dd1du64;
	let mut table = Table::default();
	for id in 0..200_000 {
		table.insert(random_fingerprint(&mut state), id);
	}
	// Removals leave bits set that no entry needs any more, until a home has none away.
	for _ in 0..20_000 {
		table.insert(random_fingerprint(&mut state), 0);
	}
	let mut again = 0x2545_f491_4f6c_dd1du64;
	for id in 0..20_000 {
		table.remove(random_fingerprint(&mut again), id);
	}
	table.check();
	let (away, homes) = table.homes_with_entries_away();
	// About half the homes have entries away at 90% full (simulated: 0.46 at 90%, 0.62 at
	// 95%), but a lookup reads the second bucket only where its own bit is set.
	assert!(away * 3 < homes * 2, "{away} of {homes} homes have entries away");
	let probes = 20_000;
	let second = (0..probes).filter(|_| table.reads_second(random_fingerprint(&mut state))).count();
	assert!(second * 5 < probes, "{second} of {probes} lookups read a second bucket");
}

#[test]
fn a_version_3_snapshot_still_loads() {
	use std::hash::Hasher;
	let dir = tempfile::tempdir().unwrap();
	let path = dir.path().join("membership");
	let mut entries: Vec<(u64, Id)> = (0..3_000).map(|n| (fingerprint(&hash(n)), n)).collect();
	entries.sort();
	let tag = tag(3_000);
	// Version 3: buckets in numeric order, whole fingerprints, ids in two bytes.
	let mut bytes = b"SSMEMB03".to_vec();
	bytes.extend_from_slice(&tag.count.to_le_bytes());
	bytes.extend_from_slice(&tag.next_id.to_le_bytes());
	bytes.extend_from_slice(&tag.last_hash);
	bytes.extend_from_slice(&tag.removals.to_le_bytes());
	bytes.push(2);
	for bucket in 0..1u64 << 16 {
		let held: Vec<_> = entries.iter().filter(|(f, _)| f >> 48 == bucket).collect();
		bytes.extend_from_slice(&(held.len() as u32).to_le_bytes());
		for (f, id) in held {
			bytes.extend_from_slice(&f.to_be_bytes()[2..]);
			bytes.extend_from_slice(&id.to_le_bytes()[..2]);
		}
	}
	let mut hasher = twox_hash::XxHash64::with_seed(0);
	hasher.write(&bytes);
	bytes.extend_from_slice(&hasher.finish().to_le_bytes());
	std::fs::write(&path, &bytes).unwrap();
	let (loaded, read) = Membership::load(&path, |t| *t == tag).unwrap().expect("loaded");
	assert_eq!((read, loaded.len()), (tag, 3_000));
	assert!((0..3_000).all(|n| loaded.ids(&hash(n)).iter().eq([n])));
	// Written again, it is version 4.
	loaded.save(&path, &tag).unwrap();
	assert_eq!(&std::fs::read(&path).unwrap()[..8], b"SSMEMB04");
	let (again, _) = Membership::load(&path, |t| *t == tag).unwrap().expect("loaded");
	assert!((0..3_000).all(|n| again.ids(&hash(n)).iter().eq([n])));
}
