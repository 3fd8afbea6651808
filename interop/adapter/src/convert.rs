//! Between the reference's types and ours: the same wire and the same variants, so every
//! conversion is either a re-encoding or a variant-for-variant mapping.

use codec::{Decode, Encode};
use sp_statement_store as sp;
use statement_primitives as ours;

/// A reference statement as ours (the encoding is byte-identical).
pub fn statement_to_ours(statement: &sp::Statement) -> Result<ours::Statement, ours::Error> {
	ours::Statement::decode(&mut &statement.encode()[..])
		.map_err(|err| ours::Error::Decode(err.to_string()))
}

/// One of our encodings as a reference statement; `None` if the reference cannot decode it.
pub fn statement_to_sp(encoding: &[u8]) -> Option<sp::Statement> {
	sp::Statement::decode(&mut &encoding[..]).ok()
}

/// Where a statement came from.
pub fn source_to_ours(source: sp::StatementSource) -> ours::StatementSource {
	match source {
		sp::StatementSource::Chain => ours::StatementSource::Chain,
		sp::StatementSource::Network => ours::StatementSource::Network,
		sp::StatementSource::Local => ours::StatementSource::Local,
	}
}

/// Our error as the reference's: its four kinds, each with our message.
pub fn error_to_sp(error: ours::Error) -> sp::Error {
	match error {
		ours::Error::Db(message) => sp::Error::Db(message),
		ours::Error::Storage(message) => sp::Error::Storage(message),
		ours::Error::Decode(message) => sp::Error::Decode(message),
		other @ (ours::Error::Truncated { .. }
		| ours::Error::UnknownField { .. }
		| ours::Error::FieldOrder { .. }
		| ours::Error::UnknownProof { .. }
		| ours::Error::TrailingBytes { .. }
		| ours::Error::TooLarge { .. }
		| ours::Error::BadCompact { .. }) => sp::Error::Decode(other.to_string()),
		other => sp::Error::Storage(other.to_string()),
	}
}

fn rejection_to_sp(reason: ours::RejectionReason) -> sp::RejectionReason {
	match reason {
		ours::RejectionReason::DataTooLarge { submitted_size, available_size } => {
			sp::RejectionReason::DataTooLarge { submitted_size, available_size }
		}
		ours::RejectionReason::ChannelPriorityTooLow { submitted_expiry, min_expiry } => {
			sp::RejectionReason::ChannelPriorityTooLow { submitted_expiry, min_expiry }
		}
		ours::RejectionReason::AccountFull { submitted_expiry, min_expiry } => {
			sp::RejectionReason::AccountFull { submitted_expiry, min_expiry }
		}
		ours::RejectionReason::StoreFull => sp::RejectionReason::StoreFull,
		ours::RejectionReason::NoAllowance => sp::RejectionReason::NoAllowance,
	}
}

fn invalid_to_sp(reason: ours::InvalidReason) -> sp::InvalidReason {
	match reason {
		ours::InvalidReason::NoProof => sp::InvalidReason::NoProof,
		ours::InvalidReason::BadProof => sp::InvalidReason::BadProof,
		ours::InvalidReason::EncodingTooLarge { submitted_size, max_size } => {
			sp::InvalidReason::EncodingTooLarge { submitted_size, max_size }
		}
		ours::InvalidReason::AlreadyExpired => sp::InvalidReason::AlreadyExpired,
	}
}

/// What our store said of a submission, as the reference says it.
pub fn submit_result_to_sp(result: ours::SubmitResult) -> sp::SubmitResult {
	match result {
		ours::SubmitResult::New => sp::SubmitResult::New,
		ours::SubmitResult::Known => sp::SubmitResult::Known,
		ours::SubmitResult::KnownExpired => sp::SubmitResult::KnownExpired,
		ours::SubmitResult::Rejected(reason) => sp::SubmitResult::Rejected(rejection_to_sp(reason)),
		ours::SubmitResult::Invalid(reason) => sp::SubmitResult::Invalid(invalid_to_sp(reason)),
		ours::SubmitResult::InternalError(error) => {
			sp::SubmitResult::InternalError(error_to_sp(error))
		}
	}
}

/// Topics as ours.
pub fn topics_to_ours(topics: &[sp::Topic]) -> Vec<ours::Topic> {
	topics.iter().map(|topic| ours::Topic(topic.0)).collect()
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn a_statement_crosses_both_ways_unchanged() {
		let mut statement = sp::Statement::new();
		statement.set_expiry(77);
		statement.set_topic(0, sp::Topic([3; 32]));
		statement.set_channel([4; 32]);
		statement.set_plain_data(vec![5; 10]);
		let ours = statement_to_ours(&statement).unwrap();
		assert_eq!(ours.encode(), statement.encode());
		assert_eq!(statement_to_sp(&ours.encode()), Some(statement));
	}

	#[test]
	fn results_keep_their_variant_and_fields() {
		let rejected = ours::SubmitResult::Rejected(ours::RejectionReason::AccountFull {
			submitted_expiry: 1,
			min_expiry: 2,
		});
		assert_eq!(
			submit_result_to_sp(rejected),
			sp::SubmitResult::Rejected(sp::RejectionReason::AccountFull {
				submitted_expiry: 1,
				min_expiry: 2
			})
		);
		assert_eq!(
			submit_result_to_sp(ours::SubmitResult::Invalid(ours::InvalidReason::BadProof)),
			sp::SubmitResult::Invalid(sp::InvalidReason::BadProof)
		);
		assert_eq!(error_to_sp(ours::Error::Db("gone".into())), sp::Error::Db("gone".into()));
	}
}
