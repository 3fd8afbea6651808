//! `0x`-hex text of bytes, the form of every key, value and statement in the chain spec and
//! over JSON-RPC.

use anyhow::{bail, Context, Result};

/// `0x` followed by two lowercase hex digits per byte.
pub fn encode(bytes: &[u8]) -> String {
	let mut text = String::with_capacity(2 + 2 * bytes.len());
	text.push_str("0x");
	for byte in bytes {
		text.push_str(&format!("{byte:02x}"));
	}
	text
}

/// The bytes of `0x`-hex text.
pub fn decode(text: &str) -> Result<Vec<u8>> {
	let Some(digits) = text.strip_prefix("0x") else { bail!("{text:?} does not start with 0x") };
	if digits.len() % 2 != 0 {
		bail!("{text:?} has an odd number of hex digits");
	}
	(0..digits.len())
		.step_by(2)
		.map(|at| {
			u8::from_str_radix(&digits[at..at + 2], 16)
				.with_context(|| format!("{text:?} is not hex at digit {at}"))
		})
		.collect()
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
