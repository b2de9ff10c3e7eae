//! The switch that stops a query's guests in the middle of a call. A
//! stopped pipeline must not wait for a guest that loops (or runs a call
//! timeout of days): raised, every guest of the component traps at its next
//! epoch tick (5 ms) and no new call starts, failing as
//! [`TransformError::Stopped`](weir_engine::TransformError::Stopped),
//! which the guard passes up instead of isolating records.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Clone, Default)]
pub struct Abort(Arc<AtomicBool>);

impl Abort {
    pub fn new() -> Abort {
        Abort::default()
    }

    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
