//! A processing-time clock a test moves by hand.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::Clock;

/// Processing time that moves only when the test moves it; give its
/// [`ManualClock::clock`] to a query's `StatefulOptions::clock`.
#[derive(Debug, Clone)]
pub struct ManualClock {
    ms: Arc<AtomicI64>,
}

impl ManualClock {
    /// A clock reading `ms` milliseconds since the Unix epoch.
    pub fn at(ms: i64) -> ManualClock {
        ManualClock {
            ms: Arc::new(AtomicI64::new(ms)),
        }
    }

    /// The query's view of this clock.
    pub fn clock(&self) -> Clock {
        Clock::manual(self.ms.clone())
    }

    /// Move the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_millis()).expect("an advance under 292 million years");
        self.ms.fetch_add(by, Ordering::SeqCst);
    }

    pub fn now_ms(&self) -> i64 {
        self.ms.load(Ordering::SeqCst)
    }
}
