//! Statement primitives: the statement type, its wire format, proofs, allowances, filters,
//! submission outcomes and the store-facing trait.
//!
//! Byte-compatible with upstream `sp-statement-store` 29: the same statement encodes to the same
//! bytes and hash, and the JSON forms of filters and results match upstream's RPC. This crate
//! knows no database; the store implements [`StatementStore`].
//!
//! Its parts: `statement` (the type and its fields) and `wire` (the SCALE encoding, strict
//! decoding) make a statement; `proof` signs and verifies it (sr25519, ed25519, ecdsa);
//! `types` holds hashes, topics, keys and the hash function; `allowance` the per-account
//! limits and their chain-state key; `filter` the topic filters of subscriptions, and
//! `filters` the subscriptions of a changing set of them (the spec-v2 RPC's); `submit` the
//! outcomes of a submission; `store` and `subscription` the trait a store implements and RPC
//! and gossip call; [`ecies`] encrypts a posted statement's data to its recipient's ed25519
//! key, as upstream does; `error` the one error type; [`dev`] the well-known development
//! accounts; [`metrics`] the values the node exports to Prometheus; `testing` (feature `testing`) builds statements and keys for tests.
//!
//! ```
//! use sp_core::Pair;
//! use statement_primitives::{SignatureVerificationResult, Statement, Topic};
//!
//! let alice = sp_core::sr25519::Pair::from_string("//Alice", None).unwrap();
//! let mut statement = Statement::new();
//! statement.set_expiry_from_parts(2_000_000_000, 0);
//! statement.set_topic(0, Topic([7; 32]));
//! statement.set_plain_data(b"hello".to_vec());
//! statement.sign_sr25519_private(&alice);
//!
//! let bytes = statement.encode();
//! let decoded = Statement::from_bytes(&bytes).unwrap();
//! assert_eq!(decoded, statement);
//! assert_eq!(decoded.verify_signature(), SignatureVerificationResult::Valid(alice.public().0));
//! ```
//!
//! # The store-facing trait
//!
//! RPC servers and gossip hold an `Arc<dyn StatementStore>` and never a concrete store. Besides
//! queries, submission and removal, the trait offers:
//! - [`StatementStore::statements_page`]: every stored statement, a [`StatementsPage`] at a
//!   time, bounded in count and bytes, resumed from an opaque cursor.
//! - [`StatementStore::subscribe`]: a boxed [`StatementSubscription`] that replays the stored
//!   matches of a [`TopicFilter`] page by page, then streams new matches from a queue bounded
//!   in bytes ([`DEFAULT_SUBSCRIBER_QUEUE_BYTES`] unless
//!   [`StatementStore::subscribe_with_queue`] says otherwise). A subscriber that falls further
//!   behind is dropped and its next read returns [`Error::Lagged`]; dropping the subscription
//!   unsubscribes.
//!
//! ```
//! use statement_primitives::{StatementStore, TopicFilter};
//!
//! /// How many stored statements match `filter`, plus the first batch of new matches.
//! async fn follow(
//!     store: &dyn StatementStore,
//!     filter: TopicFilter,
//! ) -> statement_primitives::Result<usize> {
//!     let mut subscription = store.subscribe(filter)?;
//!     let mut seen = 0;
//!     while let Some(page) = subscription.next_replay_page(64 * 1024)? {
//!         seen += page.len();
//!     }
//!     Ok(seen + subscription.next_live(64 * 1024).await?.len())
//! }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod allowance;
pub mod dev;
pub mod ecies;
mod error;
mod filter;
mod filters;
pub mod metrics;
mod proof;
mod statement;
mod store;
mod submit;
mod subscription;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod types;
mod wire;

pub use allowance::{statement_allowance_key, StatementAllowance, STATEMENT_ALLOWANCE_PREFIX};
pub use error::{Error, Result};
pub use filter::{check_match_all, TopicFilter};
pub use filters::{FilterReplay, FilterSubscription};
pub use proof::{Proof, SignatureVerificationResult};
pub use statement::Statement;
pub use store::{StatementStore, StatementsPage};
pub use submit::{
	InvalidReason, RejectionReason, StatementEvent, StatementSource, SubmitResult, INVALID_LABELS,
	REJECTION_LABELS,
};
pub use subscription::{
	Encoded, StatementSubscription, SubscriptionFuture, DEFAULT_SUBSCRIBER_QUEUE_BYTES,
	SUBSCRIPTION_STATE_BYTES,
};
pub use types::{
	hash_encoded, hash_encoded_each, AccountId, Channel, DecryptionKey, Hash, Topic,
	MAX_ANY_TOPICS, MAX_STATEMENT_SIZE, MAX_TOPICS,
};
pub use wire::Fields;

/// Re-exported so that users sign and verify with the same `sp-core` this crate uses.
pub use sp_core;
