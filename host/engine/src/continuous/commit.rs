//! Committing one continuous epoch (the steps in [`crate::commit`])
//! and its progress report.

use super::{ContinuousQuery, Epoch};
use crate::checkpoint::{CheckpointError, read_entry};
use crate::commit::{BatchReport, Durable, write_ahead};
use crate::options::{EngineError, RunSummary};
use crate::progress::{LatencyMs, Progress, SourceProgress, now_ms};
use crate::state::FiredTimers;
use crate::state::run::StateProgress;
use crate::wal::{self, OffsetEntry, OffsetRange};

impl ContinuousQuery {
    /// Make an epoch durable: ranges ahead, sinks, then the commit.
    pub(super) fn commit(
        &mut self,
        epoch: Epoch<'_>,
        summary: &mut RunSummary,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), EngineError> {
        let Epoch {
            id,
            start,
            end,
            parts,
            rejected,
            started,
            rerun,
            times,
            stats,
        } = epoch;
        let ranges: Vec<OffsetRange> = self
            .inputs
            .to_offsets(start)
            .into_iter()
            .zip(self.inputs.to_offsets(end))
            .map(|(start, end)| OffsetRange { start, end })
            .collect();
        let event_time = self.options.state.event_time.is_some();
        let entry = OffsetEntry {
            batch_id: id,
            timestamp_ms: now_ms(),
            sources: ranges.clone(),
            watermark: event_time.then(|| self.watermark.clone()),
            task_times: times,
        };
        let mut state = StateProgress::default();
        // An entry of this id written by a stalled earlier owner is stale
        // (`wal::stale`): this run, which holds the checkpoint now, replaces it.
        let ahead = match write_ahead(&*self.store, &entry, rerun) {
            Err(EngineError::Checkpoint(CheckpointError::Conflict { .. }))
                if self.discard_stale_entry(id)? =>
            {
                write_ahead(&*self.store, &entry, rerun)?
            }
            other => other?,
        };
        let committed = Durable {
            store: &*self.store,
            sinks: &mut self.sinks,
            keep_batches: self.options.keep_batches,
        }
        .commit(ahead, &parts, || {
            state = super::state::advance_watermark(
                &mut self.watermark,
                &self.options.state,
                self.inputs.readers(),
                &stats,
            );
            event_time.then(|| self.watermark.clone())
        })?;
        self.publish_watermark();
        let visible_ms = now_ms();
        // Fired timers travel as parts too; they are not input records.
        let records = || parts.iter().filter(|(b, _)| !FiredTimers::is_fired(b));
        let input: u64 = records().map(|(b, _)| b.len() as u64).sum();
        let latency = LatencyMs::since(
            records().flat_map(|(b, _)| b.timestamps().iter().copied()),
            visible_ms,
        );
        let lag = self.inputs.latest_positions().map(|latest| {
            latest
                .iter()
                .zip(end)
                .map(|(l, e)| l.saturating_sub(*e))
                .sum()
        });
        let sources = ranges
            .into_iter()
            .enumerate()
            .map(|(s, range)| SourceProgress {
                description: self.inputs.description(s),
                start_offset: range.start.as_json().clone(),
                end_offset: range.end.as_json().clone(),
                latest_offset: range.end.as_json().clone(),
                // With several sources: the positions the epoch moved
                // over (records, on a log; a Kafka transaction's markers
                // count too).
                num_input_rows: if self.inputs.len() == 1 {
                    input
                } else {
                    let (a, b) = (self.inputs.slice(s, start), self.inputs.slice(s, end));
                    a.iter().zip(b).map(|(a, b)| b.saturating_sub(*a)).sum()
                },
                metrics: Default::default(),
            })
            .collect();
        let execution = started.elapsed();
        let since_previous = self
            .previous_epoch_started
            .replace(started)
            .map_or(execution, |p| started.saturating_duration_since(p));
        BatchReport {
            query_id: &self.id,
            run_id: &self.run_id,
            batch_id: id,
            timestamp: entry.timestamp_ms,
            input_rows: input,
            since_previous,
            execution,
            latest_offset: Default::default(),
            processing: Default::default(),
            committed: &committed,
            rejected: &rejected,
            lag,
            sources,
            latency: (input > 0).then_some(latency),
            state_operators: state.operators,
            event_time: state.event_time,
            transform_metrics: self.transform_metrics.values().fold(
                Default::default(),
                |mut m, t| {
                    m.add(t);
                    m
                },
            ),
        }
        .publish(&*self.store, &self.sinks, on_progress, summary)
    }
}

impl ContinuousQuery {
    /// Delete entry `id` found in the way of this run's write-ahead if a
    /// stalled earlier owner wrote it; says whether it did.
    fn discard_stale_entry(&self, id: u64) -> Result<bool, CheckpointError> {
        match read_entry::<OffsetEntry>(&*self.store, &wal::offsets_path(id))? {
            Some(existing) => wal::discard_stale(&*self.store, &existing),
            None => Ok(false),
        }
    }
}
