//! What schemas 1 to 5 wrote, for the upgrades (`open::migrate`) and `check-db`, which read
//! databases an older build left. The layout this build writes is the parent module's; nothing
//! outside the upgrades, `check-db` and the body reader needs this one.
//!
//! | version | what it wrote that schema 6 does not | upgraded by |
//! |---|---|---|
//! | 1 | a posting list of the statements *without* a decryption key ([`NO_KEY_PREFIX`]) | one commit: the list of statements *with* one ([`super::PostingKey::Keyed`]) replaces it |
//! | 2 | the whole record under each hash in the hash column (~110 bytes, starting with the id); one btree entry a statement in an account index ([`super::COL_ACCOUNT`], [`account_key`]) and in an expiry index ([`super::COL_EXPIRY`], [`expiry_key`]); a journal entry for every statement | 65,536 statements a commit, resumed at the next open after a crash: the id alone under each hash (a longer value is read by its first 8 bytes, so none is rewritten), account lists and expiry lists in the posting column, the list of every stored id, a journal of admissions since the newest membership snapshot only |
//! | 3 | bare encodings as bodies | with 4's |
//! | 4 | bodies behind a 64-bit check of the encoding and the hash's fingerprint ([`BODY_CHECKED`]) | 65,536 bodies a commit: each rewritten as a [`super::body_value`], which also holds its hash, after checking it against what it was stored under (a body found damaged stays damaged) |
//! | 5 | account list segments spanning 4,096 ids ([`super::SEGMENT_SPAN`]) | 65,536 pairs a commit, resumed at the next open: each segment split into segments of [`super::ACCOUNT_LIST_SPAN`] ids; a segment whose ids all lie in its first span is left as it is |
//!
//! A database created by schema 1 or 2 keeps a hash column as its meta column (parity-db
//! requires a column to keep its kind; see [`super::db_options`]).

#[cfg(test)]
use statement_primitives::{AccountId, Hash};

/// Ids, as the current layout's.
#[cfg(test)]
type Id = u64;

/// First byte of the segments of schema 1's list of statements without a decryption key.
pub const NO_KEY_PREFIX: u8 = 0;

/// First byte of a schema 4 body: then xxh3-64 of the encoding XOR the fingerprint of its
/// hash (u64, little-endian), then the encoding.
pub const BODY_CHECKED: u8 = 0xc4;

/// The fingerprint of the hash a schema 4 body claims (the hash's first 8 bytes,
/// big-endian): its check XOR the encoding's xxh3-64.
pub fn claimed(check: u64, encoding: &[u8]) -> u64 {
	check ^ twox_hash::xxh3::hash64(encoding)
}

/// A schema 4 body value; tests write such databases.
#[cfg(test)]
pub fn checked_body_value(hash: &Hash, encoding: &[u8]) -> Vec<u8> {
	let fingerprint = u64::from_be_bytes(hash[..8].try_into().expect("8 of 32 bytes"));
	let mut value = Vec::with_capacity(9 + encoding.len());
	value.push(BODY_CHECKED);
	value.extend_from_slice(&(twox_hash::xxh3::hash64(encoding) ^ fingerprint).to_le_bytes());
	value.extend_from_slice(encoding);
	value
}

/// Key of schema 2's account index: account ++ expiry (BE) ++ id (BE), whose value is the
/// hash; tests build schema 2 databases with it.
#[cfg(test)]
pub fn account_key(account: &AccountId, expiry: u64, id: Id) -> [u8; 48] {
	let mut key = [0u8; 48];
	key[..32].copy_from_slice(account);
	key[32..40].copy_from_slice(&expiry.to_be_bytes());
	key[40..].copy_from_slice(&id.to_be_bytes());
	key
}

/// Key of schema 2's expiry index: expiry (BE) ++ id (BE), whose value is the hash; tests
/// build schema 2 databases with it.
#[cfg(test)]
pub fn expiry_key(expiry: u64, id: Id) -> [u8; 16] {
	let mut key = [0u8; 16];
	key[..8].copy_from_slice(&expiry.to_be_bytes());
	key[8..].copy_from_slice(&id.to_be_bytes());
	key
}
