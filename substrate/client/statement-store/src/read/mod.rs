//! The read path: MatchAll queries and body reads (`query`), answers walked a page at a time
//! (`paging`) with large answers' bodies read on helper threads (`read_ahead`), the
//! byte-bounded posting-list and body caches (`cache`, `bodies`, `limit`), and the view lock
//! readers share (`view`).

pub(crate) mod bodies;
pub(crate) mod cache;
pub(crate) mod limit;
pub(crate) mod paging;
pub(crate) mod query;
pub(crate) mod read_ahead;
#[cfg(test)]
mod tests;
pub(crate) mod view;
