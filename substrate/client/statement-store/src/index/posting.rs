//! Posting lists: the sorted ids of the statements under one topic or key, on disk in segments
//! and in memory as one sorted vector, and their intersection.

use crate::index::schema::Id;

/// Append `value` as LEB128.
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
	loop {
		let byte = (value & 0x7f) as u8;
		value >>= 7;
		if value == 0 {
			out.push(byte);
			return;
		}
		out.push(byte | 0x80);
	}
}

/// Read one LEB128 value at `*at`, moving `*at` past it; `None` if it is cut short or too long.
fn take_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
	let mut value: u64 = 0;
	let mut shift = 0u32;
	loop {
		let byte = *bytes.get(*at)?;
		*at += 1;
		if shift > 63 {
			return None;
		}
		value |= u64::from(byte & 0x7f) << shift;
		if byte & 0x80 == 0 {
			return Some(value);
		}
		shift += 7;
	}
}

/// How many LEB128 values `bytes` holds (each ends with a byte below 0x80): what to reserve
/// before decoding, so that a segment of thousands of ids is not grown one doubling at a time.
fn varints(bytes: &[u8]) -> usize {
	bytes.iter().filter(|byte| **byte < 0x80).count()
}

/// Encode sorted ids as LEB128 deltas.
pub fn encode_segment(ids: &[Id]) -> Vec<u8> {
	let mut out = Vec::with_capacity(ids.len() * 2);
	let mut previous = 0;
	for &id in ids {
		put_varint(&mut out, id - previous);
		previous = id;
	}
	out
}

/// Decode a segment into `out` (appending). `None` if the bytes are not a valid segment.
pub fn decode_segment(bytes: &[u8], out: &mut Vec<Id>) -> Option<()> {
	out.reserve(varints(bytes));
	let (mut previous, mut at): (Id, usize) = (0, 0);
	while at < bytes.len() {
		previous = previous.checked_add(take_varint(bytes, &mut at)?)?;
		out.push(previous);
	}
	Some(())
}

/// Encode `(id, tag)` pairs sorted by id: the id as a LEB128 delta, then the tag as LEB128.
pub fn encode_pairs(pairs: &[(Id, u32)]) -> Vec<u8> {
	let mut out = Vec::with_capacity(pairs.len() * 6);
	let mut previous = 0;
	for &(id, tag) in pairs {
		put_varint(&mut out, id - previous);
		put_varint(&mut out, u64::from(tag));
		previous = id;
	}
	out
}

/// Decode pairs written by [`encode_pairs`] into `out` (appending). `None` if the bytes are
/// not valid pairs.
pub fn decode_pairs(bytes: &[u8], out: &mut Vec<(Id, u32)>) -> Option<()> {
	out.reserve(varints(bytes) / 2);
	let (mut previous, mut at): (Id, usize) = (0, 0);
	while at < bytes.len() {
		previous = previous.checked_add(take_varint(bytes, &mut at)?)?;
		let tag = u32::try_from(take_varint(bytes, &mut at)?).ok()?;
		out.push((previous, tag));
	}
	Some(())
}

/// The ids of one list, sorted ascending, without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostingList {
	ids: Vec<Id>,
}

impl PostingList {
	/// The empty list.
	pub const EMPTY: PostingList = PostingList { ids: Vec::new() };

	/// Number of ids.
	pub fn len(&self) -> usize {
		self.ids.len()
	}

	/// A list of already sorted, distinct ids.
	pub fn from_sorted(ids: Vec<Id>) -> Self {
		debug_assert!(ids.windows(2).all(|pair| pair[0] < pair[1]));
		PostingList { ids }
	}

	/// The ids.
	pub fn ids(&self) -> &[Id] {
		&self.ids
	}

	/// Whether the list is empty.
	pub fn is_empty(&self) -> bool {
		self.ids.is_empty()
	}

	/// Heap bytes the list holds, for the cache's budget.
	pub fn heap_bytes(&self) -> usize {
		self.ids.capacity() * std::mem::size_of::<Id>() + std::mem::size_of::<Self>()
	}

	/// Add an id. New ids are the largest yet, so this is a push in the common case.
	pub fn insert(&mut self, id: Id) {
		match self.ids.last() {
			Some(&last) if last >= id => {
				if let Err(at) = self.ids.binary_search(&id) {
					self.ids.insert(at, id);
				}
			}
			_ => self.ids.push(id),
		}
	}

	/// Remove an id if present.
	pub fn remove(&mut self, id: Id) {
		if let Ok(at) = self.ids.binary_search(&id) {
			self.ids.remove(at);
		}
	}
}

/// Ids present in every list. Intersects smallest first and stops as soon as nothing is left;
/// each step gallops through the larger list, so a 100-id list against a million-id list costs
/// about 100 * log(10,000) comparisons.
pub fn intersect(lists: &mut [&[Id]]) -> Vec<Id> {
	lists.sort_by_key(|list| list.len());
	let Some((first, rest)) = lists.split_first() else { return Vec::new() };
	let mut result = first.to_vec();
	for list in rest {
		if result.is_empty() {
			break;
		}
		let mut kept = 0;
		let mut from = 0;
		for index in 0..result.len() {
			let id = result[index];
			from = gallop(list, from, id);
			if from == list.len() {
				break;
			}
			if list[from] == id {
				result[kept] = id;
				kept += 1;
			}
		}
		result.truncate(kept);
	}
	result
}

/// First index at or after `from` whose id is not below `target`.
fn gallop(list: &[Id], from: usize, target: Id) -> usize {
	let mut step = 1;
	let mut low = from;
	let mut high = from;
	while high < list.len() && list[high] < target {
		low = high + 1;
		high = from + step;
		step *= 2;
	}
	let high = high.min(list.len());
	low + list[low..high].partition_point(|&id| id < target)
}

#[cfg(test)]
mod tests {
	use super::*;
	use proptest::prelude::*;
	use std::collections::BTreeSet;

	#[test]
	fn pairs_round_trip_and_reject_garbage() {
		let pairs = [(3, 0), (4, u32::MAX), (70_000, 5), (u64::MAX, 1)];
		let mut out = Vec::new();
		decode_pairs(&encode_pairs(&pairs), &mut out).unwrap();
		assert_eq!(out, pairs);
		assert_eq!(decode_pairs(&[0x05], &mut Vec::new()), None, "an id without its tag");
		let mut too_big = Vec::new();
		put_varint(&mut too_big, 1);
		put_varint(&mut too_big, u64::from(u32::MAX) + 1);
		assert_eq!(decode_pairs(&too_big, &mut Vec::new()), None);
	}

	#[test]
	fn segments_round_trip_and_reject_garbage() {
		let ids = vec![0, 1, 127, 128, 4095, 1 << 40, u64::MAX];
		let mut out = Vec::new();
		decode_segment(&encode_segment(&ids), &mut out).unwrap();
		assert_eq!(out, ids);
		assert!(decode_segment(&[0x80], &mut Vec::new()).is_none());
		assert!(decode_segment(&[0xff; 11], &mut Vec::new()).is_none());
	}

	#[test]
	fn insert_and_remove_keep_the_list_sorted_and_distinct() {
		let mut list = PostingList::default();
		for id in [5, 9, 7, 9, 1] {
			list.insert(id);
		}
		assert_eq!(list.ids(), &[1, 5, 7, 9]);
		list.remove(7);
		list.remove(100);
		assert_eq!(list.ids(), &[1, 5, 9]);
	}

	proptest! {
		#[test]
		fn intersection_equals_set_intersection(
			sets in proptest::collection::vec(proptest::collection::btree_set(0u64..2000, 0..300), 1..5)
		) {
			let vectors: Vec<Vec<Id>> = sets.iter().map(|s| s.iter().copied().collect()).collect();
			let mut slices: Vec<&[Id]> = vectors.iter().map(Vec::as_slice).collect();
			let expected: BTreeSet<Id> = sets[1..].iter().fold(sets[0].clone(), |acc, s| &acc & s);
			prop_assert_eq!(intersect(&mut slices), expected.into_iter().collect::<Vec<_>>());
		}
	}
}
