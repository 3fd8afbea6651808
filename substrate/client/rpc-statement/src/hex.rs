//! Answers as `0x`-hex without a copy per item: every byte through a byte-pair table into one
//! buffer (a 100-statement answer is ~50 KB of hex).

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

/// `0x` and the hex of `bytes`, appended to `out`.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
	out.reserve(2 + 2 * bytes.len());
	out.extend_from_slice(b"0x");
	for byte in bytes {
		out.extend_from_slice(&HEX_PAIRS[*byte as usize]);
	}
}

/// `0x` and the hex of `bytes`.
pub(crate) fn hex_string(bytes: &[u8]) -> String {
	let mut out = Vec::new();
	push_hex(&mut out, bytes);
	// Hex digits and `0x` are ASCII.
	String::from_utf8(out).unwrap_or_default()
}

/// The JSON array `["0x..", ..]` of `items`, written straight into one buffer.
fn json_array<T: AsRef<[u8]>>(items: &[T]) -> Vec<u8> {
	let bytes: usize = items.iter().map(|item| 2 + 2 * item.as_ref().len()).sum();
	let mut out = Vec::with_capacity(2 + bytes + 3 * items.len());
	out.push(b'[');
	for (at, item) in items.iter().enumerate() {
		if at > 0 {
			out.push(b',');
		}
		out.push(b'"');
		push_hex(&mut out, item.as_ref());
		out.push(b'"');
	}
	out.push(b']');
	out
}

/// Serialized as JSON text written in one pass and handed to serde_json as a raw value: hex
/// digits need no escaping, so the per-byte escape scan of a string (a sixth of a replay's
/// CPU in a profile of the node) is left out. Only serde_json serializers are meant.
impl<T: AsRef<[u8]>> serde::Serialize for HexList<T> {
	fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
		use serde::ser::Error;
		let text = String::from_utf8(json_array(&self.0)).map_err(S::Error::custom)?;
		let raw = serde_json::value::RawValue::from_string(text).map_err(S::Error::custom)?;
		raw.serialize(serializer)
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
