//! The transform seam: the engine calls a [`Transform`] once per batch and
//! does not know whether it is a WASM component or a native closure.

use std::time::Duration;

use super::batch::RecordBatch;
use super::output::{OutputBatch, TransformOutput};
use super::state::{FiredTimers, StateContext};

/// Why a transform call failed. Bad records are not errors: they come back in
/// [`TransformOutput::rejected`] and the pipeline's error policy handles them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TransformError {
    /// The guest trapped (panic, unreachable, out-of-bounds...). The
    /// instance is discarded; the next call runs on a fresh one.
    #[error("guest trapped: {message}")]
    Trap { message: String },
    /// The guest ran past its per-call CPU deadline.
    #[error("guest exceeded its CPU deadline of {limit:?} for one call")]
    Deadline { limit: Duration },
    /// The guest tried to grow its memory past the limit.
    #[error("guest exceeded its memory limit of {limit} bytes")]
    OutOfMemory { limit: usize },
    /// The tenant's guests together hold all the memory its quota allows.
    #[error("tenant `{tenant}` reached its guest memory quota of {limit} bytes")]
    TenantMemory { tenant: String, limit: usize },
    /// The guest burned its fuel budget for one call.
    #[error("guest ran out of its fuel budget of {limit} for one call")]
    OutOfFuel { limit: u64 },
    /// The guest's keyed state would grow past its limit.
    #[error("guest exceeded its keyed state limit of {limit} bytes")]
    StateLimit { limit: usize },
    /// The guest could not finish a call because of one bad record (or
    /// fired timer) at `index`; the guard retries the call one record at
    /// a time, so only the bad ones reach the error policy.
    #[error("record {index} is bad: {reason}")]
    BadRecord { index: u32, reason: String },
    /// The transform reported itself broken; the pipeline must stop.
    #[error("transform failed: {0}")]
    Fatal(String),
    /// The guest returned output that breaks the batch encoding rules.
    #[error("guest returned a malformed batch: {0}")]
    Malformed(String),
    /// `init` refused the pipeline's transform config.
    #[error("transform refused its config: {0}")]
    Config(String),
    /// The pipeline is stopping: its guest was interrupted mid-call (or not
    /// started). Not about any record; the batch is re-run after a restart.
    #[error("stopped: the pipeline was stopped while its guest ran")]
    Stopped,
    /// The guest keeps failing: the pipeline stops rather than spin.
    #[error("crash loop: the guest failed {failures} times within {window:?} (last: {last})")]
    CrashLoop {
        failures: usize,
        window: Duration,
        last: String,
    },
}

impl TransformError {
    /// Whether the instance that produced this error is unusable (a trap
    /// poisons a component instance, so it must be rebuilt).
    pub fn poisons_instance(&self) -> bool {
        matches!(
            self,
            TransformError::Trap { .. }
                | TransformError::Deadline { .. }
                | TransformError::OutOfMemory { .. }
                | TransformError::StateLimit { .. }
                | TransformError::OutOfFuel { .. }
                | TransformError::TenantMemory { .. }
        )
    }
}

/// Query logic applied to each batch of one partition. One instance serves
/// one partition task and is reused for every batch of that task.
pub trait Transform: Send {
    fn process_batch(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError>;

    /// Process a batch with the task's keyed state and the batch's clocks.
    /// Stateless transforms ignore them.
    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let _ = ctx;
        self.process_batch(input)
    }

    /// Handle timers that came due; the output's origins index `fired`.
    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let _ = (fired, ctx);
        Ok(TransformOutput::default())
    }

    /// What the transform reported through its metrics, since it was
    /// created (the query shows them in progress).
    fn reported_metrics(&self) -> super::progress::TransformMetrics {
        Default::default()
    }
}

/// A native transform from a closure over the engine's own batches: the
/// baseline the WASM path is measured against, and handy in tests.
pub struct FnTransform<F>(pub F);

impl<F> Transform for FnTransform<F>
where
    F: FnMut(&RecordBatch, &mut OutputBatch) -> Result<(), TransformError> + Send,
{
    fn process_batch(&mut self, input: &RecordBatch) -> Result<TransformOutput, TransformError> {
        let mut out = TransformOutput::default();
        (self.0)(input, &mut out.batch)?;
        Ok(out)
    }
}
