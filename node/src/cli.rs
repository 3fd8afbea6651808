//! Command line, following Substrate's flag names so that tools and habits carry over.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Bytes in a MiB, the unit of the cache flags.
pub const MIB: usize = 1024 * 1024;

/// A statement store node: keeps signed, expiring statements and serves them over JSON-RPC.
#[derive(Debug, Parser)]
#[command(name = "statement-node", version, about)]
pub struct Cli {
	/// What to do instead of running the node.
	#[command(subcommand)]
	pub subcommand: Option<Command>,
	/// Options for running the node.
	#[command(flatten)]
	pub run: RunCmd,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
	/// Print the chain spec as JSON (always raw).
	BuildSpec(SpecCmd),
	/// Print the chain spec as JSON, as `build-spec` does.
	ExportChainSpec(SpecCmd),
	/// Build and sign a statement, print it as `0x`-hex ready for `statement_submit`.
	Sign(SignCmd),
	/// Verify every statement and index of a stopped node's database; exits non-zero if
	/// anything is damaged.
	CheckDb(DbCmd),
	/// Rebuild a stopped node's database from its intact statements: the old one is kept
	/// beside it, and the statements left out are listed in a side file.
	Repair(DbCmd),
}

/// `statement-node build-spec` and `export-chain-spec`.
#[derive(Debug, Parser)]
pub struct SpecCmd {
	/// `dev`, `local` or a path to a chain spec JSON file.
	#[arg(long, default_value = "dev")]
	pub chain: String,
	/// Accepted for compatibility: specs are always printed raw.
	#[arg(long)]
	pub raw: bool,
	/// Leave the built-in specs' boot nodes out (they have none; accepted for zombienet).
	#[arg(long)]
	pub disable_default_bootnode: bool,
	/// Give accounts an allowance in the spec's genesis storage: `WHO=COUNT,BYTES`, where WHO
	/// is a `0x`-hex account id or a secret URI whose sr25519 key is the account, and may name
	/// a range (`//StatementClient//{0..100}=1000,1048576`). Repeatable; replaces what the
	/// spec gave those accounts.
	#[arg(long = "allowance", value_name = "WHO=COUNT,BYTES")]
	pub allowances: Vec<String>,
	/// A file of `--allowance` values, one a line (`#` starts a comment).
	#[arg(long, value_name = "PATH")]
	pub allowances_file: Option<PathBuf>,
}

impl SpecCmd {
	/// Every grant of `--allowance` and `--allowances-file`, in order.
	pub fn grants(&self) -> Result<Vec<crate::grant::Grant>, crate::error::Error> {
		let mut texts = self.allowances.clone();
		if let Some(path) = &self.allowances_file {
			let file = std::fs::read_to_string(path).map_err(|source| crate::error::Error::Io {
				operation: "read the allowances file",
				path: path.clone(),
				source,
			})?;
			texts.extend(
				file.lines()
					.map(|line| line.split('#').next().unwrap_or("").trim().to_string())
					.filter(|line| !line.is_empty()),
			);
		}
		texts.iter().map(|text| text.parse()).collect()
	}
}

/// `statement-node check-db` and `repair`: which database.
#[derive(Debug, Parser)]
pub struct DbCmd {
	/// `dev`, `local` or a path to a chain spec JSON file.
	#[arg(long, default_value = "local")]
	pub chain: String,
	/// The node's base path (`-d` of the node).
	#[arg(short = 'd', long, value_name = "PATH")]
	pub base_path: Option<PathBuf>,
}

/// `statement-node sign`.
#[derive(Debug, Parser)]
pub struct SignCmd {
	/// Secret URI of the sr25519 signing key, such as `//Alice`.
	#[arg(long, default_value = "//Alice")]
	pub suri: String,
	/// A topic, as `0x`-hex of 32 bytes or as text (then its blake2-256 is used). Repeatable,
	/// at most four.
	#[arg(long = "topic")]
	pub topics: Vec<String>,
	/// The data, as text.
	#[arg(long, default_value = "")]
	pub data: String,
	/// Seconds from now until the statement expires.
	#[arg(long, default_value_t = 3600)]
	pub expires_in: u64,
	/// Sequence number (low 32 bits of the expiry).
	#[arg(long, default_value_t = 0)]
	pub sequence: u32,
	/// A channel, as `0x`-hex of 32 bytes or as text.
	#[arg(long)]
	pub channel: Option<String>,
	/// Decryption key id (makes the statement "posted"), as `0x`-hex of 32 bytes or text.
	/// With `--encrypt`, the recipient's ed25519 public key as `0x`-hex.
	#[arg(long)]
	pub decryption_key: Option<String>,
	/// Encrypt the data to `--decryption-key` (ECIES, as upstream), so that only a node
	/// holding that ed25519 statement key reads it back with `statement_postedClear`.
	#[arg(long, requires = "decryption_key")]
	pub encrypt: bool,
}

/// How new statements reach peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PropagationMode {
	/// Within a 20 ms coalescing window.
	Immediate,
	/// Once a second, as upstream.
	Reference,
}

/// Which RPC methods are exposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RpcMethods {
	/// Unsafe methods only when listening on localhost.
	Auto,
	/// Only safe methods.
	Safe,
	/// Every method.
	Unsafe,
}

/// Options for running the node.
#[derive(Debug, Parser)]
pub struct RunCmd {
	/// Development chain: well-known dev accounts get allowances and the keystore holds their
	/// ed25519 statement keys (in memory); implies `--tmp` unless a base path is given, and
	/// `--rpc-cors all` (any browser page may call the RPC, unsafe
	/// methods included) unless `--rpc-cors` is given.
	#[arg(long)]
	pub dev: bool,
	/// Keep the database in a temporary directory, deleted on exit.
	#[arg(long)]
	pub tmp: bool,
	/// Directory for the node's data.
	#[arg(short = 'd', long, value_name = "PATH")]
	pub base_path: Option<PathBuf>,
	/// Keystore directory, holding the statement keys `statement_postedClear` decrypts with
	/// (Substrate's layout). Default: `<base path>/chains/<chain id>/keystore`. `--dev` also
	/// holds the dev accounts' statement keys (//Alice .. //Ferdie, ed25519), in memory.
	#[arg(long, value_name = "PATH")]
	pub keystore_path: Option<PathBuf>,
	/// Chain spec: `dev`, `local` or a path to a JSON file.
	#[arg(long)]
	pub chain: Option<String>,
	/// Node name, reported by `system_name`.
	#[arg(long)]
	pub name: Option<String>,
	/// JSON-RPC port (HTTP and WebSocket on one port).
	#[arg(long, default_value_t = 9944)]
	pub rpc_port: u16,
	/// Listen for RPC on all interfaces, not only localhost.
	#[arg(long)]
	pub rpc_external: bool,
	/// Which RPC methods to expose.
	#[arg(long, value_enum, default_value = "auto")]
	pub rpc_methods: RpcMethods,
	/// Browser origins allowed to call the RPC, comma separated: `scheme://host[:port]`, where
	/// a port of `*` means any port (e.g. `http://localhost:*,https://app.example`), or `all`.
	/// Requests and WebSocket upgrades from other origins get HTTP 403; requests without an
	/// `Origin` (not from a browser) are served. Default: `http://localhost:*`,
	/// `http://127.0.0.1:*`, `https://localhost:*`, `https://127.0.0.1:*`,
	/// `https://polkadot.js.org`; `all` with `--dev`.
	#[arg(long, value_name = "ORIGINS")]
	pub rpc_cors: Option<String>,
	/// Most RPC connections at once. When all are taken, a new connection takes the slot of
	/// the one that has waited longest for its client to send a request; it is refused (HTTP
	/// 429) only when every connection is running a call or is a WebSocket that has sent one.
	#[arg(long, default_value_t = 100)]
	pub rpc_max_connections: u32,
	/// Seconds a client may take to send a complete request (headers, then body), its next
	/// request on a kept-alive HTTP connection, or its first message on a new WebSocket; past
	/// that the connection is closed.
	#[arg(
		long,
		value_name = "SECONDS",
		default_value_t = 30,
		value_parser = clap::value_parser!(u64).range(1..)
	)]
	pub rpc_request_timeout: u64,
	/// Most subscriptions one WebSocket connection may hold; past it a subscribe call gets
	/// JSON-RPC error -32006.
	#[arg(long, default_value_t = 1024)]
	pub rpc_max_subscriptions_per_connection: u32,
	/// Most calls one WebSocket connection may have in flight, from when the request is read
	/// until its answer is written to the socket. Past it the node reads no more of that
	/// connection until an answer is written: a client that sends without reading holds this
	/// many calls at most.
	#[arg(long, value_name = "CALLS", default_value_t = statement_rpc_server::DEFAULT_MAX_CALLS_IN_FLIGHT_PER_CONNECTION, value_parser = clap::value_parser!(u32).range(1..))]
	pub rpc_max_calls_in_flight_per_connection: u32,
	/// Most bytes of answers one WebSocket connection may hold until they are written; a call
	/// whose answer does not fit waits for room (one answer larger than this goes alone, up
	/// to the 10 MiB answer limit).
	#[arg(long, value_name = "BYTES", default_value_t = statement_rpc_server::DEFAULT_MAX_ANSWER_BYTES_PER_CONNECTION, value_parser = clap::value_parser!(u32).range(1..))]
	pub rpc_max_answer_bytes_per_connection: u32,
	/// Most spec-v2 statement subscriptions (`statement_unstable_subscribe`) one connection
	/// may hold; past it the call gets JSON-RPC error -32800. At least 2, as the spec asks.
	#[arg(long, default_value_t = statement_rpc::limits::DEFAULT_SUBSCRIPTIONS_PER_CONNECTION, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..))]
	pub statement_rpc_subscriptions_per_connection: usize,
	/// Prometheus metrics port.
	#[arg(long, default_value_t = 9615)]
	pub prometheus_port: u16,
	/// Serve Prometheus metrics on all interfaces.
	#[arg(long)]
	pub prometheus_external: bool,
	/// Do not serve Prometheus metrics.
	#[arg(long)]
	pub no_prometheus: bool,
	/// Once the JSON-RPC server, the metrics endpoint and the p2p listeners are bound, write
	/// what the node serves to PATH as JSON, whole (a temporary file renamed over it): `pid`,
	/// `rpc` and `prometheus` (`host:port`, `null` without metrics), `peer_id`, `listen` (the
	/// p2p addresses, each with `/p2p/<peer id>`) and `statements` (held at open). For
	/// scripts, supervisors and tests that start the node on port 0; removed at a clean stop.
	#[arg(long, value_name = "PATH")]
	pub ready_file: Option<PathBuf>,
	/// Log filter, e.g. `statement-store=debug` (repeatable, comma separated).
	#[arg(short = 'l', long = "log", value_name = "FILTER")]
	pub log: Vec<String>,
	/// Most statements kept.
	#[arg(long, default_value_t = statement_store::DEFAULT_MAX_TOTAL_STATEMENTS)]
	pub statement_store_max_total_statements: u64,
	/// Most encoded bytes kept.
	#[arg(long, default_value_t = statement_store::DEFAULT_MAX_TOTAL_SIZE)]
	pub statement_store_max_total_size: u64,
	/// MiB of topic posting lists the query cache may hold.
	#[arg(long, default_value_t = statement_store::DEFAULT_CACHE_BYTES / MIB)]
	pub statement_store_cache_mib: usize,
	/// MiB of recently read statements kept in memory for queries (0 turns it off).
	#[arg(long, default_value_t = statement_store::DEFAULT_BODY_CACHE_BYTES / MIB)]
	pub statement_store_body_cache_mib: usize,
	/// MiB of disk kept free under the database: below it, new statements are refused (reads
	/// and removals go on) until space returns, so a full disk never stops the node.
	#[arg(long, value_name = "MIB", default_value_t = statement_store::DEFAULT_MIN_FREE_BYTES >> 20)]
	pub statement_store_min_free_mib: u64,
	/// MiB of memory for all statement subscriptions together: each open one counts 2 KiB
	/// for its own state, plus what it has queued and not read. A new subscription is refused
	/// while the open ones take half of it (16,384 at the default); past all of it the
	/// subscribers furthest behind are dropped with the lag error. So stuck readers cannot
	/// exhaust memory however many there are.
	#[arg(long, value_name = "MIB", default_value_t = statement_store::DEFAULT_SUBSCRIPTION_BUDGET_BYTES / MIB)]
	pub statement_subscription_memory_mib: usize,
	/// After a crash, if the store's intent log lacks acknowledged changes (an intent file
	/// removed, or damaged records), redo the intact ones and keep the files aside as
	/// `*.damaged` instead of refusing to start.
	#[arg(long)]
	pub statement_store_skip_intent_gaps: bool,
	/// fsync every change before acknowledging it and sync the database's tables at every
	/// checkpoint, so that acknowledged statements survive power loss, not only a crash of
	/// the node. Costs an fsync per submit. Without it, a power failure can leave the
	/// database needing `statement-node repair`.
	#[arg(long)]
	pub statement_store_sync_wal: bool,
	/// P2P port: listen for peers on TCP `/ip4/0.0.0.0/tcp/PORT` (and `/ip6/::/tcp/PORT`)
	/// when no `--listen-addr` is given.
	#[arg(long, value_name = "PORT", default_value_t = 30333)]
	pub port: u16,
	/// P2P listen address, e.g. `/ip4/0.0.0.0/tcp/30333` or `/ip4/0.0.0.0/tcp/30334/ws`
	/// (repeatable). Replaces the `--port` default.
	#[arg(long, value_name = "MULTIADDR")]
	pub listen_addr: Vec<String>,
	/// Where discovery starts: `/ip4/A/tcp/P[/ws]/p2p/PEER_ID`. Repeatable; one value may
	/// hold several addresses separated by spaces. The chain spec's `bootNodes` are used too.
	/// The node finds the rest of the network through them (Kademlia).
	#[arg(long, value_name = "MULTIADDR")]
	pub bootnodes: Vec<String>,
	/// The node's ed25519 secret key, 64 hex digits: fixes its PeerId. Without it or
	/// `--node-key-file`, a key is made once and kept in
	/// `<base path>/chains/<chain id>/network/secret_ed25519`.
	#[arg(long, value_name = "HEX")]
	pub node_key: Option<String>,
	/// File holding the node's ed25519 secret key (32 raw bytes or 64 hex digits).
	#[arg(long, value_name = "PATH", conflicts_with = "node_key")]
	pub node_key_file: Option<PathBuf>,
	/// Peers to keep a statement stream with at all times, outside the peer slots
	/// (repeatable, space-separated allowed).
	#[arg(long, value_name = "MULTIADDR")]
	pub reserved_nodes: Vec<String>,
	/// Exchange statements only with reserved nodes (and boot nodes).
	#[arg(long)]
	pub reserved_only: bool,
	/// Statement streams other peers may open to this node (reserved peers not counted).
	#[arg(long, value_name = "COUNT", default_value_t = statement_network::DEFAULT_IN_PEERS)]
	pub in_peers: usize,
	/// Statement streams this node opens, to peers it has discovered (reserved peers not
	/// counted).
	#[arg(long, value_name = "COUNT", default_value_t = statement_network::DEFAULT_OUT_PEERS)]
	pub out_peers: usize,
	/// Connections one remote address (an IPv4 address, an IPv6 /64) may hold open to this
	/// node at once, handshaking or established; more are closed as soon as they are
	/// accepted. Raise it to run more than this many local nodes against one node.
	#[arg(long, value_name = "COUNT", default_value_t = statement_network::DEFAULT_MAX_CONNECTIONS_PER_IP, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
	pub max_connections_per_ip: usize,
	/// Connections all remote addresses together may hold open to this node at once
	/// [default: 1024, or half the file descriptor limit if that is lower].
	#[arg(long, value_name = "COUNT", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
	pub max_inbound_connections: Option<usize>,
	/// Do not look for peers with Kademlia: only boot and reserved nodes, and peers that
	/// connect, become peers.
	#[arg(long)]
	pub no_discovery: bool,
	/// Highest statement protocol version to speak: 2 (`/statement/2` with topic affinity,
	/// falling back to `/statement/1` with peers that lack it) or 1 (`/statement/1` only).
	#[arg(long, value_name = "VERSION", default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
	pub statement_protocol_version: u8,
	/// Run as a light node that asks its peers only for statements on these topics (and on
	/// those of the subscriptions opened on it): `0x`-hex of 32 bytes, or text (its
	/// blake2-256). Repeatable. The node then declares the light role and sends its
	/// `/statement/2` peers a topic-affinity filter.
	#[arg(long = "statement-topics", value_name = "TOPIC", num_args = 1..)]
	pub statement_topics: Vec<String>,
	/// Statements a second each peer may send (bursts of five times as many); a peer over it
	/// is disconnected and banned for a minute.
	#[arg(long, value_name = "N", default_value_t = statement_network::DEFAULT_RATE_LIMIT, value_parser = clap::value_parser!(u32).range(1..))]
	pub statement_rate_limit: u32,
	/// How new statements reach peers: `immediate` (within 20 ms) or `reference` (once a
	/// second, as upstream; for comparisons).
	#[arg(long, value_enum, default_value = "immediate")]
	pub statement_propagation: PropagationMode,
	/// Topic-routed storage: keep each statement only on the K nodes nearest its topics (found
	/// by lookups over `/statement/route/1`), instead of on every full node. Off by default.
	/// For networks whose statements outgrow one node; see docs/scaling.md.
	#[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
	pub statement_replication_factor: Option<u32>,
	/// With `--statement-replication-factor`: seconds between a holder's lookups of what it
	/// holds (a new holder gets what it lacks within about this) and a reader's watch renewals.
	#[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
	pub statement_routing_refresh: u64,
	/// With `--statement-replication-factor`: seconds a node that does not hold a statement
	/// keeps it after forwarding it to its holders.
	#[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
	pub statement_routing_drop_after: u64,
	/// Accepted for orchestrators (zombienet passes it): this node has no validator role.
	#[arg(long)]
	pub validator: bool,
	/// Accepted for orchestrators, as `--validator`.
	#[arg(long)]
	pub insecure_validator_i_know_what_i_do: bool,
	/// Accepted for orchestrators: this node has no telemetry.
	#[arg(long)]
	pub no_telemetry: bool,
}

#[cfg(test)]
mod tests {
	use super::*;

	#[test]
	fn cache_flags_default_to_the_store_defaults() {
		let cli = Cli::parse_from(["statement-node"]);
		assert_eq!(cli.run.statement_store_cache_mib * MIB, statement_store::DEFAULT_CACHE_BYTES);
		assert_eq!(
			cli.run.statement_store_body_cache_mib * MIB,
			statement_store::DEFAULT_BODY_CACHE_BYTES
		);
	}

	#[test]
	fn sync_wal_is_off_unless_asked_for() {
		assert!(!Cli::parse_from(["statement-node"]).run.statement_store_sync_wal);
		let cli = Cli::parse_from(["statement-node", "--statement-store-sync-wal"]);
		assert!(cli.run.statement_store_sync_wal);
	}

	#[test]
	fn connection_flags_have_substrate_defaults_and_refuse_a_zero_timeout() {
		let run = Cli::parse_from(["statement-node"]).run;
		assert_eq!(run.rpc_max_connections, 100);
		assert_eq!(run.rpc_max_subscriptions_per_connection, 1024);
		assert_eq!(run.rpc_request_timeout, 30);
		assert_eq!(run.rpc_max_calls_in_flight_per_connection, 512);
		assert_eq!(run.rpc_max_answer_bytes_per_connection, 4 << 20);
		assert!(Cli::try_parse_from(["statement-node", "--rpc-request-timeout", "0"]).is_err());
		for flag in
			["--rpc-max-calls-in-flight-per-connection", "--rpc-max-answer-bytes-per-connection"]
		{
			assert!(Cli::try_parse_from(["statement-node", flag, "0"]).is_err(), "{flag} 0");
		}
	}
}
