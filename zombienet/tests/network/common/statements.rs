//! Signed statements, made by the node's own `sign` subcommand so that these tests need no
//! cryptography of their own.

use super::{hex, node_binary};
use anyhow::{bail, Context, Result};
use futures::{StreamExt, TryStreamExt};
use tokio::process::Command;

/// `sign` processes run at once by [`sign_all`].
const PARALLEL_SIGNERS: usize = 4;

/// Linux refuses a single argument longer than 128 KiB, so `--data` cannot carry more.
pub const MAX_DATA_BYTES: usize = 127 * 1024;

/// The topic `name` stands for, as `0x`-hex: the workspace's one rule (blake2-256 of the
/// name, as `statement-node sign --topic <text>` reads it).
pub fn topic(name: &str) -> String {
	statement_test_support::topic::named_hex(name)
}

/// What to sign: the arguments of `statement-node sign`.
#[derive(Clone, Debug)]
pub struct Draft {
	suri: String,
	topic: String,
	data: String,
	expires_in: u64,
}

impl Draft {
	/// A statement by `suri` (e.g. `//Alice`) under the topic [`topic`]`(topic_name)`,
	/// expiring in an hour.
	pub fn new(suri: &str, topic_name: &str, data: impl Into<String>) -> Self {
		Draft { suri: suri.into(), topic: topic(topic_name), data: data.into(), expires_in: 3600 }
	}

	/// Expire `seconds` from now. A later expiry is a higher priority when an account is full.
	pub fn expires_in(mut self, seconds: u64) -> Self {
		self.expires_in = seconds;
		self
	}
}

/// A 32-byte account id (an sr25519 public key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountId(pub [u8; 32]);

/// A signed statement as `sign` printed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
	/// The SCALE encoding as `0x`-hex, as `statement_submit` takes it and subscriptions,
	/// queries and dumps return it.
	pub hex: String,
	/// Blake2-256 of the encoding, as `0x`-hex.
	pub hash: String,
}

impl Statement {
	/// The signer, read from the encoding: a field count, field 0 (the proof), variant 0
	/// (sr25519), a 64-byte signature, then the 32-byte public key.
	pub fn signer(&self) -> Result<AccountId> {
		let bytes = hex::decode(&self.hex)?;
		if bytes.len() < 99 || bytes[1] != 0 || bytes[2] != 0 {
			bail!("{} does not start with an sr25519 proof", fingerprint(&self.hex));
		}
		let mut signer = [0u8; 32];
		signer.copy_from_slice(&bytes[67..99]);
		Ok(AccountId(signer))
	}
}

/// A short, unique name for an encoded statement in messages: part of its signature.
pub fn fingerprint(hex: &str) -> &str {
	hex.get(8..24).unwrap_or(hex)
}

/// Sign `draft` with `statement-node sign`.
pub async fn sign(draft: &Draft) -> Result<Statement> {
	let output = Command::new(node_binary()?)
		.arg("sign")
		.args(["--suri", &draft.suri, "--topic", &draft.topic, "--data", &draft.data])
		.args(["--expires-in", &draft.expires_in.to_string()])
		.output()
		.await
		.context("cannot run statement-node sign")?;
	if !output.status.success() {
		bail!("statement-node sign failed: {}", String::from_utf8_lossy(&output.stderr));
	}
	let hex = String::from_utf8(output.stdout).context("sign printed non-UTF-8")?;
	let stderr = String::from_utf8_lossy(&output.stderr);
	let hash = stderr
		.lines()
		.find_map(|line| line.strip_prefix("hash: "))
		.context("sign printed no `hash:` line")?;
	Ok(Statement { hex: hex.trim().into(), hash: hash.trim().into() })
}

/// Sign every draft, a few at a time, in order.
pub async fn sign_all(drafts: impl IntoIterator<Item = Draft>) -> Result<Vec<Statement>> {
	futures::stream::iter(drafts)
		.map(|draft| async move { sign(&draft).await })
		.buffered(PARALLEL_SIGNERS)
		.try_collect()
		.await
}

/// The account `suri` signs as.
pub async fn account_of(suri: &str) -> Result<AccountId> {
	sign(&Draft::new(suri, "account", "")).await?.signer()
}
