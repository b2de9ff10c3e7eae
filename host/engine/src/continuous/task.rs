//! One partition's long-running task in continuous mode, and what it
//! reports to the epoch coordinator.

use crate::Rejections;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::marker::Marker;
use crate::batch::RecordBatch;
use crate::checkpoint::CheckpointStore;
use crate::connector::PartitionReader;
use crate::options::{EngineError, ErrorPolicy};
pub(crate) use crate::output::Parts;
use crate::state::run::{StepError, TaskRun};
use crate::state::{BatchTime, StatePartition, StatefulOptions, TaskStats};
use crate::tasks::check_rejected;
use crate::transform::Transform;
use crate::wal::TaskTime;

/// No watermark yet, in the shared watermark cell.
pub(crate) const NO_WATERMARK: i64 = i64::MIN;

/// A continuous task's event time and state.
pub(crate) struct TaskState {
    pub options: StatefulOptions,
    /// The partition's state at the epoch the task is in (stateful only).
    pub state: Option<StatePartition>,
    pub store: Arc<dyn CheckpointStore>,
    /// The global watermark, published by the coordinator after each commit.
    pub watermark: Arc<AtomicI64>,
}

impl TaskState {
    pub(crate) fn now(&self) -> BatchTime {
        let w = self.watermark.load(Ordering::SeqCst);
        BatchTime {
            watermark: (w != NO_WATERMARK).then_some(w),
            processing_time: self.options.clock.now_ms(),
        }
    }
}

/// Run one chunk (or, with `finish`, the end of an epoch) through the
/// task's event-time and state handling; new parts are appended to `parts`
/// with the error policy applied. Returns the rejected count.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stateful_step(
    ts: &mut TaskState,
    t: &mut dyn Transform,
    partition: u32,
    time: BatchTime,
    stats: &mut TaskStats,
    input: Option<(usize, RecordBatch)>,
    parts: &mut Parts,
    policy: &ErrorPolicy,
    source_name: &str,
) -> Result<crate::Rejections, EngineError> {
    let first_new = parts.len();
    let mut run = TaskRun {
        partition,
        options: &ts.options,
        state: ts.state.as_mut(),
        time,
        stats: std::mem::take(stats),
    };
    let r = match input {
        Some((source, b)) => run.process(t, source, b, parts),
        None => run.finish(t, &*ts.store, parts),
    };
    *stats = run.stats;
    let stateful = ts.options.stateful;
    r.map_err(|e| match e {
        StepError::Transform(err) if stateful => EngineError::StatePartition { partition, err },
        StepError::Transform(err) => EngineError::Transform {
            source_name: source_name.to_string(),
            partition,
            err,
        },
        StepError::Checkpoint(e) => EngineError::Checkpoint(e),
    })?;
    let mut rejected = Rejections::default();
    for (b, out) in &mut parts[first_new..] {
        rejected += check_rejected(policy, source_name, b, out)?;
    }
    Ok(rejected)
}

/// What a task sends the coordinator when it passes an epoch marker.
pub(crate) struct Report {
    pub epoch: u64,
    /// The source partition whose epoch end this reports, and its position
    /// (readers and per-partition tasks).
    pub end: Option<(u32, u64)>,
    /// The task whose clocks and state statistics this carries (state
    /// partitions and per-partition tasks).
    pub task: Option<u32>,
    pub parts: Parts,
    pub rejected: Rejections,
    /// The clocks the task ran the epoch with (queries with event time or state).
    pub time: Option<TaskTime>,
    pub stats: TaskStats,
    /// The task's transform metrics so far (tasks with a transform).
    pub metrics: crate::progress::TransformMetrics,
}

/// One partition's long-running task.
pub(crate) struct Task {
    pub(crate) partition: u32,
    pub(crate) position: u64,
    pub(crate) epoch: u64,
    pub(crate) reader: Box<dyn PartitionReader>,
    pub(crate) transform: Box<dyn Transform>,
    pub(crate) marker: Arc<Marker>,
    pub(crate) halt: Arc<AtomicBool>,
    pub(crate) tx: mpsc::SyncSender<Result<Report, EngineError>>,
    pub(crate) max_chunk: usize,
    pub(crate) max_epoch_bytes: u64,
    pub(crate) policy: ErrorPolicy,
    pub(crate) source_name: String,
    pub(crate) state: Option<TaskState>,
    pub(crate) early: super::early::EarlySinks,
    /// Stateless tasks: where the task says it has gone quiet.
    pub(crate) quiet: Option<Arc<super::quiet::Quiet>>,
}

impl Task {
    pub(crate) fn run(mut self) {
        let tx = self.tx.clone();
        let name = format!("partition {} of `{}`", self.partition, self.source_name);
        run_guarded(&tx, name, || self.run_inner());
    }

    fn run_inner(&mut self) -> Result<(), EngineError> {
        let mut buffer: Parts = Vec::new();
        let mut rejected = Rejections::default();
        let mut poll = Poll::default();
        let mut stats = TaskStats::default();
        let mut time = self.state.as_ref().map(TaskState::now);
        // Input bytes read in this epoch; parts handed to early sinks.
        let mut read = 0u64;
        let mut written = 0usize;
        // The position the coordinator last heard of: a task whose reader
        // moved past records-less positions (Kafka's transaction markers)
        // reports the move before it may go quiet.
        let mut reported = self.position;
        while !self.halt.load(Ordering::Relaxed) {
            // Passing epoch markers: report everything read before them.
            while self.epoch < self.marker.epoch() {
                if let (Some(ts), Some(t)) = (&mut self.state, time) {
                    // The epoch's end: due timers fire and the state is
                    // checkpointed as the next version.
                    rejected += stateful_step(
                        ts,
                        &mut *self.transform,
                        self.partition,
                        t,
                        &mut stats,
                        None,
                        &mut buffer,
                        &self.policy,
                        &self.source_name,
                    )?;
                }
                self.early.write_new(self.epoch, &buffer, &mut written)?;
                written = 0;
                let report = Report {
                    epoch: self.epoch,
                    end: Some((self.partition, self.position)),
                    task: Some(self.partition),
                    parts: std::mem::take(&mut buffer),
                    rejected: std::mem::take(&mut rejected),
                    time: time.map(|t| TaskTime {
                        watermark_ms: t.watermark,
                        processing_time_ms: t.processing_time,
                    }),
                    stats: std::mem::take(&mut stats),
                    metrics: self.transform.reported_metrics(),
                };
                if self.tx.send(Ok(report)).is_err() {
                    return Ok(());
                }
                reported = self.position;
                self.epoch += 1;
                read = 0;
                // The next epoch runs with the newest published watermark.
                time = self.state.as_ref().map(TaskState::now);
            }
            if read >= self.max_epoch_bytes {
                // This epoch has its share: wait for the marker.
                std::thread::sleep(marker_wait(&self.marker));
                continue;
            }
            if poll.found_nothing()
                && buffer.is_empty()
                && read == 0
                && self.position == reported
                && self.epoch == self.marker.epoch()
                && let Some(q) = self.quiet.clone()
                && q.may_sleep(self.partition as usize)
            {
                // Nothing to read: sleep through epochs until there is.
                let p = self.partition as usize;
                q.sleep(p, self.epoch);
                if !self.reader.wait_for_data(QUIET_WAIT) {
                    // A reader that cannot be woken is polled: no sleeping.
                    self.quiet = None;
                }
                self.epoch = q.wake(p, &self.marker);
                // Look before going quiet again.
                poll.read_once_without_waiting();
                continue;
            }
            let Some(batch) = poll.next(
                &self.marker,
                &mut *self.reader,
                &mut self.position,
                self.partition,
                (self.max_chunk, self.max_epoch_bytes.saturating_sub(read)),
                &self.source_name,
            )?
            else {
                continue;
            };
            read += batch.byte_len() as u64;
            if let (Some(ts), Some(t)) = (&mut self.state, time) {
                rejected += stateful_step(
                    ts,
                    &mut *self.transform,
                    self.partition,
                    t,
                    &mut stats,
                    Some((0, batch)),
                    &mut buffer,
                    &self.policy,
                    &self.source_name,
                )?;
                self.early.write_new(self.epoch, &buffer, &mut written)?;
                continue;
            }
            let mut out =
                self.transform
                    .process_batch(&batch)
                    .map_err(|err| EngineError::Transform {
                        source_name: self.source_name.clone(),
                        partition: self.partition,
                        err,
                    })?;
            rejected += check_rejected(&self.policy, &self.source_name, &batch, &mut out)?;
            buffer.push((batch, out));
            self.early.write_new(self.epoch, &buffer, &mut written)?;
        }
        Ok(())
    }
}

/// Empty reads in a row answered by yielding before waiting.
const SPINS: u32 = 50;
/// How long a quiet task sleeps before it looks again (it is also woken
/// by new records, when its reader can be; and it sees the halt flag then).
const QUIET_WAIT: Duration = Duration::from_millis(100);
/// The longest idle wait (a task also looks at the halt flag then).
const MAX_WAIT: Duration = Duration::from_millis(50);

/// How long a task waits before it looks at the marker again: until its
/// next move, at most `MAX_WAIT` (it also looks at the halt flag then), and
/// briefly once it is due (the coordinator moves it any moment).
fn marker_wait(marker: &Marker) -> Duration {
    marker
        .until_next()
        .clamp(Duration::from_micros(100), MAX_WAIT)
}

/// How a long-running task reads its partition.
#[derive(Default)]
pub(crate) struct Poll {
    /// Reads in a row that found nothing.
    idle: u32,
    /// Reads in a row that came back full: the task is behind.
    behind: u32,
    /// Bytes per record in the last read.
    record_bytes: usize,
    /// The next empty read returns without waiting.
    no_wait: bool,
}

/// A task that is behind reads up to `max << GROW_STEPS` records at a time:
/// its records wait either way, and each read and guest call has a fixed
/// cost (a 3 M-record catch-up made 6,000 reads of 512).
const GROW_STEPS: u32 = 4;
/// ... while a full chunk stays under this many bytes.
const GROW_BYTES: usize = 1 << 20;

impl Poll {
    /// Past the spins, and the read after the last wake is done: nothing
    /// to read, so the task may go quiet.
    pub(crate) fn found_nothing(&self) -> bool {
        self.idle > SPINS && !self.no_wait
    }

    pub(crate) fn read_once_without_waiting(&mut self) {
        self.no_wait = true;
    }

    /// The next chunk of at most `max` records (more while the reads come
    /// back full, see [`GROW_STEPS`], but not past `room` bytes by more than
    /// `max` records) from `position` (which moves
    /// past it, or past records-less positions such as Kafka's transaction
    /// markers), or `None` after a wait when nothing new is there: a brief
    /// spin, then until the epoch marker moves or the reader is woken by
    /// new records (a reader that cannot be woken is polled every 200 us),
    /// so records are picked up in tens of microseconds, markers are passed
    /// on time, and an idle task costs next to nothing.
    pub(crate) fn next(
        &mut self,
        marker: &Marker,
        reader: &mut dyn PartitionReader,
        position: &mut u64,
        partition: u32,
        (max, room): (usize, u64),
        source_name: &str,
    ) -> Result<Option<RecordBatch>, EngineError> {
        let fits = usize::try_from(room / self.record_bytes.max(1) as u64).unwrap_or(usize::MAX);
        let chunk = max.saturating_mul(1 << self.behind).min(fits.max(max));
        let mut batch = RecordBatch::new(partition);
        *position = reader
            .read(*position, u64::MAX, chunk, &mut batch)
            .map_err(|err| EngineError::Source {
                name: source_name.to_string(),
                err,
            })?;
        if !batch.is_empty() {
            self.idle = 0;
            self.no_wait = false;
            self.record_bytes = batch.byte_len() / batch.len();
            self.behind = if batch.len() < chunk {
                0
            } else if batch.byte_len() < GROW_BYTES {
                (self.behind + 1).min(GROW_STEPS)
            } else {
                self.behind
            };
            return Ok(Some(batch));
        }
        self.idle = self.idle.saturating_add(1);
        if std::mem::take(&mut self.no_wait) {
            return Ok(None);
        }
        if self.idle <= SPINS {
            std::thread::yield_now();
            return Ok(None);
        }
        if !reader.wait_for_data(marker_wait(marker)) {
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(None)
    }
}

/// Run a task thread's body; its error, or a panic, reaches the coordinator
/// as the query's error instead of leaving it waiting for a report.
pub(crate) fn run_guarded(
    tx: &mpsc::SyncSender<Result<Report, EngineError>>,
    task: String,
    body: impl FnOnce() -> Result<(), EngineError>,
) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    let err = match outcome {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panicked".into());
            EngineError::TaskPanicked { task, message }
        }
    };
    let _ = tx.send(Err(err));
}
