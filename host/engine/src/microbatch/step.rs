//! The micro-batch loop one step at a time. A step runs at most one batch
//! and returns, saying when the query next has something to do, so one
//! thread can take turns among many queries and an idle query holds no
//! thread at all: `weir serve` parks an idle pipeline until its source
//! wakes it ([`MicroBatchQuery::wake_on_data`]) or its deadline comes.

use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::{Duration, Instant};

use super::MicroBatchQuery;
use super::ahead::{Ahead, CommittedAhead, Work};
use super::plan::{Cursor, Plan, Planned};
use crate::commit::{BatchReport, write_ahead};
use crate::options::{EngineError, RunSummary, Trigger};
use crate::progress::{Progress, SourceProgress};

/// What the query does next, after a [`MicroBatchQuery::step`].
pub enum Step {
    /// It ran a batch (or decided again); step again.
    Ran,
    /// Nothing to do yet.
    Wait(Wait),
    /// The trigger is done (Once, AvailableNow) or the query was stopped.
    Finished(RunSummary),
}

/// Why a query waits, and for what.
pub enum Wait {
    /// A processing-time trigger's interval: no batch before this.
    Until(Instant),
    /// No input: wait for data, after `polls` empty looks in a row (sources
    /// that cannot say when data arrives are polled, backing off).
    ForData { polls: u32 },
}

/// How long a query whose every source wakes it on data stays parked
/// before looking anyway, unless time alone can move its watermark. A
/// wake-up can only be missed where the source cannot watch (it then says
/// so and is polled), so this is a backstop, kept long for idle density.
const PARKED_LOOK: Duration = Duration::from_secs(60);

/// Where a run stands between steps.
pub(super) struct Running {
    cursor: Cursor,
    last_trigger: Option<Instant>,
    /// Empty looks in a row (the default trigger backs off).
    idle_polls: u32,
    ahead: Option<Ahead>,
    summary: RunSummary,
    /// A processing-time trigger's next interval start.
    not_before: Option<Instant>,
    /// When the last batch ended (or the run started).
    last_batch: Instant,
    /// Its threads and instances were let go since the last batch.
    retired: bool,
}

impl MicroBatchQuery {
    fn start_run(&mut self) -> Result<Running, EngineError> {
        let (batch_id, start, pending) = self.start_position()?;
        // Once and AvailableNow take what is there at start; after it, they
        // run the batches without data that the final watermark calls for.
        let snapshot = match self.options.trigger {
            Trigger::AvailableNow | Trigger::Once => Some(self.latest()?),
            _ => None,
        };
        Ok(Running {
            cursor: Cursor {
                batch_id,
                start,
                pending,
                snapshot,
                last_watermark: None,
            },
            last_trigger: None,
            idle_polls: 0,
            ahead: None,
            summary: RunSummary::default(),
            not_before: None,
            last_batch: Instant::now(),
            retired: false,
        })
    }

    /// Run the next batch if one is due, and say what comes next. Never
    /// waits for data or for a trigger's interval: it returns
    /// [`Step::Wait`] instead.
    pub fn step(&mut self, on_progress: &mut dyn FnMut(&Progress)) -> Result<Step, EngineError> {
        let mut run = match self.running.take() {
            Some(r) => r,
            None => self.start_run()?,
        };
        let step = self.step_in(&mut run, on_progress);
        if let Ok(Step::Finished(_)) | Err(_) = &step {
            return step;
        }
        self.running = Some(run);
        step
    }

    fn step_in(
        &mut self,
        run: &mut Running,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<Step, EngineError> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(Step::Finished(std::mem::take(&mut run.summary)));
        }
        if let Some(at) = run.not_before {
            if Instant::now() < at {
                return Ok(Step::Wait(Wait::Until(at)));
            }
            run.not_before = None;
        }
        if self.replay.is_some() {
            let Some(entry) = self.next_replayed() else {
                return Ok(Step::Finished(std::mem::take(&mut run.summary)));
            };
            run.cursor.batch_id = entry.batch_id;
            run.cursor.pending = Some(entry);
        }
        let (planned, work, worked) = match run.ahead.take() {
            Some(a) => (a.planned, a.work, a.took),
            None => match self.plan(&mut run.cursor)? {
                Plan::Batch(p) => (p, Work::Nothing, Duration::ZERO),
                Plan::Again => return Ok(Step::Ran),
                Plan::Done => return Ok(Step::Finished(std::mem::take(&mut run.summary))),
                Plan::Idle { trigger_start } => {
                    // The rest of a processing-time interval; one already
                    // over (or "0s", which Spark takes as the default
                    // trigger) waits as the default trigger does, not in
                    // a spin.
                    if let Trigger::ProcessingTime(i) = self.options.trigger {
                        let rest = super::next_wait(trigger_start.elapsed(), i);
                        if !rest.is_zero() {
                            let at = Instant::now() + rest;
                            run.not_before = Some(at);
                            return Ok(Step::Wait(Wait::Until(at)));
                        }
                    }
                    let polls = run.idle_polls;
                    run.idle_polls = run.idle_polls.saturating_add(1);
                    if !run.retired && run.last_batch.elapsed() >= self.options.idle.retire {
                        self.retire_idle();
                        run.retired = true;
                    }
                    return Ok(Step::Wait(Wait::ForData { polls }));
                }
            },
        };
        run.idle_polls = 0;
        run.retired = false;
        self.run_batch(run, planned, work, worked, on_progress)?;
        run.last_batch = Instant::now();
        if let Trigger::ProcessingTime(i) = self.options.trigger {
            let at = Instant::now() + super::next_wait(run.last_trigger_elapsed(), i);
            run.not_before = Some(at);
        }
        Ok(Step::Ran)
    }

    /// Write `planned` ahead, run it (or finish what was worked ahead),
    /// commit it, deciding the next batch meanwhile when that may overlap,
    /// and report its progress.
    fn run_batch(
        &mut self,
        run: &mut Running,
        planned: Box<Planned>,
        work: Work,
        worked: Duration,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), EngineError> {
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
        let cursor = &mut run.cursor;
        cursor.last_watermark = self.watermark.watermark_ms;
        let watermark = self.options.state.event_time.clone().map(|et| {
            self.watermark
                .after_batch(&et, &processed.event_max, entry.timestamp_ms);
            self.watermark.clone()
        });
        cursor.start = entry.sources.iter().map(|r| r.end.clone()).collect();
        cursor.batch_id = entry.batch_id + 1;
        let overlap = self.overlaps(&planned, cursor);
        let CommittedAhead { committed, next } =
            self.commit_overlapped(written, &processed, watermark, cursor, overlap)?;
        let entry = &planned.entry;
        if self.replay.is_none() {
            for (s, r) in self.sources.iter_mut().zip(&entry.sources) {
                s.committed(&r.end);
            }
        }
        let trigger_start = planned.trigger_start;
        let input_rows: u64 = processed.per_source_rows.iter().sum();
        let execution = trigger_start.elapsed();
        let since_previous = run.last_trigger.map_or(execution, |t| t.elapsed());
        self.update_rate(run.last_trigger, trigger_start, input_rows, execution);
        run.last_trigger = Some(trigger_start);
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
            transform_metrics: self.transforms.values().fold(
                self.retired_metrics.clone(),
                |mut m, t| {
                    m.add(&t.reported_metrics());
                    m
                },
            ),
        }
        .publish(&*self.store, &self.sinks, on_progress, &mut run.summary)?;
        run.ahead = next?;
        Ok(())
    }

    /// Let the worker threads and guest instances of an idle query go,
    /// keeping what the instances counted.
    fn retire_idle(&mut self) {
        self.workers.retire();
        for (_, t) in self.transforms.drain() {
            self.retired_metrics.add_retired(&t.reported_metrics());
        }
    }

    /// Whether the query can wait for data parked, without a thread:
    /// false when a source wakes it only by blocking (it then wants a
    /// thread of its own, to wait there rather than be polled).
    pub fn parks_when_idle(&self) -> bool {
        self.sources
            .iter()
            .all(|s| s.wakes_parked() || !s.wakes_on_data())
    }

    /// Have `waker` woken when any source may have new data, and say how
    /// long the query may stay parked before it must look anyway: long
    /// when every source wakes it (unless time alone moves its watermark),
    /// else the poll backoff after `polls` empty looks.
    pub fn wake_on_data(&mut self, waker: &Waker, polls: u32) -> Duration {
        let mut every = !self.sources.is_empty();
        for s in self.sources.iter_mut() {
            every &= s.wake_on_data(waker);
        }
        let idle_timeout = self
            .options
            .state
            .event_time
            .as_ref()
            .is_some_and(|et| et.idle_timeout.is_some());
        match (every, idle_timeout) {
            (true, false) => PARKED_LOOK,
            (true, true) => self.options.idle.wake,
            (false, _) => self.poll_backoff(polls),
        }
    }
}

impl Running {
    fn last_trigger_elapsed(&self) -> Duration {
        self.last_trigger.map_or(Duration::ZERO, |t| t.elapsed())
    }
}
