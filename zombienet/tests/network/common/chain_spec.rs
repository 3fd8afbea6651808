//! The raw chain spec every network starts from, `statement-node build-spec --chain local
//! --disable-default-bootnode --raw`, and the allowances in its genesis storage.

use super::{hex, AccountId};
use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;
use std::path::Path;

/// Prefix of an account's allowance key in genesis storage; the account id follows.
const ALLOWANCE_PREFIX: &[u8] = b":statement_allowance:";

/// What an account may keep: statements and data bytes. Stored as two little-endian `u32`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowance {
	/// Most statements.
	pub max_count: u32,
	/// Most data bytes over all its statements.
	pub max_size: u32,
}

impl Allowance {
	fn to_hex(self) -> String {
		let mut bytes = self.max_count.to_le_bytes().to_vec();
		bytes.extend(self.max_size.to_le_bytes());
		hex::encode(&bytes)
	}

	fn from_hex(text: &str) -> Result<Self> {
		let bytes = hex::decode(text)?;
		let [c0, c1, c2, c3, s0, s1, s2, s3] = bytes[..] else {
			bail!("allowance {text:?} is not 8 bytes");
		};
		Ok(Allowance {
			max_count: u32::from_le_bytes([c0, c1, c2, c3]),
			max_size: u32::from_le_bytes([s0, s1, s2, s3]),
		})
	}
}

/// A raw chain spec as JSON.
#[derive(Clone, Debug)]
pub struct ChainSpec(Value);

impl ChainSpec {
	/// The `local` chain as the node prints it, checked for what zombienet needs: an `id`,
	/// a `bootNodes` array (zombienet appends the first node to it) and raw genesis storage
	/// (a plain spec would have to be customised through a runtime we do not have).
	pub async fn local(binary: &Path) -> Result<Self> {
		let output = tokio::process::Command::new(binary)
			.args(["build-spec", "--chain", "local", "--disable-default-bootnode", "--raw"])
			.output()
			.await
			.context("cannot run statement-node build-spec")?;
		if !output.status.success() {
			bail!("build-spec failed: {}", String::from_utf8_lossy(&output.stderr));
		}
		let spec: Value =
			serde_json::from_slice(&output.stdout).context("build-spec printed no JSON")?;
		if !spec["id"].is_string() || !spec["bootNodes"].is_array() {
			bail!("the spec lacks a string `id` or a `bootNodes` array");
		}
		let spec = ChainSpec(spec);
		spec.storage()?;
		Ok(spec)
	}

	fn storage(&self) -> Result<&serde_json::Map<String, Value>> {
		self.0["genesis"]["raw"]["top"]
			.as_object()
			.ok_or_else(|| anyhow!("the spec has no raw genesis storage (genesis.raw.top)"))
	}

	/// The allowance genesis gives `account`, if any.
	pub fn allowance(&self, account: &AccountId) -> Result<Option<Allowance>> {
		match self.storage()?.get(&allowance_key(account)) {
			None => Ok(None),
			Some(value) => {
				let text =
					value.as_str().ok_or_else(|| anyhow!("allowance {value} is not text"))?;
				Allowance::from_hex(text).map(Some)
			}
		}
	}

	/// Give `account` `allowance`, replacing what it had.
	pub fn set_allowance(&mut self, account: &AccountId, allowance: Allowance) -> Result<()> {
		self.storage()?;
		self.0["genesis"]["raw"]["top"][allowance_key(account)] = allowance.to_hex().into();
		Ok(())
	}

	/// Write the spec as JSON to `path`.
	pub fn write(&self, path: &Path) -> Result<()> {
		let text = serde_json::to_string_pretty(&self.0)?;
		std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
	}
}

fn allowance_key(account: &AccountId) -> String {
	hex::encode(&[ALLOWANCE_PREFIX, &account.0[..]].concat())
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn an_allowance_is_two_little_endian_u32s_under_the_prefixed_account() {
		let allowance = Allowance { max_count: 3, max_size: 1_000_000 };
		assert_eq!(allowance.to_hex(), "0x0300000040420f00");
		assert_eq!(Allowance::from_hex("0x0300000040420f00").unwrap(), allowance);
		let key = allowance_key(&AccountId([0xff; 32]));
		assert!(key.starts_with("0x3a73746174656d656e745f616c6c6f77616e63653aff"), "{key}");
	}
}
