//! Topic-routed storage's placement rule, written here apart from the node's code so that
//! checks can hold a network to it: a node's key is `blake2_256` of its PeerId's bytes, a
//! topic is its own 32 bytes, and the K holders of a topic are the K nodes whose keys are
//! nearest it by XOR (compared as big-endian bytes, ties to the smaller PeerId bytes).

/// A node's key: `blake2_256` of its PeerId's bytes.
pub fn peer_key(peer_id: &[u8]) -> [u8; 32] {
	sp_crypto_hashing::blake2_256(peer_id)
}

/// The bytes of a PeerId written in base58 (as `system_localPeerId` answers); `None` if it is
/// not base58.
pub fn peer_id_bytes(base58: &str) -> Option<Vec<u8>> {
	const ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
	// Little-endian base-256 digits of the number.
	let mut digits: Vec<u8> = Vec::new();
	for c in base58.bytes() {
		let mut carry = ALPHABET.iter().position(|a| *a == c)? as u32;
		for digit in digits.iter_mut() {
			carry += u32::from(*digit) * 58;
			*digit = carry as u8;
			carry >>= 8;
		}
		while carry > 0 {
			digits.push(carry as u8);
			carry >>= 8;
		}
	}
	let zeros = base58.bytes().take_while(|c| *c == b'1').count();
	let mut bytes = vec![0; zeros];
	bytes.extend(digits.iter().rev());
	Some(bytes)
}

/// The indexes into `peers` (each a PeerId's bytes) of the `k` holders of `topic`, nearest
/// first.
pub fn holders(topic: &[u8; 32], peers: &[Vec<u8>], k: usize) -> Vec<usize> {
	let mut ranked: Vec<([u8; 32], &[u8], usize)> = peers
		.iter()
		.enumerate()
		.map(|(index, peer)| {
			let key = peer_key(peer);
			let mut distance = [0; 32];
			for (d, (a, b)) in distance.iter_mut().zip(key.iter().zip(topic)) {
				*d = a ^ b;
			}
			(distance, peer.as_slice(), index)
		})
		.collect();
	ranked.sort();
	ranked.into_iter().take(k).map(|(_, _, index)| index).collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn base58_peer_ids_decode_to_their_multihash_bytes() {
		// The README's boot node: an identity multihash (0x00, 36 bytes) of a protobuf
		// ed25519 public key (0x08 0x01 0x12 0x20 ...).
		let bytes = peer_id_bytes("12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm").unwrap();
		assert_eq!(bytes.len(), 38);
		assert_eq!(&bytes[..6], &[0x00, 0x24, 0x08, 0x01, 0x12, 0x20]);
		assert_eq!(peer_id_bytes("0OIl"), None, "not base58");
		assert_eq!(peer_id_bytes("11"), Some(vec![0, 0]));
	}

	#[test]
	fn holders_are_the_nearest_keys_by_xor() {
		let peers: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i]).collect();
		let topic = peer_key(&[7]);
		let chosen = holders(&topic, &peers, 3);
		assert_eq!(chosen[0], 7, "a node's own key is at distance zero");
		let distance = |index: usize| {
			let key = peer_key(&peers[index]);
			key.iter().zip(topic).map(|(a, b)| a ^ b).collect::<Vec<u8>>()
		};
		let worst_chosen = chosen.iter().map(|i| distance(*i)).max().unwrap();
		for other in (0..20).filter(|i| !chosen.contains(i)) {
			assert!(distance(other) > worst_chosen);
		}
	}
}
