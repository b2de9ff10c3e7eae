//! Spark-style micro-batch execution: per trigger, plan an offset range,
//! write it ahead (`offsets/N`), run it through the transform and the sinks,
//! then write `commits/N`. Re-running an uncommitted batch over its recorded
//! range with idempotent sinks makes the output exactly-once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::backpressure::PidRateEstimator;
use super::checkpoint::CheckpointStore;
use super::commit::{BatchReport, write_ahead};
use super::connector::{Sink, Source, SourceCheckpoint};
use super::identity::Settings;
use super::options::{EngineError, QueryOptions, RunSummary, TransformFactory, Trigger};
use super::progress::{Progress, SourceProgress};
use super::wal::{self, OffsetEntry};
use ahead::{Ahead, CommittedAhead, Work};
use plan::{Cursor, Plan};

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
    /// flag is raised; `on_progress` sees every batch's progress.
    pub fn run(
        &mut self,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunSummary, EngineError> {
        let mut summary = RunSummary::default();
        let (batch_id, start, pending) = self.start_position()?;
        // Once and AvailableNow take what is there at start; after it, they
        // run the batches without data that the final watermark calls for.
        let snapshot = match self.options.trigger {
            Trigger::AvailableNow | Trigger::Once => Some(self.latest()?),
            _ => None,
        };
        let mut cursor = Cursor {
            batch_id,
            start,
            pending,
            snapshot,
            last_watermark: None,
        };
        let mut last_trigger: Option<Instant> = None;
        // Empty polls in a row (the default trigger backs off).
        let mut idle_polls = 0u32;
        let mut ahead: Option<Ahead> = None;
        while !self.stop.load(Ordering::Relaxed) {
            if self.replay.is_some() {
                let Some(entry) = self.next_replayed() else {
                    break;
                };
                cursor.batch_id = entry.batch_id;
                cursor.pending = Some(entry);
            }
            let (planned, work, worked) = match ahead.take() {
                Some(a) => (a.planned, a.work, a.took),
                None => match self.plan(&mut cursor)? {
                    Plan::Batch(p) => (p, Work::Nothing, Duration::ZERO),
                    Plan::Again => continue,
                    Plan::Done => break,
                    Plan::Idle { trigger_start } => {
                        // The rest of a processing-time interval; one
                        // already over (or "0s", which Spark takes as the
                        // default trigger) waits as the default trigger
                        // does, not in a spin.
                        let rest = match self.options.trigger {
                            Trigger::ProcessingTime(i) => next_wait(trigger_start.elapsed(), i),
                            _ => Duration::ZERO,
                        };
                        if rest.is_zero() {
                            self.idle_wait(idle_polls);
                            idle_polls = idle_polls.saturating_add(1);
                        } else {
                            std::thread::sleep(rest);
                        }
                        continue;
                    }
                },
            };
            idle_polls = 0;
            let entry = &planned.entry;
            let written = write_ahead(&*self.store, entry, planned.rerun)?;
            let processing = Instant::now();
            let processed = match work {
                Work::Nothing => self.process(entry),
                Work::Read(inputs) => inputs.and_then(|i| self.run_inputs(entry, i)),
                Work::Processed(processed) => processed,
            }
            .map_err(|e| self.located(e))?;
            let processing = worked + processing.elapsed();
            cursor.last_watermark = self.watermark.watermark_ms;
            let watermark = self.options.state.event_time.clone().map(|et| {
                self.watermark
                    .after_batch(&et, &processed.event_max, entry.timestamp_ms);
                self.watermark.clone()
            });
            cursor.start = entry.sources.iter().map(|r| r.end.clone()).collect();
            cursor.batch_id = entry.batch_id + 1;
            let overlap = self.overlaps(&planned, &cursor);
            let CommittedAhead { committed, next } =
                self.commit_overlapped(written, &processed, watermark, &mut cursor, overlap)?;
            let entry = &planned.entry;
            if self.replay.is_none() {
                for (s, r) in self.sources.iter_mut().zip(&entry.sources) {
                    s.committed(&r.end);
                }
            }

            let trigger_start = planned.trigger_start;
            let input_rows: u64 = processed.per_source_rows.iter().sum();
            let execution = trigger_start.elapsed();
            let since_previous = last_trigger.map_or(execution, |t| t.elapsed());
            self.update_rate(last_trigger, trigger_start, input_rows, execution);
            last_trigger = Some(trigger_start);
            let sources = entry
                .sources
                .iter()
                .enumerate()
                .map(|(i, r)| SourceProgress {
                    description: self.sources[i].description(),
                    start_offset: r.start.as_json().clone(),
                    end_offset: r.end.as_json().clone(),
                    latest_offset: planned.latest[i].as_json().clone(),
                    num_input_rows: processed.per_source_rows[i],
                    metrics: self.source_metrics(i, planned.limit),
                })
                .collect();
            BatchReport {
                query_id: &self.id,
                run_id: &self.run_id,
                batch_id: entry.batch_id,
                timestamp: entry.timestamp_ms,
                input_rows,
                since_previous,
                execution,
                latest_offset: planned.latest_offset,
                processing,
                committed: &committed,
                rejected: &processed.rejected,
                lag: self.lag(entry, &planned.latest),
                sources,
                latency: None,
                state_operators: processed.state.operators,
                event_time: processed.state.event_time,
                transform_metrics: self
                    .transforms
                    .values()
                    .fold(Default::default(), |mut m, t| {
                        m.add(&t.reported_metrics());
                        m
                    }),
            }
            .publish(&*self.store, &self.sinks, on_progress, &mut summary)?;
            ahead = next?;
            if let Trigger::ProcessingTime(i) = self.options.trigger {
                std::thread::sleep(next_wait(trigger_start.elapsed(), i))
            }
        }
        Ok(summary)
    }
}

mod ahead;

mod plan;

mod process;

mod replay;

mod sources;

#[cfg(test)]
mod tests;
