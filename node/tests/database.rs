//! `statement-node check-db` and `repair` on a real node's database.

mod common;

use jsonrpsee::{core::client::ClientT, http_client::HttpClientBuilder, rpc_params};
use serde_json::Value;
use std::process::{Command, Output};

fn node_command(args: &[&str]) -> Output {
	Command::new(env!("CARGO_BIN_EXE_statement-node")).args(args).output().unwrap()
}

/// A signed statement from the `sign` subcommand, as `0x`-hex.
fn signed(data: &str) -> String {
	let out = node_command(&["sign", "--suri", "//Alice", "--topic", "check", "--data", data]);
	assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
	String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[tokio::test]
async fn check_db_refuses_a_running_node_passes_a_sound_database_and_repair_rebuilds_it() {
	let base = tempfile::tempdir().unwrap();
	let base_path = base.path().to_str().unwrap();
	let node = common::start(&["--chain", "dev", "-d", base_path, "--no-prometheus"]);
	let client = HttpClientBuilder::default().build(node.http_url()).unwrap();
	for n in 0..5 {
		let result: Value = client
			.request("statement_submit", rpc_params![signed(&format!("n{n}"))])
			.await
			.unwrap();
		assert_eq!(result["status"], "new");
	}
	// The store is opened the same way as by the node, so a running node's lock is named.
	let busy = node_command(&["check-db", "--chain", "dev", "-d", base_path]);
	assert!(!busy.status.success());
	let stderr = String::from_utf8_lossy(&busy.stderr);
	assert!(stderr.contains("in use by another process"), "{stderr}");
	assert!(node.stop().unwrap().success());

	let check = node_command(&["check-db", "--chain", "dev", "-d", base_path]);
	let stdout = String::from_utf8_lossy(&check.stdout);
	assert!(check.status.success(), "{stdout}{}", String::from_utf8_lossy(&check.stderr));
	assert!(stdout.contains("5 statements, no problems"), "{stdout}");

	let repair = node_command(&["repair", "--chain", "dev", "-d", base_path]);
	let stdout = String::from_utf8_lossy(&repair.stdout);
	assert!(repair.status.success(), "{stdout}{}", String::from_utf8_lossy(&repair.stderr));
	assert!(stdout.contains("rebuilt with 5 statements; 0 left out"), "{stdout}");

	let missing = node_command(&["check-db", "--chain", "dev", "-d", "/nonexistent-base"]);
	assert!(!missing.status.success());
	assert!(String::from_utf8_lossy(&missing.stderr).contains("no statement database at"));
}

#[test]
fn stopping_a_tmp_node_closes_the_store_before_its_directory_goes() {
	let node = common::start(&["--tmp", "--chain", "dev", "--no-prometheus"]);
	let (status, lines) = node.stop_logged().unwrap();
	assert!(status.success());
	assert!(lines.iter().any(|line| line.contains("Statement store closed")), "{lines:#?}");
	let trouble: Vec<&String> =
		lines.iter().filter(|line| line.contains("WARN") || line.contains("ERROR")).collect();
	assert!(trouble.is_empty(), "a clean stop logged: {trouble:#?}");
}

#[test]
fn a_killed_dev_node_leaves_no_temporary_base_path_behind() {
	let node = common::start(&["--dev", "--no-prometheus"]);
	// The store's files are open under the node's temporary base path.
	let open: Vec<std::path::PathBuf> = std::fs::read_dir(format!("/proc/{}/fd", node.pid()))
		.unwrap()
		.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
		.collect();
	let base = open
		.iter()
		.find_map(|path| {
			path.ancestors().find(|dir| {
				dir.file_name()
					.is_some_and(|name| name.to_string_lossy().starts_with("statement-node"))
			})
		})
		.unwrap_or_else(|| panic!("no open file under a temporary base path: {open:#?}"))
		.to_path_buf();
	assert!(base.exists(), "{}", base.display());
	node.kill().unwrap();
	assert!(!base.exists(), "SIGKILL left {} behind", base.display());
}
