//! The engine core: batches, the Transform / Source / Sink / checkpoint
//! seams, micro-batch and continuous execution. It imports neither wasmtime
//! nor any connector library, so it runs native transforms as well as WASM
//! ones.

pub(crate) mod backpressure;
pub(crate) mod batch;
pub(crate) mod checkpoint;
pub(crate) mod clock;
pub(crate) mod commit;
pub(crate) mod connector;
pub(crate) mod continuous;
pub mod exchange;
pub mod faults;
pub mod group;
pub(crate) mod guard;
pub(crate) mod identity;
pub(crate) mod log_budget;
pub(crate) mod microbatch;
pub(crate) mod options;
pub(crate) mod output;
pub mod parallel;
pub(crate) mod progress;
pub mod state;
mod stateful_tasks;
mod tasks;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub(crate) mod transform;
pub mod wal;
pub mod window;

pub use backpressure::{PidConfig, PidRateEstimator};
pub use batch::{
    ColumnParts, ColumnSlices, Columns, EncodingError, HeaderIter, HeaderRef, Headers,
    NO_TIMESTAMP, RecordBatch, RecordRef, StateKeys, TimeKind, encode_header,
};
pub use checkpoint::{CheckpointError, CheckpointLock, CheckpointStore, LocalCheckpointStore};
pub use clock::Clock;
pub use connector::{
    ConnectorError, ContinuousSource, EarlyWrites, Offset, PartitionReader, Sink, SinkBatch,
    Source, SourceCheckpoint,
};
pub use continuous::ContinuousQuery;
/// Whether this build honours `WEIR_FAULT` (the `fault-injection` feature).
pub const FAULT_INJECTION: bool = faults::ENABLED;
pub use guard::{Guarded, RecordLimits};
pub use log_budget::{LogBudget, SharedLogBudget};
pub use microbatch::{MicroBatchQuery, Step, Wait};
pub use options::{
    ContinuousOptions, DEAD_LETTER, EngineError, ErrorPolicy, IdleWait, QueryOptions, RunSummary,
    TransformFactory, Trigger,
};
pub use output::{
    OutputBatch, OutputParts, OutputRef, RejectKind, Rejected, Rejections, TransformOutput,
};
pub use progress::{MAX_METRIC_NAME, Progress, TransformMetrics, metric_name, now_ms};
pub use transform::{FnTransform, Transform, TransformError};

/// Durable file writes (write to a temporary name, fsync, rename, fsync the
/// directory) and the checksummed entry framing of checkpoint files, for
/// the log and the sinks that keep files of their own.
pub mod durable {
    pub use crate::checkpoint::{
        create_dir_all, encode_entry, read_entry, sync_dir, write_atomic, write_renamed,
    };
}
