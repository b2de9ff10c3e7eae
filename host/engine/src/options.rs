//! How a query runs (trigger, error policy) and how it can fail.

use std::time::Duration;

use super::checkpoint::CheckpointError;
use super::connector::ConnectorError;
use super::transform::{Transform, TransformError};

/// When batches run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Back to back, as fast as data arrives.
    Default,
    /// One batch per interval, measured from the previous batch's start; a
    /// batch that overruns is followed at once by the next.
    ProcessingTime(Duration),
    /// One batch with everything available (no rate limit), then stop.
    Once,
    /// Everything available at start, in rate-limited batches, then stop.
    AvailableNow,
}

/// What happens to a record the transform refuses, or that made the guest
/// trap or overrun a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorPolicy {
    /// Stop the query, naming the record.
    Fail,
    /// Count it (progress `numRejectedRows`), log it, go on.
    Skip,
    /// Count it and write it, with the error, to the `dead-letter` output
    /// (a sink like any other, so dead letters are exactly-once too).
    /// `component` identifies the guest (its SHA-256) in each dead letter.
    DeadLetter { component: std::sync::Arc<str> },
}

/// The output name dead letters are routed to.
pub const DEAD_LETTER: &str = "dead-letter";

/// Builds one transform instance per (source, partition) task.
pub trait TransformFactory: Send + Sync {
    fn create(&self, source: usize, partition: u32) -> Result<Box<dyn Transform>, TransformError>;
}

impl<F> TransformFactory for F
where
    F: Fn(usize, u32) -> Result<Box<dyn Transform>, TransformError> + Send + Sync,
{
    fn create(&self, source: usize, partition: u32) -> Result<Box<dyn Transform>, TransformError> {
        self(source, partition)
    }
}

/// How a micro-batch query waits when a trigger finds no new data: a
/// source that can wake it (the embedded log) is waited on; the others are
/// polled with a doubling back-off, which bounds both idle cost (requests
/// to a broker, CPU) and how late new data is noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleWait {
    /// The wait after the first empty poll, doubled per empty poll in a row.
    pub poll: Duration,
    /// The longest wait between polls.
    pub max_poll: Duration,
    /// With one source that wakes on data, how long the query waits on it
    /// before looking anyway (time alone can move an idle watermark).
    pub wake: Duration,
    /// After this long without a batch, an idle query lets its worker
    /// threads and guest instances go (the next batch makes them again,
    /// instances from the compiled component): idle pipelines then hold
    /// neither threads nor guest memory.
    pub retire: Duration,
}

impl Default for IdleWait {
    fn default() -> Self {
        IdleWait {
            poll: Duration::from_millis(2),
            max_poll: Duration::from_millis(20),
            wake: Duration::from_secs(1),
            retire: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Clone)]
pub struct QueryOptions {
    pub trigger: Trigger,
    pub error_policy: ErrorPolicy,
    /// Batches kept in `offsets/` and `commits/`.
    pub keep_batches: u64,
    /// How an idle query waits for new data.
    pub idle: IdleWait,
    /// At the end of a `once` / `available-now` run, move the watermark past
    /// every event time so all windows and event-time timers fire, as
    /// Flink does at the end of bounded input. Afterwards the checkpoint
    /// takes any later record as late; `weir test` uses it.
    pub end_of_input_watermark: bool,
    /// Size batches by a PID estimate of the processing rate (needs a
    /// processing-time trigger).
    pub backpressure: Option<super::backpressure::PidConfig>,
    /// Event time, keyed state and timers.
    pub state: super::state::StatefulOptions,
    /// Most tasks (state partitions, input tasks) running at once.
    pub parallelism: usize,
    /// Accept a checkpoint written by another component or with other
    /// upgradable settings (see `super::identity`).
    pub upgrade: bool,
    /// The transform component's identity (`sha256:<hex>`), recorded in
    /// the checkpoint.
    pub component: Option<String>,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            trigger: Trigger::Default,
            error_policy: ErrorPolicy::Skip,
            keep_batches: 100,
            idle: IdleWait::default(),
            end_of_input_watermark: false,
            backpressure: None,
            state: Default::default(),
            parallelism: super::parallel::default_parallelism(),
            upgrade: false,
            component: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("source `{name}`: {err}")]
    Source { name: String, err: ConnectorError },
    #[error("sink `{name}`: {err}")]
    Sink { name: String, err: ConnectorError },
    #[error("transform for partition {partition} of `{source_name}`: {err}")]
    Transform {
        source_name: String,
        partition: u32,
        err: TransformError,
    },
    #[error("bad record at {place} of `{source_name}`: {reason}")]
    BadRecord {
        source_name: String,
        partition: u32,
        offset: i64,
        /// Where the record is, as the user finds it: "partition P, offset
        /// O", or what the source says ([`crate::Source::locate`]).
        place: String,
        reason: String,
    },
    #[error("the transform sent records to output `{0}`, but the pipeline has no sink named `{0}`")]
    Unrouted(String),
    #[error("transform of state partition {partition}: {err}")]
    StatePartition { partition: u32, err: TransformError },
    #[error(
        "record at partition {partition}, offset {offset} of `{source_name}` belongs to state partition {belongs}: the source is not partitioned by the state key with state.partitions = {partitions}; remove state.exchange = false so records are routed by key"
    )]
    NotPartitionedByKey {
        source_name: String,
        partition: u32,
        offset: i64,
        belongs: u32,
        partitions: u32,
    },
    /// The pipeline asks for something this mode does not do.
    #[error("{0}")]
    Unsupported(String),
    #[error("task thread for {task} stopped: {message}")]
    TaskPanicked { task: String, message: String },
    #[error("cannot start the query's task threads: {0}")]
    Threads(std::io::Error),
}

/// What a finished `run` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSummary {
    pub batches: u64,
    pub input_rows: u64,
    pub output_rows: u64,
}

#[derive(Debug, Clone)]
pub struct ContinuousOptions {
    /// Epoch length.
    pub checkpoint_interval: Duration,
    pub error_policy: ErrorPolicy,
    /// Most records a task hands to the guest in one call while it keeps
    /// up: a latency-bounded micro-chunk, never waiting to fill it. A task
    /// whose reads come back full is behind and takes up to 16 times as
    /// many, while such a chunk stays under 1 MiB.
    pub max_chunk: usize,
    /// Most input bytes a partition's task reads in one epoch; past it the
    /// task waits for the next epoch, so an epoch of a backlog stays small
    /// (its output is held until the epoch commits).
    pub max_epoch_bytes: u64,
    /// Stop once this long has passed with no new records and everything
    /// read is committed (for tests and one-off runs); `None` runs forever.
    pub exit_when_idle: Option<Duration>,
    pub keep_batches: u64,
    /// Event time, keyed state and timers.
    pub state: super::state::StatefulOptions,
    /// See [`QueryOptions::upgrade`].
    pub upgrade: bool,
    /// See [`QueryOptions::component`].
    pub component: Option<String>,
}

impl Default for ContinuousOptions {
    fn default() -> Self {
        ContinuousOptions {
            checkpoint_interval: Duration::from_millis(100),
            error_policy: ErrorPolicy::Skip,
            max_chunk: 512,
            max_epoch_bytes: 16 << 20,
            exit_when_idle: None,
            keep_batches: 100,
            state: Default::default(),
            upgrade: false,
            component: None,
        }
    }
}
