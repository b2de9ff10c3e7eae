//! Pipelines as users write them: files parsed and validated ([`spec`]),
//! a runnable query built from one ([`build_query`], what `weir run`,
//! `weir host` and `weir serve` all start, so a pipeline means the same
//! thing whichever way it runs), and a candidate component replayed over a
//! pipeline's committed batches ([`replay`]).

mod query;
pub mod replay;
pub mod spec;

pub use query::{BuildError, GuestScope, Query, build_query};
