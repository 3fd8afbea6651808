//! Network tests of `statement-node`: each scenario spawns a few nodes with zombienet-sdk's
//! native provider and checks what reaches whom, and how soon.
//!
//! | scenario | nodes | what must hold |
//! |---|---|---|
//! | [`propagation`] | 2 | a statement on alice is on bob's subscription within 2 s, then nothing more |
//! | [`quota`] | 4 | 8 concurrent submissions reach every subscriber exactly once; a full account refuses a lower expiry and evicts its lowest for a higher one, on every node |
//! | [`restart`] | 3 | bob killed mid-sync and down while others take statements still ends with all of them |
//! | [`late_joiner`] | 2 + 1 | a node added later, knowing only the spec's `bootNodes`, receives 1,000 statements |
//! | [`flooding`] | 2 | bursting past `--statement-rate-limit` is flagged and disconnected; slow statements passed |
//! | [`sparse_topology`] | 10 | statements from both ends of a line reach every node (discovery off) |
//! | [`discovery`] | 20 | every node, knowing only the boot node, reaches 8 peers; statements from 3 reach all |
//! | [`light_peer`] | 2 + 1 | a light node gets its topic (stored and live) and a subscribed one, nothing else |
//! | [`mixed_versions`] | 6 | statement/1-only nodes among statement/2 nodes converge |
//! | [`affinity_flood`] | 1 + a raw peer | a peer changing its filter far past the bound is flagged and dropped |
//! | [`routed`] | 30 + 6, 8 + 3 | with `--statement-replication-factor 5`, every probe ends on exactly its 5 holders by the placement rule; a reader on a non-holder gets its topic; after 6 stop and 6 join, every probe is back on its 5 live holders; with 3 full nodes among 8 routed ones, the full ones hold everything and the routed ones exactly their share |
//!
//! Run with `cargo test --manifest-path zombienet/Cargo.toml --locked -- --test-threads 1`; see
//! `zombienet/README.md`.

mod affinity_flood;
mod common;
mod discovery;
mod flooding;
mod late_joiner;
mod light_peer;
mod mixed_versions;
mod propagation;
mod quota;
mod restart;
mod routed;
mod sparse_topology;
