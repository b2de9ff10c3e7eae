//! Event time and state in continuous mode: each task's state is loaded at
//! the epoch it starts in, and the watermark moves at every epoch commit.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::ContinuousQuery;
use super::task::{NO_WATERMARK, TaskState};
use crate::engine::options::EngineError;
use crate::engine::progress::StateOperatorProgress;
use crate::engine::state::run::progress_fields;
use crate::engine::state::{StatePartition, TaskStats, state_dir};

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

    /// Fold an epoch's event times into the watermark; returns the epoch's
    /// progress fields (computed with the watermark the epoch ran with).
    pub(super) fn advance_watermark(
        &mut self,
        stats: &[(u32, TaskStats)],
    ) -> (Vec<StateOperatorProgress>, BTreeMap<String, String>) {
        let mut total = TaskStats::default();
        for (_, s) in stats {
            total.merge(s);
        }
        let before = self.watermark.watermark_ms;
        if let Some(et) = &self.options.state.event_time {
            // The commit's time; it is recorded with the watermark in
            // `commits/E`, so a restart continues from the same state.
            let now = crate::engine::progress::now_ms();
            self.watermark.observe_all(et.rule, &total.event_max, now);
            self.watermark.advance(et.delay, et.idle_timeout, now);
        }
        let partitions = if self.options.state.stateful {
            self.options.state.partitioning.partitions as u64
        } else {
            self.inputs.readers() as u64
        };
        progress_fields(&self.options.state, &total, partitions, before)
    }
}
