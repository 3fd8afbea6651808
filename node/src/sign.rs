//! `statement-node sign`: build and sign a statement for `statement_submit`.

use crate::cli::SignCmd;
use sp_core::{sr25519, Pair};
use statement_primitives::{Statement, Topic, MAX_TOPICS};
use std::time::{SystemTime, UNIX_EPOCH};

/// 32 bytes from `0x`-hex, or blake2-256 of the text.
pub fn bytes32(text: &str) -> Result<[u8; 32], String> {
	if let Some(hex_digits) = text.strip_prefix("0x") {
		let bytes = hex::decode(hex_digits).map_err(|err| format!("{text}: {err}"))?;
		return bytes.try_into().map_err(|_| format!("{text}: need exactly 32 bytes"));
	}
	Ok(sp_crypto_hashing::blake2_256(text.as_bytes()))
}

/// The signed statement `cmd` describes.
pub fn build(cmd: &SignCmd) -> Result<Statement, String> {
	if cmd.topics.len() > MAX_TOPICS {
		return Err(format!("{} topics given, at most {MAX_TOPICS}", cmd.topics.len()));
	}
	let pair = sr25519::Pair::from_string(&cmd.suri, None)
		.map_err(|err| format!("bad secret URI {:?}: {err:?}", cmd.suri))?;
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|err| err.to_string())?;
	let expires = u32::try_from(now.as_secs() + cmd.expires_in)
		.map_err(|_| "expiry past the year 2106".to_string())?;
	let mut statement = Statement::new();
	statement.set_expiry_from_parts(expires, cmd.sequence);
	for (index, topic) in cmd.topics.iter().enumerate() {
		statement.set_topic(index, Topic(bytes32(topic)?));
	}
	if let Some(channel) = &cmd.channel {
		statement.set_channel(bytes32(channel)?);
	}
	if let Some(key) = &cmd.decryption_key {
		statement.set_decryption_key(bytes32(key)?);
	}
	statement.set_plain_data(cmd.data.as_bytes().to_vec());
	statement.sign_sr25519_private(&pair);
	Ok(statement)
}

/// Print the statement, its hash and topics, as `sign` does.
pub fn run(cmd: &SignCmd) -> Result<(), String> {
	let statement = build(cmd)?;
	eprintln!("hash: 0x{}", hex::encode(statement.hash()));
	for topic in statement.topics() {
		eprintln!("topic: 0x{}", hex::encode(topic.0));
	}
	println!("0x{}", hex::encode(statement.encode()));
	Ok(())
}
