//! `statement_postedClear` through a polkadot-sdk node's keystore: the statement keys
//! (`sp_statement_store::ed25519`, key type `stmt`) it holds decrypt what was sealed to them.

use sc_keystore::LocalKeystore;
use statement_primitives::{ecies, DecryptionKey};
use std::sync::Arc;

/// Our store's [`statement_store::Decryptor`] over a [`LocalKeystore`].
pub struct KeystoreDecryptor(pub Arc<LocalKeystore>);

impl statement_store::Decryptor for KeystoreDecryptor {
	fn decrypt(&self, key: &DecryptionKey, data: &[u8]) -> Option<Vec<u8>> {
		let public: sp_statement_store::ed25519::Public =
			sp_core::ed25519::Public::from_raw(*key).into();
		let pair = match self.0.key_pair::<sp_statement_store::ed25519::Pair>(&public) {
			Ok(Some(pair)) => pair,
			Ok(None) => return None,
			Err(err) => {
				log::debug!(target: "statement-store", "keystore error for 0x{}: {err}", hex::encode(key));
				return None;
			}
		};
		ecies::decrypt_ed25519(&pair.into_inner().seed(), data)
			.map_err(
				|err| log::debug!(target: "statement-store", "posted data for 0x{} skipped: {err}", hex::encode(key)),
			)
			.ok()
	}
}
