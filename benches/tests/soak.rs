//! The soak harness's CI form: two minutes of its load on three debug nodes, node 2
//! restarted every 24 s, to show that the harness works end to end and that a short run of
//! it finds no lost statement, no failed call and no `ERROR` line. Slopes are printed but not
//! judged (the harness judges runs of 30 minutes or more); the published run is in
//! benches/README.md.

use std::process::Command;

#[test]
fn two_minutes_of_the_soak_lose_nothing_and_log_no_error() {
	let node = statement_test_support::binary::statement_node().expect("the node binary");
	let output = Command::new(env!("CARGO_BIN_EXE_soak"))
		.args(["--minutes", "2", "--restart-every", "0.4", "--sample-every", "5", "--node"])
		.arg(node)
		.output()
		.expect("the soak harness runs");
	let stdout = String::from_utf8_lossy(&output.stdout);
	let stderr = String::from_utf8_lossy(&output.stderr);
	assert!(output.status.success(), "the soak failed ({}):\n{stdout}\n{stderr}", output.status);
	for expected in [
		"0 never read on node 1",
		"ERROR lines logged: 0",
		"| node 2 (restarted) | descriptors, not the database's |",
		"slopes not judged",
	] {
		assert!(stdout.contains(expected), "no {expected:?} in the report:\n{stdout}\n{stderr}");
	}
	// The count the report gives right after `label`.
	let count = |label: &str| {
		stdout
			.split(label)
			.nth(1)
			.and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
			.unwrap_or_else(|| panic!("the report gives no count after {label:?}:\n{stdout}"))
	};
	let restarts = count("node 2 restarted ");
	assert!(restarts >= 3, "node 2 restarted only {restarts} times:\n{stdout}");
	let churned = count("churn: ");
	assert!(churned >= 5, "only {churned} subscriptions opened and closed:\n{stdout}");
}
