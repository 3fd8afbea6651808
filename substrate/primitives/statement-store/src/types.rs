//! The 32-byte identifiers a statement carries, and the limits on them.

/// A statement topic: 32 bytes an app chooses so that readers can find its statements.
///
/// In JSON it is a `0x`-prefixed hex string, as upstream's RPC writes it.
#[derive(
	Clone,
	Copy,
	Debug,
	Default,
	PartialEq,
	Eq,
	PartialOrd,
	Ord,
	Hash,
	codec::Encode,
	codec::Decode,
	codec::MaxEncodedLen,
)]
pub struct Topic(pub [u8; 32]);

/// Id of the key a statement's data is encrypted to (the recipient's public key, or a hash of it).
pub type DecryptionKey = [u8; 32];
/// A per-account channel: an account keeps at most one live statement per channel.
pub type Channel = [u8; 32];
/// The account a statement is charged to: the signer's key, or blake2-256 of an ecdsa key.
pub type AccountId = [u8; 32];
/// blake2-256 of a statement's encoding.
pub type Hash = [u8; 32];

/// Topics a statement may carry, and a `MatchAll` filter may name.
pub const MAX_TOPICS: usize = 4;
/// Topics a `MatchAny` filter may name.
pub const MAX_ANY_TOPICS: usize = 128;
/// Largest encoding a statement may have: 1 MiB - 1.
pub const MAX_STATEMENT_SIZE: usize = 1024 * 1024 - 1;

impl Topic {
	/// The topic a name stands for: blake2-256 of its UTF-8 bytes. `statement-node sign
	/// --topic <text>` names topics this way, and so do the tests.
	pub fn from_name(name: &str) -> Topic {
		Topic(sp_crypto_hashing::blake2_256(name.as_bytes()))
	}
}

impl From<[u8; 32]> for Topic {
	fn from(bytes: [u8; 32]) -> Self {
		Topic(bytes)
	}
}

impl From<Topic> for [u8; 32] {
	fn from(topic: Topic) -> Self {
		topic.0
	}
}

impl AsRef<[u8]> for Topic {
	fn as_ref(&self) -> &[u8] {
		&self.0
	}
}

impl serde::Serialize for Topic {
	fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
		sp_core::bytes::serialize(&self.0, serializer)
	}
}

impl<'de> serde::Deserialize<'de> for Topic {
	fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
		let mut bytes = [0u8; 32];
		sp_core::bytes::deserialize_check_len(
			deserializer,
			sp_core::bytes::ExpectedLen::Exact(&mut bytes[..]),
		)?;
		Ok(Topic(bytes))
	}
}

/// blake2-256 of `data`: a statement's hash when `data` is its encoding.
pub fn hash_encoded(data: &[u8]) -> Hash {
	sp_crypto_hashing::blake2_256(data)
}

/// [`hash_encoded`] of each of `inputs`, in order, several at a time: where the CPU has
/// AVX2, four inputs share each step's vector instructions, about half the time of hashing
/// them one by one (~0.3 against ~0.54 us per 460-byte statement on the 2-core VM of
/// benches/HISTORY.md). For a reader checking many bodies at once.
pub fn hash_encoded_each<'a>(inputs: impl IntoIterator<Item = &'a [u8]>) -> Vec<Hash> {
	let mut params = blake2b_simd::Params::new();
	params.hash_length(32);
	let mut jobs: Vec<blake2b_simd::many::HashManyJob<'a>> = inputs
		.into_iter()
		.map(|input| blake2b_simd::many::HashManyJob::new(&params, input))
		.collect();
	blake2b_simd::many::hash_many(jobs.iter_mut());
	jobs.iter()
		.map(|job| job.to_hash().as_bytes().try_into().expect("32-byte hash length set above; qed"))
		.collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn hashing_many_at_once_gives_each_input_its_own_hash() {
		// Lengths around blake2b's 128-byte block, and counts that leave partial groups.
		let lengths = [0, 1, 127, 128, 129, 255, 256, 460, 1000, 5000];
		let inputs: Vec<Vec<u8>> = (0..23)
			.map(|n| (0..lengths[n % lengths.len()]).map(|i| (i * 7 + n * 13) as u8).collect())
			.collect();
		for count in 0..inputs.len() {
			let some = &inputs[..count];
			let expected: Vec<Hash> = some.iter().map(|input| hash_encoded(input)).collect();
			assert_eq!(hash_encoded_each(some.iter().map(Vec::as_slice)), expected, "{count}");
		}
	}
}
