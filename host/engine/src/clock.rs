//! Processing time as the engine's semantics read it: the time a batch or
//! epoch is stamped with, which fires processing-time timers, expires
//! state and decides when an idle partition stops holding the watermark
//! back. Tests move it by hand (see `testing::ManualClock`) to specify
//! what an hour of silence does without waiting an hour. Pacing (trigger
//! intervals, idle back-off, epoch length) stays on the real monotonic
//! clock: it is about throughput, not results.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The processing-time clock of a query: the system's wall clock, or a
/// test's hand-moved one.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's wall clock (milliseconds since the Unix epoch).
    pub fn system() -> Clock {
        Clock::default()
    }

    /// A clock that reads `ms` until a test moves it.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn manual(ms: Arc<AtomicI64>) -> Clock {
        Clock { manual: Some(ms) }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            None => crate::progress::now_ms(),
            Some(ms) => ms.load(Ordering::SeqCst),
        }
    }
}

impl PartialEq for Clock {
    /// The same clock: both the system's, or one hand-moved clock.
    fn eq(&self, other: &Clock) -> bool {
        match (&self.manual, &other.manual) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}
