//! How a store is opened: where, how big, how long bans last, how much cache.

use statement_primitives::DecryptionKey;
use std::{
	path::PathBuf,
	sync::Arc,
	time::{Duration, SystemTime, UNIX_EPOCH},
};

/// The store's notion of now, in unix seconds. Tests move it; nodes use the system clock.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> u64 + Send + Sync>);

impl Clock {
	/// The system clock.
	pub fn system() -> Self {
		Clock(Arc::new(|| {
			SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
		}))
	}

	/// A clock reading whatever `now` returns.
	pub fn from_fn(now: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
		Clock(Arc::new(now))
	}

	/// Unix seconds now.
	pub fn now(&self) -> u64 {
		(self.0)()
	}
}

impl std::fmt::Debug for Clock {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		write!(f, "Clock({})", self.now())
	}
}

/// Decrypts "posted" data for `posted_clear`: the node's keystore implements it.
pub trait Decryptor: Send + Sync {
	/// `data` decrypted with the private key identified by `key`, or `None` if this node
	/// does not hold that key or the data does not decrypt.
	fn decrypt(&self, key: &DecryptionKey, data: &[u8]) -> Option<Vec<u8>>;
}

/// Options for [`crate::store::Store::open`]. `Config::new(path)` gives the production defaults.
#[derive(Clone, Debug)]
pub struct Config {
	/// Directory of the parity-db database; created if missing.
	pub path: PathBuf,
	/// Most statements kept at once (all accounts together).
	pub max_total_statements: u64,
	/// Most encoded bytes kept at once (all accounts together).
	pub max_total_size: u64,
	/// How long a removed or evicted statement is refused from the network.
	pub ban_period: Duration,
	/// Bytes of decoded posting lists the MatchAll cache may hold.
	pub cache_bytes: usize,
	/// Bytes of recently read statement bodies kept in memory (0 turns the cache off).
	pub body_cache_bytes: usize,
	/// Longest one maintenance slice may run before yielding to submits.
	pub maintenance_budget: Duration,
	/// fsync the log before acknowledging each change, and msync the tables at every
	/// checkpoint, so that acknowledged changes survive power loss, not only a process
	/// crash. Off by default: it costs an fsync per submit. Without it, the kernel writes
	/// the tables out in its own time, and a power failure (not a crash of the process) can
	/// leave the database damaged: `check` finds it and `repair` rebuilds the indexes.
	pub sync_wal: bool,
	/// When the intent log lacks batches the database does not hold either (an intent file
	/// removed by hand, or damaged records), redo the intact batches and keep the intent files
	/// aside (renamed `*.damaged`) instead of refusing to open. Off by default: the missing
	/// batches held acknowledged changes, and the operator should decide.
	pub skip_intent_gaps: bool,
	/// Bytes of disk kept free: below this, new statements are refused (reads, removals and
	/// maintenance go on) until space returns. See `disk`.
	pub min_free_bytes: u64,
	/// Bytes of memory for all subscriptions together: what their live queues hold, plus
	/// [`statement_primitives::SUBSCRIPTION_STATE_BYTES`] for each open one. A subscription
	/// is refused while the open ones take half of it; past all of it the subscribers
	/// furthest behind are dropped with the lag error (see `subscription`).
	pub subscription_budget_bytes: usize,
	/// Longest time between checkpoints, which close parity-db's current log file and apply
	/// it to the tables; a checkpoint also runs early after [`Config::checkpoint_bytes`].
	pub checkpoint_period: Duration,
	/// Bytes of changes after which a checkpoint runs before its period is up. parity-db
	/// holds what it has not applied in memory and replays it after a crash, so this bounds
	/// both. Without [`Config::sync_wal`] a checkpoint writes to the tables' page cache and
	/// leaves writing them out to the kernel, so small checkpoints cost little. With it,
	/// each checkpoint also msyncs every table (dirty pages of the hash indexes are
	/// scattered, so each one writes up to tens of MiB): consider a larger value there.
	pub checkpoint_bytes: u64,
	/// Admissions plus removals after which maintenance writes a membership snapshot; after
	/// a crash, opening reads the snapshot and at most about this many journal entries.
	pub snapshot_changes: u64,
	/// Longest time maintenance lets changes go without a new membership snapshot.
	pub snapshot_period: Duration,
	/// Source of the current time.
	pub clock: Clock,
	/// Keys for `posted_clear`; without one, `posted_clear` finds nothing to decrypt.
	pub decryptor: Option<Arc<dyn Decryptor>>,
}

impl std::fmt::Debug for dyn Decryptor {
	fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
		f.write_str("Decryptor")
	}
}

/// 4,194,304 statements, as upstream.
pub const DEFAULT_MAX_TOTAL_STATEMENTS: u64 = 4 * 1024 * 1024;
/// 2 GiB of encoded statements, as upstream.
pub const DEFAULT_MAX_TOTAL_SIZE: u64 = 2 * 1024 * 1024 * 1024;
/// 48 hours.
pub const DEFAULT_BAN_PERIOD: Duration = Duration::from_secs(48 * 3600);
/// 64 MiB of posting lists.
pub const DEFAULT_CACHE_BYTES: usize = 64 * 1024 * 1024;
/// One second between checkpoints.
pub const DEFAULT_CHECKPOINT_PERIOD: Duration = Duration::from_secs(1);
/// 1 MiB of changes between checkpoints: parity-db then holds little in memory and replays
/// little after a crash (see [`Config::checkpoint_bytes`]).
pub const DEFAULT_CHECKPOINT_BYTES: u64 = 1024 * 1024;
/// A membership snapshot every 100,000 changes.
pub const DEFAULT_SNAPSHOT_CHANGES: u64 = 100_000;
/// Or every ten minutes when anything changed.
pub const DEFAULT_SNAPSHOT_PERIOD: Duration = Duration::from_secs(600);
/// 64 MiB for all subscriptions together, on a small node: up to 16,384 open (2 KiB each,
/// half the budget) and 32 MiB queued (32 subscribers a full 1 MiB behind, or thousands a
/// little behind).
pub const DEFAULT_SUBSCRIPTION_BUDGET_BYTES: usize = 64 * 1024 * 1024;
/// 128 MiB of disk kept free: what parity-db's log and a checkpoint need, and room to spare.
pub const DEFAULT_MIN_FREE_BYTES: u64 = 128 * 1024 * 1024;
/// 16 MiB of statement bodies (about 40,000 statements of 256 data bytes).
pub const DEFAULT_BODY_CACHE_BYTES: usize = 16 * 1024 * 1024;

impl Config {
	/// Production defaults for a store at `path`.
	pub fn new(path: impl Into<PathBuf>) -> Self {
		Config {
			path: path.into(),
			max_total_statements: DEFAULT_MAX_TOTAL_STATEMENTS,
			max_total_size: DEFAULT_MAX_TOTAL_SIZE,
			ban_period: DEFAULT_BAN_PERIOD,
			cache_bytes: DEFAULT_CACHE_BYTES,
			body_cache_bytes: DEFAULT_BODY_CACHE_BYTES,
			maintenance_budget: Duration::from_millis(20),
			sync_wal: false,
			skip_intent_gaps: false,
			min_free_bytes: DEFAULT_MIN_FREE_BYTES,
			subscription_budget_bytes: DEFAULT_SUBSCRIPTION_BUDGET_BYTES,
			checkpoint_period: DEFAULT_CHECKPOINT_PERIOD,
			checkpoint_bytes: DEFAULT_CHECKPOINT_BYTES,
			snapshot_changes: DEFAULT_SNAPSHOT_CHANGES,
			snapshot_period: DEFAULT_SNAPSHOT_PERIOD,
			clock: Clock::system(),
			decryptor: None,
		}
	}
}
