//! A topic named by text: blake2-256 of its UTF-8 bytes, the rule of `statement-node sign
//! --topic <text>` (the primitives' [`Topic::from_name`]).

pub use statement_primitives::Topic;

/// The topic `name` stands for.
pub fn named(name: &str) -> Topic {
	Topic::from_name(name)
}

/// The topic `name` stands for, as `0x`-hex (the form JSON-RPC takes).
pub fn named_hex(name: &str) -> String {
	crate::hex::encode(&named(name).0)
}
