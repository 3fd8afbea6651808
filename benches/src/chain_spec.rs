//! A chain spec in which the harness's signing accounts may keep as much as they like, so that
//! a loaded node never refuses or evicts for allowance.

use codec::Encode;
use serde_json::{json, Map, Value};
use statement_primitives::{statement_allowance_key, StatementAllowance};
use std::path::Path;

/// The genesis storage that lets each of `accounts` keep `u32::MAX` statements and bytes:
/// `(":statement_allowance:" ++ account, allowance)` pairs, as the chain spec holds them, so an
/// in-process store can be given exactly the node's allowances.
pub fn unlimited_allowances(accounts: &[[u8; 32]]) -> Vec<(Vec<u8>, Vec<u8>)> {
	let unlimited = StatementAllowance::new(u32::MAX, u32::MAX).encode();
	accounts.iter().map(|account| (statement_allowance_key(account), unlimited.clone())).collect()
}

/// Write a chain spec (Substrate's raw form, as `statement-node build-spec` prints) in which
/// each of `accounts` may keep `u32::MAX` statements and bytes, so nothing is ever evicted.
pub fn write(path: &Path, accounts: &[[u8; 32]]) -> Result<(), String> {
	let hex = |bytes: &[u8]| format!("0x{}", hex::encode(bytes));
	let top: Map<String, Value> = unlimited_allowances(accounts)
		.iter()
		.map(|(key, value)| (hex(key), Value::String(hex(value))))
		.collect();
	let spec = json!({
		"name": "Load harness",
		"id": "load_harness",
		"chainType": "Local",
		"bootNodes": [],
		"genesis": {"raw": {"top": top}},
	});
	std::fs::write(path, spec.to_string())
		.map_err(|err| format!("cannot write the chain spec {}: {err}", path.display()))
}
