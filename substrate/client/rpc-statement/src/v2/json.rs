//! The spec-v2 RPC's JSON, as sp-statement-store 29 writes it (`SubmitOutcome`,
//! `SubmitRejectionReason`, `SubmitInvalidReason`, `SubscribeEvent`, `NewStatementEntry`,
//! `AddFilterResponse`): camelCase fields, unlike the legacy `SubmitResult`'s snake_case.
//! The interop tests read every answer with upstream's own types.

use crate::hex::HexList;
use serde::Serialize;
use statement_primitives::{InvalidReason, RejectionReason, SubmitResult};

/// What `statement_unstable_submit` answers: `{"status": "new"}`, `{"status": "known"}`,
/// `{"status": "rejected", "reason": ..}` or `{"status": "invalid", "reason": ..}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum SubmitOutcome {
	/// Stored.
	New,
	/// In the store already.
	Known,
	/// Well formed, but it does not fit.
	Rejected(Rejection),
	/// Not acceptable.
	Invalid(Invalid),
}

/// Why a well-formed statement did not fit, with camelCase fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Rejection {
	/// The data alone is larger than the account may hold.
	DataTooLarge {
		/// Data bytes submitted.
		submitted_size: usize,
		/// Data bytes the account may hold.
		available_size: usize,
	},
	/// The channel holds a statement that expires no earlier.
	ChannelPriorityTooLow {
		/// The submitted expiry.
		submitted_expiry: u64,
		/// The expiry to beat.
		min_expiry: u64,
	},
	/// The account is full of statements that expire later.
	AccountFull {
		/// The submitted expiry.
		submitted_expiry: u64,
		/// The lowest expiry that would have to go.
		min_expiry: u64,
	},
	/// The store is full.
	StoreFull,
	/// The account has no allowance.
	NoAllowance,
}

/// Why a statement is not acceptable at all.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Invalid {
	/// Unsigned.
	NoProof,
	/// The signature does not hold.
	BadProof,
	/// The encoding is larger than a statement may be.
	EncodingTooLarge {
		/// Bytes submitted.
		submitted_size: usize,
		/// The most a statement may take.
		max_size: usize,
	},
	/// Its expiry has passed.
	AlreadyExpired,
}

impl SubmitOutcome {
	/// The outcome of a local submission; `Err` with what failed for a result the spec-v2
	/// API has no outcome for (a store failure, or `knownExpired`, which a local submission
	/// does not get).
	pub fn of(result: SubmitResult) -> Result<SubmitOutcome, String> {
		Ok(match result {
			SubmitResult::New => SubmitOutcome::New,
			SubmitResult::Known => SubmitOutcome::Known,
			SubmitResult::KnownExpired => {
				return Err("the store answered knownExpired to a local submission".into())
			}
			SubmitResult::InternalError(err) => return Err(err.to_string()),
			SubmitResult::Rejected(reason) => SubmitOutcome::Rejected(match reason {
				RejectionReason::DataTooLarge { submitted_size, available_size } => {
					Rejection::DataTooLarge { submitted_size, available_size }
				}
				RejectionReason::ChannelPriorityTooLow { submitted_expiry, min_expiry } => {
					Rejection::ChannelPriorityTooLow { submitted_expiry, min_expiry }
				}
				RejectionReason::AccountFull { submitted_expiry, min_expiry } => {
					Rejection::AccountFull { submitted_expiry, min_expiry }
				}
				RejectionReason::StoreFull => Rejection::StoreFull,
				RejectionReason::NoAllowance => Rejection::NoAllowance,
			}),
			SubmitResult::Invalid(reason) => SubmitOutcome::Invalid(match reason {
				InvalidReason::NoProof => Invalid::NoProof,
				InvalidReason::BadProof => Invalid::BadProof,
				InvalidReason::EncodingTooLarge { submitted_size, max_size } => {
					Invalid::EncodingTooLarge { submitted_size, max_size }
				}
				InvalidReason::AlreadyExpired => Invalid::AlreadyExpired,
			}),
		})
	}
}

/// `add_filter`'s answer when the subscription holds as many filters as it may:
/// `{"result": "limitReached"}`, a success, as upstream's `AddFilterResponse` writes it.
#[derive(Clone, Debug, Serialize)]
pub struct LimitReached {
	result: &'static str,
}

impl LimitReached {
	/// The answer.
	pub const ANSWER: LimitReached = LimitReached { result: "limitReached" };
}

/// One event of a subscription (`statement_unstable_subscribeEvent`'s `result`), serialized
/// as upstream's `SubscribeEvent`, from the encodings as the store hands them out.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "camelCase", bound = "T: AsRef<[u8]>")]
pub enum Event<T> {
	/// Stored matches of one filter's replay.
	ReplayStatements {
		/// The filter.
		#[serde(rename = "filterId")]
		filter_id: String,
		/// Their encodings.
		statements: HexList<T>,
	},
	/// That filter's replay is done.
	ReplayDone {
		/// The filter.
		#[serde(rename = "filterId")]
		filter_id: String,
	},
	/// New statements, each once, with the filters that took it.
	NewStatements {
		/// The statements.
		statements: Vec<Entry<T>>,
	},
	/// The subscription ended: nothing follows.
	Stop,
}

/// One new statement and the ids of the filters that took it.
#[derive(Serialize)]
#[serde(bound = "T: AsRef<[u8]>")]
pub struct Entry<T> {
	/// Its encoding.
	pub statement: Hex<T>,
	/// The filters.
	#[serde(rename = "filterIds")]
	pub filter_ids: Vec<String>,
}

/// Bytes serialized as a `0x`-hex string.
pub struct Hex<T>(pub T);

impl<T: AsRef<[u8]>> Serialize for Hex<T> {
	fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
		serializer.serialize_str(&crate::hex::hex_string(self.0.as_ref()))
	}
}

impl<T: AsRef<[u8]>> Event<T> {
	/// The event's JSON.
	pub fn raw(&self) -> Result<Box<serde_json::value::RawValue>, String> {
		serde_json::value::to_raw_value(self)
			.map_err(|err| format!("cannot encode an event: {err}"))
	}
}

#[cfg(test)]
mod tests {
	use super::*;
	use serde_json::json;

	#[test]
	fn outcomes_are_camel_case_as_upstream_writes_them() {
		let full = SubmitOutcome::of(SubmitResult::Rejected(RejectionReason::DataTooLarge {
			submitted_size: 600,
			available_size: 512,
		}))
		.unwrap();
		assert_eq!(
			serde_json::to_value(full).unwrap(),
			json!({"status": "rejected", "reason": "dataTooLarge", "submittedSize": 600, "availableSize": 512})
		);
		let expired = SubmitOutcome::of(SubmitResult::Invalid(InvalidReason::AlreadyExpired));
		assert_eq!(
			serde_json::to_value(expired.unwrap()).unwrap(),
			json!({"status": "invalid", "reason": "alreadyExpired"})
		);
		assert_eq!(serde_json::to_value(SubmitOutcome::New).unwrap(), json!({"status": "new"}));
		assert!(SubmitOutcome::of(SubmitResult::KnownExpired).is_err());
		assert_eq!(
			serde_json::to_value(LimitReached::ANSWER).unwrap(),
			json!({"result": "limitReached"})
		);
	}

	#[test]
	fn events_are_written_as_upstream_writes_them() {
		let statements = HexList(vec![vec![1u8, 2]]);
		let replay = Event::ReplayStatements { filter_id: "0".into(), statements };
		assert_eq!(
			serde_json::to_value(&replay).unwrap(),
			json!({"event": "replayStatements", "filterId": "0", "statements": ["0x0102"]})
		);
		let done = Event::<Vec<u8>>::ReplayDone { filter_id: "3".into() };
		assert_eq!(
			serde_json::to_value(&done).unwrap(),
			json!({"event": "replayDone", "filterId": "3"})
		);
		let entry =
			Entry { statement: Hex(vec![0xffu8]), filter_ids: vec!["0".into(), "2".into()] };
		let new = Event::NewStatements { statements: vec![entry] };
		assert_eq!(
			serde_json::to_value(&new).unwrap(),
			json!({"event": "newStatements", "statements": [{"statement": "0xff", "filterIds": ["0", "2"]}]})
		);
		assert_eq!(serde_json::to_value(Event::<Vec<u8>>::Stop).unwrap(), json!({"event": "stop"}));
	}
}
