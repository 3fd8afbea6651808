//! The store fixtures (feature `store`): the statement store's own `testing` module, so that
//! a crate's tests reach every fixture through this one crate.

pub use statement_store::testing::*;
