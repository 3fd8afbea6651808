//! A statement store with statements **and** their indexes persisted in parity-db, a hot
//! set-intersection cache for MatchAll queries, and concurrent reads.
//!
//! ```no_run
//! use statement_store::{Config, MapAllowances, Store};
//! use statement_primitives::{StatementAllowance, StatementStore, Topic};
//! use std::sync::Arc;
//!
//! let allowances = MapAllowances::new().with_default(StatementAllowance::new(100, 1 << 20));
//! let store = Store::open(Config::new("/tmp/statements"), Arc::new(allowances))?;
//! let greetings = store.broadcasts(&[Topic([7; 32])])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Parts
//!
//! ```text
//!   store.rs   Store (the handle), Inner (one value a part), closing, the trait
//!   config.rs, error.rs, metrics.rs, allowance.rs, chain_allowance.rs
//!   open/      opening: directory and schema checks, trimming (mod.rs); loading the
//!              membership set (load); schema upgrades (migrate); the snapshot (snapshot);
//!              check-db and repair (check)
//!   write/     Writes (mod.rs): the write path's state;
//!              submit ─> batch ─> intent ─> staging ─> writeback ─> parity-db;
//!              priority (an account's statements in eviction order), intent redo (batch);
//!              maintenance (expiry, bans, limits); disk (free-space watch)
//!   read/      Reads (mod.rs): the view lock, the caches, the quarantine;
//!              query (MatchAll, bodies by id and by hash) ─> cache / bodies / view ─> staging;
//!              paging (walks a page at a time), read_ahead (bodies on helper threads), limit
//!   index/     schema (columns, keys, values), posting (id lists), lists (whole lists from
//!              disk), membership (the in-memory hash set: table, snapshot file; Snapshots,
//!              what the newest snapshot covers)
//!   subscription/  Subscriptions (registry) and matcher thread, queue, handle
//!              (Subscription), subscribe
//! ```
//!
//! Files import each other along these arrows only: no two files reach each other, and
//! only tests and the membership snapshot file import their parent
//! (`python3 scripts/imports.py` counts them; CI fails on a circle). Each part keeps its
//! state in its own struct, whose fields only that part's folder sees; `Inner` holds one of
//! each beside the configuration, the database and the metrics, and a part asks another
//! through its methods (`python3 scripts/parts.py` checks it; so does CI).
//!
//! # Layout and invariants
//!
//! Every statement gets a compact local id from an ever-growing admission counter. Its body
//! (by id), its id (by hash), its journal entry, and its entries in the lists of stored ids,
//! of its topics and decryption key, of its expiry second and of its account, and in the
//! channel index are written in **one** parity-db commit together with the updated counters,
//! so a crash at any point leaves all of them or none. The body holds the statement's hash
//! and a 64-bit check, so a reader that finds a body by id knows which statement it is without
//! hashing it; what removing it needs besides (its account, topics, key, channel, sizes) is
//! read from the body too. Lists are delta-coded segments of ids, so an index costs a few
//! bytes a statement rather than a btree entry (see `schema` for the layout, schema 6). (One commit
//! may carry several consecutive batches: acknowledged batches are staged in memory in front
//! of parity-db and handed over together, so a key many batches rewrite, such as a posting
//! segment or the counters, is written once.)
//!
//! The in-memory membership set that answers `has_statement` and gives the id for a lookup
//! by hash (about 9 bytes a statement: 58 bits of the hash, most of them implied by where
//! they sit, and the id) is written to [`SNAPSHOT_FILE`] (6 bytes of fingerprint and 1-8 of
//! id a statement) when the store closes, and by
//! maintenance every [`Config::snapshot_changes`] changes ([`Store::write_snapshot`]). Every
//! removal is also appended to a removal log (id and fingerprint, in meta-column segments).
//! Opening reads the snapshot; if the database moved on since (a crash), it adds the
//! journal's entries after the snapshot (the journal keeps the hashes of statements admitted
//! since the newest snapshot; each snapshot prunes the entries it covers) and takes out the
//! logged removals after it; the result must match the counters and pass a sampled check of
//! bodies against the hashes stored under their ids, else opening hashes every stored body.
//! Either way no body is decoded, and posting lists load on first use.
//!
//! Queries hold a shared view lock for their whole run; a writer plans under its own lock
//! without blocking readers, and takes the view lock exclusively only to publish its batch
//! to the staged set, the cache, the membership set and subscribers. A query therefore never
//! sees half a change, and the cache never disagrees with the disk. Removals that arrive
//! together share one batch: one intent record, one commit, one edit of each posting
//! segment (see `write::group`). The posting segments the last batches edited are kept
//! decoded for the next one.
//!
//! Read path: a MatchAll query intersects the posting lists of its topics (and key), taken
//! from a per-thread memo, else the shared byte-bounded cache, else disk (parity-db's
//! segments with the staged batches' laid over them, so a reader never hands staged batches
//! to parity-db: only writers do); broadcasts then
//! subtract the (usually empty) list of statements that have a decryption key. Matching
//! bodies come from a byte-bounded cache of recently read statements, else parity-db. A
//! lookup by hash takes the id from the membership set and reads the body alone. The
//! view lock, the memo and the body cache are built so that concurrent queries write no
//! shared memory on the hot path (see `view`, `cache`, `bodies`).
//!
//! Durability: a change is acknowledged (`New`, or `remove` returning) only after its batch is
//! appended to the store's intent log (`intent-*.log` in the database directory: the batch's
//! steps with a sequence number and a checksum), so it survives the process being killed at
//! any moment; with [`Config::sync_wal`] the append is also fsynced, so it survives power
//! loss. A background thread hands the staged batches to parity-db and writes them to its log
//! file every 50 ms; a second one runs *checkpoints* (once a second, or after 1 MiB of
//! changes: [`Config::checkpoint_period`], [`Config::checkpoint_bytes`]) that close that log
//! file and apply it to parity-db's tables (msyncing them only with `sync_wal`). Intent
//! files go once parity-db's log file holds their batches (with `sync_wal`, once a checkpoint
//! has fsynced it). Opening redoes, in order, the batches parity-db lacks (each commit
//! records its sequence number). A crash never leaves a change half-applied: parity-db
//! replays whole log records or none, and a torn intent record was never acknowledged.
#![warn(missing_docs)]
// One exception, with its reasons beside each use: mapping the intent mark and the intent files
// (`write::intent::mark`, `write::intent::file`).
#![deny(unsafe_code)]

mod allowance;
#[cfg(feature = "chain")]
mod chain_allowance;
mod config;
mod error;
mod index;
mod metrics;
mod open;
mod read;
mod store;
mod subscription;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod write;

pub use allowance::{AllowanceProvider, MapAllowances};
#[cfg(feature = "chain")]
pub use chain_allowance::{AllowanceAt, ChainAllowances};
pub use config::{
	Clock, Config, Decryptor, DEFAULT_BAN_PERIOD, DEFAULT_BODY_CACHE_BYTES, DEFAULT_CACHE_BYTES,
	DEFAULT_CHECKPOINT_BYTES, DEFAULT_CHECKPOINT_PERIOD, DEFAULT_MAX_TOTAL_SIZE,
	DEFAULT_MAX_TOTAL_STATEMENTS, DEFAULT_MIN_FREE_BYTES, DEFAULT_SNAPSHOT_CHANGES,
	DEFAULT_SNAPSHOT_PERIOD, DEFAULT_SUBSCRIPTION_BUDGET_BYTES,
};
pub use error::{Error, Result};
pub use index::schema::Id;
pub use metrics::{MetricsSnapshot, DURATION_BOUNDS};
pub use open::check::{check, repair, CheckReport, RepairReport};
pub use open::snapshot::SNAPSHOT_FILE;
pub use store::{StatementsPage, Store};
pub use subscription::{
	filters::{FilterReplay, FilterSubscription},
	handle::Subscription,
	queue::Encoded,
	subscribe::DEFAULT_SUBSCRIBER_QUEUE_BYTES,
};
pub use write::maintenance::{MaintenanceReport, SLICE as MAINTENANCE_SLICE};
