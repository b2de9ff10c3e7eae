//! The engine core: batches, the Transform / Source / Sink / checkpoint
//! seams, micro-batch and continuous execution. It imports neither wasmtime
//! nor any connector library, so it runs native transforms as well as WASM
//! ones.

pub mod backpressure;
pub mod batch;
pub mod checkpoint;
pub(crate) mod commit;
pub mod connector;
pub mod continuous;
pub mod exchange;
pub mod faults;
pub mod group;
pub mod guard;
pub mod identity;
pub mod log_budget;
pub mod microbatch;
pub mod options;
pub mod output;
pub mod parallel;
pub mod progress;
pub mod state;
mod stateful_tasks;
mod tasks;
pub mod transform;
pub mod wal;

pub use backpressure::{PidConfig, PidRateEstimator};
pub use batch::{EncodingError, RecordBatch, RecordRef};
pub use checkpoint::{CheckpointError, CheckpointLock, CheckpointStore, LocalCheckpointStore};
pub use connector::{
    ConnectorError, EarlyWrites, Offset, Sink, SinkBatch, Source, SourceCheckpoint,
};
pub use continuous::ContinuousQuery;
/// Whether this build honours `WEIR_FAULT` (the `fault-injection` feature).
pub const FAULT_INJECTION: bool = faults::ENABLED;
pub use guard::{Guarded, RecordLimits};
pub use microbatch::MicroBatchQuery;
pub use options::{
    ContinuousOptions, DEAD_LETTER, EngineError, ErrorPolicy, IdleWait, QueryOptions, RunSummary,
    TransformFactory, Trigger,
};
pub use output::{OutputBatch, OutputRef, RejectKind, Rejected, Rejections, TransformOutput};
pub use progress::Progress;
pub use transform::{FnTransform, Transform, TransformError};
