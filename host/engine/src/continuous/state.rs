//! Event time and state in continuous mode: each task's state is loaded at
//! the epoch it starts in, and the watermark moves at every epoch commit.

use std::sync::atomic::Ordering;

use super::ContinuousQuery;
use super::task::{NO_WATERMARK, TaskState};
use crate::options::EngineError;
use crate::state::run::{StateProgress, progress_fields};
use crate::state::{StatePartition, StatefulOptions, TaskStats, Watermark, state_dir};

impl ContinuousQuery {
    /// Partition `p`'s state and clocks, as of the start of `epoch`.
    pub(super) fn task_state(&self, p: u32, epoch: u64) -> Result<TaskState, EngineError> {
        let mut options = self.options.state.clone();
        options.files.keep_versions = self.options.keep_batches;
        let state = if options.stateful {
            Some(StatePartition::load(
                &*self.store,
                &state_dir(0, p),
                epoch,
                options.files.backend,
            )?)
        } else {
            None
        };
        Ok(TaskState {
            options,
            state,
            store: self.store.clone(),
            watermark: self.watermark_cell.clone(),
        })
    }

    /// Let tasks see the current watermark from their next epoch on.
    pub(super) fn publish_watermark(&self) {
        let w = self.watermark.watermark_ms.unwrap_or(NO_WATERMARK);
        self.watermark_cell.store(w, Ordering::SeqCst);
    }
}

/// Fold an epoch's event times into `watermark`; returns the epoch's
/// progress fields (computed with the watermark the epoch ran with).
/// `readers`: the query's source partitions.
pub(super) fn advance_watermark(
    watermark: &mut Watermark,
    options: &StatefulOptions,
    readers: u32,
    stats: &[(u32, TaskStats)],
) -> StateProgress {
    let mut total = TaskStats::default();
    for (_, s) in stats {
        total.merge(s);
    }
    let before = watermark.watermark_ms;
    if let Some(et) = &options.event_time {
        // The commit's time; it is recorded with the watermark in
        // `commits/E`, so a restart continues from the same state.
        watermark.after_batch(et, &total.event_max, options.clock.now_ms());
    }
    let partitions = if options.stateful {
        options.partitioning.partitions as u64
    } else {
        u64::from(readers)
    };
    progress_fields(options, &total, partitions, before)
}
