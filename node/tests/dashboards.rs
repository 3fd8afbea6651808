//! The Grafana dashboards in docs/grafana/ (upstream's panel list, upstream's metric names)
//! read a running node: every metric any of their queries names is exported, and every
//! series carries the `chain` label their `$chain` variable selects on.

mod common;

use statement_test_support::metrics::Metrics;
use std::{collections::BTreeSet, path::Path};

/// The dashboards' directory in this repository.
fn dashboards() -> Vec<(String, serde_json::Value)> {
	let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/grafana");
	let mut found = Vec::new();
	for entry in std::fs::read_dir(&dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display())) {
		let path = entry.unwrap().path();
		if path.extension().is_some_and(|ext| ext == "json") {
			let text = std::fs::read_to_string(&path).unwrap();
			let json = serde_json::from_str(&text)
				.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
			found.push((path.display().to_string(), json));
		}
	}
	found.sort_by(|a, b| a.0.cmp(&b.0));
	found
}

/// Every PromQL expression in a dashboard (`expr` of targets, `query` of variables), at any
/// depth.
fn queries(value: &serde_json::Value, out: &mut Vec<String>) {
	match value {
		serde_json::Value::Object(map) => {
			for (key, value) in map {
				match (key.as_str(), value) {
					("expr", serde_json::Value::String(expr)) => out.push(expr.clone()),
					("query", serde_json::Value::String(query)) => out.push(query.clone()),
					("query", serde_json::Value::Object(query)) => {
						if let Some(serde_json::Value::String(query)) = query.get("query") {
							out.push(query.clone());
						}
					}
					_ => queries(value, out),
				}
			}
		}
		serde_json::Value::Array(items) => items.iter().for_each(|item| queries(item, out)),
		_ => {}
	}
}

/// The metric names a query names: identifiers starting `substrate_`, a histogram's
/// `_bucket`, `_sum` and `_count` series taken back to its name.
fn metric_names(query: &str) -> BTreeSet<String> {
	let mut names = BTreeSet::new();
	let mut rest = query;
	while let Some(at) = rest.find("substrate_") {
		let before = rest[..at].chars().next_back();
		let tail = &rest[at..];
		let end =
			tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
		if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
			names.insert(tail[..end].to_string());
		}
		rest = &tail[end..];
	}
	names
}

/// The names `dashboard` queries that `metrics` has no series of (under the name, or as a
/// histogram's `_bucket`).
fn missing(dashboard: &serde_json::Value, metrics: &Metrics) -> Vec<String> {
	let mut texts = Vec::new();
	queries(dashboard, &mut texts);
	let names: BTreeSet<String> = texts.iter().flat_map(|query| metric_names(query)).collect();
	let exported = |name: &str| {
		let base = ["_bucket", "_sum", "_count"]
			.iter()
			.find_map(|suffix| name.strip_suffix(suffix))
			.unwrap_or(name);
		metrics.has(name) || metrics.has(&format!("{base}_bucket"))
	};
	names.into_iter().filter(|name| !exported(name)).collect()
}

#[test]
fn query_names_are_read_out_of_promql() {
	let names = metric_names(
		r#"histogram_quantile(0.99, sum by (le) (rate(substrate_rpc_calls_time_bucket{chain=~"$chain"}[5m]))) / substrate_sub_statement_store_capacity_bytes and nosubstrate_x"#,
	);
	let expected =
		["substrate_rpc_calls_time_bucket", "substrate_sub_statement_store_capacity_bytes"];
	assert_eq!(names.into_iter().collect::<Vec<_>>(), expected);
}

#[test]
fn every_metric_the_dashboards_query_is_exported_by_a_running_node_with_its_chain() {
	let node = common::start(&["--dev"]);
	// The RPC server's series are per method, as upstream's: they appear with the first call.
	let health = node.rpc("system_health", serde_json::json!([])).unwrap();
	assert!(health.get("peers").is_some(), "system_health answered {health}");
	let metrics = Metrics::scrape(node.metrics_port().unwrap()).unwrap();
	let found = dashboards();
	let names: Vec<&str> = found.iter().map(|(path, _)| path.as_str()).collect();
	assert_eq!(found.len(), 2, "the store and network dashboards: {names:?}");
	for (path, dashboard) in &found {
		let mut texts = Vec::new();
		queries(dashboard, &mut texts);
		assert!(texts.len() >= 20, "{path} holds only {} queries", texts.len());
		let missing = missing(dashboard, &metrics);
		assert!(missing.is_empty(), "{path} queries metrics the node does not export: {missing:?}");
	}
	// A planted fault: a query of a name the node does not export is caught.
	let planted = serde_json::json!({"panels": [{"targets": [
		{"expr": "rate(substrate_sub_statement_store_made_up_total{chain=~\"$chain\"}[5m])"}
	]}]});
	assert_eq!(missing(&planted, &metrics), ["substrate_sub_statement_store_made_up_total"]);
	let unlabelled: Vec<String> = metrics
		.samples()
		.iter()
		.filter(|sample| {
			!sample.labels.iter().any(|(name, value)| name == "chain" && value == "dev")
		})
		.map(|sample| sample.name.clone())
		.collect();
	assert!(unlabelled.is_empty(), "series without chain=\"dev\": {unlabelled:?}");
}
