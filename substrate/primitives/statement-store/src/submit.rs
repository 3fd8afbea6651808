//! What happens to a submitted statement, and where it came from.

use crate::Error;

/// Where a submitted statement came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, codec::Encode, codec::Decode)]
pub enum StatementSource {
	/// Submitted by the runtime (an on-chain call).
	Chain,
	/// Gossiped by a peer.
	Network,
	/// Submitted by a local app over RPC.
	Local,
}

impl StatementSource {
	/// Whether a statement from this source may re-enter after being removed or evicted.
	/// Only local and chain submissions may: a peer must not undo a removal by gossip.
	pub fn can_be_resubmitted(&self) -> bool {
		matches!(self, StatementSource::Chain | StatementSource::Local)
	}
}

/// Why a well-formed statement did not fit.
///
/// JSON as upstream writes it: the variant in camelCase, its fields in snake_case, e.g.
/// `{"reason": "accountFull", "submitted_expiry": 5, "min_expiry": 9}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum RejectionReason {
	/// The data alone is larger than the account's whole size allowance.
	DataTooLarge {
		/// Data bytes in the submitted statement.
		submitted_size: usize,
		/// Data bytes the account may hold.
		available_size: usize,
	},
	/// The channel holds a statement whose expiry is not lower than the submitted one.
	ChannelPriorityTooLow {
		/// Expiry of the submitted statement.
		submitted_expiry: u64,
		/// Expiry the submitted statement had to beat.
		min_expiry: u64,
	},
	/// The account is full of statements that expire later than the submitted one.
	AccountFull {
		/// Expiry of the submitted statement.
		submitted_expiry: u64,
		/// Lowest expiry among the statements that would have to go.
		min_expiry: u64,
	},
	/// The store reached its global count or size limit.
	StoreFull,
	/// The account has no allowance.
	NoAllowance,
}

impl RejectionReason {
	/// A short label for metrics.
	pub fn label(&self) -> &'static str {
		match self {
			RejectionReason::DataTooLarge { .. } => "data_too_large",
			RejectionReason::ChannelPriorityTooLow { .. } => "channel_priority_too_low",
			RejectionReason::AccountFull { .. } => "account_full",
			RejectionReason::StoreFull => "store_full",
			RejectionReason::NoAllowance => "no_allowance",
		}
	}
}

/// Why a statement is not acceptable at all. JSON: `{"reason": "badProof"}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum InvalidReason {
	/// The statement is unsigned.
	NoProof,
	/// The signature does not hold.
	BadProof,
	/// The encoding is larger than the maximum.
	EncodingTooLarge {
		/// Bytes in the submitted encoding.
		submitted_size: usize,
		/// The maximum.
		max_size: usize,
	},
	/// The expiry is already in the past.
	AlreadyExpired,
}

/// Outcome of a submission. JSON: `{"status": "new"}`, `{"status": "rejected", "reason": ..}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum SubmitResult {
	/// Stored.
	New,
	/// Already stored.
	Known,
	/// Already seen, and since expired or removed.
	KnownExpired,
	/// Well formed, but it does not fit.
	Rejected(RejectionReason),
	/// Not acceptable.
	Invalid(InvalidReason),
	/// The store failed; the statement may be submitted again.
	InternalError(Error),
}

/// Every [`RejectionReason::label`], in the order the node exports them.
pub const REJECTION_LABELS: [&str; 5] =
	["data_too_large", "channel_priority_too_low", "account_full", "store_full", "no_allowance"];

/// The label [`SubmitResult::label`] gives each [`InvalidReason`], in the order the node
/// exports them.
pub const INVALID_LABELS: [&str; 4] =
	["no_proof", "bad_proof", "encoding_too_large", "already_expired"];

impl SubmitResult {
	/// A short label for metrics.
	pub fn label(&self) -> &'static str {
		match self {
			SubmitResult::New => "new",
			SubmitResult::Known => "known",
			SubmitResult::KnownExpired => "known_expired",
			SubmitResult::Rejected(reason) => reason.label(),
			SubmitResult::Invalid(InvalidReason::NoProof) => "no_proof",
			SubmitResult::Invalid(InvalidReason::BadProof) => "bad_proof",
			SubmitResult::Invalid(InvalidReason::EncodingTooLarge { .. }) => "encoding_too_large",
			SubmitResult::Invalid(InvalidReason::AlreadyExpired) => "already_expired",
			SubmitResult::InternalError(_) => "internal_error",
		}
	}
}

/// A subscription event. JSON: `{"event": "newStatements", "data": {"statements": [..]}}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "event", content = "data", rename_all = "camelCase")]
pub enum StatementEvent {
	/// A batch of matching statements, each its SCALE encoding.
	NewStatements {
		/// The encoded statements.
		statements: Vec<sp_core::Bytes>,
		/// How many more stored matches follow this batch, while replaying.
		#[serde(default, skip_serializing_if = "Option::is_none")]
		remaining: Option<u32>,
	},
}

#[cfg(test)]
mod tests {
	use super::*;
	use serde_json::{json, to_value};

	#[test]
	fn submit_results_serialize_as_upstream_rpc_json() {
		assert_eq!(to_value(SubmitResult::New).unwrap(), json!({"status": "new"}));
		assert_eq!(
			to_value(SubmitResult::KnownExpired).unwrap(),
			json!({"status": "knownExpired"})
		);
		let full = SubmitResult::Rejected(RejectionReason::AccountFull {
			submitted_expiry: 5,
			min_expiry: 9,
		});
		assert_eq!(
			to_value(&full).unwrap(),
			json!({"status": "rejected", "reason": "accountFull", "submitted_expiry": 5, "min_expiry": 9})
		);
		assert_eq!(
			to_value(SubmitResult::Rejected(RejectionReason::StoreFull)).unwrap(),
			json!({"status": "rejected", "reason": "storeFull"})
		);
		assert_eq!(
			to_value(SubmitResult::Invalid(InvalidReason::BadProof)).unwrap(),
			json!({"status": "invalid", "reason": "badProof"})
		);
		assert_eq!(
			to_value(SubmitResult::InternalError(Error::Db("disk".into()))).unwrap(),
			json!({"status": "internalError", "Db": "disk"})
		);
		let back: SubmitResult = serde_json::from_value(to_value(&full).unwrap()).unwrap();
		assert_eq!(back, full);
	}

	#[test]
	fn statement_event_serializes_with_event_and_data() {
		let event = StatementEvent::NewStatements {
			statements: vec![sp_core::Bytes(vec![1, 2])],
			remaining: Some(3),
		};
		assert_eq!(
			to_value(&event).unwrap(),
			json!({"event": "newStatements", "data": {"statements": ["0x0102"], "remaining": 3}})
		);
		let live = StatementEvent::NewStatements { statements: vec![], remaining: None };
		assert_eq!(
			to_value(&live).unwrap(),
			json!({"event": "newStatements", "data": {"statements": []}})
		);
	}

	#[test]
	fn only_local_and_chain_may_resubmit() {
		assert!(StatementSource::Local.can_be_resubmitted());
		assert!(StatementSource::Chain.can_be_resubmitted());
		assert!(!StatementSource::Network.can_be_resubmitted());
	}

	#[test]
	fn every_label_is_in_the_exported_lists() {
		let rejected = [
			RejectionReason::DataTooLarge { submitted_size: 1, available_size: 0 },
			RejectionReason::ChannelPriorityTooLow { submitted_expiry: 1, min_expiry: 2 },
			RejectionReason::AccountFull { submitted_expiry: 1, min_expiry: 2 },
			RejectionReason::StoreFull,
			RejectionReason::NoAllowance,
		];
		let labels: Vec<&str> = rejected.iter().map(RejectionReason::label).collect();
		assert_eq!(labels, REJECTION_LABELS);
		let invalid = [
			InvalidReason::NoProof,
			InvalidReason::BadProof,
			InvalidReason::EncodingTooLarge { submitted_size: 2, max_size: 1 },
			InvalidReason::AlreadyExpired,
		];
		let labels: Vec<&str> =
			invalid.into_iter().map(|reason| SubmitResult::Invalid(reason).label()).collect();
		assert_eq!(labels, INVALID_LABELS);
	}
}
