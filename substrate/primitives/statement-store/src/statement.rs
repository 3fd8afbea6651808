//! The statement: what it carries, how it is signed and checked.

use crate::{
	hash_encoded, AccountId, Channel, DecryptionKey, Hash, Proof, SignatureVerificationResult,
	Topic, MAX_TOPICS,
};
use sp_core::{ecdsa, ed25519, sr25519};

/// A signed, expiring off-chain message with up to four topics.
///
/// Build one with the setters, sign it with one of the `sign_*` methods, and send
/// [`Statement::encode`]'s bytes. The wire form is described in the crate docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Statement {
	pub(crate) proof: Option<Proof>,
	pub(crate) decryption_key: Option<DecryptionKey>,
	pub(crate) expiry: u64,
	pub(crate) channel: Option<Channel>,
	pub(crate) num_topics: u8,
	pub(crate) topics: [Topic; MAX_TOPICS],
	pub(crate) data: Option<Vec<u8>>,
}

impl Statement {
	/// An empty, unsigned statement with expiry 0.
	pub fn new() -> Self {
		Self::default()
	}

	/// The proof, if the statement is signed.
	pub fn proof(&self) -> Option<&Proof> {
		self.proof.as_ref()
	}

	/// The account the statement is charged to, if it carries a proof (valid or not).
	pub fn account_id(&self) -> Option<AccountId> {
		self.proof.as_ref().map(Proof::account_id)
	}

	/// Id of the key the data is encrypted to; `None` for a broadcast.
	pub fn decryption_key(&self) -> Option<DecryptionKey> {
		self.decryption_key
	}

	/// Expiry: high 32 bits unix seconds, low 32 bits a sequence. Higher means kept longer.
	pub fn expiry(&self) -> u64 {
		self.expiry
	}

	/// Unix second after which the statement is dropped (the expiry's high 32 bits).
	pub fn expiration_timestamp_secs(&self) -> u32 {
		(self.expiry >> 32) as u32
	}

	/// Sequence number ordering statements of the same expiration second (the low 32 bits).
	pub fn expiry_sequence(&self) -> u32 {
		self.expiry as u32
	}

	/// The channel, if any: an account keeps one statement per channel.
	pub fn channel(&self) -> Option<Channel> {
		self.channel
	}

	/// The topics, in order (0 to 4 of them).
	pub fn topics(&self) -> &[Topic] {
		&self.topics[..self.num_topics as usize]
	}

	/// Topic number `index` (0-based), if present.
	pub fn topic(&self, index: usize) -> Option<Topic> {
		self.topics().get(index).copied()
	}

	/// The data, if the statement carries a data field (possibly empty).
	pub fn data(&self) -> Option<&[u8]> {
		self.data.as_deref()
	}

	/// Length of the data, 0 without a data field: what allowances count.
	pub fn data_len(&self) -> usize {
		self.data.as_ref().map_or(0, Vec::len)
	}

	/// Take the data out of the statement.
	pub fn into_data(self) -> Option<Vec<u8>> {
		self.data
	}

	/// Set (or replace) the proof.
	pub fn set_proof(&mut self, proof: Proof) {
		self.proof = Some(proof);
	}

	/// Drop the proof.
	pub fn remove_proof(&mut self) {
		self.proof = None;
	}

	/// Set the decryption key id, making this a "posted" statement for that key.
	pub fn set_decryption_key(&mut self, key: DecryptionKey) {
		self.decryption_key = Some(key);
	}

	/// Set the expiry.
	pub fn set_expiry(&mut self, expiry: u64) {
		self.expiry = expiry;
	}

	/// Set the expiry from its two halves.
	pub fn set_expiry_from_parts(&mut self, expiration_timestamp_secs: u32, sequence: u32) {
		self.expiry = (u64::from(expiration_timestamp_secs) << 32) | u64::from(sequence);
	}

	/// Set the channel.
	pub fn set_channel(&mut self, channel: Channel) {
		self.channel = Some(channel);
	}

	/// Set topic number `index` (0-based). Indexes of 4 and above are ignored, as upstream
	/// does; setting a later topic first leaves the earlier ones zero.
	pub fn set_topic(&mut self, index: usize, topic: Topic) {
		place_topic(&mut self.topics, &mut self.num_topics, index, topic);
	}

	/// Set the data in the clear.
	pub fn set_plain_data(&mut self, data: Vec<u8>) {
		self.data = Some(data);
	}

	/// Encrypt `data` to `dest` (ECIES, see [`crate::ecies`]) and make the statement posted to
	/// that key: the decryption key becomes `dest` and the data the ciphertext.
	pub fn encrypt(&mut self, data: &[u8], dest: &ed25519::Public) -> crate::Result<()> {
		let sealed = crate::ecies::encrypt_ed25519(dest, data)?;
		self.decryption_key = Some(dest.0);
		self.data = Some(sealed);
		Ok(())
	}

	/// The data decrypted with `pair`, `None` without a data field.
	pub fn decrypt_private(&self, pair: &ed25519::Pair) -> crate::Result<Option<Vec<u8>>> {
		self.data().map(|data| crate::ecies::decrypt_ed25519(&pair.seed(), data)).transpose()
	}

	/// blake2-256 of the encoding: the statement's identity in the store and on the wire.
	pub fn hash(&self) -> Hash {
		hash_encoded(&self.encode())
	}

	/// Sign with an sr25519 key, replacing any proof.
	pub fn sign_sr25519_private(&mut self, pair: &sr25519::Pair) {
		self.proof = Some(Proof::sign_sr25519(pair, &self.signature_material()));
	}

	/// Sign with an ed25519 key, replacing any proof.
	pub fn sign_ed25519_private(&mut self, pair: &ed25519::Pair) {
		self.proof = Some(Proof::sign_ed25519(pair, &self.signature_material()));
	}

	/// Sign with a secp256k1 ecdsa key, replacing any proof.
	pub fn sign_ecdsa_private(&mut self, pair: &ecdsa::Pair) {
		self.proof = Some(Proof::sign_ecdsa(pair, &self.signature_material()));
	}

	/// Check the proof against the statement's signed bytes.
	pub fn verify_signature(&self) -> SignatureVerificationResult {
		match &self.proof {
			None => SignatureVerificationResult::NoSignature,
			Some(proof) if proof.verify(&self.signature_material()) => {
				SignatureVerificationResult::Valid(proof.account_id())
			}
			Some(_) => SignatureVerificationResult::Invalid,
		}
	}
}

/// Put `topic` at `index` of `topics`, of which the first `count` are in use, as
/// [`Statement::set_topic`] describes (shared with the wire format's `Fields`).
pub(crate) fn place_topic(
	topics: &mut [Topic; MAX_TOPICS],
	count: &mut u8,
	index: usize,
	topic: Topic,
) {
	if index < MAX_TOPICS {
		topics[index] = topic;
		*count = (*count).max(index as u8 + 1);
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use sp_core::Pair;

	fn sample() -> Statement {
		crate::testing::TestStatement::new()
			.expiry(2_000_000_000, 7)
			.topics(&[Topic([1; 32]), Topic([2; 32])])
			.channel([3; 32])
			.data(vec![1, 2, 3])
			.unsigned()
	}

	#[test]
	fn each_scheme_signs_and_verifies_with_its_account() {
		let sr = sr25519::Pair::from_string("//Alice", None).unwrap();
		let ed = ed25519::Pair::from_string("//Alice", None).unwrap();
		let ec = ecdsa::Pair::from_string("//Alice", None).unwrap();
		let mut statement = sample();

		statement.sign_sr25519_private(&sr);
		assert_eq!(statement.verify_signature(), SignatureVerificationResult::Valid(sr.public().0));
		statement.sign_ed25519_private(&ed);
		assert_eq!(statement.verify_signature(), SignatureVerificationResult::Valid(ed.public().0));
		statement.sign_ecdsa_private(&ec);
		let ecdsa_account = sp_crypto_hashing::blake2_256(&ec.public().0);
		assert_eq!(statement.verify_signature(), SignatureVerificationResult::Valid(ecdsa_account));
		assert_eq!(statement.account_id(), Some(ecdsa_account));
	}

	#[test]
	fn changing_any_signed_field_breaks_the_signature() {
		let pair = ed25519::Pair::from_string("//Bob", None).unwrap();
		let mut signed = sample();
		signed.sign_ed25519_private(&pair);
		let edits: [fn(&mut Statement); 5] = [
			|s| s.set_expiry(s.expiry() + 1),
			|s| s.set_topic(2, Topic([9; 32])),
			|s| s.set_channel([4; 32]),
			|s| s.set_decryption_key([5; 32]),
			|s| s.set_plain_data(vec![1, 2, 4]),
		];
		for edit in edits {
			let mut tampered = signed.clone();
			edit(&mut tampered);
			assert_eq!(tampered.verify_signature(), SignatureVerificationResult::Invalid);
		}
	}

	#[test]
	fn encrypt_posts_to_the_key_and_only_its_pair_decrypts() {
		let alice = ed25519::Pair::from_string("//Alice", None).unwrap();
		let bob = ed25519::Pair::from_string("//Bob", None).unwrap();
		let mut statement = sample();
		statement.encrypt(b"secret", &alice.public()).unwrap();
		assert_eq!(statement.decryption_key(), Some(alice.public().0));
		assert_ne!(statement.data(), Some(&b"secret"[..]));
		assert_eq!(statement.decrypt_private(&alice).unwrap(), Some(b"secret".to_vec()));
		assert_eq!(statement.decrypt_private(&bob), Err(crate::Error::DecryptionFailed));
		assert_eq!(Statement::new().decrypt_private(&alice), Ok(None));
	}

	#[test]
	fn unsigned_statement_has_no_signature_and_no_account() {
		assert_eq!(sample().verify_signature(), SignatureVerificationResult::NoSignature);
		assert_eq!(sample().account_id(), None);
	}

	#[test]
	fn expiry_parts_split_high_and_low_halves() {
		let statement = sample();
		assert_eq!(statement.expiration_timestamp_secs(), 2_000_000_000);
		assert_eq!(statement.expiry_sequence(), 7);
		assert_eq!(statement.expiry(), (2_000_000_000u64 << 32) | 7);
	}

	#[test]
	fn topics_beyond_four_are_ignored() {
		let mut statement = Statement::new();
		statement.set_topic(4, Topic([1; 32]));
		assert!(statement.topics().is_empty());
		statement.set_topic(2, Topic([1; 32]));
		assert_eq!(statement.topics(), &[Topic([0; 32]), Topic([0; 32]), Topic([1; 32])]);
	}
}
