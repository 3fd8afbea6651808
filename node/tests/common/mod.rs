//! The one fixture every node test shares: this package's `statement-node`, started by the
//! workspace's launcher (`statement-test-support`) on ports the OS picks, listening for peers
//! on loopback.

// Each test binary uses its own part of this module.
#![allow(dead_code, unused_imports)]

pub use statement_test_support::{
	http::{exchange as http_exchange, get, post, Answer},
	node::{Launch, Node},
};

/// The launch of this package's node with `args` (listening for peers on loopback unless
/// they say where), to add to before starting.
pub fn launch(args: &[&str]) -> Launch {
	let launch = Launch::new(env!("CARGO_BIN_EXE_statement-node"));
	let launch = if args.contains(&"--listen-addr") { launch } else { launch.loopback() };
	launch.args(args)
}

/// This package's node started with `args`; the test fails with the node's log if it does
/// not get ready.
pub fn start(args: &[&str]) -> Node {
	launch(args).start().unwrap_or_else(|err| panic!("{err}"))
}
