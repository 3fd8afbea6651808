//! The route protocol, `/{genesis}/statement/route/1` (or `/{genesis}/{fork id}/statement/route/1`):
//! requests and answers as SCALE enums over litep2p's request-response. Only nodes started
//! with `--statement-replication-factor` offer it, so identify tells routed nodes apart.
//!
//! | request | answer |
//! |---|---|
//! | `0: Nearest { key }` | `0: Nearest { peers }`: at most K peers the node knows nearest `key`, each as its PeerId's bytes and addresses |
//! | `1: Store { statements }` | `1: Stored { accepted }`: the statements (each a SCALE `Statement`) were checked and submitted as received from the network |
//! | `2: Watch { topic, lease_secs, skip }` | `2: Statements { statements, more }`: the stored statements on `topic` from the `skip`th on (at most [`MAX_ANSWER`] bytes); until the lease ends, new ones are sent to the watcher as `Store` requests |
//!
//! Any request may be answered `3: Refused { reason }`.

use codec::{Decode, Encode};

/// Largest request: a `Store` of one notification's worth.
pub const MAX_REQUEST: usize = crate::MAX_NOTIFICATION_SIZE + 1024;

/// Most bytes of statements in one `Statements` answer.
pub const MAX_ANSWER: usize = 1024 * 1024;

/// Largest answer on the wire.
pub const MAX_RESPONSE: usize = MAX_ANSWER + 64 * 1024;

/// Most peers a `Nearest` answer may name, and addresses per peer, read from a peer.
pub const MAX_PEERS: usize = 64;

/// Most addresses per peer in a `Nearest` answer.
pub const MAX_ADDRESSES: usize = 8;

/// The protocol's name on this chain.
pub fn protocol_name(genesis_hash: &[u8; 32], fork_id: Option<&str>) -> String {
	let hex = hex::encode(genesis_hash);
	match fork_id {
		Some(fork) => format!("/{hex}/{fork}/statement/route/1"),
		None => format!("/{hex}/statement/route/1"),
	}
}

/// A request.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Request {
	/// The peers the node knows nearest this key.
	#[codec(index = 0)]
	Nearest {
		/// The key.
		key: [u8; 32],
	},
	/// Keep (or forward) these statements.
	#[codec(index = 1)]
	Store {
		/// SCALE-encoded statements.
		statements: Vec<Vec<u8>>,
	},
	/// The statements on a topic, and the new ones for a while.
	#[codec(index = 2)]
	Watch {
		/// The topic.
		topic: [u8; 32],
		/// Seconds to send new ones for.
		lease_secs: u32,
		/// Stored statements to skip (those an earlier page had).
		skip: u32,
	},
}

/// A peer in a `Nearest` answer.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub struct PeerEntry {
	/// Its PeerId's bytes.
	pub peer: Vec<u8>,
	/// Its addresses' bytes.
	pub addresses: Vec<Vec<u8>>,
}

/// An answer.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode)]
pub enum Response {
	/// The nearest peers known.
	#[codec(index = 0)]
	Nearest {
		/// Nearest first.
		peers: Vec<PeerEntry>,
	},
	/// How many of the statements of a `Store` were new and admitted.
	#[codec(index = 1)]
	Stored {
		/// New and admitted.
		accepted: u32,
	},
	/// A page of stored statements.
	#[codec(index = 2)]
	Statements {
		/// SCALE-encoded statements.
		statements: Vec<Vec<u8>>,
		/// Whether more are stored past this page.
		more: bool,
	},
	/// The request was refused.
	#[codec(index = 3)]
	Refused {
		/// Why.
		reason: String,
	},
}

/// Decode a request, refusing trailing bytes.
pub fn decode_request(bytes: &[u8]) -> Result<Request, codec::Error> {
	let mut input = bytes;
	let request = Request::decode(&mut input)?;
	if !input.is_empty() {
		return Err("trailing bytes after the request".into());
	}
	Ok(request)
}

/// Decode an answer, refusing trailing bytes and oversized peer lists.
pub fn decode_response(bytes: &[u8]) -> Result<Response, codec::Error> {
	let mut input = bytes;
	let response = Response::decode(&mut input)?;
	if !input.is_empty() {
		return Err("trailing bytes after the answer".into());
	}
	if let Response::Nearest { peers } = &response {
		if peers.len() > MAX_PEERS || peers.iter().any(|p| p.addresses.len() > MAX_ADDRESSES) {
			return Err("too many peers or addresses".into());
		}
	}
	Ok(response)
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn requests_and_answers_travel_as_scale_enums_and_bad_bytes_are_errors() {
		let request = Request::Watch { topic: [3; 32], lease_secs: 60, skip: 2 };
		let bytes = request.encode();
		assert_eq!(bytes[0], 2);
		assert_eq!(decode_request(&bytes).unwrap(), request);
		let mut trailing = bytes.clone();
		trailing.push(0);
		assert!(decode_request(&trailing).is_err());
		assert!(decode_request(&[9]).is_err());
		assert!(decode_request(&[]).is_err());
		let many = Response::Nearest {
			peers: vec![PeerEntry { peer: vec![1], addresses: vec![] }; MAX_PEERS + 1],
		};
		assert!(decode_response(&many.encode()).is_err());
		let stored = Response::Stored { accepted: 7 };
		assert_eq!(decode_response(&stored.encode()).unwrap(), stored);
		assert_eq!(
			protocol_name(&[0xab; 32], Some("f")),
			format!("/{}/f/statement/route/1", "ab".repeat(32))
		);
	}
}
