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
//! | [`sparse_topology`] | 10 | statements from both ends of a line reach every node |
//!
//! Run with `cargo test --manifest-path zombienet/Cargo.toml --locked -- --test-threads 1`; see
//! `zombienet/README.md`.

mod common;
mod flooding;
mod late_joiner;
mod propagation;
mod quota;
mod restart;
mod sparse_topology;
