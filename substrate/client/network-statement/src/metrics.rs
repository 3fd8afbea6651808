//! Gossip metrics, under the reference's names: counted here, handed out as [`Family`] values
//! ([`Metrics::families`]); the node renders them in Prometheus' text format. The value types
//! are the workspace's one set, `statement_primitives::metrics`.

pub use statement_primitives::metrics::{Family, Histogram, Kind, Reading, Sample, Value};

// The reference's buckets, so that its dashboards' quantiles read the same: statements per
// notification 1, 2, 4 ... 8192 (`exponential_buckets(1.0, 2.0, 14)`); send latency 1 us to
// 1 s; initial syncs 10 ms to 60 s.
const CHUNK_BOUNDS: &[f64] =
	&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0];
const LATENCY_BOUNDS: &[f64] = &[0.000_001, 0.000_01, 0.000_1, 0.001, 0.01, 0.1, 1.0];
const SYNC_BOUNDS: &[f64] = &[0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// Everything gossip counts.
#[derive(Debug)]
pub struct Metrics {
	/// Statements sent, once per recipient.
	pub propagated: Value,
	/// Received statements the store already had.
	pub known_received: Value,
	/// Statements too large for a notification of their own.
	pub skipped_oversized: Value,
	/// Statements per propagation notification sent.
	pub propagation_chunks: Histogram,
	/// Statements per initial-sync notification sent.
	pub initial_sync_chunks: Histogram,
	/// Received statements waiting for validation (gauge).
	pub pending_validations: Value,
	/// Received statements dropped because the validation queue was full.
	pub ignored: Value,
	/// Peers with an open statement stream (gauge).
	pub peers: Value,
	/// Of those, light ones (gauge).
	pub light_peers: Value,
	/// Peers discovery has found, connected or not (gauge).
	pub discovered_peers: Value,
	/// Statements received.
	pub received: Value,
	/// Notification bytes sent.
	pub bytes_sent: Value,
	/// Notification bytes received.
	pub bytes_received: Value,
	/// Time to hand a notification to the peer's connection.
	pub send_latency: Histogram,
	/// Statements sent by initial syncs.
	pub initial_sync_sent: Value,
	/// Notifications sent by initial syncs.
	pub initial_sync_bursts: Value,
	/// Peers whose initial sync is under way (gauge).
	pub initial_sync_peers: Value,
	/// How long initial syncs took, completed.
	pub initial_sync_completed: Histogram,
	/// How long initial syncs ran before their peer went, abandoned.
	pub initial_sync_abandoned: Histogram,
	/// Bytes of initial-sync notifications in flight (gauge).
	pub initial_sync_in_flight: Value,
	/// Bytes of propagation notifications in flight (gauge).
	pub propagation_in_flight: Value,
	/// Peers caught sending over the rate limit.
	pub flooding_detected: Value,
	/// Sends that failed: the connection went.
	pub failed_network: Value,
	/// Sends that took longer than the send timeout.
	pub failed_timeout: Value,
	/// Statements dropped from a full outbox.
	pub outbox_full: Value,
	/// Statements a failed notification carried: the connection went.
	pub undelivered_network: Value,
	/// Statements a notification that timed out carried.
	pub undelivered_timeout: Value,
	/// Statements dropped from a full outbox (as `outbox_full`, under the statement count).
	pub undelivered_outbox_full: Value,
	/// Undecodable notifications received.
	pub bad_notifications: Value,
	/// Statements received whose proof or form the store refused.
	pub invalid_received: Value,
	/// Peers dropped and banned for their standing.
	pub peers_banned: Value,
	/// Accepted connections open now, at any stage (gauge).
	pub inbound_connections: Value,
	/// Connections closed on accept: their address had its share.
	pub inbound_refused_address: Value,
	/// Connections closed on accept: all inbound slots were taken.
	pub inbound_refused_total: Value,
	/// Failed accepts (no descriptor left...); the listener pauses and tries again.
	pub accept_errors: Value,
	/// Topic-routed storage: peers in the routing table (gauge).
	pub routing_known_peers: Value,
	/// Peers with an open statement stream, under the routed family's name (gauge).
	pub routing_connected_peers: Value,
	/// Peers that may hold statements: routed nodes known (gauge).
	pub routing_eligible_peers: Value,
	/// Admitted statements this node holds (among the K nearest of a key).
	pub routing_holder: Value,
	/// Admitted statements it keeps because a subscription here names a topic.
	pub routing_interest: Value,
	/// Admitted statements it forwards and drops.
	pub routing_transient: Value,
	/// Lookups started.
	pub routing_lookups: Value,
	/// Keys this node holds and hands over (gauge).
	pub routing_held_keys: Value,
	/// Statements sent to holders or watchers, once per recipient.
	pub routing_forwarded: Value,
	/// Statements pushed to new holders, once per recipient.
	pub routing_handed_over: Value,
	/// Statements dropped because this node does not hold them.
	pub routing_released: Value,
	/// One-shot queries' topics fetched from their holders.
	pub routing_fetches: Value,
	/// 1 when the node routes: the `v2dht` families are shown.
	pub routing_enabled: Value,
}

impl Default for Metrics {
	fn default() -> Self {
		Metrics {
			propagated: Value::default(),
			known_received: Value::default(),
			skipped_oversized: Value::default(),
			propagation_chunks: Histogram::new(CHUNK_BOUNDS),
			initial_sync_chunks: Histogram::new(CHUNK_BOUNDS),
			pending_validations: Value::default(),
			ignored: Value::default(),
			peers: Value::default(),
			light_peers: Value::default(),
			discovered_peers: Value::default(),
			received: Value::default(),
			bytes_sent: Value::default(),
			bytes_received: Value::default(),
			send_latency: Histogram::new(LATENCY_BOUNDS),
			initial_sync_sent: Value::default(),
			initial_sync_bursts: Value::default(),
			initial_sync_peers: Value::default(),
			initial_sync_completed: Histogram::new(SYNC_BOUNDS),
			initial_sync_abandoned: Histogram::new(SYNC_BOUNDS),
			initial_sync_in_flight: Value::default(),
			propagation_in_flight: Value::default(),
			flooding_detected: Value::default(),
			failed_network: Value::default(),
			failed_timeout: Value::default(),
			outbox_full: Value::default(),
			undelivered_network: Value::default(),
			undelivered_timeout: Value::default(),
			undelivered_outbox_full: Value::default(),
			bad_notifications: Value::default(),
			invalid_received: Value::default(),
			peers_banned: Value::default(),
			inbound_connections: Value::default(),
			inbound_refused_address: Value::default(),
			inbound_refused_total: Value::default(),
			accept_errors: Value::default(),
			routing_known_peers: Value::default(),
			routing_connected_peers: Value::default(),
			routing_eligible_peers: Value::default(),
			routing_holder: Value::default(),
			routing_interest: Value::default(),
			routing_transient: Value::default(),
			routing_lookups: Value::default(),
			routing_held_keys: Value::default(),
			routing_forwarded: Value::default(),
			routing_handed_over: Value::default(),
			routing_released: Value::default(),
			routing_fetches: Value::default(),
			routing_enabled: Value::default(),
		}
	}
}

impl Metrics {
	/// Count a retention decision: `holder`, `interest` or `transient`.
	pub fn routing_decision(&self, track: &str) {
		match track {
			"holder" => self.routing_holder.add(1),
			"interest" => self.routing_interest.add(1),
			_ => self.routing_transient.add(1),
		}
	}

	/// The topic-routed storage metrics, under upstream's `v2dht` family names; the node shows
	/// them when it routes.
	pub fn routing_families(&self) -> Vec<Family> {
		use Kind::{Counter, Gauge};
		vec![
			Family::one(
				"substrate_sync_statement_v2dht_known_peers",
				Gauge,
				"Routed nodes in the routing table.",
				self.routing_known_peers.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_connected_peers",
				Gauge,
				"Peers with an open statement stream.",
				self.routing_connected_peers.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_eligible_peers",
				Gauge,
				"Routed nodes that may hold statements: the lookup candidates.",
				self.routing_eligible_peers.get(),
			),
			Family {
				name: "substrate_sync_statement_v2dht_retention_decisions_total",
				help: "Admitted statements by what this node does with them.",
				kind: Counter,
				samples: [
					("holder", &self.routing_holder),
					("interest", &self.routing_interest),
					("transient", &self.routing_transient),
				]
				.into_iter()
				.map(|(track, value)| Sample::value(&[("track", track)], value.get()))
				.collect(),
			},
			Family::one(
				"substrate_sync_statement_v2dht_lookups_total",
				Counter,
				"Lookups of the nodes nearest a key.",
				self.routing_lookups.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_held_keys",
				Gauge,
				"Topics (and hashes of statements without topics) this node holds.",
				self.routing_held_keys.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_forwarded_total",
				Counter,
				"Statements sent to their holders or watchers, once per recipient.",
				self.routing_forwarded.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_handed_over_total",
				Counter,
				"Statements pushed to new holders, once per recipient.",
				self.routing_handed_over.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_released_total",
				Counter,
				"Statements dropped: this node does not hold them.",
				self.routing_released.get(),
			),
			Family::one(
				"substrate_sync_statement_v2dht_fetches_total",
				Counter,
				"Topics of one-shot queries fetched from their holders (this node holds none of the query's topics).",
				self.routing_fetches.get(),
			),
		]
	}

	/// Every metric, under the reference's names, in the order the node shows them.
	pub fn families(&self) -> Vec<Family> {
		use Kind::{Counter, Gauge};
		let mut families = vec![
			Family::one(
				"substrate_sub_libp2p_peers_count",
				Gauge,
				"Peers with an open statement stream.",
				self.peers.get(),
			),
			Family::one(
				"statement_network_discovered_peers",
				Gauge,
				"Peers discovery has found, connected or not.",
				self.discovered_peers.get(),
			),
			Family::one(
				"substrate_sync_propagated_statements",
				Counter,
				"Statements sent, once per recipient.",
				self.propagated.get(),
			),
			Family::one(
				"substrate_sync_known_statement_received",
				Counter,
				"Received statements already stored.",
				self.known_received.get(),
			),
			Family::one(
				"substrate_sync_skipped_oversized_statements",
				Counter,
				"Statements too large for a notification.",
				self.skipped_oversized.get(),
			),
			Family::one(
				"substrate_sync_pending_statement_validations",
				Gauge,
				"Received statements waiting for validation.",
				self.pending_validations.get(),
			),
			Family::one(
				"substrate_sync_ignored_statements",
				Counter,
				"Received statements dropped: validation queue full.",
				self.ignored.get(),
			),
			Family::one(
				"substrate_sync_statements_received",
				Counter,
				"Statements received from peers.",
				self.received.get(),
			),
			Family::one(
				"substrate_sync_statement_bytes_sent_total",
				Counter,
				"Notification bytes sent.",
				self.bytes_sent.get(),
			),
			Family::one(
				"substrate_sync_statement_bytes_received_total",
				Counter,
				"Notification bytes received.",
				self.bytes_received.get(),
			),
			Family::one(
				"substrate_sync_initial_sync_statements_sent",
				Counter,
				"Statements sent by initial syncs.",
				self.initial_sync_sent.get(),
			),
			Family::one(
				"substrate_sync_initial_sync_bursts_total",
				Counter,
				"Notifications sent by initial syncs.",
				self.initial_sync_bursts.get(),
			),
			Family::one(
				"substrate_sync_initial_sync_peers_active",
				Gauge,
				"Peers being initially synced.",
				self.initial_sync_peers.get(),
			),
			Family::one(
				"substrate_sync_initial_sync_in_flight_bytes",
				Gauge,
				"Initial-sync bytes in flight.",
				self.initial_sync_in_flight.get(),
			),
			Family::one(
				"substrate_sync_propagation_in_flight_bytes",
				Gauge,
				"Propagation bytes in flight.",
				self.propagation_in_flight.get(),
			),
			Family::one(
				"substrate_sync_statement_flooding_detected",
				Counter,
				"Peers caught over the rate limit.",
				self.flooding_detected.get(),
			),
			Family::one(
				"substrate_sync_statement_bad_notifications_total",
				Counter,
				"Undecodable notifications received.",
				self.bad_notifications.get(),
			),
			Family::one(
				"substrate_sync_statement_invalid_received_total",
				Counter,
				"Received statements the store refused as invalid.",
				self.invalid_received.get(),
			),
			Family::one(
				"substrate_sync_statement_peers_banned_total",
				Counter,
				"Peers dropped and banned.",
				self.peers_banned.get(),
			),
			Family::one(
				"statement_network_inbound_connections",
				Gauge,
				"Accepted connections open now, handshaking or established.",
				self.inbound_connections.get(),
			),
			Family::one(
				"statement_network_listener_accept_errors_total",
				Counter,
				"Failed accepts (such as no file descriptor left); the listener pauses and tries again.",
				self.accept_errors.get(),
			),
		];
		families.push(Family {
			name: "statement_network_inbound_refused_total",
			help: "Connections closed on accept, by the limit they met.",
			kind: Counter,
			samples: vec![
				Sample::value(&[("limit", "per_address")], self.inbound_refused_address.get()),
				Sample::value(&[("limit", "total")], self.inbound_refused_total.get()),
			],
		});
		families.push(Family {
			name: "substrate_sync_statement_peers_connected",
			help: "Peers with an open statement stream, by role.",
			kind: Gauge,
			samples: vec![
				Sample::value(
					&[("kind", "full")],
					self.peers.get().saturating_sub(self.light_peers.get()),
				),
				Sample::value(&[("kind", "light")], self.light_peers.get()),
			],
		});
		let by_reason = |name, help, [network, timeout, outbox_full]: [&Value; 3]| Family {
			name,
			help,
			kind: Counter,
			samples: [("network", network), ("timeout", timeout), ("outbox_full", outbox_full)]
				.into_iter()
				.map(|(reason, value)| Sample::value(&[("reason", reason)], value.get()))
				.collect(),
		};
		families.push(by_reason(
			"substrate_sync_statement_send_failures_total",
			"Statements or notifications not sent, by reason.",
			[&self.failed_network, &self.failed_timeout, &self.outbox_full],
		));
		families.push(by_reason(
			"substrate_sync_statement_undelivered_total",
			"Statements not delivered to a peer, by reason.",
			[&self.undelivered_network, &self.undelivered_timeout, &self.undelivered_outbox_full],
		));
		if self.routing_enabled.get() > 0 {
			families.extend(self.routing_families());
		}
		let histogram = |name, help, samples| Family { name, help, kind: Kind::Histogram, samples };
		families.push(histogram(
			"substrate_sync_propagated_statements_chunks",
			"Statements per notification sent, by send path: propagation or initial_sync.",
			vec![
				self.propagation_chunks.sample(&[("kind", "propagation")]),
				self.initial_sync_chunks.sample(&[("kind", "initial_sync")]),
			],
		));
		families.push(histogram(
			"substrate_sync_statement_sent_latency_seconds",
			"Time to hand a notification to the connection.",
			vec![self.send_latency.sample(&[])],
		));
		families.push(histogram(
			"substrate_sync_initial_sync_duration_seconds",
			"Initial sync durations.",
			vec![
				self.initial_sync_completed.sample(&[("outcome", "completed")]),
				self.initial_sync_abandoned.sample(&[("outcome", "abandoned")]),
			],
		));
		families
	}
}

#[cfg(test)]
mod tests {
	use super::*;

	fn family<'a>(families: &'a [Family], name: &str) -> &'a Family {
		families.iter().find(|family| family.name == name).unwrap_or_else(|| panic!("{name}"))
	}

	#[test]
	fn metrics_are_handed_out_under_the_reference_names() {
		let metrics = Metrics::default();
		metrics.flooding_detected.add(2);
		metrics.propagation_chunks.observe(3.0);
		let families = metrics.families();
		let flooding = family(&families, "substrate_sync_statement_flooding_detected");
		assert_eq!(flooding.kind, Kind::Counter);
		assert_eq!(flooding.samples, vec![Sample::value(&[], 2)]);
		let chunks = &family(&families, "substrate_sync_propagated_statements_chunks").samples[0];
		let Reading::Histogram { buckets, count, .. } = &chunks.reading else {
			panic!("{chunks:?}")
		};
		assert_eq!(chunks.labels, vec![("kind", "propagation")]);
		assert_eq!((buckets[1], buckets[2], *count), ((2.0, 0), (4.0, 1), 1));
		assert_eq!(buckets.len(), 14);
		let syncs = family(&families, "substrate_sync_initial_sync_duration_seconds");
		assert_eq!(syncs.samples[0].labels, vec![("outcome", "completed")]);
		assert!(matches!(syncs.samples[0].reading, Reading::Histogram { count: 0, .. }));
		let peers = family(&families, "substrate_sub_libp2p_peers_count");
		assert_eq!((peers.kind, &peers.samples), (Kind::Gauge, &vec![Sample::value(&[], 0)]));
	}
}
