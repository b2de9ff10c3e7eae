//! Spark-style micro-batch execution: per trigger, plan an offset range,
//! write it ahead (`offsets/N`), run it through the transform and the sinks,
//! then write `commits/N`. Re-running an uncommitted batch over its recorded
//! range with idempotent sinks makes the output exactly-once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::backpressure::PidRateEstimator;
use super::checkpoint::CheckpointStore;
use super::connector::{Sink, Source, SourceCheckpoint};
use super::identity::Settings;
use super::options::{EngineError, QueryOptions, RunSummary, TransformFactory};
use super::progress::Progress;
use super::wal::{self, OffsetEntry};

use super::state::{StatePartition, Watermark};
use super::transform::Transform;

/// A micro-batch streaming query over one checkpoint.
pub struct MicroBatchQuery {
    store: Arc<dyn CheckpointStore>,
    sources: Vec<Box<dyn Source>>,
    factory: Box<dyn TransformFactory>,
    transforms: HashMap<(usize, u32), Box<dyn Transform>>,
    sinks: Vec<(Option<String>, Box<dyn Sink>)>,
    options: QueryOptions,
    id: String,
    run_id: String,
    stop: Arc<AtomicBool>,
    backpressure: Option<PidRateEstimator>,
    /// Stateful queries: each task's state, and the tasks that have some.
    states: HashMap<(usize, u32), StatePartition>,
    known: std::collections::BTreeSet<(usize, u32)>,
    watermark: Watermark,
    /// Replay: the recorded batches still to run (see [`Self::replay`]).
    replay: Option<std::collections::VecDeque<OffsetEntry>>,
    /// The threads a batch reads, exchanges and runs its state tasks on,
    /// kept across batches.
    /// The query's threads, lent to its sources and sinks too.
    workers: Arc<super::parallel::Workers>,
    /// What instances let go while idle counted (see `step.rs`).
    retired_metrics: crate::progress::TransformMetrics,
    /// The run in progress, between steps.
    running: Option<step::Running>,
    _lock: super::checkpoint::CheckpointLock,
}

/// ProcessingTime: time left until the next trigger, measured from this
/// batch's start; zero when the batch overran its interval.
pub(crate) fn next_wait(elapsed: Duration, interval: Duration) -> Duration {
    interval.saturating_sub(elapsed)
}

impl MicroBatchQuery {
    /// Open (or create) the query in `store`. Refuses a checkpoint written
    /// for other sources. `sinks` maps output names (`None` = default) to sinks.
    pub fn new(
        store: Arc<dyn CheckpointStore>,
        mut sources: Vec<Box<dyn Source>>,
        factory: Box<dyn TransformFactory>,
        mut sinks: Vec<(Option<String>, Box<dyn Sink>)>,
        mut options: QueryOptions,
    ) -> Result<Self, EngineError> {
        // State stays loadable for as many batches as the logs keep.
        options.state.files.keep_versions = options.keep_batches;
        let lock = store.lock()?;
        let identities = sources.iter().map(|s| s.identity()).collect();
        let settings = Settings::of(options.component.clone(), &options.state);
        let meta = wal::load_or_create_metadata(
            &*store,
            wal::ExecutionMode::MicroBatch,
            identities,
            settings,
            options.upgrade,
        )?;
        for (i, s) in sources.iter_mut().enumerate() {
            let checkpoint = SourceCheckpoint {
                store: store.clone(),
                dir: format!("sources/{i}"),
            };
            s.attach(checkpoint).map_err(|err| EngineError::Source {
                name: s.description(),
                err,
            })?;
        }
        for (_, sink) in sinks.iter_mut() {
            sink.open(&meta.id).map_err(|err| EngineError::Sink {
                name: sink.description(),
                err,
            })?;
        }
        let workers = Arc::new(
            super::parallel::Workers::new(options.parallelism, "weir-task")
                .map_err(EngineError::Threads)?,
        );
        for s in sources.iter_mut() {
            s.use_workers(workers.clone());
        }
        for (_, sink) in sinks.iter_mut() {
            sink.use_workers(workers.clone());
        }
        let known = if options.state.stateful {
            super::stateful_tasks::known_tasks(&*store, sources.len())?
        } else {
            Default::default()
        };
        Ok(MicroBatchQuery {
            store,
            sources,
            factory,
            transforms: HashMap::new(),
            sinks,
            id: meta.id,
            run_id: uuid::Uuid::new_v4().to_string(),
            stop: Arc::new(AtomicBool::new(false)),
            backpressure: options.backpressure.map(PidRateEstimator::new),
            known,
            states: HashMap::new(),
            watermark: Watermark::default(),
            replay: None,
            workers,
            running: None,
            retired_metrics: Default::default(),
            options,
            _lock: lock,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// Ask for the end-of-input watermark (see
    /// [`QueryOptions::end_of_input_watermark`]).
    pub fn flush_event_time_at_end(&mut self) {
        self.options.end_of_input_watermark = true;
    }

    /// At the end of bounded input, once: move the watermark to the end of
    /// time so the next (no-data) batch fires everything. True if it moved.
    fn end_of_input(&mut self) -> bool {
        let end = crate::state::watermark::END_OF_INPUT_MS;
        if !self.options.end_of_input_watermark
            || !self.options.state.stateful
            || self.options.state.event_time.is_none()
            || self.watermark.watermark_ms.is_none_or(|w| w >= end)
        {
            return false;
        }
        self.watermark.watermark_ms = Some(end);
        true
    }

    /// A flag that stops `run` after the current batch.
    pub fn stop_handle(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Run until the trigger says stop (Once, AvailableNow) or the stop
    /// flag is raised; `on_progress` sees every batch's progress. Waits on
    /// this thread between batches; an executor that runs many queries on
    /// few threads calls [`Self::step`] instead.
    pub fn run(
        &mut self,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunSummary, EngineError> {
        loop {
            match self.step(on_progress)? {
                Step::Ran => {}
                Step::Wait(Wait::Until(at)) => {
                    std::thread::sleep(at.saturating_duration_since(Instant::now()))
                }
                Step::Wait(Wait::ForData { polls }) => self.idle_wait(polls),
                Step::Finished(summary) => return Ok(summary),
            }
        }
    }
}

mod ahead;

mod plan;

mod process;

mod replay;

mod step;
pub use step::{Step, Wait};

mod sources;

#[cfg(test)]
mod tests;
