//! The on-disk layout this build writes (schema 6): parity-db columns, their keys and values,
//! and the schema version. What older schemas wrote, which opening upgrades, is in
//! [`legacy`], and nothing here needs it to be read.
//!
//! Every statement gets a compact local id from a counter that only grows (the admission
//! journal's sequence). Indexes refer to statements by id, so posting lists hold 8-byte ids,
//! not 32-byte hashes. A statement and every index entry for it are written in one commit.

use crate::{error::Error, error::Result};
use codec::{Decode, Encode};
use parity_db::{ColId, ColumnOptions, Options};
use statement_primitives::{AccountId, Channel, DecryptionKey, Hash, Statement, Topic};
use std::path::Path;

/// Compact local id of a statement: its admission sequence number.
pub type Id = u64;

/// Ids per on-disk segment span. Ids only grow, so appends touch the last segment, and one
/// submit rewrites a few hundred bytes per list, not the whole list.
pub const SEGMENT_SPAN: Id = 4096;

/// First id of the segment holding `id`.
pub fn segment_base(id: Id) -> Id {
	id - id % SEGMENT_SPAN
}

/// Schema version, 1 key: `b"schema"`. Counters: `b"counters"`.
pub const COL_META: ColId = 0;
/// [`body_key`] of the id -> [`body_value`]: the statement's hash and encoding behind a
/// 64-bit check.
pub const COL_BODY: ColId = 1;
/// hash -> id (u64, little-endian, the value's first 8 bytes): the exact answer to "is this
/// hash stored", for admission and `check-db`. Lookups by hash go through the membership
/// set's ids instead (one read). Everything else a removal needs ([`Record`]) is read from
/// the body.
pub const COL_HASH: ColId = 2;
/// Recent admissions, btree: id (BE) -> hash, for the statements admitted since the newest
/// membership snapshot: opening after a crash adds their hashes to the snapshot's set without
/// reading their bodies. Older entries are pruned once a snapshot covers them; the ids of
/// every stored statement are [`PostingKey::All`]'s list.
pub const COL_JOURNAL: ColId = 3;
/// Posting lists, btree: [`PostingKey`] ++ segment base (BE) -> delta-encoded ids; and the
/// account lists, [`account_list_key`] -> (id, expiry's low 32 bits) pairs.
pub const COL_POSTING: ColId = 4;
/// Empty: an older schema's account index ([`legacy`]). parity-db keeps every column a
/// database was created with, so the column numbers after it stay.
pub const COL_ACCOUNT: ColId = 5;
/// account ++ channel -> id ++ expiry of the statement holding the channel.
pub const COL_CHANNEL: ColId = 6;
/// Empty: an older schema's expiry index ([`legacy`]); the expiry order is
/// [`PostingKey::Expiry`]'s lists.
pub const COL_EXPIRY: ColId = 7;
/// Bans, hash -> purge time (unix seconds, u64).
pub const COL_BAN: ColId = 8;
/// Ban purge order, btree: purge time (BE) ++ hash -> ().
pub const COL_BAN_ORDER: ColId = 9;
/// account -> [`Usage`], btree so that maintenance can walk the accounts in slices.
pub const COL_USAGE: ColId = 10;
/// Number of columns.
pub const COLUMNS: u8 = 11;

/// Version written by this build: the layout of this file. (What versions 1 to 5 were, and how
/// each is upgraded: [`legacy`].)
pub const SCHEMA_VERSION: u32 = 6;

/// Meta key of the schema version (u32).
pub const KEY_SCHEMA: &[u8] = b"schema";
/// Meta key of the [`Counters`].
pub const KEY_COUNTERS: &[u8] = b"counters";
/// Meta key of the [`Tallies`]; absent in databases written before them.
pub const KEY_TALLIES: &[u8] = b"tallies";
/// Sequence number (u64) of the newest intent-log batch the database holds; absent = 0.
pub const KEY_INTENT: &[u8] = b"intent";
/// Position (u64) of the removal log: how many removals were ever logged; absent = 0.
pub const KEY_REMOVALS: &[u8] = b"removals";

/// Removals per removal-log segment.
pub const REMOVAL_SEGMENT: u64 = 256;
/// Bytes per removal-log entry: the id (LE) and the hash's first 8 bytes (its fingerprint).
pub const REMOVAL_ENTRY: usize = 16;

/// Meta key of the removal-log segment holding removals `segment * REMOVAL_SEGMENT ..`.
///
/// The removal log lets a crashed store bring an older membership snapshot up to date: the
/// journal says what was admitted since, this log what was removed. Segments older than the
/// newest snapshot are deleted after it is written.
pub fn removal_segment_key(segment: u64) -> Vec<u8> {
	let mut key = b"removed".to_vec();
	key.extend_from_slice(&segment.to_be_bytes());
	key
}

/// parity-db options for the layout above. The meta column is a btree (as a hash column its
/// index would take 32 MiB from the start for a few keys); a database that an older schema
/// created with a hash column there keeps it ([`legacy`]), as parity-db requires a column to
/// keep its kind.
pub fn db_options(path: &Path, sync_wal: bool) -> Options {
	let meta_btree = match Options::load_metadata(path) {
		Ok(Some(metadata)) => {
			metadata.columns.get(COL_META as usize).is_none_or(|column| column.btree_index)
		}
		_ => true,
	};
	let mut options = Options::with_columns(path, COLUMNS);
	options.sync_wal = sync_wal;
	// Without sync_wal the store promises to survive the process being killed, which the
	// page cache already gives: parity-db then neither msyncs its tables nor keeps applied
	// log files to replay (see `writeback`).
	options.sync_data = sync_wal;
	options.keep_logs = 0;
	options.stats = false;
	// The store drives parity-db's log from its own thread (see `writeback`), so that it knows
	// which intent-log batches parity-db has written.
	options.with_background_thread = false;
	for (index, column) in options.columns.iter_mut().enumerate() {
		let col = index as ColId;
		*column = ColumnOptions {
			btree_index: matches!(
				col,
				COL_JOURNAL | COL_POSTING | COL_ACCOUNT | COL_EXPIRY | COL_BAN_ORDER | COL_USAGE
			) || (col == COL_META && meta_btree),
			uniform: matches!(col, COL_BODY | COL_HASH | COL_BAN),
			..ColumnOptions::default()
		};
	}
	options
}

/// Store-wide counters, rewritten in every commit that changes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Encode, Decode)]
pub struct Counters {
	/// Statements stored.
	pub count: u64,
	/// Sum of their encoded sizes.
	pub total_size: u64,
	/// Id the next admitted statement gets.
	pub next_id: Id,
}

/// What the metrics count that no query should have to walk for: accounts holding
/// statements and bans held. Rewritten in every commit that changes either; a database written
/// before them has them counted once when it is opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Encode, Decode)]
pub struct Tallies {
	/// Accounts holding at least one statement ([`COL_USAGE`]'s entries).
	pub accounts: u64,
	/// Hashes banned until their purge time ([`COL_BAN_ORDER`]'s entries).
	pub bans: u64,
}

/// What the channel column holds for an account's channel: the id and expiry of the
/// statement holding it (16 bytes, both little-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelEntry {
	/// The holder's id.
	pub id: Id,
	/// The holder's expiry, which a replacement must exceed.
	pub expiry: u64,
}

impl ChannelEntry {
	/// The stored value.
	pub fn encode(&self) -> Vec<u8> {
		let mut value = self.id.to_le_bytes().to_vec();
		value.extend_from_slice(&self.expiry.to_le_bytes());
		value
	}

	/// Read a stored value.
	pub fn decode(bytes: &[u8]) -> Result<ChannelEntry> {
		let word = |at: usize| {
			bytes.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)
		};
		match (word(0), word(8)) {
			(Some(id), Some(expiry)) => Ok(ChannelEntry { id, expiry }),
			_ => Err(crate::error::bad(COL_CHANNEL, "channel entry")),
		}
	}
}

/// What an account holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Encode, Decode)]
pub struct Usage {
	/// Statements held.
	pub count: u32,
	/// Sum of their data lengths.
	pub data_size: u64,
}

/// What unindexing a statement needs besides its hash: all of it read from the body
/// ([`Record::of`]); only the id is stored, under the hash ([`COL_HASH`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
	/// Local id.
	pub id: Id,
	/// Expiry.
	pub expiry: u64,
	/// Account charged.
	pub account: AccountId,
	/// Data length, charged against the account's size allowance.
	pub data_len: u32,
	/// Encoded length, charged against the global size limit.
	pub encoded_len: u32,
	/// Channel, if any.
	pub channel: Option<Channel>,
	/// Decryption key, if any.
	pub decryption_key: Option<DecryptionKey>,
	/// Topics.
	pub topics: Vec<Topic>,
}

impl Record {
	/// The record of `statement`, admitted as `id` for `account`.
	pub fn new(id: Id, account: AccountId, statement: &Statement, encoded_len: usize) -> Self {
		Record {
			id,
			expiry: statement.expiry(),
			account,
			data_len: statement.data_len() as u32,
			encoded_len: encoded_len as u32,
			channel: statement.channel(),
			decryption_key: statement.decryption_key(),
			topics: statement.topics().to_vec(),
		}
	}

	/// The record of a stored body: `statement` decoded from its `encoded_len` bytes. The
	/// account is the proof's signer, as the signature check that admitted it returned it.
	pub fn of(id: Id, statement: &Statement, encoded_len: usize) -> Option<Self> {
		Some(Record::new(id, statement.account_id()?, statement, encoded_len))
	}

	/// The value stored under the statement's hash in [`COL_HASH`].
	pub fn hash_value(&self) -> [u8; 8] {
		self.id.to_le_bytes()
	}

	/// The posting lists on disk this statement appears in: its decryption key and the list
	/// of keyed statements (if it has a key), and each topic. Broadcasts are the statements
	/// outside the keyed list, so the common statement without a key adds to no list but
	/// its topics'.
	pub fn posting_keys(&self) -> impl Iterator<Item = PostingKey> + '_ {
		let keyed = self
			.decryption_key
			.map(|key| [PostingKey::DecryptionKey(key), PostingKey::Keyed])
			.into_iter()
			.flatten();
		keyed
			.chain(self.topics.iter().map(|topic| PostingKey::Topic(topic.0)))
			.chain([PostingKey::Expiry(self.expiry >> 32)])
	}
}

/// Names one posting list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PostingKey {
	/// Every stored statement, in admission order.
	All,
	/// Statements that carry a decryption key (any key).
	Keyed,
	/// Statements encrypted to this key.
	DecryptionKey(DecryptionKey),
	/// Statements carrying this topic.
	Topic([u8; 32]),
	/// Statements whose expiry falls in this second (the high 32 bits of the expiry): the
	/// expiry order, walked by maintenance. Never queried, so never cached.
	Expiry(u64),
}

/// First byte of the account lists: account ++ expiry second (BE) ++ segment base (BE) ->
/// the account's statements expiring in that second, as (id, low 32 bits of the expiry)
/// pairs ([`crate::index::posting::encode_pairs`]). An account's statements in eviction order are
/// its lists in key order, each second's pairs sorted by the low bits.
pub const ACCOUNT_PREFIX: u8 = 6;

/// Length of an account list's key.
pub const ACCOUNT_LIST_KEY: usize = 1 + 32 + 8 + 8;

/// Where an account's lists start in [`COL_POSTING`].
pub fn account_lists(account: &AccountId) -> Vec<u8> {
	let mut key = Vec::with_capacity(ACCOUNT_LIST_KEY);
	key.push(ACCOUNT_PREFIX);
	key.extend_from_slice(account);
	key
}

/// Ids an account list segment spans (schema 6; 4,096 before). An account submitting in a
/// burst holds dense lists, and each submit or eviction rewrites its segment whole: at
/// 4,096 a segment was up to 24 KiB, and encoding and writing it was a quarter of an
/// evicting submit's time. Shorter spans cost accounts whose statements interleave with
/// others' more segments to edit for the same statements: at 256, expiring 2,000
/// statements of 64 accounts edits about eight segments an account instead of one or two.
/// 1,024 keeps a dense segment at 6 KiB and those edits at two or three.
pub const ACCOUNT_LIST_SPAN: Id = SEGMENT_SPAN / 4;

/// First id of the account list segment holding `id`.
pub fn account_list_base(id: Id) -> Id {
	id - id % ACCOUNT_LIST_SPAN
}

/// Key of the account list holding statement `id` of `account` expiring at `expiry`. Spans
/// [`ACCOUNT_LIST_SPAN`] ids.
pub fn account_list_key(account: &AccountId, expiry: u64, id: Id) -> Vec<u8> {
	let mut key = account_lists(account);
	key.extend_from_slice(&(expiry >> 32).to_be_bytes());
	key.extend_from_slice(&account_list_base(id).to_be_bytes());
	key
}

/// First byte of the [`PostingKey::Expiry`] segments: they sort by second, then by id.
pub const EXPIRY_PREFIX: u8 = 5;

/// Length of an expiry segment's key: prefix, second, segment base.
pub const EXPIRY_SEGMENT_KEY: usize = 1 + 8 + 8;

impl PostingKey {
	/// Byte prefix of this list's segments in [`COL_POSTING`].
	pub fn prefix(&self) -> Vec<u8> {
		let mut out = Vec::with_capacity(33);
		match self {
			PostingKey::All => out.push(4),
			PostingKey::Keyed => out.push(3),
			PostingKey::DecryptionKey(key) => {
				out.push(1);
				out.extend_from_slice(key);
			}
			PostingKey::Topic(topic) => {
				out.push(2);
				out.extend_from_slice(topic);
			}
			PostingKey::Expiry(second) => {
				out.push(EXPIRY_PREFIX);
				out.extend_from_slice(&second.to_be_bytes());
			}
		}
		out
	}

	/// Ids a segment of this list spans: [`SEGMENT_SPAN`], and a sixteenth
	/// of that for the list of all statements and the expiry lists, which hold nearly every
	/// id (all of them, or those of one busy second), where a segment of 4,096 would be
	/// rewritten whole (up to 4 KiB) by each submit.
	pub fn segment_span(&self) -> Id {
		match self {
			PostingKey::All | PostingKey::Expiry(_) => SEGMENT_SPAN / 16,
			_ => SEGMENT_SPAN,
		}
	}

	/// First id of the segment of this list that holds `id`.
	pub fn segment_base(&self, id: Id) -> Id {
		id - id % self.segment_span()
	}

	/// Key of the segment starting at `base`.
	pub fn segment_key(&self, base: Id) -> Vec<u8> {
		let mut out = self.prefix();
		out.extend_from_slice(&base.to_be_bytes());
		out
	}
}

/// First byte of a [`body_value`]. A statement's encoding starts with the compact count of its
/// fields (at most 9: `0x00..=0x24`), so no bare encoding starts with it.
pub const BODY_HASHED: u8 = 0xc5;

/// Bytes of a body value's first byte and check.
pub const BODY_CHECK_LEN: usize = 9;

/// Bytes a [`body_value`] adds to the encoding: its first byte, the check and the hash.
pub const BODY_HASHED_LEN: usize = BODY_CHECK_LEN + 32;

/// The 64-bit fingerprint of a hash, its first 8 bytes big-endian (so that numeric order is
/// byte order); the membership set keeps 58 of its bits, the removal log all 64.
pub fn fingerprint(hash: &Hash) -> u64 {
	u64::from_be_bytes(hash[..8].try_into().expect("8 of 32 bytes"))
}

/// xxh3-64 of an encoding.
pub fn xxh3(encoding: &[u8]) -> u64 {
	twox_hash::xxh3::hash64(encoding)
}

/// A body as stored: [`BODY_HASHED`], then `check` (u64, little-endian) = xxh3-64 of
/// everything after it, then the statement's hash, then its encoding.
///
/// A reader learns from the body itself which statement it is, without hashing it with
/// blake2: one that has the hash compares it (exact), one that has only the id (a query, an
/// expiry walk, a removal) takes it from the body. Either way the check must hold, so a
/// damaged body passes with odds of 2^-64. This is what lets a lookup by hash read the body
/// alone (the membership set gives the id) and a removal or expiry learn the hash it deletes
/// without blake2 or a read of the hash column.
pub fn body_value(hash: &Hash, encoding: &[u8]) -> Vec<u8> {
	let mut value = Vec::with_capacity(BODY_HASHED_LEN + encoding.len());
	value.push(BODY_HASHED);
	value.extend_from_slice(&[0; 8]);
	value.extend_from_slice(hash);
	value.extend_from_slice(encoding);
	let check = xxh3(&value[BODY_CHECK_LEN..]);
	value[1..BODY_CHECK_LEN].copy_from_slice(&check.to_le_bytes());
	value
}

/// A body value as read, split into its encoding and what checks it.
pub enum StoredBody {
	/// A [`body_value`]: the hash it claims to be the body of, the encoding, and whether its
	/// check holds (if not, the body is damaged).
	Hashed { sound: bool, hash: Hash, encoding: Vec<u8> },
	/// An older schema's checked body ([`legacy::BODY_CHECKED`]), until the upgrade rewrites
	/// it: its check, and the encoding.
	Checked { check: u64, encoding: Vec<u8> },
	/// A bare encoding (an older schema's, or damaged in its first byte): only blake2 can
	/// check it.
	Unchecked(Vec<u8>),
}

impl StoredBody {
	/// Split a body value, checking a [`body_value`]'s xxh3 (hashing nothing with blake2).
	pub fn of(mut value: Vec<u8>) -> StoredBody {
		match value.first() {
			Some(&BODY_HASHED) if value.len() >= BODY_HASHED_LEN => {
				let check = u64::from_le_bytes(value[1..BODY_CHECK_LEN].try_into().expect("8"));
				let sound = xxh3(&value[BODY_CHECK_LEN..]) == check;
				let hash = array32(&value[BODY_CHECK_LEN..]).expect("32 bytes");
				value.drain(..BODY_HASHED_LEN);
				StoredBody::Hashed { sound, hash, encoding: value }
			}
			Some(&legacy::BODY_CHECKED) if value.len() >= BODY_CHECK_LEN => {
				let check = u64::from_le_bytes(value[1..BODY_CHECK_LEN].try_into().expect("8"));
				value.drain(..BODY_CHECK_LEN);
				StoredBody::Checked { check, encoding: value }
			}
			_ => StoredBody::Unchecked(value),
		}
	}

	/// The encoding if it is the body of `hash` (by the hash a [`body_value`] holds, by an
	/// older checked body's check, by blake2 for a bare encoding). The store's readers take
	/// only the current form (see `Inner::find`); the tests check every form with this.
	#[cfg(test)]
	pub fn of_hash(self, hash: &Hash) -> Option<Vec<u8>> {
		match self {
			StoredBody::Hashed { sound, hash: claimed, encoding } => {
				(sound && claimed == *hash).then_some(encoding)
			}
			StoredBody::Checked { check, encoding } => {
				(legacy::claimed(check, &encoding) == fingerprint(hash)).then_some(encoding)
			}
			StoredBody::Unchecked(encoding) => {
				(statement_primitives::hash_encoded(&encoding) == *hash).then_some(encoding)
			}
		}
	}

	/// The hash of a sound [`body_value`], read from it; `None` for another body.
	pub fn stored_hash(&self) -> Option<Hash> {
		match self {
			StoredBody::Hashed { sound: true, hash, .. } => Some(*hash),
			_ => None,
		}
	}

	/// The encoding and its hash: the one a sound [`body_value`] holds, else its blake2-256
	/// (so a damaged body gets the hash of what it is now, which no stored statement has).
	pub fn hashed(self) -> (Vec<u8>, Hash) {
		match self {
			StoredBody::Hashed { sound: true, hash, encoding } => (encoding, hash),
			other => {
				let encoding = other.encoding();
				let hash = statement_primitives::hash_encoded(&encoding);
				(encoding, hash)
			}
		}
	}

	/// The encoding, whatever it claims (for callers that check it otherwise).
	pub fn encoding(self) -> Vec<u8> {
		match self {
			StoredBody::Hashed { encoding, .. }
			| StoredBody::Checked { encoding, .. }
			| StoredBody::Unchecked(encoding) => encoding,
		}
	}
}

/// Key of a statement body: the id spread over 32 uniform bytes by a bijective mixer, so that
/// parity-db can index it directly instead of hashing every key on every read.
pub fn body_key(id: Id) -> [u8; 32] {
	let mut key = [0u8; 32];
	let mut state = id;
	for chunk in key.chunks_exact_mut(8) {
		state = splitmix64(state);
		chunk.copy_from_slice(&state.to_le_bytes());
	}
	key
}

/// splitmix64's finaliser: a bijection on u64 that spreads every input bit over the output.
fn splitmix64(x: u64) -> u64 {
	let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
	z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
	z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
	z ^ (z >> 31)
}

/// Key of a journal entry: the id, big-endian, so entries sort by admission.
pub fn id_key(id: Id) -> [u8; 8] {
	id.to_be_bytes()
}

/// Key of an account's channel in [`COL_CHANNEL`].
pub fn channel_key(account: &AccountId, channel: &Channel) -> [u8; 64] {
	let mut key = [0u8; 64];
	key[..32].copy_from_slice(account);
	key[32..].copy_from_slice(channel);
	key
}

/// Key of a ban in [`COL_BAN_ORDER`]: purge time first, so bans purge in order.
pub fn ban_order_key(purge_at: u64, hash: &Hash) -> [u8; 40] {
	let mut key = [0u8; 40];
	key[..8].copy_from_slice(&purge_at.to_be_bytes());
	key[8..].copy_from_slice(hash);
	key
}

/// Read a big-endian u64 at `at` of a key whose length the column guarantees.
pub fn be_u64(key: &[u8], at: usize) -> Option<u64> {
	key.get(at..at + 8).and_then(|bytes| bytes.try_into().ok()).map(u64::from_be_bytes)
}

/// Read the little-endian u64 at the start of a value (hash and channel values start with
/// the id).
pub fn le_u64_prefix(value: &[u8]) -> Option<u64> {
	value.get(..8).and_then(|bytes| bytes.try_into().ok()).map(u64::from_le_bytes)
}

/// Read a 32-byte array from a value whose length the column guarantees.
pub fn array32(bytes: &[u8]) -> Option<[u8; 32]> {
	bytes.get(..32).and_then(|bytes| bytes.try_into().ok())
}

/// A journal entry's id and hash.
pub fn journal_entry(key: &[u8], value: &[u8]) -> Result<(Id, Hash)> {
	match (be_u64(key, 0), array32(value)) {
		(Some(id), Some(hash)) => Ok((id, hash)),
		_ => Err(Error::BadValue { column: COL_JOURNAL, detail: "malformed journal entry".into() }),
	}
}

/// Decode a stored value, naming the column when it does not decode.
pub fn decode_value<T: Decode>(column: ColId, bytes: &[u8]) -> Result<T> {
	T::decode(&mut &bytes[..]).map_err(|err| Error::BadValue { column, detail: err.to_string() })
}

pub mod legacy;
#[cfg(test)]
mod tests;
