//! Submission, as the legacy and the spec-v2 methods share it: decode, submit, count in the
//! RPC metrics, and note the submission in [`crate::submissions::Submissions`] (spec-v2
//! replays give way to it).

use crate::{metrics::submit_label, params::Positional, service::StatementRpc};
use jsonrpsee::types::error::ErrorObjectOwned;
use statement_primitives::{StatementSource, SubmitResult};

/// Decode the statement of `params` and submit it, counting the call in the RPC metrics
/// (legacy and spec-v2 submissions alike).
pub(crate) fn submit_counted(
	rpc: &StatementRpc,
	params: &jsonrpsee::types::Params,
) -> Result<SubmitResult, ErrorObjectOwned> {
	let started = std::time::Instant::now();
	let _submitting = rpc.submissions.begin();
	let statement = match Positional::of(params).and_then(|params| params.statement(0)) {
		Ok(statement) => statement,
		Err(err) => {
			rpc.metrics.submitted("decode_error", started.elapsed());
			return Err(err.into());
		}
	};
	let result = rpc.store.submit(statement, StatementSource::Local);
	rpc.metrics.submitted(submit_label(&result), started.elapsed());
	Ok(result)
}
