//! Allowances granted on the command line: `build-spec --allowance WHO=COUNT,BYTES` writes
//! them into the chain spec's genesis storage, for networks without a runtime to grant them
//! (upstream's tools grant theirs with a sudo call).
//!
//! `WHO` is an account id as `0x`-hex (32 bytes), or a secret URI whose sr25519 public key is
//! the account (`//Alice`, `//StatementClient//7`). A URI may name a range of accounts:
//! `//StatementClient//{0..100}` stands for `//StatementClient//0` to `//StatementClient//99`.

use crate::error::Error;
use sp_core::{sr25519, Pair};
use statement_primitives::{AccountId, StatementAllowance};
use std::str::FromStr;

/// Most accounts one range may name.
pub const MAX_RANGE: u64 = 1_000_000;

/// One `--allowance`: the accounts and what each may keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
	/// The accounts.
	pub accounts: Vec<AccountId>,
	/// What each may keep.
	pub allowance: StatementAllowance,
}

impl FromStr for Grant {
	type Err = Error;

	fn from_str(text: &str) -> Result<Grant, Error> {
		let bad = |detail: &str| Error::Grant { text: text.into(), detail: detail.into() };
		let (who, limits) = text
			.rsplit_once('=')
			.ok_or_else(|| bad("expected WHO=COUNT,BYTES, e.g. //Alice=1000,1048576"))?;
		let (count, bytes) =
			limits.split_once(',').ok_or_else(|| bad("expected COUNT,BYTES after the ="))?;
		let number = |field: &str, what: &str| {
			field.trim().replace('_', "").parse::<u32>().map_err(|err| {
				bad(&format!("{what} {field:?} is not a number up to {}: {err}", u32::MAX))
			})
		};
		let allowance = StatementAllowance::new(number(count, "COUNT")?, number(bytes, "BYTES")?);
		let accounts = accounts(who.trim()).map_err(|detail| bad(&detail))?;
		Ok(Grant { accounts, allowance })
	}
}

/// The accounts `who` names.
fn accounts(who: &str) -> Result<Vec<AccountId>, String> {
	if let Some(digits) = who.strip_prefix("0x") {
		let bytes = hex::decode(digits).map_err(|err| format!("not hex: {err}"))?;
		let account: AccountId = bytes
			.try_into()
			.map_err(|bytes: Vec<u8>| format!("an account id is 32 bytes, got {}", bytes.len()))?;
		return Ok(vec![account]);
	}
	let (suris, _) = expand(who)?;
	suris
		.iter()
		.map(|suri| {
			sr25519::Pair::from_string(suri, None)
				.map(|pair| pair.public().0)
				.map_err(|err| format!("{suri:?} is not a secret URI: {err:?}"))
		})
		.collect()
}

/// `who` with its `{A..B}` range, if any, expanded; and how many it names.
fn expand(who: &str) -> Result<(Vec<String>, u64), String> {
	let Some(open) = who.find('{') else { return Ok((vec![who.to_string()], 1)) };
	let close = who[open..].find('}').map(|at| open + at).ok_or("an unclosed {")?;
	let (from, to) =
		who[open + 1..close].split_once("..").ok_or("a range is {FROM..TO}, e.g. {0..100}")?;
	let parse = |end: &str| end.trim().parse::<u64>().map_err(|err| format!("{end:?}: {err}"));
	let (from, to) = (parse(from)?, parse(to)?);
	if to <= from || to - from > MAX_RANGE {
		return Err(format!("a range holds 1 to {MAX_RANGE} accounts, not {from}..{to}"));
	}
	let (head, tail) = (&who[..open], &who[close + 1..]);
	Ok(((from..to).map(|n| format!("{head}{n}{tail}")).collect(), to - from))
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_uri_a_range_and_an_account_id_each_name_their_accounts() {
		let alice = sr25519::Pair::from_string("//Alice", None).unwrap().public().0;
		let grant: Grant = "//Alice=10,1_000".parse().unwrap();
		assert_eq!(
			grant,
			Grant { accounts: vec![alice], allowance: StatementAllowance::new(10, 1000) }
		);
		let range: Grant = "//StatementClient//{0..3}=1,2".parse().unwrap();
		let third = sr25519::Pair::from_string("//StatementClient//2", None).unwrap().public().0;
		assert_eq!(range.accounts.len(), 3);
		assert_eq!(range.accounts[2], third);
		let id: Grant = format!("0x{}=5,6", hex::encode(alice)).parse().unwrap();
		assert_eq!(id.accounts, vec![alice]);
	}

	#[test]
	fn what_is_not_a_grant_is_an_error_naming_it() {
		for bad in [
			"//Alice",
			"//Alice=10",
			"//Alice=ten,10",
			"//Alice=10,99999999999",
			"0x1234=1,1",
			"//X//{5..5}=1,1",
			"//X//{0..2000000}=1,1",
			"//X//{0..=}=1,1",
		] {
			let err = bad.parse::<Grant>().unwrap_err().to_string();
			assert!(err.contains(bad), "{bad}: {err}");
		}
	}
}
