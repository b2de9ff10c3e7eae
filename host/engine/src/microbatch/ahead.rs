//! Overlapping batches. While batch N's sinks and `commits/N` are written
//! on a thread of their own, the loop decides batch N+1 and reads its input
//! (and, without state, transforms it): a catch-up then keeps the cores on
//! the transform while the previous batch waits on its sink and fsyncs, as
//! it otherwise spends a batch's read, sink write and commit one after the
//! other.
//!
//! N+1's range is written ahead only after `commits/N`, as Spark's recovery
//! rule needs (the highest `offsets/` entry is the one to resume from), so
//! a crash at any moment leaves the logs as the one-at-a-time loop would.
//! What runs early has no effect outside the process: reading, and a
//! stateless transform whose output waits in memory for its write-ahead.
//! A stateful transform is not run early: it writes its state version as
//! it runs, and a version must not be written before the batch before it
//! is committed.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::MicroBatchQuery;
use super::plan::{Cursor, Plan, Planned};
use super::process::{Inputs, Processed};
use crate::commit::{Committed, Durable, WrittenAhead};
use crate::options::{EngineError, Trigger};
use crate::state::Watermark;

/// What was done for the next batch before its write-ahead.
pub(super) enum Work {
    Nothing,
    Read(Result<Inputs, EngineError>),
    Processed(Result<Processed, EngineError>),
}

/// The next batch, decided while the previous one committed.
pub(super) struct Ahead {
    pub planned: Box<Planned>,
    pub work: Work,
    /// Time spent on `work`.
    pub took: Duration,
}

/// A committed batch, and the batch after it when one was worked ahead.
pub(super) struct CommittedAhead {
    pub committed: Committed,
    /// An error deciding the next batch surfaces after this one's report.
    pub next: Result<Option<Ahead>, EngineError>,
}

impl MicroBatchQuery {
    /// Whether the batch after `planned` is worked on while `planned`
    /// commits: only when more input is already known (a query that keeps
    /// up decides its next batch after the commit, as before), never while
    /// replaying recorded batches, under backpressure (whose rate is
    /// measured per batch) or on a processing-time trigger (whose batches
    /// start at their interval).
    pub(super) fn overlaps(&self, planned: &Planned, cursor: &Cursor) -> bool {
        self.replay.is_none()
            && self.backpressure.is_none()
            && matches!(
                self.options.trigger,
                Trigger::Default | Trigger::AvailableNow
            )
            && planned.more_known(cursor.snapshot.as_ref())
    }

    /// Commit batch N (sinks, then `commits/N`); meanwhile, when `overlap`,
    /// decide and read (stateless: also transform) batch N+1.
    pub(super) fn commit_overlapped(
        &mut self,
        written: WrittenAhead,
        processed: &Processed,
        watermark: Option<Watermark>,
        cursor: &mut Cursor,
        overlap: bool,
    ) -> Result<CommittedAhead, EngineError> {
        let written = Mutex::new(Some(written));
        let sinks = Mutex::new(std::mem::take(&mut self.sinks));
        let store = self.store.clone();
        let keep_batches = self.options.keep_batches;
        let commit = || {
            let written = written
                .lock()
                .expect("written")
                .take()
                .expect("committed once");
            Durable {
                store: &*store,
                sinks: &mut sinks.lock().expect("sinks"),
                keep_batches,
            }
            .commit(written, &processed.parts, || watermark.clone())
        };
        let (committed, next) = std::thread::scope(|scope| {
            let thread = overlap
                .then(|| {
                    std::thread::Builder::new()
                        .name("weir-commit".into())
                        .spawn_scoped(scope, commit)
                        .ok()
                })
                .flatten();
            match thread {
                // No thread to spare: commit here, then decide as before.
                None => (commit(), Ok(None)),
                Some(thread) => {
                    let next = self.work_ahead(cursor);
                    let committed = thread
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (committed, next)
                }
            }
        });
        self.sinks = sinks.into_inner().expect("sinks");
        Ok(CommittedAhead {
            committed: committed?,
            next,
        })
    }

    /// Decide the next batch and do for it what may come before its
    /// write-ahead. `None` when there is no batch to run yet (the loop
    /// decides again once the commit is done, waiting as the trigger says).
    fn work_ahead(&mut self, cursor: &mut Cursor) -> Result<Option<Ahead>, EngineError> {
        let Plan::Batch(planned) = self.plan(cursor)? else {
            return Ok(None);
        };
        let started = Instant::now();
        let inputs = self.read_inputs(&planned.entry);
        let work = if self.options.state.active() {
            Work::Read(inputs)
        } else {
            Work::Processed(inputs.and_then(|i| self.run_inputs(&planned.entry, i)))
        };
        Ok(Some(Ahead {
            planned,
            work,
            took: started.elapsed(),
        }))
    }
}
