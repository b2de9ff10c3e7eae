//! Re-running an uncommitted epoch after a crash: the recorded ranges are
//! read again exactly and transformed, so the epoch's output is the same.

use std::time::{Duration, Instant};

use super::{ContinuousQuery, source_err};
use crate::engine::batch::RecordBatch;
use crate::engine::continuous_task::{Parts, stateful_step};
use crate::engine::options::EngineError;
use crate::engine::progress::now_ms;
use crate::engine::query::OffsetEntry;
use crate::engine::state::{BatchTime, TaskStats};
use crate::engine::tasks::check_rejected;

/// How long a replay waits for recorded records that do not arrive (a
/// broker restarting) before it fails.
const REPLAY_PATIENCE: Duration = Duration::from_secs(60);

/// A replayed epoch: its parts, rejected count and per-task state stats.
type Replayed = (Parts, u64, Vec<(u32, TaskStats)>);

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
        let name = self.source.description();
        let mut parts = Vec::new();
        let mut rejected = 0;
        let mut stats = Vec::new();
        let active = self.options.state.active();
        for (p, (s, e)) in start.iter().zip(end).enumerate() {
            if e <= s && !active {
                continue;
            }
            let mut reader = self.source.reader(p as u32).map_err(source_err(&name))?;
            let mut batch = RecordBatch::new(p as u32);
            let mut pos = *s;
            let mut stalled = Instant::now();
            while pos < *e {
                let next = reader
                    .read(pos, *e, usize::MAX, &mut batch)
                    .map_err(source_err(&name))?;
                if next > pos {
                    stalled = Instant::now();
                } else if stalled.elapsed() > REPLAY_PATIENCE {
                    return Err(EngineError::Source {
                        name: name.clone(),
                        err: crate::engine::connector::ConnectorError(format!(
                            "partition {p}: offsets up to {e} were recorded but only {pos} are readable"
                        )),
                    });
                }
                pos = next;
            }
            let mut t = self.transform(p as u32)?;
            if active {
                let p = p as u32;
                let time = entry.task_times.get(&p).map_or(
                    BatchTime {
                        watermark: None,
                        processing_time: now_ms(),
                    },
                    |t| BatchTime {
                        watermark: t.watermark_ms,
                        processing_time: t.processing_time_ms,
                    },
                );
                let mut ts = self.task_state(p, entry.batch_id)?;
                let mut st = TaskStats::default();
                let policy = self.options.error_policy.clone();
                let input = (!batch.is_empty()).then_some(batch);
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
            rejected += check_rejected(&self.options.error_policy, &name, &batch, &mut out)?;
            parts.push((batch, out));
        }
        Ok((parts, rejected, stats))
    }
}
