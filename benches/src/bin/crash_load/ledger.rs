//! What the harness knows about every statement a client signed: its hash, and what became of
//! it. Each client signs with its own ed25519 account; statement `index` of client `c` carries
//! the topics `client_topic(c)` and `block_topic(index / BLOCK)` and the data `c ++ index`, so
//! the checks can read a client's statements back in blocks small enough for one response.

use sp_core::{ed25519, Pair};
use statement_primitives::{testing::TestStatement, Hash, Topic};
use std::{collections::VecDeque, ops::Range};

/// Statements per block: one `statement_broadcastsStatement` response holds a block
/// (about 1.6 MB of JSON, under the node's 10 MB response limit).
pub const BLOCK: u32 = 4096;

/// What became of a signed statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
	/// Signed, never sent.
	Unsent,
	/// The node answered `{"status":"new"}`: it must survive every later kill.
	Acknowledged,
	/// The node answered something other than `new`: it must never appear.
	Refused,
	/// Sent, no answer before the kill: it may be kept or dropped by the next start.
	InFlight,
	/// In flight at a kill and present after the restart: from then on it must stay.
	Kept,
	/// In flight at a kill and absent after the restart: it must never appear.
	Dropped,
}

impl Fate {
	/// Whether the store must hold the statement.
	pub fn must_be_present(self) -> bool {
		matches!(self, Fate::Acknowledged | Fate::Kept)
	}
}

/// A signed statement waiting to be submitted.
pub struct Signed {
	/// Its index in the client's sequence.
	pub index: u32,
	/// `0x`-hex of its encoding, the `statement_submit` parameter.
	pub hex: String,
}

/// One client's statements.
pub struct Ledger {
	/// Client number.
	pub client: u32,
	key: ed25519::Pair,
	/// Hash of statement `index`, for every index signed so far.
	pub hashes: Vec<Hash>,
	/// Fate of statement `index`.
	pub fates: Vec<Fate>,
	/// Signed, not yet sent, in index order.
	pub pending: VecDeque<Signed>,
}

/// Topic shared by every statement of `client`.
pub fn client_topic(client: u32) -> Topic {
	tagged(client, 0xc1)
}

/// Topic shared by statements `block * BLOCK .. (block + 1) * BLOCK` of every client.
pub fn block_topic(block: u32) -> Topic {
	tagged(block, 0xb1)
}

fn tagged(n: u32, tag: u8) -> Topic {
	let mut bytes = [0u8; 32];
	bytes[..4].copy_from_slice(&n.to_le_bytes());
	bytes[30] = 0xcc;
	bytes[31] = tag;
	Topic(bytes)
}

/// The data of statement `index` of `client`.
pub fn data(client: u32, index: u32) -> [u8; 8] {
	let mut bytes = [0u8; 8];
	bytes[..4].copy_from_slice(&client.to_le_bytes());
	bytes[4..].copy_from_slice(&index.to_le_bytes());
	bytes
}

/// `(client, index)` from a statement's data, if it is ours.
pub fn parse_data(bytes: &[u8]) -> Option<(u32, u32)> {
	let bytes: [u8; 8] = bytes.try_into().ok()?;
	let word =
		|at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
	Some((word(0), word(4)))
}

/// The signing key of `client`'s account.
pub fn key(client: u32) -> ed25519::Pair {
	let mut seed = [0u8; 32];
	seed[..4].copy_from_slice(&client.to_le_bytes());
	seed[30] = 0xcc;
	seed[31] = 0x5e;
	ed25519::Pair::from_seed(&seed)
}

impl Ledger {
	/// A client with nothing signed yet.
	pub fn new(client: u32) -> Self {
		Ledger {
			client,
			key: key(client),
			hashes: Vec::new(),
			fates: Vec::new(),
			pending: VecDeque::new(),
		}
	}

	/// The account id that signs this client's statements.
	pub fn account(&self) -> [u8; 32] {
		self.key.public().0
	}

	/// Sign statements until `target` wait unsent; they expire at `expiry` (unix seconds).
	pub fn top_up(&mut self, target: usize, expiry: u32) {
		while self.pending.len() < target {
			let index = self.hashes.len() as u32;
			let statement = TestStatement::new()
				.expiry(expiry, index)
				.topic(0, client_topic(self.client))
				.topic(1, block_topic(index / BLOCK))
				.data(data(self.client, index).to_vec())
				.signed_ed25519(&self.key);
			self.hashes.push(statement.hash());
			self.fates.push(Fate::Unsent);
			let hex = statement_test_support::hex::encode(&statement.encode());
			self.pending.push_back(Signed { index, hex });
		}
	}

	/// Indices sent so far (sending goes in index order).
	pub fn sent(&self) -> u32 {
		self.pending.front().map_or(self.hashes.len() as u32, |next| next.index)
	}

	/// Blocks holding any statement sent so far.
	pub fn blocks_sent(&self) -> Range<u32> {
		0..self.sent().div_ceil(BLOCK)
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn data_round_trips_and_foreign_data_is_not_ours() {
		assert_eq!(parse_data(&data(7, 123_456)), Some((7, 123_456)));
		assert_eq!(parse_data(b"hello"), None);
	}

	#[test]
	fn top_up_signs_in_order_and_sent_follows_the_queue() {
		let mut ledger = Ledger::new(3);
		ledger.top_up(5, u32::MAX - 1);
		assert_eq!(ledger.sent(), 0);
		assert_eq!(ledger.blocks_sent(), 0..0);
		ledger.pending.pop_front();
		assert_eq!(ledger.sent(), 1);
		assert_eq!(ledger.blocks_sent(), 0..1);
		ledger.top_up(5, u32::MAX - 1);
		assert_eq!(ledger.hashes.len(), 6);
		assert_eq!(ledger.pending.back().map(|s| s.index), Some(5));
	}
}
