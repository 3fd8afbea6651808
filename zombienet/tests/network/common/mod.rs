//! What every scenario shares: the node binary, the chain spec, signed statements, spawning
//! a network, talking to its nodes, and waiting with deadlines.

mod binary;
mod chain_spec;
mod metrics;
mod network;
mod rpc;
mod statements;
mod wait;

pub use binary::node_binary;
pub use chain_spec::{Allowance, ChainSpec};
pub use metrics::{wait_metric, FLOODING_DETECTED, PEERS, SUBMITTED};
pub use network::{NodePlan, TestNetwork};
pub use rpc::{diff, encoded, wait_until_all_store, Client, Encoded};
pub use statement_test_support::hex;
pub use statements::{
	account_of, fingerprint, sign, sign_all, topic, AccountId, Draft, Statement, MAX_DATA_BYTES,
};
pub use wait::{eventually, Check};
