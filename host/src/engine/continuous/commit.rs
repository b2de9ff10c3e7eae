//! Committing one continuous epoch: its ranges written ahead, the sinks,
//! the commit entry, and its progress report.

use std::time::Instant;

use super::{ContinuousQuery, Epoch};
use crate::engine::checkpoint::encode_entry;
use crate::engine::faults;
use crate::engine::options::{EngineError, RunSummary};
use crate::engine::progress::{
    DurationMs, LatencyMs, Progress, SinkProgress, SourceProgress, now_ms,
};
use crate::engine::state::FiredTimers;
use crate::engine::tasks::{sinks_description, write_sinks};
use crate::engine::wal::{self, CommitEntry, OffsetEntry, OffsetRange, commits_path, offsets_path};

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
            started: epoch_started,
            rerun,
            times,
            stats,
        } = epoch;
        let commit_started = Instant::now();
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
        // A re-run epoch keeps its recorded entry; a new one is written ahead.
        if !rerun {
            self.store
                .create(&offsets_path(id), &encode_entry(&entry))?;
        }
        faults::point("after-offsets-write", id);
        let wal = commit_started.elapsed();
        let sink_started = Instant::now();
        let rows = write_sinks(&mut self.sinks, id, &parts)?;
        faults::point("after-sink-commit", id);
        let add_batch = sink_started.elapsed();
        let c = Instant::now();
        let (state_operators, event_time_progress) = self.advance_watermark(&stats);
        self.store.create(
            &commits_path(id),
            &encode_entry(&CommitEntry {
                batch_id: id,
                num_output_rows: rows,
                watermark: event_time.then(|| self.watermark.clone()),
            }),
        )?;
        faults::point("after-commit-write", id);
        self.publish_watermark();
        wal::prune(&*self.store, id, self.options.keep_batches)?;
        let visible_ms = now_ms();
        // Fired timers travel as parts too; they are not input records.
        let records = || parts.iter().filter(|(b, _)| !FiredTimers::is_fired(b));
        let input: u64 = records().map(|(b, _)| b.len() as u64).sum();
        let latency = LatencyMs::since(
            records().flat_map(|(b, _)| b.timestamps.iter().copied()),
            visible_ms,
        );
        let lag = self.inputs.latest_positions().map(|latest| {
            latest
                .iter()
                .zip(end)
                .map(|(l, e)| l.saturating_sub(*e))
                .sum()
        });
        let exec = epoch_started.elapsed();
        let progress = Progress {
            id: self.id.clone(),
            run_id: self.run_id.clone(),
            batch_id: id,
            timestamp: entry.timestamp_ms,
            num_input_rows: input,
            input_rows_per_second: input as f64 / exec.as_secs_f64().max(1e-6),
            processed_rows_per_second: input as f64 / exec.as_secs_f64().max(1e-6),
            num_rejected_rows: rejected.total(),
            rejected_rows_by_kind: rejected.by_kind(),
            lag,
            duration_ms: DurationMs {
                latest_offset: 0,
                wal_commit: wal.as_millis() as u64,
                add_batch: add_batch.as_millis() as u64,
                commit: c.elapsed().as_millis() as u64,
                trigger_execution: commit_started.elapsed().as_millis() as u64,
            },
            sources: ranges
                .into_iter()
                .enumerate()
                .map(|(s, range)| SourceProgress {
                    description: self.inputs.description(s),
                    start_offset: range.start,
                    end_offset: range.end.clone(),
                    latest_offset: range.end,
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
                .collect(),
            sink: SinkProgress {
                description: sinks_description(&self.sinks),
                num_output_rows: rows,
            },
            latency_ms: (input > 0).then_some(latency),
            state_operators,
            event_time: event_time_progress,
            transform_metrics: self.transform_metrics.values().fold(
                Default::default(),
                |mut m, t| {
                    m.add(t);
                    m
                },
            ),
        };
        self.store.write("progress", &encode_entry(&progress))?;
        on_progress(&progress);
        summary.batches += 1;
        summary.input_rows += input;
        summary.output_rows += rows;
        Ok(())
    }
}
