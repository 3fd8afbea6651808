//! The indexes and their on-disk layout: the columns, keys and values (`schema`), the
//! delta-coded id lists behind every topic, key, expiry and account index (`posting`), and
//! id lists read whole from disk (`lists`), and the in-memory hash set that answers `has_statement` and finds a hash's id (`membership`).

pub(crate) mod lists;
pub(crate) mod membership;
pub(crate) mod posting;
pub(crate) mod schema;
