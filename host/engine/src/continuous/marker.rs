//! The epoch marker: the coordinator moves it at every checkpoint interval,
//! and says when it will move next, so an idle task can sleep until then
//! (or until its reader wakes it for new records) instead of polling.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) struct Marker {
    epoch: AtomicU64,
    base: Instant,
    /// Microseconds after `base` of the next move.
    next_us: AtomicU64,
}

impl Marker {
    pub(crate) fn new(epoch: u64) -> Self {
        Marker {
            epoch: AtomicU64::new(epoch),
            base: Instant::now(),
            next_us: AtomicU64::new(0),
        }
    }

    /// The current epoch: tasks end theirs when it moves past them.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// End the current epoch; the next move is due at `next`.
    pub(crate) fn advance(&self, next: Instant) {
        self.set_next(next);
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn set_next(&self, next: Instant) {
        let us = next.saturating_duration_since(self.base).as_micros();
        self.next_us
            .store(u64::try_from(us).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// How long until the next move (zero once it is due).
    pub(crate) fn until_next(&self) -> Duration {
        let next = Duration::from_micros(self.next_us.load(Ordering::SeqCst));
        next.saturating_sub(self.base.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_says_when_it_moves_next() {
        let m = Marker::new(7);
        m.set_next(Instant::now() + Duration::from_millis(200));
        assert!(m.until_next() > Duration::from_millis(150));
        m.advance(Instant::now());
        assert_eq!(m.epoch(), 8);
        assert_eq!(m.until_next(), Duration::ZERO);
    }
}
