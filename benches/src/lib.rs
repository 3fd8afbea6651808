//! Benchmarks of the statement store, side by side with a RAM-index baseline.
//!
//! [`baseline::RamIndexStore`] keeps every index in hash maps and sets of 32-byte hashes, as
//! the reference implementation's first stage does, with statement bodies in parity-db. It
//! exists only so that every figure can be reported as a ratio measured in one run.
//!
//! The harnesses that run the real node share [`node`] (the workspace's launcher: a
//! `statement-node` child process, ready once it has written its readiness file),
//! [`chain_spec`] (unlimited allowances for the signing accounts), [`metrics`] (its
//! Prometheus endpoint, where a missing metric is an error), [`procfs`] (what a process
//! costs, from `/proc`), [`client`] (JSON-RPC over HTTP or a WebSocket) and [`latency`], and
//! [`cli`] their command lines' value parsers.

pub mod baseline;
pub mod chain_spec;
pub mod cli;
pub mod client;
pub mod fill;
pub mod fixture;
pub mod full;
pub mod latency;
pub mod node;

/// A node's metrics and the names the harnesses read (`statement-test-support`'s).
pub mod metrics {
	pub use statement_test_support::metrics::{names::*, Metrics, Sample};
}
pub mod procfs;
pub mod topology;
pub mod workload;
