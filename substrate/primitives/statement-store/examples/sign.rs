//! Build, sign, encode and verify a statement, then print it as an app would send it.
//!
//! `cargo run -p statement-primitives --example sign -- [SURI] [TOPIC-TEXT] [DATA-TEXT]`
//!
//! SURI is a secret URI such as `//Alice` (the default); the topic is blake2-256 of TOPIC-TEXT.

use sp_core::{sr25519, Pair};
use statement_primitives::{hash_encoded, SignatureVerificationResult, Statement, Topic};
use std::time::{SystemTime, UNIX_EPOCH};

fn main() -> Result<(), String> {
	let mut args = std::env::args().skip(1);
	let suri = args.next().unwrap_or_else(|| "//Alice".into());
	let topic_text = args.next().unwrap_or_else(|| "greetings".into());
	let data = args.next().unwrap_or_else(|| "hello, statement store".into());

	let pair = sr25519::Pair::from_string(&suri, None)
		.map_err(|err| format!("bad secret URI {suri:?}: {err:?}"))?;
	let now = SystemTime::now().duration_since(UNIX_EPOCH).map_err(|err| err.to_string())?;
	let expires = u32::try_from(now.as_secs() + 3600).map_err(|err| err.to_string())?;

	let mut statement = Statement::new();
	statement.set_expiry_from_parts(expires, 0);
	statement.set_topic(0, Topic(sp_crypto_hashing::blake2_256(topic_text.as_bytes())));
	statement.set_plain_data(data.into_bytes());
	statement.sign_sr25519_private(&pair);

	let encoded = statement.encode();
	let decoded = Statement::from_bytes(&encoded).map_err(|err| err.to_string())?;
	let SignatureVerificationResult::Valid(account) = decoded.verify_signature() else {
		return Err("the statement we just signed does not verify".into());
	};
	println!("account:   0x{}", hex::encode(account));
	println!("topic:     0x{}", hex::encode(decoded.topics()[0].0));
	println!("expires:   {expires} (unix seconds)");
	println!("hash:      0x{}", hex::encode(hash_encoded(&encoded)));
	println!("statement: 0x{}", hex::encode(encoded));
	Ok(())
}
