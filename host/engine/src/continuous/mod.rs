//! Continuous execution: one long-running task per source partition reads and
//! transforms records as they arrive; an epoch coordinator ends an epoch every
//! checkpoint interval. Each task reports where it was when it saw the epoch
//! end, plus that epoch's output. When every task has reported epoch E, the
//! coordinator writes the epoch's ranges ahead (`offsets/E`), commits the
//! output to the sinks as one idempotent batch, and writes `commits/E`.
//!
//! Recovery is the micro-batch rule: an epoch planned but not committed is
//! re-run over exactly its recorded ranges, so output stays exactly-once even
//! though epoch boundaries are decided by wall-clock ticks. Output becomes
//! visible at epoch commit. A slow partition never stalls the other tasks'
//! processing (they buffer ahead into later epochs) but it does hold back the
//! commit of every epoch it has not reported yet.

use crate::Rejections;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use super::checkpoint::CheckpointStore;
use super::connector::{ContinuousSource, Sink};
use super::identity::Settings;
use super::options::{ContinuousOptions, EngineError, RunSummary, TransformFactory};
use super::progress::Progress;
use super::state::{TaskStats, Watermark};
use super::transform::Transform;
use super::wal::{self, Resume, TaskTime};
use task::{NO_WATERMARK, Parts, Report};

/// A finished epoch, ready to commit.
struct Epoch<'a> {
    id: u64,
    start: &'a [u64],
    end: &'a [u64],
    parts: Parts,
    rejected: Rejections,
    started: Instant,
    /// Its `offsets/E` entry already exists (re-run after a crash).
    rerun: bool,
    /// Per task: the clocks it ran with and what it did to its state.
    times: BTreeMap<u32, TaskTime>,
    stats: Vec<(u32, TaskStats)>,
}

pub struct ContinuousQuery {
    store: Arc<dyn CheckpointStore>,
    inputs: inputs::Inputs,
    factory: Box<dyn TransformFactory>,
    sinks: Vec<(Option<String>, Box<dyn Sink>)>,
    options: ContinuousOptions,
    id: String,
    run_id: String,
    stop: Arc<AtomicBool>,
    watermark: Watermark,
    /// The watermark as tasks read it at each epoch start.
    watermark_cell: Arc<AtomicI64>,
    _lock: crate::checkpoint::CheckpointLock,
    /// Each task's latest transform metrics, for progress.
    transform_metrics: BTreeMap<u32, crate::progress::TransformMetrics>,
    /// When the last committed epoch started: the input rate's window.
    previous_epoch_started: Option<Instant>,
}

fn source_err(name: &str) -> impl Fn(super::connector::ConnectorError) -> EngineError + '_ {
    move |err| EngineError::Source {
        name: name.to_string(),
        err,
    }
}

impl ContinuousQuery {
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        source: Box<dyn ContinuousSource>,
        factory: Box<dyn TransformFactory>,
        sinks: Vec<(Option<String>, Box<dyn Sink>)>,
        options: ContinuousOptions,
    ) -> Result<Self, EngineError> {
        Self::reading(store, vec![source], factory, sinks, options)
    }

    /// A query over several sources: their records meet in the state
    /// partitions of one stateful transform (a join), so it must be one.
    pub fn reading(
        store: Arc<dyn CheckpointStore>,
        sources: Vec<Box<dyn ContinuousSource>>,
        factory: Box<dyn TransformFactory>,
        mut sinks: Vec<(Option<String>, Box<dyn Sink>)>,
        options: ContinuousOptions,
    ) -> Result<Self, EngineError> {
        let inputs = inputs::Inputs::new(sources);
        if inputs.len() > 1 && !options.state.stateful {
            return Err(EngineError::Unsupported(
                "continuous mode feeds several sources only to a stateful transform, whose state partitions they share (a join); run this pipeline in micro-batch mode".into(),
            ));
        }
        let lock = store.lock()?;
        let settings = Settings::of(options.component.clone(), &options.state);
        let meta = wal::load_or_create_metadata(
            &*store,
            wal::ExecutionMode::Continuous,
            inputs.identities(),
            settings,
            options.upgrade,
        )?;
        let p = &options.state.partitioning;
        if options.state.stateful && !p.exchange && p.partitions != inputs.readers() {
            return Err(EngineError::Checkpoint(
                crate::checkpoint::CheckpointError::Mismatch(format!(
                    "state.exchange = false keeps source partition p as state partition p, but `{}` has {} partitions and state.partitions is {}",
                    inputs.description(0),
                    inputs.readers(),
                    p.partitions
                )),
            ));
        }
        for (_, sink) in sinks.iter_mut() {
            sink.open(&meta.id).map_err(|err| EngineError::Sink {
                name: sink.description(),
                err,
            })?;
        }
        Ok(ContinuousQuery {
            store,
            inputs,
            factory,
            sinks,
            options,
            id: meta.id,
            run_id: uuid::Uuid::new_v4().to_string(),
            stop: Arc::new(AtomicBool::new(false)),
            watermark: Watermark::default(),
            watermark_cell: Arc::new(AtomicI64::new(NO_WATERMARK)),
            _lock: lock,
            transform_metrics: BTreeMap::new(),
            previous_epoch_started: None,
        })
    }

    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    fn transform(&self, partition: u32) -> Result<Box<dyn Transform>, EngineError> {
        self.factory
            .create(0, partition)
            .map_err(|err| EngineError::Transform {
                source_name: self.inputs.name_of(partition),
                partition,
                err,
            })
    }

    fn state_transform(&self, partition: u32) -> Result<Box<dyn Transform>, EngineError> {
        self.factory
            .create(0, partition)
            .map_err(|err| EngineError::StatePartition { partition, err })
    }

    /// Run until stopped (or idle, with `exit_when_idle`).
    pub fn run(
        &mut self,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunSummary, EngineError> {
        let mut summary = RunSummary::default();
        let early = early::EarlySinks::of(&self.sinks);
        let mut resumed = wal::resume(&*self.store)?;
        while let Resume::Rerun(entry) = &resumed
            && wal::discard_stale(&*self.store, entry)?
        {
            resumed = wal::resume(&*self.store)?;
        }
        let (mut epoch, mut positions) = match resumed {
            Resume::Fresh => {
                let mut offsets = Vec::new();
                for i in 0..self.inputs.len() {
                    let name = self.inputs.description(i);
                    let inputs = &mut self.inputs;
                    offsets.push(wal::initial_offset(&*self.store, i, || {
                        inputs.initial_offset(i).map_err(source_err(&name))
                    })?);
                }
                early.begin(0);
                (0, self.inputs.positions(&offsets)?)
            }
            Resume::Continue {
                next_batch,
                start,
                watermark,
            } => {
                self.watermark = watermark;
                early.begin(next_batch);
                (next_batch, self.inputs.positions(&start)?)
            }
            Resume::Rerun(entry) => {
                let (starts, ends): (Vec<_>, Vec<_>) = entry
                    .sources
                    .iter()
                    .map(|r| (r.start.clone(), r.end.clone()))
                    .unzip();
                let start = self.inputs.positions(&starts)?;
                let end = self.inputs.positions(&ends)?;
                self.watermark = entry.watermark.clone().unwrap_or_default();
                let (parts, rejected, stats) = self.replay(&entry, &start, &end)?;
                early.begin(entry.batch_id);
                early.write_new(entry.batch_id, &parts, &mut 0)?;
                early.end_epoch(entry.batch_id)?;
                let epoch = Epoch {
                    id: entry.batch_id,
                    start: &start,
                    end: &end,
                    parts,
                    rejected,
                    started: Instant::now(),
                    rerun: true,
                    times: entry.task_times.clone(),
                    stats,
                };
                self.commit(epoch, &mut summary, on_progress)?;
                (entry.batch_id + 1, end)
            }
        };
        let partitions = self.inputs.readers();
        if let Some(et) = &self.options.state.event_time {
            // Readers progress independently: one that has not read yet
            // must hold the watermark back.
            let now = self.options.state.clock.now_ms();
            for s in 0..self.inputs.len() {
                let n = self.inputs.partitions(s);
                self.watermark.expect_partitions(et.rule, s, n, now);
            }
        }
        self.publish_watermark();
        let marker = Arc::new(marker::Marker::new(epoch));
        let halt = Arc::new(AtomicBool::new(false));
        let state_tasks = if self.options.state.stateful {
            self.options.state.partitioning.partitions
        } else {
            0
        };
        let expected = (partitions + state_tasks) as usize;
        // Bounded: a coordinator busy committing holds the tasks back.
        let (tx, rx) = mpsc::sync_channel::<Result<Report, EngineError>>(expected * 4);
        // Only the tasks of a stateless query go quiet (see `spawn_tasks`).
        let quiet_tasks = if self.options.state.active() {
            0
        } else {
            partitions
        };
        let quiet = Arc::new(quiet::Quiet::new(quiet_tasks as usize, epoch));
        let control = spawn::Control {
            marker: marker.clone(),
            halt: halt.clone(),
            tx,
            early: early.clone(),
            quiet: quiet.clone(),
        };
        let spawned = if self.options.state.stateful {
            self.spawn_exchange(epoch, &positions, &control)
        } else {
            self.spawn_tasks(epoch, &positions, &control)
        };
        drop(control);
        let result = spawned.and_then(|handles| {
            let r = self.coordinate(
                rx,
                &early,
                (&marker, &quiet),
                &mut epoch,
                &mut positions,
                expected,
                &mut summary,
                on_progress,
            );
            halt.store(true, Ordering::Relaxed);
            for h in handles {
                let _ = h.join();
            }
            r
        });
        halt.store(true, Ordering::Relaxed);
        result.map(|()| summary)
    }
}

mod commit;
mod coordinate;
mod early;
mod exchange;
mod inputs;
mod marker;
mod quiet;
mod spawn;
mod task;

mod replay;

mod state;

#[cfg(test)]
mod tests;
