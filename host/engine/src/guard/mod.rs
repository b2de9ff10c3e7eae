//! The engine's guard around every transform instance: the per-record
//! limits (record size, amplification, output bytes), isolation of the
//! record that made a guest trap, and crash-loop detection. It turns guest
//! failures into rejected records, so the pipeline's error policy (fail,
//! skip, dead-letter) applies to traps as it does to bad records.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::batch::{HeaderRef, RecordBatch};
use super::output::{RejectKind, Rejected, TransformOutput};
use super::state::{FiredTimers, StateContext};
use super::transform::{Transform, TransformError};

/// Per-record limits enforced by the host around each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLimits {
    /// Largest input record (key + value + headers) handed to the guest.
    pub max_record_bytes: usize,
    /// Most output records one input record may produce.
    pub max_outputs_per_record: usize,
    /// Most output bytes one call may return.
    pub max_output_bytes: usize,
    /// Guest failures (traps, overruns) tolerated within `crash_window`
    /// before the pipeline stops instead of spinning.
    pub crash_loop_traps: usize,
    pub crash_window: Duration,
}

impl Default for RecordLimits {
    fn default() -> Self {
        RecordLimits {
            max_record_bytes: 16 << 20,
            max_outputs_per_record: 1000,
            max_output_bytes: 256 << 20,
            crash_loop_traps: 10,
            crash_window: Duration::from_secs(60),
        }
    }
}

/// A transform behind the guard.
pub struct Guarded {
    inner: Box<dyn Transform>,
    limits: RecordLimits,
    failures: VecDeque<Instant>,
}

impl Guarded {
    pub fn new(inner: Box<dyn Transform>, limits: RecordLimits) -> Self {
        Guarded {
            inner,
            limits,
            failures: VecDeque::new(),
        }
    }

    fn record_failure(&mut self, e: &TransformError) -> Result<(), TransformError> {
        let now = Instant::now();
        self.failures.push_back(now);
        while self
            .failures
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.limits.crash_window)
        {
            self.failures.pop_front();
        }
        if self.failures.len() >= self.limits.crash_loop_traps {
            return Err(TransformError::CrashLoop {
                failures: self.failures.len(),
                window: self.limits.crash_window,
                last: e.to_string(),
            });
        }
        Ok(())
    }

    /// Why a successful call's output breaks the limits, if it does.
    fn over_limit(&self, out: &TransformOutput) -> Option<String> {
        if out.batch.columns().data_len() > self.limits.max_output_bytes {
            return Some(format!(
                "output exceeds {} bytes for one call",
                self.limits.max_output_bytes
            ));
        }
        // Empty origins mean one output per input. Otherwise origins are
        // non-decreasing (validated with the output), so each input's
        // outputs form one run: no per-call allocation on the hot path.
        let max = self.limits.max_outputs_per_record;
        let mut run = 0;
        let mut prev = None;
        for o in out.batch.origins() {
            run = if prev == Some(o) { run + 1 } else { 1 };
            prev = Some(o);
            if run > max {
                return Some(format!(
                    "more than {max} output records for one input record"
                ));
            }
        }
        None
    }

    /// One call of the inner transform, checked against the output limits
    /// (`Ok(Err(why))`: the output broke one). With state, the changes of a
    /// call that failed or broke a limit are rolled back.
    fn call(
        &mut self,
        input: &RecordBatch,
        ctx: Option<&mut StateContext>,
    ) -> Result<Result<TransformOutput, String>, TransformError> {
        let r = match ctx {
            None => self.inner.process_batch(input),
            Some(ctx) => {
                ctx.state.begin_call();
                let r = self.inner.process_stateful(input, ctx);
                let kept = r.map(|out| self.checked(out));
                if matches!(kept, Ok(Ok(_))) {
                    ctx.state.end_call();
                } else {
                    ctx.state.rollback_call();
                }
                return kept;
            }
        };
        r.map(|out| self.checked(out))
    }

    /// `out`, or why it breaks the output limits.
    fn checked(&self, out: TransformOutput) -> Result<TransformOutput, String> {
        match self.over_limit(&out) {
            Some(why) => Err(why),
            None => Ok(out),
        }
    }

    /// Run `input` record by record on the inner transform, turning each
    /// record's failure into a rejection of that record.
    fn isolate(
        &mut self,
        input: &RecordBatch,
        mut ctx: Option<&mut StateContext>,
    ) -> Result<TransformOutput, TransformError> {
        let mut merged = TransformOutput::default();
        let mut single = RecordBatch::new(input.partition);
        for i in 0..input.len() {
            single.clear();
            let r = input.get(i);
            if r.key.map_or(0, <[u8]>::len) + r.value.len() + r.headers.len()
                > self.limits.max_record_bytes
            {
                merged.rejected.push(Rejected {
                    index: i as u32,
                    kind: RejectKind::TooLarge,
                    reason: format!(
                        "record exceeds the limit of {} bytes",
                        self.limits.max_record_bytes
                    ),
                });
                continue;
            }
            single.push_record(&r);
            match self.call(&single, ctx.as_deref_mut()) {
                Ok(Ok(out)) => append(&mut merged, &out, &single, i as u32),
                Ok(Err(why)) => merged.rejected.push(Rejected {
                    index: i as u32,
                    kind: RejectKind::OutputLimit,
                    reason: why,
                }),
                Err(TransformError::BadRecord { reason, .. }) => merged.rejected.push(Rejected {
                    index: i as u32,
                    kind: RejectKind::BadRecord,
                    reason,
                }),
                Err(e) if e.poisons_instance() => {
                    self.record_failure(&e)?;
                    merged.rejected.push(Rejected {
                        index: i as u32,
                        kind: RejectKind::of(&e),
                        reason: e.to_string(),
                    });
                }
                Err(e) => return Err(e),
            }
        }
        Ok(merged)
    }

    fn guarded(
        &mut self,
        input: &RecordBatch,
        mut ctx: Option<&mut StateContext>,
    ) -> Result<TransformOutput, TransformError> {
        let oversized = input.iter().any(|r| {
            r.key.map_or(0, <[u8]>::len) + r.value.len() + r.headers.len()
                > self.limits.max_record_bytes
        });
        if oversized {
            return self.isolate(input, ctx);
        }
        match self.call(input, ctx.as_deref_mut()) {
            Ok(Ok(out)) => Ok(out),
            // Find the records that broke the limit.
            Ok(Err(_)) | Err(TransformError::BadRecord { .. }) => self.isolate(input, ctx),
            Err(e) if e.poisons_instance() => {
                self.record_failure(&e)?;
                self.isolate(input, ctx)
            }
            Err(e) => Err(e),
        }
    }
}

impl Transform for Guarded {
    fn process_batch(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError> {
        self.guarded(input, None)
    }

    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        self.guarded(input, Some(ctx))
    }

    fn reported_metrics(&self) -> crate::progress::TransformMetrics {
        self.inner.reported_metrics()
    }

    /// Fired timers get the records' isolation: when the handler traps,
    /// overruns or breaks an output limit, each timer is retried alone and
    /// the ones that still fail are rejected (their state changes undone),
    /// so the pipeline's error policy decides (fail, skip, dead-letter)
    /// instead of a restart that would hit the same timer again.
    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        match self.timer_call(fired, ctx) {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(_)) | Err(TransformError::BadRecord { .. }) => self.isolate_timers(fired, ctx),
            Err(e) if e.poisons_instance() => {
                self.record_failure(&e)?;
                self.isolate_timers(fired, ctx)
            }
            Err(e) => Err(e),
        }
    }
}

impl Guarded {
    /// One timer-handler call, checked like [`Guarded::call`].
    fn timer_call(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<Result<TransformOutput, String>, TransformError> {
        ctx.state.begin_call();
        let r = self
            .inner
            .on_timers(fired, ctx)
            .map(|out| self.checked(out));
        if matches!(r, Ok(Ok(_))) {
            ctx.state.end_call();
        } else {
            ctx.state.rollback_call();
        }
        r
    }

    fn isolate_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let mut merged = TransformOutput::default();
        for i in 0..fired.len() {
            let t = fired.batch.get(i);
            let mut one = FiredTimers {
                batch: RecordBatch::new(fired.batch.partition),
                domains: vec![fired.domains[i]],
            };
            one.batch.push_record(&t);
            let reject = |kind, reason| Rejected {
                index: i as u32,
                kind,
                reason: format!("timer handler: {reason}"),
            };
            match self.timer_call(&one, ctx) {
                Ok(Ok(out)) => append(&mut merged, &out, &one.batch, i as u32),
                Ok(Err(why)) => merged.rejected.push(reject(RejectKind::OutputLimit, why)),
                Err(TransformError::BadRecord { reason, .. }) => {
                    merged.rejected.push(reject(RejectKind::BadRecord, reason))
                }
                Err(e) if e.poisons_instance() => {
                    self.record_failure(&e)?;
                    merged
                        .rejected
                        .push(reject(RejectKind::of(&e), e.to_string()));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(merged)
    }
}

/// Append `out` (the output for the one-record batch `single`) to `merged`,
/// as the output of input record `origin`.
fn append(merged: &mut TransformOutput, out: &TransformOutput, single: &RecordBatch, origin: u32) {
    for o in out.batch.iter(single) {
        let headers: Vec<HeaderRef<'_>> = o.headers().collect();
        merged.batch.push(
            origin,
            o.output,
            o.key,
            o.value_opt(),
            &headers,
            o.timestamp,
        );
    }
    merged
        .rejected
        .extend(out.rejected.iter().map(|r| Rejected {
            index: origin,
            kind: r.kind,
            reason: r.reason.clone(),
        }));
}

#[cfg(test)]
mod tests;
