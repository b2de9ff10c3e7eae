//! Re-running an uncommitted epoch after a crash: the recorded ranges are
//! read again exactly and transformed, so the epoch's output is the same.

use crate::Rejections;
use std::time::{Duration, Instant};

use super::task::{Parts, stateful_step};
use super::{ContinuousQuery, source_err};
use crate::batch::RecordBatch;
use crate::options::EngineError;
use crate::state::{BatchTime, TaskStats};
use crate::tasks::{check_rejected, reject_unkeyed};
use crate::wal::OffsetEntry;

/// How long a replay waits for recorded records that do not arrive (a
/// broker restarting) before it fails.
const REPLAY_PATIENCE: Duration = Duration::from_secs(60);

/// A replayed epoch: its parts, rejected count and per-task state stats.
type Replayed = (Parts, Rejections, Vec<(u32, TaskStats)>);

impl ContinuousQuery {
    /// Re-read an uncommitted epoch's exact ranges and transform them; a
    /// stateful query runs each task from the epoch's state version with
    /// the clocks recorded for it, then fires its timers and checkpoints
    /// the next version, as the original run did.
    pub(super) fn replay(
        &mut self,
        entry: &OffsetEntry,
        start: &[u64],
        end: &[u64],
    ) -> Result<Replayed, EngineError> {
        if self.options.state.stateful {
            return self.replay_exchanged(entry, start, end);
        }
        // One source (see `ContinuousQuery::reading`).
        let name = self.inputs.description(0);
        let mut parts = Vec::new();
        let mut rejected = Rejections::default();
        let mut stats = Vec::new();
        let active = self.options.state.active();
        let policy = self.options.error_policy.clone();
        for (p, (s, e)) in start.iter().zip(end).enumerate() {
            if e <= s && !active {
                continue;
            }
            let batch = self.read_range(p as u32, *s, *e)?;
            let mut t = self.transform(p as u32)?;
            if active {
                let p = p as u32;
                let time = self.recorded_time(entry, p);
                let mut ts = self.task_state(p, entry.batch_id)?;
                let mut st = TaskStats::default();
                let input = (!batch.is_empty()).then_some((0, batch));
                if input.is_some() {
                    rejected += stateful_step(
                        &mut ts, &mut *t, p, time, &mut st, input, &mut parts, &policy, &name,
                    )?;
                }
                rejected += stateful_step(
                    &mut ts, &mut *t, p, time, &mut st, None, &mut parts, &policy, &name,
                )?;
                stats.push((p, st));
                continue;
            }
            let mut out = t
                .process_batch(&batch)
                .map_err(|err| EngineError::Transform {
                    source_name: name.clone(),
                    partition: p as u32,
                    err,
                })?;
            rejected += check_rejected(&policy, &name, &batch, &mut out)?;
            parts.push((batch, out));
        }
        Ok((parts, rejected, stats))
    }

    /// A stateful epoch again: every reader's range routed by key, then
    /// each state partition fed reader by reader, in the order the live
    /// run's aligned channels fed it.
    fn replay_exchanged(
        &mut self,
        entry: &OffsetEntry,
        start: &[u64],
        end: &[u64],
    ) -> Result<Replayed, EngineError> {
        let policy = self.options.error_policy.clone();
        let partitioning = self.options.state.partitioning.clone();
        let mut parts = Vec::new();
        let mut rejected = Rejections::default();
        let mut inputs: Vec<Vec<(usize, RecordBatch)>> =
            (0..partitioning.partitions).map(|_| Vec::new()).collect();
        for (r, (s, e)) in start.iter().zip(end).enumerate() {
            if e <= s {
                continue;
            }
            let batch = self.read_range(r as u32, *s, *e)?;
            let source = self.inputs.locate(r as u32).0;
            let name = self.inputs.description(source);
            let routed = partitioning.route_from(source, &name, batch, None)?;
            for (q, b) in routed.parts {
                inputs[q as usize].push((source, b));
            }
            if let Some((b, why)) = routed.unreadable {
                rejected += reject_unkeyed(&policy, &name, b, &why, &mut parts)?;
            }
        }
        let mut stats = Vec::new();
        for (q, batches) in inputs.into_iter().enumerate() {
            let q = q as u32;
            let mut t = self.state_transform(q)?;
            let time = self.recorded_time(entry, q);
            let mut ts = self.task_state(q, entry.batch_id)?;
            let mut st = TaskStats::default();
            for b in batches.into_iter().map(Some).chain([None]) {
                let name = self.inputs.description(b.as_ref().map_or(0, |(s, _)| *s));
                rejected += stateful_step(
                    &mut ts, &mut *t, q, time, &mut st, b, &mut parts, &policy, &name,
                )?;
            }
            stats.push((q, st));
        }
        Ok((parts, rejected, stats))
    }

    /// The clocks task `task` ran the epoch with.
    fn recorded_time(&self, entry: &OffsetEntry, task: u32) -> BatchTime {
        entry.task_times.get(&task).map_or(
            BatchTime {
                watermark: None,
                processing_time: self.options.state.clock.now_ms(),
            },
            |t| BatchTime {
                watermark: t.watermark_ms,
                processing_time: t.processing_time_ms,
            },
        )
    }

    /// Reader `r`'s records in `[s, e)`, waiting for them if needed.
    fn read_range(&self, r: u32, s: u64, e: u64) -> Result<RecordBatch, EngineError> {
        let name = self.inputs.name_of(r);
        let mut reader = self.inputs.reader(r)?;
        let p = self.inputs.locate(r).1;
        let mut batch = RecordBatch::new(p);
        let mut pos = s;
        let mut stalled = Instant::now();
        while pos < e {
            let next = reader
                .read(pos, e, usize::MAX, &mut batch)
                .map_err(source_err(&name))?;
            if next > pos {
                stalled = Instant::now();
            } else if stalled.elapsed() > REPLAY_PATIENCE {
                return Err(EngineError::Source {
                    name: name.clone(),
                    err: crate::connector::ConnectorError(format!(
                        "partition {p}: offsets up to {e} were recorded but only {pos} are readable"
                    )),
                });
            }
            pos = next;
        }
        Ok(batch)
    }
}
