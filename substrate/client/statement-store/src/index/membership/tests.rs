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
	// 17 bytes a fingerprint and id in tables at least 75% full, a little slack at the
	// ends.
	assert!(set.heap_bytes() < 200_000 * 17 * 100 / 75 + SHARDS * 2048, "{}", set.heap_bytes());
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

/// Fingerprints that crowd the tables: many equal, many in one shard at the very top of
/// the range (past the last home slot), the fingerprint 0, and spread ones.
fn crowded(n: u64) -> Vec<u64> {
	(0..n)
		.map(|i| match i % 5 {
			0 => u64::MAX - (i % 97) * (1 << 54),
			1 => (i % 7) << 48,
			2 => 0,
			3 => 0x0040_0000_0000_0000 | (i % 3),
			_ => fingerprint(&hash(i)),
		})
		.collect()
}

#[test]
fn tables_agree_with_a_sorted_multiset_through_inserts_removals_and_resizes() {
	use std::collections::BTreeMap;
	let set = Membership::default();
	let mut model: BTreeMap<u64, Vec<Id>> = BTreeMap::new();
	let fingerprints = crowded(20_000);
	let id = |round: usize, i: usize| (round * 100_000 + i) as Id;
	// Inserted twice over, then removed in another order, so tables grow and shrink.
	for round in 0..2 {
		for (i, &f) in fingerprints.iter().enumerate() {
			set.insert(&with_fingerprint(f), id(round, i));
			model.entry(f).or_default().push(id(round, i));
		}
		for (i, &f) in fingerprints.iter().enumerate().rev() {
			if (i + round) % 3 != 0 {
				set.remove(&with_fingerprint(f), id(round, i));
				let ids = model.get_mut(&f).unwrap();
				ids.retain(|&held| held != id(round, i));
				if ids.is_empty() {
					model.remove(&f);
				}
			}
		}
		assert_eq!(set.len(), model.values().map(Vec::len).sum::<usize>() as u64);
		for &f in fingerprints.iter().chain(&[1, 2, u64::MAX, 1 << 48]) {
			assert_eq!(set.contains(&with_fingerprint(f)), model.contains_key(&f), "{f:x}");
			let mut ids: Vec<Id> = set.ids(&with_fingerprint(f)).iter().collect();
			ids.sort();
			let mut expected = model.get(&f).cloned().unwrap_or_default();
			expected.sort();
			assert_eq!(ids, expected, "{f:x}");
		}
		for shard in &set.shards {
			let table = shard.read();
			let fingerprints: Vec<u64> = table.slots.iter().map(|s| s.fingerprint).collect();
			let held: Vec<u64> = fingerprints.iter().copied().filter(|&s| s != 0).collect();
			assert!(held.is_sorted());
			assert_eq!(fingerprints.last(), Some(&0));
			let tags: Vec<u8> =
				fingerprints.iter().map(|&s| if s == 0 { 0 } else { tag_of(s) }).collect();
			assert!(table.tags == tags, "every slot's tag is its fingerprint's");
			for (at, &slot) in fingerprints.iter().enumerate().filter(|(_, &s)| s != 0) {
				let home = table.home(slot);
				assert!(home <= at && fingerprints[home..at].iter().all(|&s| s != 0));
			}
		}
	}
	// Removing what is not held changes nothing.
	set.remove(&with_fingerprint(3), 0);
	set.remove(&with_fingerprint(fingerprints[1]), 99_999);
	assert_eq!(set.len(), model.values().map(Vec::len).sum::<usize>() as u64);
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

#[test]
fn a_tables_fingerprints_spread_over_its_home_slots() {
	// Every fingerprint of a table shares the bits that chose its shard: 200,000 of
	// them, as one shard holds at about 12.8M statements, otherwise random.
	let mut state = 0x2545_f491_4f6c_dd1du64;
	let mut next = move || {
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		(state & !(63 << 48)) | (5 << 48)
	};
	let mut table = Table::default();
	for _ in 0..200_000 {
		table.insert(next(), 1);
	}
	// Tags a lookup of an absent fingerprint reads: to the end of the run from its home.
	let probes = 10_000;
	let read: usize = (0..probes)
		.map(|_| table.tags[table.home(next())..].iter().position(|&tag| tag == 0).unwrap() + 1)
		.sum();
	// About 13 at 80% full when spread; from the whole fingerprint the table held 1,024
	// runs of ~195, and a lookup read the whole run from its start (194 tags, tried).
	assert!(read / probes < 32, "{} tags a lookup", read / probes);
}
