//! Continuous mode with keyed state. Partition readers route each chunk by
//! state key into bounded channels, one per (reader, state partition); the
//! task of each state partition drains its channels in reader order, epoch
//! by epoch: reader 0's records up to its epoch marker, then reader 1's,
//! and so on. Markers are thereby aligned (an epoch's state and output hold
//! exactly the records before every reader's marker), a full channel holds
//! its reader back instead of growing, and the order of records within an
//! epoch is fixed, so a re-run epoch feeds each state partition exactly
//! what the live run did. The minimum (epoch, reader) position among state
//! tasks can always advance, so the alignment never deadlocks.

use crate::Rejections;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use super::early::EarlySinks;
use super::marker::Marker;
use super::task::{Parts, Poll, Report, TaskState, run_guarded, stateful_step};
use crate::batch::RecordBatch;
use crate::connector::PartitionReader;
use crate::exchange::Partitioning;
use crate::options::{EngineError, ErrorPolicy};
use crate::state::TaskStats;
use crate::tasks::reject_unkeyed;
use crate::transform::Transform;
use crate::wal::TaskTime;

/// Messages in flight per (reader, state partition) channel.
pub(crate) const CHANNEL_DEPTH: usize = 8;

/// How often a waiting task looks at the halt flag.
const HALT_POLL: Duration = Duration::from_millis(50);

// Records are nearly every message: boxing them would allocate per message
// to shrink the rare marker.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Msg {
    Records(RecordBatch),
    /// The reader passed the end of the current epoch.
    Marker,
}

/// Reads one source partition and routes its records to state partitions.
pub(crate) struct Reader {
    /// Its place among the query's readers (see `inputs`).
    pub index: u32,
    /// Its source, and partition of that source.
    pub source: usize,
    pub partition: u32,
    pub position: u64,
    pub epoch: u64,
    pub reader: Box<dyn PartitionReader>,
    pub partitioning: Partitioning,
    /// One channel per state partition.
    pub outs: Vec<SyncSender<Msg>>,
    pub marker: Arc<Marker>,
    pub halt: Arc<AtomicBool>,
    pub tx: SyncSender<Result<Report, EngineError>>,
    pub max_chunk: usize,
    pub policy: ErrorPolicy,
    pub source_name: String,
    pub early: EarlySinks,
}

impl Reader {
    pub(crate) fn run(mut self) {
        let tx = self.tx.clone();
        let name = format!(
            "reader of partition {} of `{}`",
            self.partition, self.source_name
        );
        run_guarded(&tx, name, || self.run_inner());
    }

    fn run_inner(&mut self) -> Result<(), EngineError> {
        let mut parts: Parts = Vec::new();
        let mut rejected = Rejections::default();
        let mut poll = Poll::default();
        let mut written = 0usize;
        while !self.halt.load(Ordering::Relaxed) {
            while self.epoch < self.marker.epoch() {
                for o in &self.outs {
                    if o.send(Msg::Marker).is_err() {
                        return Ok(());
                    }
                }
                written = 0;
                let report = Report {
                    epoch: self.epoch,
                    end: Some((self.index, self.position)),
                    task: None,
                    parts: std::mem::take(&mut parts),
                    rejected: std::mem::take(&mut rejected),
                    time: None,
                    stats: TaskStats::default(),
                    metrics: Default::default(),
                };
                if self.tx.send(Ok(report)).is_err() {
                    return Ok(());
                }
                self.epoch += 1;
            }
            let Some(batch) = poll.next(
                &self.marker,
                &mut *self.reader,
                &mut self.position,
                self.partition,
                (self.max_chunk, u64::MAX),
                &self.source_name,
            )?
            else {
                continue;
            };
            let routed =
                self.partitioning
                    .route_from(self.source, &self.source_name, batch, None)?;
            for (q, b) in routed.parts {
                if self.outs[q as usize].send(Msg::Records(b)).is_err() {
                    return Ok(());
                }
            }
            if let Some((b, why)) = routed.unreadable {
                rejected += reject_unkeyed(&self.policy, &self.source_name, b, &why, &mut parts)?;
                self.early.write_new(self.epoch, &parts, &mut written)?;
            }
        }
        Ok(())
    }
}

/// One state partition's long-running task.
pub(crate) struct StateTask {
    pub partition: u32,
    pub epoch: u64,
    pub transform: Box<dyn Transform>,
    /// One channel per reader, in reader order.
    pub ins: Vec<Receiver<Msg>>,
    /// Each reader's source: index and description.
    pub sources: Vec<(usize, String)>,
    pub state: TaskState,
    pub halt: Arc<AtomicBool>,
    pub tx: SyncSender<Result<Report, EngineError>>,
    pub policy: ErrorPolicy,
    pub early: EarlySinks,
}

impl StateTask {
    pub(crate) fn run(mut self) {
        let tx = self.tx.clone();
        let name = format!("state partition {}", self.partition);
        run_guarded(&tx, name, || self.run_inner());
    }

    fn run_inner(&mut self) -> Result<(), EngineError> {
        loop {
            let time = self.state.now();
            let mut parts: Parts = Vec::new();
            let mut rejected = Rejections::default();
            let mut stats = TaskStats::default();
            let mut written = 0usize;
            for r in 0..self.ins.len() {
                loop {
                    match self.ins[r].recv_timeout(HALT_POLL) {
                        Ok(Msg::Records(b)) => {
                            rejected += self.step(time, &mut stats, Some((r, b)), &mut parts)?;
                            self.early.write_new(self.epoch, &parts, &mut written)?;
                        }
                        Ok(Msg::Marker) => break,
                        Err(RecvTimeoutError::Timeout) => {
                            if self.halt.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                        }
                        Err(RecvTimeoutError::Disconnected) => return Ok(()),
                    }
                }
            }
            // Every reader passed the marker: timers fire and the state is
            // checkpointed as the next version.
            rejected += self.step(time, &mut stats, None, &mut parts)?;
            self.early.write_new(self.epoch, &parts, &mut written)?;
            let report = Report {
                epoch: self.epoch,
                end: None,
                task: Some(self.partition),
                parts,
                rejected,
                time: Some(TaskTime {
                    watermark_ms: time.watermark,
                    processing_time_ms: time.processing_time,
                }),
                stats,
                metrics: self.transform.reported_metrics(),
            };
            if self.tx.send(Ok(report)).is_err() {
                return Ok(());
            }
            self.epoch += 1;
        }
    }

    fn step(
        &mut self,
        time: crate::state::BatchTime,
        stats: &mut TaskStats,
        input: Option<(usize, RecordBatch)>,
        parts: &mut Parts,
    ) -> Result<Rejections, EngineError> {
        // Fired timers name the first source in errors (they have none).
        let reader = input.as_ref().map_or(0, |(r, _)| *r);
        let (source, name) = &self.sources[reader];
        stateful_step(
            &mut self.state,
            &mut *self.transform,
            self.partition,
            time,
            stats,
            input.map(|(_, b)| (*source, b)),
            parts,
            &self.policy,
            name,
        )
    }
}
