//! `0x`-hex text: the form of every key, hash and statement over JSON-RPC and in chain specs.

use crate::{Error, Result};

/// `0x` and two lowercase hex digits a byte.
pub fn encode(bytes: &[u8]) -> String {
	format!("0x{}", hex::encode(bytes))
}

/// The bytes of `0x`-hex text (the prefix is required).
pub fn decode(text: &str) -> Result<Vec<u8>> {
	let digits =
		text.strip_prefix("0x").ok_or_else(|| Error::new(format!("{text:.40?} lacks 0x")))?;
	hex::decode(digits).map_err(|err| Error::new(format!("{text:.40?} is not hex: {err}")))
}

#[cfg(test)]
mod tests {
	#[test]
	fn decode_reverses_encode_and_refuses_what_is_not_hex() {
		assert_eq!(super::encode(&[0, 0xab, 7]), "0x00ab07");
		assert_eq!(super::decode("0x00ab07").unwrap(), vec![0, 0xab, 7]);
		assert!(super::decode("00ab").is_err());
		assert!(super::decode("0xabc").is_err());
		assert!(super::decode("0xzz").is_err());
	}
}
