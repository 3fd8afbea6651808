//! The key space: a peer's key, a statement's keys, XOR distance, and the nearest.

/// A point of the key space.
pub type Key = [u8; 32];

/// A peer's key: `blake2_256` of its PeerId's bytes.
pub fn key_of(peer_bytes: &[u8]) -> Key {
	sp_crypto_hashing::blake2_256(peer_bytes)
}

/// XOR distance between two keys.
pub fn distance(a: &Key, b: &Key) -> Key {
	let mut out = [0; 32];
	for (out, (a, b)) in out.iter_mut().zip(a.iter().zip(b)) {
		*out = a ^ b;
	}
	out
}

/// The keys a statement is routed by: its topics, or its hash when it has none.
pub fn keys_of(
	topics: &[statement_primitives::Topic],
	hash: &statement_primitives::Hash,
) -> Vec<Key> {
	if topics.is_empty() {
		vec![*hash]
	} else {
		topics.iter().map(|topic| topic.0).collect()
	}
}

/// The `k` nearest to `target` of `peers` (each peer once, with its key), nearest first, ties
/// to the smaller peer.
pub fn nearest<P: Copy + Ord>(
	target: &Key,
	peers: impl IntoIterator<Item = (P, Key)>,
	k: usize,
) -> Vec<P> {
	let mut ranked: Vec<(Key, P)> =
		peers.into_iter().map(|(peer, key)| (distance(target, &key), peer)).collect();
	// Answers come from tables of up to 8,192 peers: only the first k need ordering.
	if ranked.len() > k && k > 0 {
		ranked.select_nth_unstable(k - 1);
		ranked.truncate(k);
	}
	ranked.sort_unstable();
	ranked.into_iter().take(k).map(|(_, peer)| peer).collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn distance_is_xor_and_ranks_as_big_endian_bytes_with_ties_to_the_smaller_peer() {
		let target = [0u8; 32];
		let mut high = [0u8; 32];
		high[0] = 1;
		let mut low = [0u8; 32];
		low[31] = 0xff;
		assert_eq!(distance(&high, &low)[0], 1);
		assert_eq!(distance(&high, &low)[31], 0xff);
		// The first byte outweighs every later one.
		assert_eq!(nearest(&target, [(1u32, high), (2, low)], 1), vec![2]);
		// Equal keys: the smaller peer first.
		assert_eq!(nearest(&target, [(9u32, low), (3, low), (5, high)], 3), vec![3, 9, 5]);
	}

	#[test]
	fn a_peers_key_is_the_blake2_256_of_its_bytes_as_upstream_derives_it() {
		let peer = crate::identity::peer_id(&[7; 32]).unwrap();
		let bytes = peer.to_bytes();
		assert_eq!(key_of(&bytes), sp_crypto_hashing::blake2_256(&bytes));
		assert_ne!(key_of(&bytes), key_of(&crate::identity::peer_id(&[8; 32]).unwrap().to_bytes()));
	}

	#[test]
	fn a_statement_without_topics_is_keyed_by_its_hash() {
		let topic = statement_primitives::Topic([4; 32]);
		assert_eq!(keys_of(&[topic], &[1; 32]), vec![[4; 32]]);
		assert_eq!(keys_of(&[], &[1; 32]), vec![[1; 32]]);
	}
}
