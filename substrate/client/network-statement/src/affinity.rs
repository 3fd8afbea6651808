//! Topic affinity: the bloom filter of topics a statement/2 peer asks to be sent.
//!
//! On the wire a filter is SCALE `{seed: u128, num_hashes: u32, bits: Vec<u64>}`. Membership
//! must answer exactly as the reference's does, or a peer would be sent the wrong statements:
//! the filter is a fastbloom 0.17 `BloomFilter` over those bits, hashing a topic (`[u8; 32]`,
//! which `Hash` feeds as its length then its bytes) with SipHash-1-3 keyed by
//! `seed.to_le_bytes()`, and with every `usize`/`isize` written as 8 little-endian bytes so that
//! 32-bit and 64-bit peers agree. `tests/affinity_vectors.rs` holds this to answers recorded
//! from the reference's own code.
//!
//! A filter is refused before use when it has no bits, more than [`MAX_BITS`] bits, or a hash
//! count outside `1..=`[`MAX_HASHES`]. A statement without topics always matches.

use codec::{Decode, Encode};
use fastbloom::{BloomFilter, DefaultHasher};
use statement_primitives::Topic;
use std::hash::{BuildHasher, Hasher};

/// Most bits a filter may have: 8 Mi, a full notification's worth (`wire` checks the two agree).
pub const MAX_BITS: usize = 1024 * 1024 * 8;

/// Most hash functions a filter may use.
pub const MAX_HASHES: u32 = 64;

/// False-positive rate of the filters this node builds (the reference's default and floor).
pub const FALSE_POSITIVE_RATE: f64 = 0.001;

/// Why a received filter is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
	/// The bytes are not a filter.
	#[error("is not an affinity filter: {0}")]
	Malformed(String),
	/// No bits at all.
	#[error("has no bits")]
	NoBits,
	/// More bits than [`MAX_BITS`].
	#[error("has {0} bits, more than {MAX_BITS}")]
	TooManyBits(usize),
	/// A hash count outside `1..=MAX_HASHES`.
	#[error("asks for {0} hashes, outside 1..={MAX_HASHES}")]
	Hashes(u32),
}

/// The hasher builder: SipHash-1-3 keyed by the seed, with platform-width integers widened.
#[derive(Clone, Debug)]
struct Portable(DefaultHasher);

impl BuildHasher for Portable {
	type Hasher = PortableHasher;

	fn build_hasher(&self) -> PortableHasher {
		PortableHasher(self.0.build_hasher())
	}
}

/// Writes `usize` and `isize` as 8 bytes whatever the target's pointer width.
#[derive(Clone)]
struct PortableHasher(<DefaultHasher as BuildHasher>::Hasher);

impl Hasher for PortableHasher {
	fn finish(&self) -> u64 {
		self.0.finish()
	}

	fn write(&mut self, bytes: &[u8]) {
		self.0.write(bytes);
	}

	fn write_usize(&mut self, i: usize) {
		self.0.write(&(i as u64).to_le_bytes());
	}

	fn write_isize(&mut self, i: isize) {
		self.0.write(&(i as i64).to_le_bytes());
	}
}

fn hasher(seed: u128) -> Portable {
	Portable(DefaultHasher::seeded(&seed.to_le_bytes()))
}

/// The wire form.
#[derive(Encode, Decode)]
struct Wire {
	seed: u128,
	num_hashes: u32,
	bits: Vec<u64>,
}

/// A topic-affinity bloom filter, as a statement/2 peer sends it.
#[derive(Clone, Debug)]
pub struct AffinityFilter {
	bloom: BloomFilter<Portable>,
	seed: u128,
}

impl AffinityFilter {
	/// A filter of these topics, sized for them at [`FALSE_POSITIVE_RATE`].
	pub fn of_topics<'a>(seed: u128, topics: impl ExactSizeIterator<Item = &'a Topic>) -> Self {
		let mut bloom = BloomFilter::with_false_pos(FALSE_POSITIVE_RATE)
			.hasher(hasher(seed))
			.expected_items(topics.len().max(1));
		for topic in topics {
			bloom.insert(&topic.0);
		}
		AffinityFilter { bloom, seed }
	}

	/// A filter every topic matches (every bit set): what a light node sends when it wants
	/// everything.
	pub fn everything() -> Self {
		let bloom = BloomFilter::from_vec(vec![u64::MAX]).hasher(hasher(0)).hashes(1);
		AffinityFilter { bloom, seed: 0 }
	}

	/// Decode a received filter, refusing one outside the limits.
	pub fn decode(mut bytes: &[u8]) -> Result<Self, FilterError> {
		let wire =
			Wire::decode(&mut bytes).map_err(|err| FilterError::Malformed(err.to_string()))?;
		if !bytes.is_empty() {
			return Err(FilterError::Malformed(format!("{} bytes after the filter", bytes.len())));
		}
		Self::from_wire(wire)
	}

	/// Decode from the front of `input`, leaving what follows (as SCALE decoding does).
	pub(crate) fn decode_from(input: &mut &[u8]) -> Result<Self, FilterError> {
		let wire = Wire::decode(input).map_err(|err| FilterError::Malformed(err.to_string()))?;
		Self::from_wire(wire)
	}

	fn from_wire(wire: Wire) -> Result<Self, FilterError> {
		if wire.bits.is_empty() {
			return Err(FilterError::NoBits);
		}
		let bits = wire.bits.len().saturating_mul(64);
		if bits > MAX_BITS {
			return Err(FilterError::TooManyBits(bits));
		}
		if wire.num_hashes == 0 || wire.num_hashes > MAX_HASHES {
			return Err(FilterError::Hashes(wire.num_hashes));
		}
		let bloom =
			BloomFilter::from_vec(wire.bits).hasher(hasher(wire.seed)).hashes(wire.num_hashes);
		Ok(AffinityFilter { bloom, seed: wire.seed })
	}

	/// The wire form.
	pub fn encode(&self) -> Vec<u8> {
		Wire {
			seed: self.seed,
			num_hashes: self.bloom.num_hashes(),
			bits: self.bloom.as_slice().to_vec(),
		}
		.encode()
	}

	/// Whether the topic is (probably) in the filter.
	pub fn contains(&self, topic: &[u8; 32]) -> bool {
		self.bloom.contains(topic)
	}

	/// Whether a statement with these topics is wanted: one without topics always is, one with
	/// topics when any of them is in the filter.
	pub fn matches(&self, topics: &[Topic]) -> bool {
		topics.is_empty() || topics.iter().any(|topic| self.contains(&topic.0))
	}

	/// Bytes of memory the bits take.
	pub fn size(&self) -> usize {
		self.bloom.as_slice().len() * 8
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn wire(seed: u128, num_hashes: u32, words: usize) -> Vec<u8> {
		Wire { seed, num_hashes, bits: vec![1; words] }.encode()
	}

	#[test]
	fn a_filter_holds_its_topics_and_round_trips_through_the_wire() {
		let topics: Vec<Topic> = (0..50u8).map(|n| Topic([n; 32])).collect();
		let filter = AffinityFilter::of_topics(77, topics.iter());
		assert!(topics.iter().all(|topic| filter.contains(&topic.0)));
		let decoded = AffinityFilter::decode(&filter.encode()).unwrap();
		assert_eq!(decoded.encode(), filter.encode());
		let strangers = (0..1000u32)
			.filter(|n| {
				let mut topic = [0xEE; 32];
				topic[..4].copy_from_slice(&n.to_le_bytes());
				decoded.contains(&topic)
			})
			.count();
		assert!(strangers < 20, "{strangers} of 1000 strangers matched at a 0.1% rate");
	}

	#[test]
	fn limits_are_refused_before_use() {
		assert_eq!(AffinityFilter::decode(&wire(1, 7, 0)).unwrap_err(), FilterError::NoBits);
		assert_eq!(AffinityFilter::decode(&wire(1, 0, 4)).unwrap_err(), FilterError::Hashes(0));
		assert_eq!(AffinityFilter::decode(&wire(1, 65, 4)).unwrap_err(), FilterError::Hashes(65));
		assert!(AffinityFilter::decode(&wire(1, 64, MAX_BITS / 64)).is_ok());
		assert_eq!(
			AffinityFilter::decode(&wire(1, 64, MAX_BITS / 64 + 1)).unwrap_err(),
			FilterError::TooManyBits(MAX_BITS + 64)
		);
		assert!(matches!(AffinityFilter::decode(&[1, 2, 3]), Err(FilterError::Malformed(_))));
		let mut trailing = wire(1, 7, 4);
		trailing.push(0);
		assert!(matches!(AffinityFilter::decode(&trailing), Err(FilterError::Malformed(_))));
	}

	#[test]
	fn everything_matches_every_topic_and_a_statement_without_topics_matches_any_filter() {
		let all = AffinityFilter::everything();
		assert!((0..=255u8).all(|n| all.contains(&[n; 32])));
		let one = AffinityFilter::of_topics(1, [Topic([1; 32])].iter());
		assert!(one.matches(&[]));
		assert!(one.matches(&[Topic([9; 32]), Topic([1; 32])]));
		assert!(!one.matches(&[Topic([9; 32])]));
	}
}
