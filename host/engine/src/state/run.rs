//! One task's share of a batch (or epoch) in a query with event time or
//! state: read event times and drop or reject late records, call the
//! transform with the task's state, fire the timers that came due, and
//! checkpoint the state as the next version.

use std::time::Instant;

use super::event_time::{EventStats, EventTimeOptions, LatePolicy, split};
use super::files::{StateFileOptions, StatePartition};
use super::{FiredTimers, OutputMode, StateContext, TimeDomain};
use crate::batch::{RecordBatch, StateKeys};
use crate::checkpoint::CheckpointStore;
use crate::output::{RejectKind, Rejected, TransformOutput};
use crate::transform::{Transform, TransformError};

/// Timers registered by the timer handler for times already due fire again
/// in the same batch, at most this many rounds (a handler that keeps
/// re-registering due timers must not spin forever).
const MAX_TIMER_ROUNDS: usize = 16;

/// Late-drop lines logged per second (every drop is counted in progress).
static LATE_LOG: crate::log_budget::SharedLogBudget = crate::log_budget::SharedLogBudget::new(1);

/// How a query handles event time and state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatefulOptions {
    /// The transform keeps keyed state and timers.
    pub stateful: bool,
    pub event_time: Option<EventTimeOptions>,
    pub output_mode: OutputMode,
    pub files: StateFileOptions,
    /// How records are keyed into state partitions (stateful only).
    pub partitioning: crate::exchange::Partitioning,
    /// Each source's name, by index, as the guest sees it
    /// (`context.source`); empty names when the pipeline gives none.
    pub source_names: Vec<String>,
    /// Where processing time is read: batch and epoch times, so timers,
    /// expiries and idle timeouts.
    pub clock: crate::Clock,
}

impl StatefulOptions {
    /// Whether queries need the per-task state machinery at all.
    pub fn active(&self) -> bool {
        self.stateful || self.event_time.is_some()
    }
}

/// A batch's clocks, fixed for the whole batch and recorded in the offsets
/// log so a re-run sees the same values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchTime {
    pub watermark: Option<i64>,
    pub processing_time: i64,
}

/// What one task did to its state in one batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskStats {
    pub dropped_late: u64,
    pub timers_fired: u64,
    /// Expiries that came due (each deletes its key; no guest call).
    pub expiries_fired: u64,
    pub event: EventStats,
    pub rows_total: u64,
    pub rows_updated: u64,
    pub rows_removed: u64,
    pub memory_bytes: u64,
    pub commit_ms: u64,
    /// Largest event time per (source, source partition) of the input.
    pub event_max: std::collections::BTreeMap<(usize, u32), i64>,
}

impl TaskStats {
    pub fn merge(&mut self, o: &TaskStats) {
        self.dropped_late += o.dropped_late;
        self.timers_fired += o.timers_fired;
        self.expiries_fired += o.expiries_fired;
        self.event.merge(&o.event);
        self.rows_total += o.rows_total;
        self.rows_updated += o.rows_updated;
        self.rows_removed += o.rows_removed;
        self.memory_bytes += o.memory_bytes;
        self.commit_ms = self.commit_ms.max(o.commit_ms);
        for (k, &m) in &o.event_max {
            let e = self.event_max.entry(*k).or_insert(m);
            *e = (*e).max(m);
        }
    }
}

pub(crate) use crate::output::Parts;

/// Why a task step failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    #[error(transparent)]
    Transform(#[from] TransformError),
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
}

/// One task's stateful run over a batch or epoch.
pub(crate) struct TaskRun<'a> {
    /// The task's partition (fired timers are reported as its records).
    pub partition: u32,
    pub options: &'a StatefulOptions,
    pub state: Option<&'a mut StatePartition>,
    pub time: BatchTime,
    pub stats: TaskStats,
}

pub(crate) fn reject_all(
    batch: &RecordBatch,
    kind: RejectKind,
    reasons: &[String],
) -> TransformOutput {
    TransformOutput {
        rejected: (0..batch.len())
            .map(|i| Rejected {
                index: i as u32,
                kind,
                reason: reasons.get(i).cloned().unwrap_or_default(),
            })
            .collect(),
        ..TransformOutput::default()
    }
}

/// Read the state keys of a batch that reached its task without them (its
/// records were not routed here, or were copied without their keys), so a
/// stateful call always has them; left out if a record has none.
fn fill_state_keys(batch: &mut RecordBatch, key: &crate::exchange::StateKey) {
    let mut keys = StateKeys::with_capacity(batch.len());
    for r in batch.iter() {
        let Ok(k) = key.of(&r) else { return };
        keys.push(&k);
    }
    batch.set_state_keys(keys);
}

impl TaskRun<'_> {
    fn context(&mut self, source: Option<usize>) -> StateContext {
        StateContext {
            source: source.and_then(|i| self.options.source_names.get(i).cloned()),
            state: self
                .state
                .as_mut()
                .map(|p| std::mem::take(&mut p.state))
                .unwrap_or_default(),
            watermark: self.time.watermark,
            processing_time: self.time.processing_time,
            output_mode: self.options.output_mode,
            event_time: self.options.event_time.is_some(),
        }
    }

    /// Put the state back after a call; a disk-backed state that hit an
    /// I/O error fails the step.
    fn restore(&mut self, ctx: StateContext) -> Result<(), StepError> {
        if let Some(p) = self.state.as_mut() {
            p.state = ctx.state;
            if let Some(e) = p.state.error() {
                return Err(StepError::Checkpoint(
                    crate::checkpoint::CheckpointError::Mismatch(format!("{}: {e}", p.dir)),
                ));
            }
        }
        Ok(())
    }

    /// Run one input batch of source `source` through the transform, after
    /// splitting off late and unreadable records.
    pub fn process(
        &mut self,
        t: &mut dyn Transform,
        source: usize,
        batch: RecordBatch,
        parts: &mut Parts,
    ) -> Result<(), StepError> {
        let mut batch = match &self.options.event_time {
            Some(et) => self.split(et, source, batch, parts),
            None => batch,
        };
        if batch.is_empty() {
            return Ok(());
        }
        if self.options.stateful && !batch.has_state_keys() {
            fill_state_keys(&mut batch, self.options.partitioning.key_of(source));
        }
        let out = if self.options.stateful {
            let mut ctx = self.context(Some(source));
            let r = t.process_stateful(&batch, &mut ctx);
            self.restore(ctx)?;
            r?
        } else {
            t.process_batch(&batch)?
        };
        parts.push((batch, out));
        Ok(())
    }

    fn split(
        &mut self,
        et: &EventTimeOptions,
        source: usize,
        batch: RecordBatch,
        parts: &mut Parts,
    ) -> RecordBatch {
        let origin = (source, batch.partition);
        let s = split(batch, et.field_of(source), self.time.watermark);
        self.stats.event.merge(&s.stats);
        if s.stats.count > 0 {
            let e = self.stats.event_max.entry(origin).or_insert(s.stats.max);
            *e = (*e).max(s.stats.max);
        }
        if !s.unreadable.is_empty() {
            let out = reject_all(&s.unreadable, RejectKind::BadRecord, &s.unreadable_reasons);
            parts.push((s.unreadable, out));
        }
        if !s.late.is_empty() {
            match et.late {
                LatePolicy::Drop => {
                    self.stats.dropped_late += s.late.len() as u64;
                    let a = LATE_LOG.admit();
                    if a.admit {
                        tracing::warn!(
                            partition = s.late.partition,
                            watermark = self.time.watermark.unwrap_or_default(),
                            first_offset = s.late.offsets()[0],
                            "dropped {} record(s) older than the watermark (event-time.late = \"drop\"; counted in numRowsDroppedByWatermark{})",
                            s.late.len(),
                            if a.suppressed_before > 0 {
                                format!("; {} earlier drop line(s) not logged", a.suppressed_before)
                            } else {
                                String::new()
                            }
                        );
                    }
                }
                LatePolicy::Reject => {
                    let wm = self.time.watermark.unwrap_or_default();
                    let reasons: Vec<String> = s
                        .late
                        .timestamps()
                        .iter()
                        .map(|t| format!("event time {t} is older than the watermark {wm}"))
                        .collect();
                    let out = reject_all(&s.late, RejectKind::Late, &reasons);
                    parts.push((s.late, out));
                }
            }
        }
        s.on_time
    }

    /// Fire the due timers, then checkpoint the state as the next version.
    pub fn finish(
        &mut self,
        t: &mut dyn Transform,
        store: &dyn CheckpointStore,
        parts: &mut Parts,
    ) -> Result<(), StepError> {
        if !self.options.stateful {
            return Ok(());
        }
        let partition = self.partition;
        for _ in 0..MAX_TIMER_ROUNDS {
            let Some(p) = self.state.as_mut() else { break };
            let mut fired = FiredTimers::new(partition, &[]);
            if let Some(wm) = self.time.watermark {
                p.state.fire_due(TimeDomain::EventTime, wm, &mut fired);
            }
            p.state.fire_due(
                TimeDomain::ProcessingTime,
                self.time.processing_time,
                &mut fired,
            );
            if fired.is_empty() {
                break;
            }
            self.stats.timers_fired += fired.len() as u64;
            let mut ctx = self.context(None);
            let r = t.on_timers(&fired, &mut ctx);
            self.restore(ctx)?;
            parts.push((fired.batch, r?));
        }
        if let Some(p) = self.state.as_mut() {
            // Expiries go last, so the batch's timer handlers still read
            // the keys they delete.
            if let Some(wm) = self.time.watermark {
                self.stats.expiries_fired += p.state.expire_due(TimeDomain::EventTime, wm);
            }
            self.stats.expiries_fired += p
                .state
                .expire_due(TimeDomain::ProcessingTime, self.time.processing_time);
            self.stats.rows_updated += p.state.rows_updated();
            self.stats.rows_removed += p.state.rows_removed();
            let started = Instant::now();
            p.commit(store, &self.options.files)?;
            self.stats.commit_ms = started.elapsed().as_millis() as u64;
            self.stats.rows_total += p.state.rows();
            self.stats.memory_bytes += p.state.memory_bytes() as u64;
        }
        Ok(())
    }
}

/// A batch's progress fields of state and event time.
#[derive(Debug, Default)]
pub(crate) struct StateProgress {
    /// `stateOperators` (stateful queries).
    pub operators: Vec<crate::progress::StateOperatorProgress>,
    /// `eventTime` (queries with event time).
    pub event_time: std::collections::BTreeMap<String, String>,
}

/// Progress fields of a batch that ran with `watermark`.
pub(crate) fn progress_fields(
    options: &StatefulOptions,
    stats: &TaskStats,
    partitions: u64,
    watermark: Option<i64>,
) -> StateProgress {
    use super::event_time::iso;
    let mut ops = Vec::new();
    if options.stateful || options.event_time.is_some() {
        ops.push(crate::progress::StateOperatorProgress {
            operator_name: "transform".into(),
            num_rows_total: stats.rows_total,
            num_rows_updated: stats.rows_updated,
            num_rows_removed: stats.rows_removed,
            memory_used_bytes: stats.memory_bytes,
            num_rows_dropped_by_watermark: stats.dropped_late,
            commit_time_ms: stats.commit_ms,
            num_state_partitions: if options.stateful { partitions } else { 0 },
            custom_metrics: [
                ("numTimersFired".to_string(), stats.timers_fired),
                ("numExpiriesFired".to_string(), stats.expiries_fired),
            ]
            .into(),
        });
    }
    let mut event = std::collections::BTreeMap::new();
    if options.event_time.is_some() {
        let e = &stats.event;
        if e.count > 0 {
            event.insert("min".into(), iso(e.min));
            event.insert("max".into(), iso(e.max));
            event.insert("avg".into(), iso((e.sum / e.count as i128) as i64));
        }
        if let Some(w) = watermark {
            event.insert("watermark".into(), iso(w));
        }
    }
    StateProgress {
        operators: ops,
        event_time: event,
    }
}
