//! Answers as `0x`-hex without a copy per item: every byte through a byte-pair table into one
//! reused buffer (a 100-statement answer is ~50 KB of hex).

/// A list of byte strings that serializes as JSON `["0x..", ..]`, exactly as
/// `Vec<sp_core::Bytes>` would.
#[derive(Clone)]
pub(crate) struct HexList<T>(pub(crate) Vec<T>);

/// The two lowercase hex digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
	let digits = b"0123456789abcdef";
	let mut pairs = [[0u8; 2]; 256];
	let mut byte = 0;
	while byte < 256 {
		pairs[byte] = [digits[byte >> 4], digits[byte & 0xf]];
		byte += 1;
	}
	pairs
};

/// `0x` and the hex of `bytes`, written over `out`.
fn hex_into(out: &mut Vec<u8>, bytes: &[u8]) {
	out.clear();
	out.reserve(2 + 2 * bytes.len());
	out.extend_from_slice(b"0x");
	for byte in bytes {
		out.extend_from_slice(&HEX_PAIRS[*byte as usize]);
	}
}

/// `0x` and the hex of `bytes`.
pub(crate) fn hex_string(bytes: &[u8]) -> String {
	let mut out = Vec::new();
	hex_into(&mut out, bytes);
	// Hex digits and `0x` are ASCII.
	String::from_utf8(out).unwrap_or_default()
}

impl<T: AsRef<[u8]>> serde::Serialize for HexList<T> {
	fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
		use serde::ser::{Error, SerializeSeq};
		let longest = self.0.iter().map(|item| item.as_ref().len()).max().unwrap_or(0);
		let mut buffer = Vec::with_capacity(2 + 2 * longest);
		let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
		for item in &self.0 {
			hex_into(&mut buffer, item.as_ref());
			let text = std::str::from_utf8(&buffer).map_err(S::Error::custom)?;
			seq.serialize_element(text)?;
		}
		seq.end()
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use sp_core::Bytes;

	#[test]
	fn an_answer_serializes_as_the_hex_strings_bytes_give() {
		let items = vec![vec![], vec![0x00, 0x0f, 0xf0, 0xff], (0..=255).collect(), vec![7; 300]];
		let ours = serde_json::to_string(&HexList(items.clone())).unwrap();
		let theirs =
			serde_json::to_string(&items.into_iter().map(Bytes).collect::<Vec<_>>()).unwrap();
		assert_eq!(ours, theirs);
		assert_eq!(serde_json::to_string(&HexList(Vec::<Vec<u8>>::new())).unwrap(), "[]");
	}
}
