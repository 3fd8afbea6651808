//! The node's side of networking: its flags and chain spec turned into a
//! [`statement_network::Config`], and the chain's genesis hash, which names the protocol.

use crate::{
	chain_spec::ChainSpec,
	cli::{PropagationMode, RunCmd},
	error::Error,
};
use statement_network::{
	identity, parse_address, routing::RoutingConfig, Config, Multiaddr, Propagation, Version,
};
use statement_primitives::Topic;
use std::path::Path;

/// Where the node keeps its generated network key under the base path.
pub fn key_path(base: &Path, spec: &ChainSpec) -> std::path::PathBuf {
	base.join("chains").join(&spec.id).join("network").join("secret_ed25519")
}

/// Multiaddresses from flags (and spec entries) that may each hold several, space-separated,
/// as zombienet passes `--bootnodes`.
fn addresses<'a>(
	values: impl Iterator<Item = &'a String>,
	needs_peer: bool,
) -> Result<Vec<Multiaddr>, Error> {
	let mut out = Vec::new();
	for value in values {
		for text in value.split_whitespace() {
			out.push(parse_address(text, needs_peer)?);
		}
	}
	Ok(out)
}

/// The bound on inbound connections: the flag if given (with a warning if it leaves fewer than
/// half the descriptors to the rest of the node), otherwise the default or half the
/// descriptor limit, whichever is lower.
pub fn max_inbound_connections(flag: Option<usize>, fd_limit: Option<u64>) -> usize {
	let half = fd_limit.map_or(usize::MAX, |limit| (limit / 2).max(1) as usize);
	match flag {
		Some(count) => {
			if count > half {
				log::warn!(
					"--max-inbound-connections {count} is more than half the file descriptor \
					 limit: idle connections can then starve the database and RPC of descriptors"
				);
			}
			count
		}
		None if half < statement_network::DEFAULT_MAX_INBOUND_CONNECTIONS => {
			log::warn!(
				"Inbound connections bounded at {half}, half the file descriptor limit \
				 (default {})",
				statement_network::DEFAULT_MAX_INBOUND_CONNECTIONS
			);
			half
		}
		None => statement_network::DEFAULT_MAX_INBOUND_CONNECTIONS,
	}
}

/// The network config of this run, with `fd_limit` the soft descriptor limit it runs with.
pub fn config(
	cmd: &RunCmd,
	spec: &ChainSpec,
	base: &Path,
	fd_limit: Option<u64>,
) -> Result<Config, Error> {
	let node_key = match (&cmd.node_key, &cmd.node_key_file) {
		(Some(hex), _) => identity::secret_from_hex(hex)?,
		(None, Some(file)) => identity::secret_from_file(file)?,
		(None, None) => identity::secret_kept_in(&key_path(base, spec))?,
	};
	let mut config = Config::new(spec.genesis_hash()?, node_key);
	config.listen_addresses = if cmd.listen_addr.is_empty() {
		vec![parse_address(&format!("/ip4/0.0.0.0/tcp/{}", cmd.port), false)?]
	} else {
		addresses(cmd.listen_addr.iter(), false)?
	};
	config.boot_nodes = addresses(cmd.bootnodes.iter().chain(&spec.boot_nodes), true)?;
	config.reserved_nodes = addresses(cmd.reserved_nodes.iter(), true)?;
	config.reserved_only = cmd.reserved_only;
	config.in_peers = cmd.in_peers;
	config.out_peers = cmd.out_peers;
	config.discovery = !cmd.no_discovery;
	config.max_connections_per_ip = cmd.max_connections_per_ip;
	config.max_inbound_connections = max_inbound_connections(cmd.max_inbound_connections, fd_limit);
	config.fork_id = spec.fork_id.clone();
	config.node_name = cmd.name.clone().unwrap_or_else(|| "statement-node".into());
	config.version = if cmd.statement_protocol_version == 1 { Version::V1 } else { Version::V2 };
	if !cmd.statement_topics.is_empty() {
		let mut topics = Vec::new();
		for value in &cmd.statement_topics {
			for text in value.split_whitespace() {
				topics.push(Topic(crate::sign::bytes32(text)?));
			}
		}
		config.light_topics = Some(topics);
	}
	config.rate_limit = cmd.statement_rate_limit;
	config.propagation = match cmd.statement_propagation {
		PropagationMode::Immediate => Propagation::default(),
		PropagationMode::Reference => Propagation::Reference,
	};
	config.routing = cmd.statement_replication_factor.map(|k| {
		let mut routing = RoutingConfig::new(k as usize);
		routing.refresh = std::time::Duration::from_secs(cmd.statement_routing_refresh);
		routing.drop_after = std::time::Duration::from_secs(cmd.statement_routing_drop_after);
		routing
	});
	Ok(config)
}

#[cfg(test)]
mod tests {
	use super::*;
	use crate::cli::Cli;
	use clap::Parser;

	fn run(args: &[&str]) -> RunCmd {
		Cli::parse_from(std::iter::once("statement-node").chain(args.iter().copied())).run
	}

	#[test]
	fn zombienets_bootnodes_value_holds_several_addresses_and_the_spec_adds_its_own() {
		let alice =
			"/ip4/127.0.0.1/tcp/30333/ws/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm";
		let bob =
			"/ip4/127.0.0.1/tcp/30334/p2p/12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm";
		let cmd = run(&[
			"--bootnodes",
			&format!("{alice} {bob}"),
			"--node-key",
			"2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90",
			"--listen-addr",
			"/ip4/0.0.0.0/tcp/0/ws",
		]);
		let mut spec = ChainSpec::load("local").unwrap();
		spec.boot_nodes = vec![bob.into()];
		let dir = tempfile::tempdir().unwrap();
		let config = config(&cmd, &spec, dir.path(), None).unwrap();
		let boot: Vec<String> = config.boot_nodes.iter().map(ToString::to_string).collect();
		assert_eq!(boot, [alice, bob, bob]);
		assert_eq!(config.listen_addresses[0].to_string(), "/ip4/0.0.0.0/tcp/0/ws");
		assert_eq!(
			identity::peer_id(&config.node_key).unwrap().to_base58(),
			"12D3KooWQCkBm1BYtkHpocxCwMgR8yjitEeHGx8spzcDLGt2gkBm"
		);
		// No key file was needed.
		assert!(!key_path(dir.path(), &spec).exists());
	}

	#[test]
	fn without_a_key_flag_the_node_keeps_one_key_under_its_base_path() {
		let spec = ChainSpec::load("local").unwrap();
		let dir = tempfile::tempdir().unwrap();
		let first = config(&run(&[]), &spec, dir.path(), None).unwrap();
		let second = config(&run(&[]), &spec, dir.path(), None).unwrap();
		assert_eq!(first.node_key, second.node_key);
		assert!(key_path(dir.path(), &spec).is_file());
		assert_eq!(first.listen_addresses[0].to_string(), "/ip4/0.0.0.0/tcp/30333");
	}

	#[test]
	fn light_topics_versions_slots_and_the_fork_id_reach_the_network_config() {
		let spec = ChainSpec::load("local").unwrap();
		let dir = tempfile::tempdir().unwrap();
		let full = config(&run(&[]), &spec, dir.path(), None).unwrap();
		assert_eq!((full.version, full.light_topics.clone()), (Version::V2, None));
		assert_eq!((full.in_peers, full.out_peers, full.discovery), (32, 8, true));
		let hex_topic = format!("0x{}", "ab".repeat(32));
		let cmd = run(&[
			"--statement-topics",
			"greetings",
			&hex_topic,
			"--statement-protocol-version",
			"1",
			"--in-peers",
			"3",
			"--out-peers",
			"2",
			"--no-discovery",
		]);
		let mut spec = spec;
		spec.fork_id = Some("fork-1".into());
		let light = config(&cmd, &spec, dir.path(), None).unwrap();
		let greetings = Topic(sp_crypto_hashing::blake2_256(b"greetings"));
		assert_eq!(light.light_topics, Some(vec![greetings, Topic([0xab; 32])]));
		assert_eq!((light.version, light.in_peers, light.out_peers), (Version::V1, 3, 2));
		assert!(!light.discovery);
		assert_eq!(light.fork_id.as_deref(), Some("fork-1"));
		assert_eq!(full.routing, None, "full replication unless asked");
		let routed = run(&[
			"--statement-replication-factor",
			"5",
			"--statement-routing-refresh",
			"7",
			"--statement-routing-drop-after",
			"9",
		]);
		let routed = config(&routed, &spec, dir.path(), None).unwrap().routing.unwrap();
		assert_eq!(routed.replication_factor, 5);
		assert_eq!(routed.refresh.as_secs(), 7);
		assert_eq!(routed.drop_after.as_secs(), 9);
		assert!(crate::cli::Cli::try_parse_from([
			"statement-node",
			"--statement-replication-factor",
			"0"
		])
		.is_err());
		assert!(crate::cli::Cli::try_parse_from([
			"statement-node",
			"--statement-protocol-version",
			"3"
		])
		.is_err());
	}

	#[test]
	fn inbound_connections_are_bounded_by_the_flags_and_half_the_descriptor_limit() {
		let spec = ChainSpec::load("local").unwrap();
		let dir = tempfile::tempdir().unwrap();
		let plain = config(&run(&[]), &spec, dir.path(), Some(1 << 20)).unwrap();
		assert_eq!(plain.max_connections_per_ip, statement_network::DEFAULT_MAX_CONNECTIONS_PER_IP);
		assert_eq!(
			plain.max_inbound_connections,
			statement_network::DEFAULT_MAX_INBOUND_CONNECTIONS
		);
		let starved = config(&run(&[]), &spec, dir.path(), Some(256)).unwrap();
		assert_eq!(starved.max_inbound_connections, 128);
		let asked = run(&["--max-connections-per-ip", "4", "--max-inbound-connections", "5000"]);
		let asked = config(&asked, &spec, dir.path(), Some(256)).unwrap();
		assert_eq!((asked.max_connections_per_ip, asked.max_inbound_connections), (4, 5000));
		assert!(crate::cli::Cli::try_parse_from([
			"statement-node",
			"--max-connections-per-ip",
			"0"
		])
		.is_err());
	}

	#[test]
	fn a_bootnode_without_a_peer_id_is_a_clear_error() {
		let spec = ChainSpec::load("local").unwrap();
		let dir = tempfile::tempdir().unwrap();
		let err = config(&run(&["--bootnodes", "/ip4/127.0.0.1/tcp/1"]), &spec, dir.path(), None)
			.unwrap_err();
		assert!(err.to_string().contains("/p2p/<PeerId>"), "{err}");
	}
}
