//! The load and what it measures: statements published, checked, delivered, and the figures.

use super::{Ev, Outcome, Sim};
use crate::stats::Histogram;
use statement_network::{core::Event, wire::Role};
use statement_primitives::SubmitResult;
use std::time::Duration;

impl Sim {
	pub(super) fn publish(&mut self, k: u32) {
		let origin = match self.params.origin {
			Some(origin) if self.nodes[origin as usize].alive => origin,
			_ => loop {
				let pick = self.rng.below(self.nodes.len()) as u32;
				let node = &self.nodes[pick as usize];
				if node.alive && node.role != Role::Light {
					break pick;
				}
			},
		};
		self.origin[k as usize] = origin;
		let done = self.occupy_cpu(origin);
		self.schedule(done, Ev::Checked { node: origin, peer: None, statement: k });
	}

	pub(super) fn checked(&mut self, n: u32, peer: Option<u32>, statement: u32) {
		if !self.nodes[n as usize].alive {
			return;
		}
		let new = self.nodes[n as usize].store.admit(statement);
		let published = &self.statements[statement as usize];
		let hash = published.hash;
		let encoding = published.encoding.clone();
		if new {
			self.delivered(n, statement, peer.is_some());
		}
		if let Some(peer) = peer {
			let result = if new { SubmitResult::New } else { SubmitResult::Known };
			self.drive(n, Event::Verdict { peer, hash, result });
		}
		if new {
			self.drive(n, Event::Admitted(vec![encoding]));
		}
	}

	pub(super) fn delivered(&mut self, n: u32, statement: u32, by_peer: bool) {
		let now = self.now;
		let published = &self.statements[statement as usize];
		let node = &mut self.nodes[n as usize];
		if by_peer {
			self.deliveries_by_peers += 1;
		}
		if node.joined_at <= published.at {
			let latency = now - published.at;
			if self.origin[statement as usize] != n {
				self.delivery.record(Duration::from_nanos(latency));
			}
			let last = &mut self.last[statement as usize];
			*last = (*last).max(now);
			if self.params.watched.contains(&n) {
				let last = &mut self.watched_last[statement as usize];
				*last = (*last).max(now);
			}
		} else if statement < node.published_before && node.wants(published.topic) {
			node.held_before += 1;
			node.last_before = now;
			if node.held_before == node.wanted_before && node.converged_at.is_none() {
				node.converged_at = Some(now);
			}
		}
	}

	pub(super) fn degree_now(&self) -> (usize, f64, usize) {
		let degrees: Vec<usize> =
			self.nodes.iter().filter(|node| node.alive).map(|node| node.streams.len()).collect();
		let mean = degrees.iter().sum::<usize>() as f64 / degrees.len().max(1) as f64;
		(
			degrees.iter().copied().min().unwrap_or(0),
			mean,
			degrees.iter().copied().max().unwrap_or(0),
		)
	}

	pub(super) fn outcome(self) -> Outcome {
		let mut reach_all = Histogram::default();
		let mut watched = Histogram::default();
		let (mut expected, mut missing, mut statements_missing) = (0u64, 0u64, 0u64);
		for (k, published) in self.statements.iter().enumerate() {
			if self.origin[k] == u32::MAX {
				continue;
			}
			let mut missed = false;
			for node in self.nodes.iter().filter(|node| node.alive) {
				if node.joined_at > published.at || !node.wants(published.topic) {
					continue;
				}
				expected += 1;
				if !node.store.has(k as u32) {
					missing += 1;
					missed = true;
				}
			}
			statements_missing += u64::from(missed);
			if self.last[k] > 0 {
				reach_all.record(Duration::from_nanos(self.last[k] - published.at));
			}
			if self.watched_last[k] > 0 {
				watched.record(Duration::from_nanos(self.watched_last[k] - published.at));
			}
		}
		let published = self.origin.iter().filter(|origin| **origin != u32::MAX).count();
		let node_count = self.nodes.len() as f64;
		let bytes: u64 = self.nodes.iter().map(|node| node.bytes_sent).sum();
		let sent: u64 = self
			.nodes
			.iter()
			.map(|node| node.metrics.propagated.get() + node.metrics.initial_sync_sent.get())
			.sum();
		let received: u64 = self.nodes.iter().map(|node| node.metrics.received.get()).sum();
		let deliveries = self.deliveries_by_peers.max(1) as f64;
		let mut converged = Histogram::default();
		let mut not_converged = 0;
		for node in self.nodes.iter().skip(self.params.nodes).filter(|node| node.alive) {
			// Statements no live node holds (their only holders left before passing them on)
			// cannot be caught up on: a node that has all the others caught up.
			let lacks_one_held_elsewhere = || {
				(0..node.published_before).any(|k| {
					node.wants(self.statements[k as usize].topic)
						&& !node.store.has(k)
						&& self.nodes.iter().any(|other| other.alive && other.store.has(k))
				})
			};
			match node.converged_at {
				Some(at) => converged.record(Duration::from_nanos(at - node.joined_at)),
				None if !lacks_one_held_elsewhere() => {
					converged.record(Duration::from_nanos(node.last_before - node.joined_at))
				}
				None => not_converged += 1,
			}
		}
		Outcome {
			nodes: self.params.nodes,
			joined: self.joined,
			left: self.left,
			statements: published,
			degree: self.degree.unwrap_or((0, 0.0, 0)),
			reach_all,
			delivery: self.delivery,
			watched,
			expected,
			missing,
			statements_missing,
			bytes_per_node_statement: bytes as f64 / (node_count * published.max(1) as f64),
			sends_per_delivery: sent as f64 / deliveries,
			duplicates_per_delivery: (received as f64 - deliveries).max(0.0) / deliveries,
			peak_queued: self.nodes.iter().map(|node| node.peak_queued).max().unwrap_or(0),
			peak_uplink_bytes: self.nodes.iter().map(|node| node.peak_uplink).max().unwrap_or(0),
			converged,
			not_converged,
			simulated: Duration::from_nanos(self.now),
			events: self.events,
		}
	}
}
