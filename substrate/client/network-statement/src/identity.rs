//! The node's network identity: an ed25519 key, and the PeerId it gives.
//!
//! The PeerId is derived exactly as libp2p and zombienet derive it, so an orchestrator that
//! picks a node key can compute the node's bootnode address before the node starts.

use crate::Error;
use litep2p::{
	crypto::ed25519::{Keypair, SecretKey},
	PeerId,
};
use std::path::Path;

/// Bytes of an ed25519 secret key.
pub const SECRET_LEN: usize = 32;

/// The keypair of an ed25519 secret.
pub fn keypair(secret: &[u8; SECRET_LEN]) -> Result<Keypair, Error> {
	let secret = SecretKey::try_from_bytes(*secret)
		.map_err(|err| Error::NodeKey(format!("not an ed25519 secret key: {err}")))?;
	Ok(Keypair::from(secret))
}

/// The PeerId of the node with this secret.
pub fn peer_id(secret: &[u8; SECRET_LEN]) -> Result<PeerId, Error> {
	Ok(keypair(secret)?.public().to_peer_id())
}

/// A secret from 64 hex digits (an optional `0x` is allowed), as `--node-key` takes it.
pub fn secret_from_hex(text: &str) -> Result<[u8; SECRET_LEN], Error> {
	let text = text.trim();
	let digits = text.strip_prefix("0x").unwrap_or(text);
	let bytes =
		hex::decode(digits).map_err(|err| Error::NodeKey(format!("`{text}` is not hex: {err}")))?;
	bytes.try_into().map_err(|bytes: Vec<u8>| {
		Error::NodeKey(format!("need 32 bytes (64 hex digits), got {}", bytes.len()))
	})
}

/// The secret in `path`, as Substrate's `--node-key-file` reads it: 32 raw bytes, or 64 hex
/// digits (surrounding whitespace ignored).
pub fn secret_from_file(path: &Path) -> Result<[u8; SECRET_LEN], Error> {
	let bytes = std::fs::read(path).map_err(|source| Error::NodeKeyFile {
		path: path.into(),
		operation: "read",
		source,
	})?;
	if let Ok(raw) = <[u8; SECRET_LEN]>::try_from(bytes.as_slice()) {
		return Ok(raw);
	}
	secret_from_hex(&String::from_utf8_lossy(&bytes))
		.map_err(|err| Error::NodeKey(format!("{}: {err}", path.display())))
}

/// The secret kept in `path`, made (random, readable by the owner only) and kept there the
/// first time, so that the node keeps its PeerId across restarts.
pub fn secret_kept_in(path: &Path) -> Result<[u8; SECRET_LEN], Error> {
	if path.exists() {
		return secret_from_file(path);
	}
	let secret = SecretKey::generate().to_bytes();
	let io = |operation: &'static str| {
		move |source| Error::NodeKeyFile { path: path.into(), operation, source }
	};
	if let Some(dir) = path.parent() {
		std::fs::create_dir_all(dir).map_err(io("create the directory of"))?;
	}
	// Written under another name and renamed, so a crash never leaves half a key.
	let partial = path.with_extension("partial");
	{
		use std::io::Write;
		let mut options = std::fs::OpenOptions::new();
		options.write(true).create(true).truncate(true);
		#[cfg(unix)]
		std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
		let mut file = options.open(&partial).map_err(io("create"))?;
		file.write_all(&secret).map_err(io("write"))?;
		file.sync_all().map_err(io("write"))?;
	}
	std::fs::rename(&partial, path).map_err(io("rename into place"))?;
	Ok(secret)
}

#[cfg(test)]
mod tests {
	use super::*;

	/// zombienet names a node, takes sha256 of the name as its key and computes its PeerId;
	/// this is the vector from zombienet-sdk's own test (`generators/identity.rs`).
	#[test]
	fn zombienets_identity_vector_holds() {
		let secret =
			secret_from_hex("2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90")
				.unwrap();
		assert_eq!(
			peer_id(&secret).unwrap().to_base58(),
			"12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm"
		);
	}

	#[test]
	fn a_kept_key_is_made_once_and_read_back() {
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("network").join("secret_ed25519");
		let first = secret_kept_in(&path).unwrap();
		let again = secret_kept_in(&path).unwrap();
		assert_eq!(first, again);
		assert_eq!(std::fs::read(&path).unwrap(), first);
	}

	#[test]
	fn bad_keys_say_what_is_wrong() {
		assert!(secret_from_hex("zz").unwrap_err().to_string().contains("not hex"));
		assert!(secret_from_hex("00ff").unwrap_err().to_string().contains("got 2"));
		let dir = tempfile::tempdir().unwrap();
		let path = dir.path().join("key");
		std::fs::write(&path, format!("{}\n", "11".repeat(32))).unwrap();
		assert_eq!(secret_from_file(&path).unwrap(), [0x11; 32]);
		std::fs::write(&path, "short").unwrap();
		assert!(secret_from_file(&path).is_err());
	}
}
