//! A subscription's notification, serialized exactly as the primitives' `StatementEvent` is
//! (`{"event": "newStatements", "data": {"statements": [..], "remaining": ..}}`), but from the
//! encodings as the store hands them out: no copy of each statement into a `Bytes`, no hex
//! `String` for each.

use crate::hex::HexList;

#[derive(serde::Serialize)]
#[serde(tag = "event", content = "data", rename_all = "camelCase", bound = "T: AsRef<[u8]>")]
enum Notification<T> {
	NewStatements {
		statements: HexList<T>,
		#[serde(skip_serializing_if = "Option::is_none")]
		remaining: Option<u32>,
	},
}

/// A `newStatements` notification's JSON: `statements` (encodings) and, while replaying, how
/// many `remaining`.
pub(crate) fn encode<T: AsRef<[u8]>>(
	statements: Vec<T>,
	remaining: Option<u32>,
) -> Result<Box<serde_json::value::RawValue>, String> {
	let notification = Notification::NewStatements { statements: HexList(statements), remaining };
	serde_json::value::to_raw_value(&notification)
		.map_err(|err| format!("cannot encode a notification: {err}"))
}

#[cfg(test)]
mod tests {
	use super::*;
	use sp_core::Bytes;
	use statement_primitives::StatementEvent;

	#[test]
	fn a_notification_serializes_as_the_statement_event_would() {
		let items = vec![vec![], vec![0x00, 0x0f, 0xf0, 0xff], (0..=255).collect(), vec![7; 300]];
		for statements in [Vec::new(), items[..1].to_vec(), items.clone()] {
			for remaining in [None, Some(0), Some(u32::MAX)] {
				let ours = encode(statements.clone(), remaining).unwrap();
				let event = StatementEvent::NewStatements {
					statements: statements.iter().cloned().map(Bytes).collect(),
					remaining,
				};
				assert_eq!(ours.get(), serde_json::to_string(&event).unwrap());
			}
		}
	}
}
