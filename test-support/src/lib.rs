//! What the workspace's tests, benchmarks and harnesses share, written once.
//!
//! ```no_run
//! use statement_test_support::{binary, node::Launch};
//!
//! // The node this repository builds, started on ports the OS picks.
//! let node = Launch::new(binary::statement_node().unwrap()).dev().start().unwrap();
//! let health = node.rpc("system_health", serde_json::json!([])).unwrap();
//! assert_eq!(health["isSyncing"], false);
//! assert!(node.metric("substrate_sub_libp2p_peers_count").unwrap() >= 0.0);
//! ```
//!
//! The parts:
//! - [`binary`]: the `statement-node` to run, found or built once per process;
//! - [`node`]: a `statement-node` child process, ready once it has written its readiness file
//!   (`--ready-file`: the addresses it serves, as JSON), with its log kept;
//! - [`metrics`]: a Prometheus scrape, where asking for a metric the node does not export is
//!   an error, never a zero;
//! - [`http`] and [`ws`]: raw HTTP exchanges and WebSocket upgrades, for what JSON-RPC clients
//!   do not show (status codes, headers, upgrades refused);
//! - [`wait`]: `eventually`, the one way a test waits for a condition, with a deadline that
//!   detects hangs and says what was last seen;
//! - [`hex`]: `0x`-hex text;
//! - [`accounts`] and [`topic`]: the dev accounts and the one rule that turns a topic name
//!   into bytes (both the primitives', which the node's `sign` uses too);
//! - [`size`]: counts as command lines take them (`200k`, `1M`);
//! - [`routing`]: topic-routed storage's placement rule, to check a network's holders by;
//! - [`privileged`]: fixtures that need root or a high descriptor limit (a tmpfs to fill);
//! - `store` (feature `store`): a store in a temporary directory that admits every account;
//! - `cli` (feature `cli`): every documented invocation of a command line parses.
#![warn(missing_docs)]

pub mod accounts;
pub mod binary;
#[cfg(feature = "cli")]
pub mod cli;
pub mod hex;
pub mod http;
pub mod metrics;
pub mod node;
pub mod privileged;
pub mod routing;
pub mod size;
#[cfg(feature = "store")]
pub mod store;
pub mod topic;
pub mod wait;
pub mod ws;

mod error;

pub use error::{Error, Result};
pub use wait::{eventually, eventually_blocking, Check};
