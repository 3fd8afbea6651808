//! The dev accounts: Alice to Ferdie, as the node's `--dev` chain and keystore know them.

pub use statement_primitives::dev::{suri, DEV_ACCOUNTS};

/// The secret URI of every dev account, `//Alice` first.
pub fn suris() -> Vec<String> {
	DEV_ACCOUNTS.iter().map(|name| suri(name)).collect()
}
