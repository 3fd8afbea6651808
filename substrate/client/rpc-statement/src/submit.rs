//! Submission, as the legacy and the spec-v2 methods share it: decode, submit, count in the
//! RPC metrics, and mark the submission in progress (spec-v2 replays give way to it).

use crate::{metrics::submit_label, params::Positional, service::StatementRpc};
use jsonrpsee::types::error::ErrorObjectOwned;
use statement_primitives::{StatementSource, SubmitResult};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Decode the statement of `params` and submit it, counting the call in the RPC metrics
/// (legacy and spec-v2 submissions alike).
pub(crate) fn submit_counted(
	rpc: &StatementRpc,
	params: &jsonrpsee::types::Params,
) -> Result<SubmitResult, ErrorObjectOwned> {
	let started = std::time::Instant::now();
	let _submitting = Submitting::count(&rpc.submitting);
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

/// One submission counted in progress until dropped.
struct Submitting<'a>(&'a AtomicUsize);

impl<'a> Submitting<'a> {
	fn count(submitting: &'a AtomicUsize) -> Submitting<'a> {
		submitting.fetch_add(1, Ordering::Relaxed);
		Submitting(submitting)
	}
}

impl Drop for Submitting<'_> {
	fn drop(&mut self) {
		self.0.fetch_sub(1, Ordering::Relaxed);
	}
}
