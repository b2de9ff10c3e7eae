//! Running one micro-batch: read its ranges, transform each partition's
//! records on its task, with state and event time when the query has them.

use crate::Rejections;
use std::collections::BTreeMap;
use std::time::Duration;

use super::MicroBatchQuery;
use crate::batch::RecordBatch;
use crate::connector::Source;
use crate::options::EngineError;
use crate::output::Parts;
use crate::parallel::Workers;
use crate::state::run::{StateProgress, progress_fields};
use crate::state::{BatchTime, StatefulOptions, TaskStats};
use crate::stateful_tasks::{Groups, StatefulBatch};
use crate::tasks::{TaskKeys, Tasks, TasksRan, reject_unkeyed};
use crate::wal::OffsetEntry;

/// A batch's input as read from its sources.
pub(super) struct Inputs {
    /// (source index, batch), in source then read order.
    batches: Vec<(usize, RecordBatch)>,
    /// Records read, per source.
    per_source: Vec<u64>,
}

/// What running a batch gave, before its commit.
pub(super) struct Processed {
    /// Each input batch with its transform output, in input order.
    pub parts: Parts,
    /// Records read, per source.
    pub per_source_rows: Vec<u64>,
    pub rejected: Rejections,
    pub state: StateProgress,
    /// The largest event time per (source, partition): for the watermark.
    pub event_max: BTreeMap<(usize, u32), i64>,
}

impl MicroBatchQuery {
    /// Wait after the `n`th empty poll in a row: on the source, when it is
    /// the only one and wakes on data; else a sleep doubling from
    /// `idle_poll` up to `max_idle_poll`.
    pub(super) fn idle_wait(&mut self, n: u32) {
        let wake = self.options.idle.wake;
        if let [only] = &mut self.sources[..]
            && only.wakes_on_data()
        {
            only.wait_for_data(wake);
            return;
        }
        std::thread::sleep(self.poll_backoff(n));
    }

    /// The wait before looking again after `n` empty looks in a row.
    pub(super) fn poll_backoff(&self, n: u32) -> Duration {
        let o = &self.options.idle;
        o.poll.saturating_mul(1u32 << n.min(16)).min(o.max_poll)
    }

    /// With an idle timeout, time alone can move the watermark (a
    /// partition goes idle): recompute it at processing time `now` before
    /// deciding whether a batch without data is due.
    pub(super) fn idle_advance(&mut self, now: i64) {
        if let Some(et) = &self.options.state.event_time
            && et.idle_timeout.is_some()
        {
            self.watermark.advance(et.delay, et.idle_timeout, now);
        }
    }

    /// Read the batch's range from every source and run each partition
    /// through its task's transform instance.
    pub(super) fn process(&mut self, entry: &OffsetEntry) -> Result<Processed, EngineError> {
        let inputs = self.read_inputs(entry)?;
        self.run_inputs(entry, inputs)
    }

    /// Read the batch's range from every source (without side effects, so
    /// possibly before the batch is written ahead).
    pub(super) fn read_inputs(&mut self, entry: &OffsetEntry) -> Result<Inputs, EngineError> {
        // Sources read side by side (a join's two files at once).
        let reads: Vec<_> = self.sources.iter_mut().zip(&entry.sources).collect();
        let read = self.workers.map(reads, |(s, r)| s.read(&r.start, &r.end));
        let mut batches: Vec<(usize, RecordBatch)> = Vec::new();
        let mut per_source = vec![0u64; self.sources.len()];
        for (i, read) in read.into_iter().enumerate() {
            for b in read.map_err(self.source_err(i))? {
                per_source[i] += b.len() as u64;
                batches.push((i, b));
            }
        }
        Ok(Inputs {
            batches,
            per_source,
        })
    }

    /// Run what [`Self::read_inputs`] read through the transform tasks,
    /// with state and event time when the query has them.
    pub(super) fn run_inputs(
        &mut self,
        entry: &OffsetEntry,
        Inputs {
            batches: inputs,
            per_source,
        }: Inputs,
    ) -> Result<Processed, EngineError> {
        let mut tasks = Tasks {
            sources: &self.sources,
            factory: &*self.factory,
            transforms: &mut self.transforms,
            policy: self.options.error_policy.clone(),
            workers: &self.workers,
        };
        if !self.options.state.active() {
            let ran = tasks.run(inputs)?;
            return Ok(Processed {
                parts: ran.parts,
                per_source_rows: per_source,
                rejected: ran.rejected,
                state: StateProgress::default(),
                event_max: BTreeMap::new(),
            });
        }
        let time = BatchTime {
            watermark: self.watermark.watermark_ms,
            processing_time: entry.timestamp_ms,
        };
        let (groups, unkeyed) = if self.options.state.stateful {
            exchange(&self.sources, &self.options.state, inputs, &self.workers)?
        } else {
            let mut groups = Groups::new();
            let mut keys = TaskKeys::new(&self.sources);
            for (i, b) in inputs {
                groups.entry(keys.next(i, &b)).or_default().push((i, b));
            }
            (groups, Vec::new())
        };
        let sb = StatefulBatch {
            options: &self.options.state,
            states: &mut self.states,
            known: &mut self.known,
            version: entry.batch_id,
            time,
            store: &*self.store,
            workers: &self.workers,
        };
        let TasksRan {
            mut parts,
            mut rejected,
            per_task,
        } = tasks.run_stateful(groups, sb)?;
        for (i, b, reasons) in unkeyed {
            let name = self.sources[i].description();
            rejected += reject_unkeyed(&self.options.error_policy, &name, b, &reasons, &mut parts)?;
        }
        let mut total = TaskStats::default();
        for s in per_task.values() {
            total.merge(s);
        }
        let state = progress_fields(
            &self.options.state,
            &total,
            self.known.len() as u64,
            time.watermark,
        );
        Ok(Processed {
            parts,
            per_source_rows: per_source,
            rejected,
            state,
            event_max: total.event_max,
        })
    }
}

/// Records whose state key could not be read: (source, records, why).
type Unkeyed = Vec<(usize, RecordBatch, Vec<String>)>;

/// The exchange inside a batch: every input batch (read tasks in parallel)
/// split by state key into the state partitions' groups, each group in
/// input order (source, then partition, then offset).
fn exchange(
    sources: &[Box<dyn Source>],
    state: &StatefulOptions,
    inputs: Vec<(usize, RecordBatch)>,
    workers: &Workers,
) -> Result<(Groups, Unkeyed), EngineError> {
    let names: Vec<String> = sources.iter().map(|s| s.description()).collect();
    // Event times are read with the keys, in one pass over each value.
    let time = |i| state.event_time.as_ref().and_then(|et| et.field_of(i));
    let routed = workers.map(inputs, |(i, b)| {
        (i, state.partitioning.route_from(i, &names[i], b, time(i)))
    });
    let mut groups = Groups::new();
    let mut unkeyed = Vec::new();
    for (i, r) in routed {
        let r = r?;
        for (q, b) in r.parts {
            groups.entry((0, q)).or_default().push((i, b));
        }
        if let Some((b, why)) = r.unreadable {
            unkeyed.push((i, b, why));
        }
    }
    Ok((groups, unkeyed))
}
