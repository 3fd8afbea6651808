//! A node's Prometheus endpoint: `GET /metrics` on loopback, and the samples in the text it
//! answers. Asking for a series the node does not export is an error naming it (and the
//! series of the same name it does export), never a zero: a renamed metric fails the test
//! that reads it.

use crate::{http, Error, Result};

/// The metric names the tests and harnesses read, as the node exports them.
pub mod names {
	/// Peers with an open statement stream, as Substrate names the gauge.
	pub const PEERS: &str = "substrate_sub_libp2p_peers_count";
	/// Statements in the store.
	pub const STATEMENTS: &str = "substrate_sub_statement_store_statements_total";
	/// Encoded bytes of the statements in the store.
	pub const STORED_BYTES: &str = "substrate_sub_statement_store_bytes_total";
	/// Subscriptions the store holds open.
	pub const SUBSCRIPTIONS: &str = "substrate_statement_store_subscriptions";
	/// Statements the store admitted as new (from RPC or from peers) since the node started.
	pub const SUBMITTED: &str = "substrate_sub_statement_store_submitted_statements";
	/// Statements gossip sent on to peers.
	pub const PROPAGATED: &str = "substrate_sync_propagated_statements";
	/// Statements received from peers that the store already had.
	pub const KNOWN_RECEIVED: &str = "substrate_sync_known_statement_received";
	/// Bytes of statements received from peers.
	pub const BYTES_RECEIVED: &str = "substrate_sync_statement_bytes_received_total";
	/// Statements received from peers.
	pub const RECEIVED: &str = "substrate_sync_statements_received";
	/// Times a peer sent statements faster than `--statement-rate-limit` allows.
	pub const FLOODING_DETECTED: &str = "substrate_sync_statement_flooding_detected";
}

/// One sample: a series (name and labels) and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
	/// The metric's name, e.g. `substrate_sub_libp2p_peers_count` (a histogram's series carry
	/// their suffix: `_bucket`, `_sum`, `_count`).
	pub name: String,
	/// Its labels, in the order written.
	pub labels: Vec<(String, String)>,
	/// Its value.
	pub value: f64,
}

/// The samples of one scrape.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
	samples: Vec<Sample>,
	text: String,
}

impl Metrics {
	/// Scrape `http://127.0.0.1:port/metrics`; an error unless it answers 200.
	pub fn scrape(port: u16) -> Result<Metrics> {
		let answer = http::try_exchange(port, "GET /metrics HTTP/1.0\r\n\r\n")
			.map_err(|err| Error::new(format!("metrics on port {port}: {err}")))?;
		if answer.status != 200 {
			return Err(Error::new(format!(
				"metrics on port {port}: HTTP {}: {:.200}",
				answer.status, answer.body
			)));
		}
		Metrics::parse(&answer.body)
	}

	/// The samples in Prometheus text; an error at the first line that is not one.
	pub fn parse(text: &str) -> Result<Metrics> {
		let mut samples = Vec::new();
		for (number, line) in text.lines().enumerate() {
			let line = line.trim();
			if line.is_empty() || line.starts_with('#') {
				continue;
			}
			let sample = sample(line)
				.ok_or_else(|| Error::new(format!("metrics line {}: {line:?}", number + 1)))?;
			samples.push(sample);
		}
		Ok(Metrics { samples, text: text.to_string() })
	}

	/// The text as scraped.
	pub fn text(&self) -> &str {
		&self.text
	}

	/// Every sample.
	pub fn samples(&self) -> &[Sample] {
		&self.samples
	}

	/// Whether any series is called `name`.
	pub fn has(&self, name: &str) -> bool {
		self.samples.iter().any(|sample| sample.name == name)
	}

	/// The samples `series` selects: `name`, or `name{label="value",..}`, which selects the
	/// series of that name carrying at least those labels.
	pub fn select(&self, series: &str) -> Result<Vec<&Sample>> {
		let (name, wanted) = selector(series)?;
		Ok(self
			.samples
			.iter()
			.filter(|sample| sample.name == name)
			.filter(|sample| wanted.iter().all(|label| sample.labels.contains(label)))
			.collect())
	}

	/// The value of the one sample `series` selects; an error if none or several do.
	pub fn value(&self, series: &str) -> Result<f64> {
		match self.select(series)?[..] {
			[one] => Ok(one.value),
			[] => Err(self.missing(series)),
			ref several => Err(Error::new(format!(
				"{series} selects {} series: {}; name their labels",
				several.len(),
				several.iter().map(|sample| describe(sample)).collect::<Vec<_>>().join(", ")
			))),
		}
	}

	/// The sum of every sample `series` selects; an error if none does.
	pub fn sum(&self, series: &str) -> Result<f64> {
		let selected = self.select(series)?;
		if selected.is_empty() {
			return Err(self.missing(series));
		}
		Ok(selected.iter().map(|sample| sample.value).sum())
	}

	fn missing(&self, series: &str) -> Error {
		let name = series.split('{').next().unwrap_or(series);
		let same_name: Vec<String> =
			self.samples.iter().filter(|sample| sample.name == name).map(describe).collect();
		if same_name.is_empty() {
			Error::new(format!("the node exports no metric {name}"))
		} else {
			Error::new(format!("no series {series}; the node exports {}", same_name.join(", ")))
		}
	}
}

/// `name{labels}` as written.
fn describe(sample: &Sample) -> String {
	if sample.labels.is_empty() {
		return sample.name.clone();
	}
	let labels: Vec<String> =
		sample.labels.iter().map(|(key, value)| format!("{key}={value:?}")).collect();
	format!("{}{{{}}}", sample.name, labels.join(","))
}

/// A selector's name and labels.
fn selector(series: &str) -> Result<(&str, Vec<(String, String)>)> {
	match series.split_once('{') {
		None => Ok((series, Vec::new())),
		Some((name, rest)) => {
			let inner = rest
				.strip_suffix('}')
				.ok_or_else(|| Error::new(format!("bad series selector {series:?}")))?;
			let labels = labels(inner)
				.ok_or_else(|| Error::new(format!("bad labels in selector {series:?}")))?;
			Ok((name, labels))
		}
	}
}

/// One sample line: `name value`, `name{labels} value` or either with a timestamp after.
fn sample(line: &str) -> Option<Sample> {
	let (series, rest) = match line.find('{') {
		Some(open) if open < line.find(' ').unwrap_or(usize::MAX) => {
			let close = open + line[open..].find('}')?;
			(&line[..=close], &line[close + 1..])
		}
		_ => line.split_at(line.find(' ')?),
	};
	let value = rest.split_whitespace().next()?;
	let value = match value {
		"+Inf" => f64::INFINITY,
		"-Inf" => f64::NEG_INFINITY,
		other => other.parse().ok()?,
	};
	let (name, labels) = match series.split_once('{') {
		None => (series, Vec::new()),
		Some((name, rest)) => (name, labels(rest.strip_suffix('}')?)?),
	};
	Some(Sample { name: name.to_string(), labels, value })
}

/// `key="value",...` (values may hold commas and escaped quotes).
fn labels(mut text: &str) -> Option<Vec<(String, String)>> {
	let mut labels = Vec::new();
	loop {
		text = text.trim_start_matches([',', ' ']);
		if text.is_empty() {
			return Some(labels);
		}
		let (key, rest) = text.split_once("=\"")?;
		let mut value = String::new();
		let mut chars = rest.char_indices();
		let end = loop {
			let (at, char) = chars.next()?;
			match char {
				'\\' => value.push(chars.next()?.1),
				'"' => break at,
				other => value.push(other),
			}
		};
		labels.push((key.trim().to_string(), value));
		text = &rest[end + 1..];
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	const TEXT: &str = "# HELP substrate_sub_libp2p_peers_count Peers.\n\
		# TYPE substrate_sub_libp2p_peers_count gauge\n\
		substrate_sub_libp2p_peers_count_max 9\n\
		substrate_sub_libp2p_peers_count{chain=\"dev\"} 2\n\
		statement_network_inbound_refused_total{chain=\"dev\",limit=\"per_address\"} 7\n\
		statement_network_inbound_refused_total{chain=\"dev\",limit=\"total\"} 1\n\
		substrate_sync_chunks_bucket{le=\"+Inf\"} 4\n\
		odd{reason=\"a, \\\"quoted\\\" one\"} 3 1700000000\n";

	#[test]
	fn series_are_selected_by_name_and_the_labels_given() {
		let metrics = Metrics::parse(TEXT).unwrap();
		assert_eq!(metrics.value("substrate_sub_libp2p_peers_count").unwrap(), 2.0);
		assert_eq!(
			metrics
				.value("statement_network_inbound_refused_total{limit=\"per_address\"}")
				.unwrap(),
			7.0
		);
		assert_eq!(metrics.sum("statement_network_inbound_refused_total").unwrap(), 8.0);
		assert_eq!(metrics.value("substrate_sync_chunks_bucket{le=\"+Inf\"}").unwrap(), 4.0);
		assert_eq!(metrics.value("odd{reason=\"a, \\\"quoted\\\" one\"}").unwrap(), 3.0);
	}

	#[test]
	fn a_missing_metric_is_an_error_never_a_zero() {
		let metrics = Metrics::parse(TEXT).unwrap();
		let missing = metrics.value("substrate_missing").unwrap_err();
		assert_eq!(missing.0, "the node exports no metric substrate_missing");
		let other_label =
			metrics.value("statement_network_inbound_refused_total{limit=\"other\"}").unwrap_err();
		assert!(other_label.0.contains("limit=\"per_address\""), "{other_label}");
		let ambiguous = metrics.value("statement_network_inbound_refused_total").unwrap_err();
		assert!(ambiguous.0.contains("selects 2 series"), "{ambiguous}");
	}

	#[test]
	fn a_line_that_is_not_a_sample_is_an_error() {
		assert!(Metrics::parse("metric_without_value\n").is_err());
		assert!(Metrics::parse("metric{label=\"x\" 3\n").is_err());
	}
}
