//! Our statement store behind polkadot-sdk's `sp_statement_store::StatementStore` (28), for a
//! node built on polkadot-sdk that wants this store without forking its service.
//!
//! [`new_shared`] has the shape of `sc_statement_store::Store::new_shared` (33): the same
//! arguments, allowances read from chain state through the node's client, `postedClear`
//! decrypted with the node's keystore, maintenance spawned on the node's task spawner. What it
//! returns implements the reference's trait with the reference's results and reasons, so
//! upstream's gossip handler (`sc-network-statement`) and anything else written against the
//! trait use it unchanged. `interop/README.md` ("Swapping the store") shows the swap in a
//! node's service file, line by line.
//!
//! ```ignore
//! let statement_store = statement_store_sp_adapter::new_shared(
//!     &config.data_path,
//!     Default::default(),
//!     client.clone(),
//!     keystore_container.local_keystore(),
//!     config.prometheus_registry(),
//!     Box::new(task_manager.spawn_handle()),
//! )?;
//! ```
//!
//! The database is ours (parity-db with persisted indexes, in `<path>/statements`), not the
//! reference's: a node that swaps keeps no statements from before the swap.

#![forbid(unsafe_code)]

mod allowance;
mod convert;
mod keystore;
mod shared;
mod store;

pub use allowance::ClientAllowances;
pub use keystore::KeystoreDecryptor;
pub use shared::{new_shared, Config, MAINTENANCE_PERIOD};
pub use store::SpStore;
