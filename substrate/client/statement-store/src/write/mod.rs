//! The write path: a submit is checked (`submit`), planned into one atomic change and made
//! durable (`batch`, `intent`), staged in memory in front of parity-db (`staging`), and moved
//! into parity-db by background threads (`writeback`). `maintenance` removes what expired or
//! no longer fits; `disk` refuses writes while free space is low.

pub(crate) mod batch;
pub(crate) mod disk;
pub(crate) mod intent;
pub(crate) mod maintenance;
pub(crate) mod staging;
pub(crate) mod submit;
pub(crate) mod writeback;
