//! The well-known development accounts, as Substrate's keyring names them: a `--dev` chain
//! gives them allowances and its keystore holds their statement keys.

/// The dev accounts' names, in Substrate's order.
pub const DEV_ACCOUNTS: [&str; 6] = ["Alice", "Bob", "Charlie", "Dave", "Eve", "Ferdie"];

/// The secret URI of the dev account `name`: `//Alice` for `Alice`.
pub fn suri(name: &str) -> String {
	format!("//{name}")
}

#[cfg(test)]
mod tests {
	#[test]
	fn a_dev_account_is_its_name_as_a_hard_derivation() {
		assert_eq!(super::suri(super::DEV_ACCOUNTS[0]), "//Alice");
		assert_eq!(super::DEV_ACCOUNTS.len(), 6);
	}
}
