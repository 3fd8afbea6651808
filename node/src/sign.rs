//! `statement-node sign`: build and sign a statement for `statement_submit`.

use crate::{cli::SignCmd, error::Error};
use sp_core::{ed25519, sr25519, Pair};
use statement_primitives::{Statement, Topic, MAX_TOPICS};
use std::time::{SystemTime, UNIX_EPOCH};

/// 32 bytes from `0x`-hex, or blake2-256 of the text.
pub fn bytes32(text: &str) -> Result<[u8; 32], Error> {
	let bad = |detail: String| Error::Bytes32 { text: text.into(), detail };
	if let Some(hex_digits) = text.strip_prefix("0x") {
		let bytes = hex::decode(hex_digits).map_err(|err| bad(err.to_string()))?;
		return bytes
			.try_into()
			.map_err(|bytes: Vec<u8>| bad(format!("need exactly 32 bytes, got {}", bytes.len())));
	}
	Ok(sp_crypto_hashing::blake2_256(text.as_bytes()))
}

/// An ed25519 public key to encrypt to: `0x`-hex only, since text would hash to no real key.
fn ed25519_public(text: &str) -> Result<ed25519::Public, Error> {
	if !text.starts_with("0x") {
		return Err(Error::Bytes32 {
			text: text.into(),
			detail: "--encrypt needs the recipient's ed25519 public key as 0x-hex".into(),
		});
	}
	Ok(ed25519::Public::from_raw(bytes32(text)?))
}

/// The signed statement `cmd` describes.
pub fn build(cmd: &SignCmd) -> Result<Statement, Error> {
	if cmd.topics.len() > MAX_TOPICS {
		return Err(Error::TooManyTopics { given: cmd.topics.len(), max: MAX_TOPICS });
	}
	let pair = sr25519::Pair::from_string(&cmd.suri, None)
		.map_err(|err| Error::Keys { suri: cmd.suri.clone(), detail: format!("{err:?}") })?;
	let now = SystemTime::now()
		.duration_since(UNIX_EPOCH)
		.map_err(|err| Error::Expiry(format!("the system clock is before 1970: {err}")))?;
	// `--expires-in` is any u64, so the sum can overflow before the u32 check sees it.
	let expires = now
		.as_secs()
		.checked_add(cmd.expires_in)
		.and_then(|secs| u32::try_from(secs).ok())
		.ok_or_else(|| Error::Expiry("expiry past the year 2106".into()))?;
	let mut statement = Statement::new();
	statement.set_expiry_from_parts(expires, cmd.sequence);
	for (index, topic) in cmd.topics.iter().enumerate() {
		statement.set_topic(index, Topic(bytes32(topic)?));
	}
	if let Some(channel) = &cmd.channel {
		statement.set_channel(bytes32(channel)?);
	}
	match &cmd.decryption_key {
		Some(key) if cmd.encrypt => {
			let dest = ed25519_public(key)?;
			statement.encrypt(cmd.data.as_bytes(), &dest).map_err(|err| Error::Bytes32 {
				text: key.clone(),
				detail: format!("cannot encrypt to it: {err}"),
			})?;
		}
		Some(key) => {
			statement.set_decryption_key(bytes32(key)?);
			statement.set_plain_data(cmd.data.as_bytes().to_vec());
		}
		None => statement.set_plain_data(cmd.data.as_bytes().to_vec()),
	}
	statement.sign_sr25519_private(&pair);
	Ok(statement)
}

/// Print the statement, its hash and topics, as `sign` does.
pub fn run(cmd: &SignCmd) -> Result<(), Error> {
	let statement = build(cmd)?;
	eprintln!("hash: 0x{}", hex::encode(statement.hash()));
	for topic in statement.topics() {
		eprintln!("topic: 0x{}", hex::encode(topic.0));
	}
	if let Some(key) = statement.decryption_key() {
		let how = if cmd.encrypt { " (data encrypted to it)" } else { "" };
		eprintln!("decryption key: 0x{}{how}", hex::encode(key));
	}
	println!("0x{}", hex::encode(statement.encode()));
	Ok(())
}
