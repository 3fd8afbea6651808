//! The node's keystore: the ed25519 statement keys that `statement_postedClear` decrypts with.
//!
//! On disk it is Substrate's `LocalKeystore` layout, so that keys, tools and habits carry over:
//! one file per key in one directory (by default `<base path>/chains/<chain id>/keystore`),
//! named `hex(key type) ++ hex(public key)` in lower-case hex without `0x`, holding the secret
//! URI (a phrase, a `0x` seed, or either with `//derivations`) as a JSON string. Statement keys
//! have key type `stmt` (`73746d74`), as upstream's statement store app crypto does. The
//! directory is made, mode 0700, when the first key is written; key files are mode 0600 and
//! written whole before they are renamed into place, so a crash never leaves half a key.
//!
//! Keys are read once and kept in memory. At start every `stmt` file is read; later a
//! statement key not yet known is looked for in its file, so a key file copied in while the
//! node runs is used too. A file that cannot be read as a key is skipped with one warning
//! (again only if it changes), never an error for the whole call. `--dev` adds the dev
//! accounts' statement keys (//Alice .. //Ferdie, ed25519) in memory only.
//!
//! As `statement_store::Decryptor` it opens data posted to a key it holds; data for another
//! key, or that does not decrypt, is `None`, which the store skips.

use crate::error::Error;
use parking_lot::{Mutex, RwLock};
use sp_core::{
	crypto::{key_types, KeyTypeId},
	ed25519, Pair,
};
use statement_primitives::{ecies, DecryptionKey};
use std::{
	collections::HashMap,
	io::Write,
	path::{Path, PathBuf},
	time::SystemTime,
};

/// Key type of statement keys: `stmt`, upstream's `key_types::STATEMENT`.
pub const STATEMENT: KeyTypeId = key_types::STATEMENT;

/// The keystore directory of chain `chain_id` under `base`, as Substrate places it.
pub fn default_path(base: &Path, chain_id: &str) -> PathBuf {
	base.join("chains").join(chain_id).join("keystore")
}

/// File name of a key: `hex(key type) ++ hex(public)`.
pub fn file_name(key_type: KeyTypeId, public: &[u8]) -> String {
	format!("{}{}", hex::encode(key_type.0), hex::encode(public))
}

/// An ed25519 statement key with the secret URI it came from, as `author_insertKey` takes it.
pub struct StatementKey {
	suri: String,
	pair: ed25519::Pair,
}

impl StatementKey {
	/// The key `suri` gives, `None` if it is not an ed25519 secret URI.
	pub fn from_suri(suri: &str) -> Option<StatementKey> {
		let pair = ed25519::Pair::from_string(suri, None).ok()?;
		Some(StatementKey { suri: suri.to_string(), pair })
	}

	/// Its public key: the decryption key statements posted to it carry.
	pub fn public(&self) -> [u8; 32] {
		self.pair.public().0
	}
}

/// Why a key file was not used; said once in the log.
enum Unusable {
	/// Not there.
	Missing,
	/// There, but not a key (the reason), or unreadable.
	Malformed(String),
	/// A valid secret URI of another ed25519 key: most likely an sr25519 or ecdsa statement key,
	/// which upstream files under the same key type; not an error, but not for decryption.
	NotEd25519,
}

/// Statement keys by public key, and the directory that keeps them.
pub struct Keystore {
	dir: PathBuf,
	pairs: RwLock<HashMap<DecryptionKey, ed25519::Pair>>,
	/// Files found unusable, with their modification time, so each is reported once.
	unusable: Mutex<HashMap<PathBuf, Option<SystemTime>>>,
}

impl Keystore {
	/// The keystore in `dir` (which need not exist yet), with every statement key file read;
	/// `dev` adds the dev accounts' keys in memory.
	pub fn open(dir: PathBuf, dev: bool) -> Result<Keystore, Error> {
		let keystore = Keystore {
			dir,
			pairs: RwLock::new(HashMap::new()),
			unusable: Mutex::new(HashMap::new()),
		};
		if dev {
			let mut pairs = keystore.pairs.write();
			for name in statement_primitives::dev::DEV_ACCOUNTS {
				if let Some(key) = StatementKey::from_suri(&statement_primitives::dev::suri(name)) {
					pairs.insert(key.public(), key.pair);
				}
			}
		}
		let entries = match std::fs::read_dir(&keystore.dir) {
			Ok(entries) => entries,
			Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(keystore),
			Err(source) => {
				return Err(Error::Io {
					operation: "read the keystore",
					path: keystore.dir.clone(),
					source,
				})
			}
		};
		for entry in entries.flatten() {
			let name = entry.file_name();
			if let Some(public) = name.to_str().and_then(statement_public_of) {
				keystore.load(&public);
			}
		}
		for warning in loose_permissions(&keystore.dir) {
			log::warn!("{warning}");
		}
		Ok(keystore)
	}

	/// The directory.
	pub fn path(&self) -> &Path {
		&self.dir
	}

	/// Statement keys held (dev keys included).
	pub fn statement_keys(&self) -> usize {
		self.pairs.read().len()
	}

	/// The statement key whose public key is `public`: from memory, else from its file.
	pub fn statement_pair(&self, public: &DecryptionKey) -> Option<ed25519::Pair> {
		if let Some(pair) = self.pairs.read().get(public) {
			return Some(*pair);
		}
		self.load(public)
	}

	/// Whether a key of `key_type` with `public` is held (`author_hasKey`).
	pub fn has_key(&self, key_type: KeyTypeId, public: &[u8]) -> bool {
		if key_type == STATEMENT {
			if let Ok(public) = <DecryptionKey>::try_from(public) {
				return self.statement_pair(&public).is_some();
			}
		}
		// Other keys are kept for Substrate's tools, as Substrate does: held if the file holds
		// a secret URI.
		std::fs::read(self.dir.join(file_name(key_type, public)))
			.is_ok_and(|bytes| serde_json::from_slice::<String>(&bytes).is_ok())
	}

	/// Keep a statement key: written to its file, and used at once.
	pub fn insert_statement_key(&self, key: StatementKey) -> Result<(), Error> {
		self.write_file(STATEMENT, &key.public(), &key.suri)?;
		self.unusable.lock().remove(&self.dir.join(file_name(STATEMENT, &key.public())));
		self.pairs.write().insert(key.public(), key.pair);
		Ok(())
	}

	/// Keep a key of another type, unchecked, as Substrate does: this node does not use it.
	pub fn insert_other(
		&self,
		key_type: KeyTypeId,
		suri: &str,
		public: &[u8],
	) -> Result<(), Error> {
		self.write_file(key_type, public, suri)
	}

	/// Read the statement key file of `public` into memory, reporting it once if unusable.
	fn load(&self, public: &DecryptionKey) -> Option<ed25519::Pair> {
		let path = self.dir.join(file_name(STATEMENT, public));
		let modified = std::fs::metadata(&path).and_then(|meta| meta.modified()).ok();
		if self.unusable.lock().get(&path).is_some_and(|seen| *seen == modified) {
			return None;
		}
		match read_statement_file(&path, public) {
			Ok(pair) => {
				self.pairs.write().insert(*public, pair);
				Some(pair)
			}
			Err(Unusable::Missing) => None,
			Err(unusable) => {
				match unusable {
					Unusable::Malformed(why) => {
						log::warn!("Keystore: skipping {}: {why}", path.display())
					}
					_ => log::debug!(
						"Keystore: {} is not an ed25519 statement key (sr25519 or ecdsa?); \
						 it is not used to decrypt",
						path.display()
					),
				}
				self.unusable.lock().insert(path, modified);
				None
			}
		}
	}

	/// Write a key file whole (0600), then rename it into place, making the directory (0700)
	/// if needed.
	fn write_file(&self, key_type: KeyTypeId, public: &[u8], suri: &str) -> Result<(), Error> {
		let io = |operation, path: &Path| {
			let path = path.to_path_buf();
			move |source| Error::Io { operation, path, source }
		};
		let mut dirs = std::fs::DirBuilder::new();
		dirs.recursive(true);
		#[cfg(unix)]
		std::os::unix::fs::DirBuilderExt::mode(&mut dirs, 0o700);
		dirs.create(&self.dir).map_err(io("create the keystore", &self.dir))?;
		let name = file_name(key_type, public);
		let path = self.dir.join(&name);
		// Not hex, so never read as a key if a crash leaves it behind.
		let partial = self.dir.join(format!(".{name}.partial"));
		let mut options = std::fs::OpenOptions::new();
		options.write(true).create(true).truncate(true);
		#[cfg(unix)]
		std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
		let mut file = options.open(&partial).map_err(io("create the key file", &partial))?;
		let json = serde_json::to_string(suri).map_err(std::io::Error::other);
		json.and_then(|json| file.write_all(json.as_bytes()))
			.and_then(|()| file.sync_all())
			.map_err(io("write the key file", &partial))?;
		std::fs::rename(&partial, &path).map_err(io("put in place the key file", &path))
	}
}

/// What in the keystore `dir` others than its owner may read or change: the directory
/// itself, or a key file (secret keys). The node writes 0700 and 0600; a directory made
/// before, or a file copied in, may be looser. One line each, naming the fix.
pub fn loose_permissions(dir: &Path) -> Vec<String> {
	#[cfg(unix)]
	{
		use std::os::unix::fs::PermissionsExt;
		let loose = |path: &Path| {
			let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
			(mode & 0o077 != 0).then_some(mode)
		};
		let mut found = Vec::new();
		if let Some(mode) = loose(dir) {
			found.push(format!(
				"the keystore {} is open to other users (mode {mode:04o}): run `chmod 700` on it",
				dir.display()
			));
		}
		for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
			let path = entry.path();
			if !path.is_file() {
				continue;
			}
			if let Some(mode) = loose(&path) {
				found.push(format!(
					"the key file {} is open to other users (mode {mode:04o}): it holds a \
					 secret key; run `chmod 600` on it",
					path.display()
				));
			}
		}
		found
	}
	#[cfg(not(unix))]
	{
		let _ = dir;
		Vec::new()
	}
}

impl statement_store::Decryptor for Keystore {
	fn decrypt(&self, key: &DecryptionKey, data: &[u8]) -> Option<Vec<u8>> {
		let pair = self.statement_pair(key)?;
		ecies::decrypt_ed25519(&pair.seed(), data)
			.map_err(|err| log::debug!("posted data for 0x{} skipped: {err}", hex::encode(key)))
			.ok()
	}
}

/// The public key in a statement key file's name, `None` for any other file.
fn statement_public_of(name: &str) -> Option<DecryptionKey> {
	let bytes = hex::decode(name).ok()?;
	let (key_type, public) = bytes.split_at_checked(4)?;
	if key_type != STATEMENT.0 {
		return None;
	}
	public.try_into().ok()
}

/// The ed25519 pair of the statement key file `path`, named for `public`.
fn read_statement_file(path: &Path, public: &DecryptionKey) -> Result<ed25519::Pair, Unusable> {
	let bytes = match std::fs::read(path) {
		Ok(bytes) => bytes,
		Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
		Err(err) => return Err(Unusable::Malformed(format!("cannot read it: {err}"))),
	};
	let suri: String = serde_json::from_slice(&bytes)
		.map_err(|_| Unusable::Malformed("not a JSON string holding a secret URI".into()))?;
	let pair = ed25519::Pair::from_string(&suri, None)
		.map_err(|_| Unusable::Malformed("does not hold a valid secret URI".into()))?;
	if pair.public().0 != *public {
		return Err(Unusable::NotEd25519);
	}
	Ok(pair)
}

#[cfg(test)]
mod tests {
	use super::*;
	use statement_store::Decryptor;

	fn write(dir: &Path, name: &str, content: &str) {
		std::fs::write(dir.join(name), content).unwrap();
	}

	fn key(suri: &str) -> StatementKey {
		StatementKey::from_suri(suri).unwrap()
	}

	#[test]
	fn a_key_file_written_the_substrate_way_is_read() {
		let dir = tempfile::tempdir().unwrap();
		// As `subkey`/Substrate write one: a phrase, and a 0x seed, each as a JSON string.
		let phrase = "bottom drive obey lake curtain smoke basket hold race lonely fit walk";
		let from_phrase = key(phrase).public();
		write(
			dir.path(),
			&format!("73746d74{}", hex::encode(from_phrase)),
			&format!("\"{phrase}\""),
		);
		let seed = "0x3d97c819d68f9bafa7d6e79cb991eebcd77d966c5334c0b94d9e1fa7ad0869dc";
		let from_seed = key(seed).public();
		write(dir.path(), &file_name(STATEMENT, &from_seed), &format!("\"{seed}\""));

		let keystore = Keystore::open(dir.path().into(), false).unwrap();
		assert_eq!(keystore.statement_keys(), 2);
		assert!(keystore.has_key(STATEMENT, &from_phrase));
		assert!(keystore.has_key(STATEMENT, &from_seed));
		let sealed = ecies::encrypt_ed25519(&ed25519::Public::from_raw(from_seed), b"hi").unwrap();
		assert_eq!(keystore.decrypt(&from_seed, &sealed), Some(b"hi".to_vec()));
		assert_eq!(keystore.decrypt(&from_phrase, &sealed), None, "another key's data");
	}

	#[test]
	fn an_inserted_key_is_written_as_substrate_writes_it_and_read_back() {
		let dir = tempfile::tempdir().unwrap();
		let keystore_dir = dir.path().join("chains/local/keystore");
		let keystore = Keystore::open(keystore_dir.clone(), false).unwrap();
		assert!(!keystore_dir.exists(), "made only when a key is written");
		let public = key("//Insert").public();
		keystore.insert_statement_key(key("//Insert")).unwrap();
		let file = keystore_dir.join(format!("73746d74{}", hex::encode(public)));
		assert_eq!(std::fs::read_to_string(&file).unwrap(), "\"//Insert\"");
		#[cfg(unix)]
		{
			use std::os::unix::fs::PermissionsExt;
			let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
			assert_eq!(mode(&file), 0o600);
			assert_eq!(mode(&keystore_dir), 0o700);
		}
		assert_eq!(std::fs::read_dir(&keystore_dir).unwrap().count(), 1, "no partial file left");
		let reopened = Keystore::open(keystore_dir, false).unwrap();
		assert!(reopened.has_key(STATEMENT, &public));
	}

	#[cfg(unix)]
	#[test]
	fn a_keystore_open_to_other_users_is_named_with_the_fix() {
		use std::os::unix::fs::PermissionsExt;
		let dir = tempfile::tempdir().unwrap();
		let keystore_dir = dir.path().join("keystore");
		let keystore = Keystore::open(keystore_dir.clone(), false).unwrap();
		keystore.insert_statement_key(key("//Loose")).unwrap();
		assert!(loose_permissions(&keystore_dir).is_empty(), "the node writes 0700 and 0600");
		std::fs::set_permissions(&keystore_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
		let file = std::fs::read_dir(&keystore_dir).unwrap().next().unwrap().unwrap().path();
		std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
		let found = loose_permissions(&keystore_dir);
		assert_eq!(found.len(), 2, "{found:?}");
		assert!(found[0].contains("mode 0777") && found[0].contains("chmod 700"), "{found:?}");
		assert!(found[1].contains("mode 0644") && found[1].contains("chmod 600"), "{found:?}");
	}

	#[test]
	fn malformed_files_are_skipped_and_the_good_ones_still_used() {
		let dir = tempfile::tempdir().unwrap();
		let good = key("//Good").public();
		write(dir.path(), &file_name(STATEMENT, &good), "\"//Good\"");
		let not_json = key("//NotJson").public();
		write(dir.path(), &file_name(STATEMENT, &not_json), "//NotJson");
		let bad_suri = key("//BadSuri").public();
		write(dir.path(), &file_name(STATEMENT, &bad_suri), "\"not a secret uri at all\"");
		let misnamed = key("//Misnamed").public();
		write(dir.path(), &file_name(STATEMENT, &misnamed), "\"//SomeoneElse\"");
		write(dir.path(), "73746d74abcd", "\"//Short\"");
		write(dir.path(), "README", "not a key");
		std::fs::create_dir(dir.path().join(file_name(STATEMENT, &[9; 32]))).unwrap();

		let keystore = Keystore::open(dir.path().into(), false).unwrap();
		assert_eq!(keystore.statement_keys(), 1);
		assert!(keystore.has_key(STATEMENT, &good));
		for skipped in [not_json, bad_suri, misnamed, [9; 32]] {
			assert!(!keystore.has_key(STATEMENT, &skipped));
			assert_eq!(keystore.decrypt(&skipped, &[0; 80]), None);
		}
	}

	#[test]
	fn a_key_file_added_while_running_is_found_and_a_fixed_one_reread() {
		let dir = tempfile::tempdir().unwrap();
		let keystore = Keystore::open(dir.path().into(), false).unwrap();
		let public = key("//Later").public();
		assert!(!keystore.has_key(STATEMENT, &public));
		let path = dir.path().join(file_name(STATEMENT, &public));
		std::fs::write(&path, "broken").unwrap();
		assert!(!keystore.has_key(STATEMENT, &public));
		std::fs::write(&path, "\"//Later\"").unwrap();
		// A coarse clock may give both writes one modification time.
		let later = SystemTime::now() + std::time::Duration::from_secs(5);
		std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
		assert!(keystore.has_key(STATEMENT, &public));
	}

	#[test]
	fn dev_keys_are_held_in_memory_only() {
		let dir = tempfile::tempdir().unwrap();
		let keystore = Keystore::open(dir.path().join("keystore"), true).unwrap();
		assert_eq!(keystore.statement_keys(), statement_primitives::dev::DEV_ACCOUNTS.len());
		let alice = ed25519::Pair::from_string("//Alice", None).unwrap().public();
		assert!(keystore.has_key(STATEMENT, &alice.0));
		assert!(!keystore.has_key(KeyTypeId(*b"babe"), &alice.0), "only as statement keys");
		assert!(!dir.path().join("keystore").exists());
		let sealed = ecies::encrypt_ed25519(&alice, b"to alice").unwrap();
		assert_eq!(keystore.decrypt(&alice.0, &sealed), Some(b"to alice".to_vec()));
		assert_eq!(keystore.decrypt(&alice.0, &sealed[..40]), None, "undecryptable: skipped");
	}

	#[test]
	fn keys_of_other_types_are_kept_as_files_like_substrate() {
		let dir = tempfile::tempdir().unwrap();
		let keystore = Keystore::open(dir.path().into(), false).unwrap();
		let babe = KeyTypeId(*b"babe");
		keystore.insert_other(babe, "//Alice", &[1, 2, 3]).unwrap();
		assert!(keystore.has_key(babe, &[1, 2, 3]));
		assert!(!keystore.has_key(babe, &[1, 2, 4]));
		assert!(dir.path().join("62616265010203").is_file());
		assert_eq!(keystore.statement_keys(), 0);
	}
}
