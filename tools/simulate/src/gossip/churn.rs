//! Nodes coming and going: a node joins (its core, peer slots and, for a light node, its
//! topics), leaves (its peers notice a link latency later), and the churn schedule.

use super::{
	links::FIRST_WALK,
	node::{Node, SimStore},
	time, topic, Ev, Sim, SECOND,
};
use statement_network::{
	affinity::AffinityFilter,
	core::{Core, CoreConfig, Event},
	peerset::{Peerset, PeersetConfig},
	wire::Role,
	Metrics,
};
use statement_primitives::Topic;
use std::{
	collections::{BTreeSet, VecDeque},
	sync::Arc,
};

impl Sim {
	pub(super) fn churn_gap(&mut self) -> u64 {
		let per_second = self.params.churn_per_minute * self.params.nodes as f64 / 60.0;
		(self.rng.exponential(1.0 / per_second) * SECOND as f64) as u64
	}

	pub(super) fn add_node(&mut self, start: u64) -> u32 {
		let id = self.nodes.len() as u32;
		let mut rng = self.rng.fork(u64::from(id));
		let light = id >= self.params.boot_nodes && rng.unit() < self.params.light_share;
		let mut wants = Vec::new();
		if light {
			while wants.len() < self.params.light_topics.min(self.params.topics) {
				let topic = self.zipf.draw(&mut rng) as u32;
				if !wants.contains(&topic) {
					wants.push(topic);
				}
			}
			wants.sort_unstable();
		}
		let store = Arc::new(SimStore::new(self.index.clone(), self.statements.len()));
		let metrics = Arc::new(Metrics::default());
		let config = CoreConfig { propagation: self.params.propagation, ..CoreConfig::default() };
		let mut core = Core::new(config, store.clone(), metrics.clone(), time(start));
		if light {
			let topics: Vec<Topic> = wants.iter().map(|t| topic(*t)).collect();
			core.handle(
				time(start),
				Event::Interest(AffinityFilter::of_topics(rng.next().into(), topics.iter())),
			);
		}
		let peerset_config = PeersetConfig {
			in_peers: self.params.in_peers,
			out_peers: self.params.out_peers,
			reserved_only: false,
		};
		let mut peerset = Peerset::new(peerset_config, [], rng.next());
		for boot in 0..self.params.boot_nodes.min(self.params.nodes as u32) {
			if boot != id {
				peerset.discovered(boot);
			}
		}
		let published_before = self.statements.partition_point(|s| s.at < start) as u32;
		let node = Node {
			alive: true,
			role: if light { Role::Light } else { Role::Full },
			wanted_before: 0,
			wants,
			joined_at: start,
			core: Some(core),
			peerset,
			store,
			metrics,
			streams: BTreeSet::new(),
			cpu_free: 0,
			uplink_free: 0,
			tick_at: u64::MAX,
			next_walk: start,
			walk_interval: FIRST_WALK,
			walking: false,
			held_back: VecDeque::new(),
			kad_key: rng.next(),
			published_before,
			held_before: 0,
			last_before: start,
			converged_at: None,
			bytes_sent: 0,
			peak_queued: 0,
			peak_uplink: 0,
		};
		let wanted_before = (0..published_before)
			.filter(|k| node.wants(self.statements[*k as usize].topic))
			.count();
		let mut node = node;
		node.wanted_before = wanted_before as u32;
		if node.wanted_before == 0 {
			node.converged_at = Some(start);
		}
		self.kad.insert(node.kad_key, id);
		self.nodes.push(node);
		self.schedule(start, Ev::Slots(id));
		id
	}

	pub(super) fn churn(&mut self) {
		let now = self.now;
		if now >= self.load_end {
			return;
		}
		let live: Vec<u32> = (self.params.boot_nodes..self.nodes.len() as u32)
			.filter(|n| self.nodes[*n as usize].alive)
			.collect();
		if let Some(leaving) = (!live.is_empty()).then(|| live[self.rng.below(live.len())]) {
			self.leave(leaving);
		}
		self.add_node(now);
		self.joined += 1;
		let at = now + self.churn_gap();
		self.schedule(at, Ev::Churn);
	}

	pub(super) fn leave(&mut self, n: u32) {
		let now = self.now;
		let node = &mut self.nodes[n as usize];
		node.alive = false;
		node.core = None;
		node.held_back.clear();
		self.kad.remove(&node.kad_key);
		let peers: Vec<u32> = std::mem::take(&mut node.streams).into_iter().collect();
		for peer in peers {
			let at = now + self.latency(n, peer);
			self.schedule(at, Ev::CloseArrive { to: peer, from: n });
		}
		self.left += 1;
	}
}
