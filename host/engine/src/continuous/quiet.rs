//! Quiet tasks: a per-partition task with nothing to read stops passing
//! epoch markers, and the coordinator counts it as having reported every
//! epoch it sleeps through, empty. Without this an idle pipeline woke each
//! task and the coordinator at every epoch (with four partitions at 20 ms,
//! about 450 wake-ups a second, a percent of a core).
//!
//! The rule, under one lock per task: a task that goes quiet at epoch `s`
//! has reported every epoch before `s` and read nothing in `s`; when it
//! wakes it reads the marker `m` under the lock and reports from `m` on, so
//! epochs `[s, m)` are empty for it. The coordinator decides an epoch under
//! the same lock and only after the marker has passed it, so either it
//! counts the epoch empty and the task, waking later, sees the marker past
//! it; or the task woke first and reports it. A task goes quiet again only
//! once the coordinator has decided every epoch before its last wake, so
//! one range per task is enough.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::marker::Marker;

/// One task's quiet range `[from, until)`; `until` is `u64::MAX` while it
/// sleeps.
#[derive(Debug, Default, Clone, Copy)]
struct Range {
    from: u64,
    until: u64,
}

/// Shared by the stateless tasks and the coordinator.
#[derive(Debug)]
pub(crate) struct Quiet {
    tasks: Vec<Mutex<Range>>,
    /// The next epoch the coordinator decides.
    deciding: AtomicU64,
}

impl Quiet {
    pub(crate) fn new(tasks: usize, epoch: u64) -> Self {
        Quiet {
            tasks: (0..tasks).map(|_| Mutex::new(Range::default())).collect(),
            deciding: AtomicU64::new(epoch),
        }
    }

    fn range(&self, task: usize) -> std::sync::MutexGuard<'_, Range> {
        self.tasks[task].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `task` may go quiet now: the coordinator has decided every
    /// epoch before its last wake.
    pub(crate) fn may_sleep(&self, task: usize) -> bool {
        self.deciding.load(Ordering::SeqCst) >= self.range(task).until
    }

    /// `task`, in epoch `epoch` with everything before it reported and
    /// nothing read in it, goes quiet.
    pub(crate) fn sleep(&self, task: usize, epoch: u64) {
        *self.range(task) = Range {
            from: epoch,
            until: u64::MAX,
        };
    }

    /// `task` wakes: returns the epoch it reports from (and reads into).
    pub(crate) fn wake(&self, task: usize, marker: &Marker) -> u64 {
        let mut r = self.range(task);
        let m = marker.epoch();
        r.until = m;
        m
    }

    /// How many tasks are quiet in `epoch` (which the marker has passed).
    pub(crate) fn quiet_in(&self, epoch: u64) -> usize {
        (0..self.tasks.len())
            .filter(|&t| {
                let r = self.range(t);
                r.from <= epoch && epoch < r.until
            })
            .count()
    }

    /// The coordinator has decided every epoch before `epoch`.
    pub(crate) fn decided_before(&self, epoch: u64) {
        self.deciding.store(epoch, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_range_covers_the_epochs_slept_through() {
        let q = Quiet::new(2, 10);
        let marker = Marker::new(10);
        assert!(q.may_sleep(0));
        assert_eq!(q.quiet_in(10), 0);
        q.sleep(0, 10);
        assert_eq!(q.quiet_in(10), 1);
        assert_eq!(q.quiet_in(500), 1);
        marker.advance(std::time::Instant::now());
        marker.advance(std::time::Instant::now());
        // Wakes in epoch 12: 10 and 11 were empty, 12 on it reports.
        assert_eq!(q.wake(0, &marker), 12);
        assert_eq!((q.quiet_in(11), q.quiet_in(12)), (1, 0));
        // Not quiet again until the coordinator is past its wake.
        q.decided_before(11);
        assert!(!q.may_sleep(0));
        q.decided_before(12);
        assert!(q.may_sleep(0));
        assert!(q.may_sleep(1));
    }
}
