//! The Source and Sink seams of the engine. Connectors (embedded log, files,
//! Kafka...) implement them; the engine never knows which one it drives.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::batch::RecordBatch;
use super::checkpoint::CheckpointStore;
use super::output::TransformOutput;
use super::parallel::Workers;

/// A source's position. The engine keeps it opaque and writes it verbatim
/// to `offsets/N` as JSON, so every source chooses its own shape
/// (per-partition offsets, a file index...): a source makes one from its
/// own typed position ([`Offset::of`]) and reads it back typed
/// ([`Offset::read`], [`Offset::partitions`]), with an error naming the
/// offset when a checkpoint holds another shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Offset(serde_json::Value);

impl Offset {
    /// The offset of a source's position. Positions are plain data (numbers,
    /// lists, maps with string keys), which always serialize.
    pub fn of<T: Serialize + ?Sized>(position: &T) -> Offset {
        Offset(serde_json::to_value(position).expect("a source position serializes to JSON"))
    }

    /// The position this offset holds, as the source's own type.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, ConnectorError> {
        T::deserialize(&self.0).map_err(|e| {
            ConnectorError(format!(
                "offset {} is not a position of this source: {e}",
                self.0
            ))
        })
    }

    /// Per-partition offsets of a source with `partitions` partitions.
    pub fn partitions(&self, partitions: usize) -> Result<Vec<u64>, ConnectorError> {
        let offsets: Vec<u64> = self.read()?;
        if offsets.len() != partitions {
            return Err(ConnectorError(format!(
                "offset {} holds {} partition offsets, the source has {partitions} partitions",
                self.0,
                offsets.len()
            )));
        }
        Ok(offsets)
    }

    /// The offset as written to the checkpoint (progress reports show it).
    pub fn as_json(&self) -> &serde_json::Value {
        &self.0
    }
}

impl std::fmt::Display for Offset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A failure inside a connector, with enough context to act on.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConnectorError(pub String);

impl ConnectorError {
    pub fn new(message: impl Into<String>) -> Self {
        ConnectorError(message.into())
    }
}

/// Where a source keeps its own checkpoint data (`sources/<i>/`).
#[derive(Clone)]
pub struct SourceCheckpoint {
    pub store: Arc<dyn CheckpointStore>,
    /// Directory for this source, e.g. `sources/0`.
    pub dir: String,
}

/// A replayable source: given the same offset range it must return the same
/// records, which is what makes re-running an uncommitted batch exact.
pub trait Source: Send {
    /// Stable identity (kind and location), recorded in the checkpoint; a
    /// checkpoint written for another source is refused. Never reworded:
    /// every existing checkpoint compares against it.
    fn identity(&self) -> String;

    /// How progress reports, metrics and errors name the source; free to
    /// change between versions (the checkpoint does not keep it).
    fn description(&self) -> String {
        self.identity()
    }

    /// Where the record at `offset` of `partition` is, as a user would look
    /// for it (a files source: the file and line), for an error that stops
    /// the query on that record; `None` when partition and offset say it.
    fn locate(&self, partition: u32, offset: i64) -> Option<String> {
        let _ = (partition, offset);
        None
    }

    /// Called once before anything else, with this source's checkpoint area.
    fn attach(&mut self, checkpoint: SourceCheckpoint) -> Result<(), ConnectorError> {
        let _ = checkpoint;
        Ok(())
    }

    /// The offset a new query starts from.
    fn initial_offset(&mut self) -> Result<Offset, ConnectorError>;

    /// The newest available offset, with no rate limit applied.
    fn latest_offset(&mut self) -> Result<Offset, ConnectorError>;

    /// The end of the next batch from `start`: at most `upto`, further
    /// bounded by the source's per-trigger rate limit. Equal to `start` when
    /// there is nothing new.
    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError>;

    /// The records in `(start, end]`, one batch per partition that has any.
    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError>;

    /// The transform task (stateless queries) that processes the `piece`th
    /// batch of a read, of `partition`: one instance per task, a task's
    /// batches in order. Sources whose "partitions" are many small units
    /// (files) spread their pieces over a few tasks instead of instantiating
    /// a transform per unit.
    fn task_of(&self, partition: u32, piece: usize) -> u32 {
        let _ = piece;
        partition
    }

    /// The query's threads, lent once before the first batch: a source that
    /// reads a batch's partitions in parallel runs them here, within the
    /// query's bound (`WEIR_PARALLELISM`), instead of spawning its own.
    fn use_workers(&mut self, workers: Arc<Workers>) {
        let _ = workers;
    }

    /// Number of records between `offset` and `latest` (for the lag display).
    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        let _ = (offset, latest);
        None
    }

    /// Backpressure: the most records the next batches may take in total,
    /// on top of the source's own per-trigger limit (`None` lifts it).
    /// Sources that cannot bound a batch by records ignore it.
    fn set_rate_limit(&mut self, max_records: Option<u64>) {
        let _ = max_records;
    }

    /// Batch up to `end` is committed: a source may report it outside weir
    /// (e.g. a Kafka consumer group, for lag monitoring). Failures here are
    /// the source's to log; weir's position is the checkpoint's.
    fn committed(&mut self, end: &Offset) {
        let _ = end;
    }

    /// Source-specific figures for the progress report (Spark's
    /// `SourceProgress.metrics`), e.g. records lost to retention.
    fn metrics(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// Whether [`Source::wait_for_data`] returns soon after new data
    /// arrives. Queries whose sources cannot tell poll them, backing off.
    fn wakes_on_data(&self) -> bool {
        false
    }

    /// Block until data may have arrived since the last
    /// [`Source::latest_offset`], or `timeout` passes. A wake-up says "look",
    /// not "there is data".
    fn wait_for_data(&mut self, timeout: std::time::Duration) {
        std::thread::sleep(timeout);
    }

    /// Have `waker` woken once data may have arrived since the last
    /// [`Source::latest_offset`] (at once if it already has), so a query
    /// can wait for data without holding a thread. False when this source
    /// cannot tell: the query then polls it.
    fn wake_on_data(&mut self, waker: &std::task::Waker) -> bool {
        let _ = waker;
        false
    }

    /// Whether [`Source::wake_on_data`] works here. A source that wakes
    /// on data only by blocking in [`Source::wait_for_data`] (a Kafka
    /// consumer's long poll) needs a thread to wait on.
    fn wakes_parked(&self) -> bool {
        false
    }
}

/// One batch's output as handed to a sink: every partition's input next to
/// what the transform produced for it. A sink writes the records routed to it.
pub struct SinkBatch<'a> {
    pub parts: &'a [(RecordBatch, TransformOutput)],
    /// The named output this sink serves; `None` is the default output.
    pub route: Option<&'a str>,
}

impl SinkBatch<'_> {
    /// The output records for this sink, in order.
    pub fn records(&self) -> impl Iterator<Item = super::output::OutputRef<'_>> + '_ {
        self.parts.iter().flat_map(move |(input, out)| {
            out.batch
                .iter(input)
                .filter(move |o| o.output == self.route)
        })
    }
}

/// An exactly-once sink: `add_batch` is idempotent per batch id, so a batch
/// re-run after a crash is written at most once, and its output becomes
/// visible to readers all at once.
pub trait Sink: Send {
    fn description(&self) -> String;

    /// Called once before any batch, with the query's stable id (e.g. to tag
    /// writes so a replayed batch is recognised).
    fn open(&mut self, query_id: &str) -> Result<(), ConnectorError> {
        let _ = query_id;
        Ok(())
    }

    /// The query's threads, lent once before the first batch (micro-batch
    /// mode): a sink that writes a batch's pieces in parallel writes them
    /// here instead of spawning its own.
    fn use_workers(&mut self, workers: Arc<Workers>) {
        let _ = workers;
    }

    /// Write batch `batch_id`; returns the number of records written (0 if
    /// the batch had already been committed by an earlier run). A sink
    /// with [`Self::early_writes`] was handed the epoch's records already,
    /// and commits them here.
    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError>;

    /// In continuous mode, the handle through which tasks give this sink
    /// their records as they produce them (after [`Self::open`]); `None`
    /// for a sink that takes an epoch's records at its commit.
    fn early_writes(&self) -> Option<std::sync::Arc<dyn EarlyWrites>> {
        None
    }

    /// What the query `query_id` committed to this sink in each of
    /// `batches`, one line of text a record (a file's lines as written; a
    /// log record as JSON), so `weir replay` can set a candidate's output
    /// beside it. A batch that committed nothing maps to no lines. `None`:
    /// the sink cannot read its committed output back (Kafka, the console).
    fn read_back(
        &mut self,
        query_id: &str,
        batches: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<BTreeMap<u64, Vec<String>>>, ConnectorError> {
        let _ = (query_id, batches);
        Ok(None)
    }
}

/// A sink's side for records written before their epoch commits, so that
/// readers that accept uncommitted records see them at once. The sink must
/// keep each epoch's records before the next epoch's, whatever order tasks
/// hand them over in: tasks run ahead into later epochs.
pub trait EarlyWrites: Send + Sync {
    /// Before any write: the first epoch this run writes (a re-run epoch,
    /// or the next new one).
    fn begin(&self, epoch: u64);

    /// Part of `epoch`'s output, from any task thread.
    fn write(&self, epoch: u64, batch: &SinkBatch<'_>) -> Result<(), ConnectorError>;

    /// Every task has passed the end of `epoch`: nothing more comes for it
    /// (called for every epoch in order, also those with no output).
    fn end_epoch(&self, epoch: u64) -> Result<(), ConnectorError>;
}

/// Reads one partition continuously (continuous mode): each task owns one.
pub trait PartitionReader: Send {
    /// Append up to `max` committed records at positions in `[from, until)`
    /// to `out`;
    /// returns the position after the last one read, `from` when nothing new
    /// is there yet. Positions may skip (Kafka's offset gaps), so the caller
    /// keeps this value rather than counting records. May wait briefly
    /// (about a millisecond) for new records rather than return at once.
    fn read(
        &mut self,
        from: u64,
        until: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, ConnectorError>;

    /// After a read found nothing: wait up to `timeout` for new records,
    /// returning true, when the reader can be woken by them (a wake-up only
    /// says "look"); false when it cannot, and the caller polls.
    fn wait_for_data(&mut self, timeout: std::time::Duration) -> bool {
        let _ = timeout;
        false
    }
}

/// A source whose partitions can each be read by a long-running task.
/// Positions are per-partition record offsets.
pub trait ContinuousSource: Send {
    /// Stable identity, recorded in the checkpoint (see
    /// [`Source::identity`]).
    fn identity(&self) -> String;
    /// How reports and errors name the source (see [`Source::description`]).
    fn description(&self) -> String {
        self.identity()
    }
    fn partition_count(&self) -> u32;
    /// Where a new query starts, per partition.
    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError>;
    fn reader(&self, partition: u32) -> Result<Box<dyn PartitionReader>, ConnectorError>;
    fn to_offset(&self, positions: &[u64]) -> Offset {
        Offset::of(positions)
    }
    fn positions(&self, offset: &Offset) -> Result<Vec<u64>, ConnectorError>;
    /// The newest available position per partition, for the lag display;
    /// `None` when the source cannot tell cheaply.
    fn latest_positions(&mut self) -> Option<Vec<u64>> {
        None
    }
}
