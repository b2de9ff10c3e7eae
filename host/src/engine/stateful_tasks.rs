//! Running one micro-batch through the tasks of a query with event time or
//! state. Every task with state runs every batch, with or without input, so
//! its timers fire as the watermark moves and its state gets the batch's
//! version.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::batch::RecordBatch;
use super::checkpoint::CheckpointStore;
use super::options::EngineError;
use super::output::TransformOutput;
use super::state::run::{StepError, TaskRun};
use super::state::{BatchTime, StatePartition, StatefulOptions, TaskStats, state_dir};
use super::tasks::{Tasks, check_rejected};
use super::transform::Transform;

/// The state side of one batch.
pub(crate) struct StatefulBatch<'a> {
    pub options: &'a StatefulOptions,
    /// In-memory state per (source, task), at `version` when present.
    pub states: &'a mut HashMap<(usize, u32), StatePartition>,
    /// Tasks known to have state, which run even without input.
    pub known: &'a mut BTreeSet<(usize, u32)>,
    /// The batch id: the state version the batch starts from.
    pub version: u64,
    pub time: BatchTime,
    pub store: &'a dyn CheckpointStore,
}

type Parts = Vec<(RecordBatch, TransformOutput)>;
type TaskResult = Result<(Parts, TaskStats), StepError>;
/// A batch's parts, its rejected count and per-task state statistics.
type StatefulRun = (Parts, u64, BTreeMap<(usize, u32), TaskStats>);

impl Tasks<'_> {
    /// Transform `inputs` task by task (tasks in parallel), with event time
    /// and state. Returns the parts in task order, the rejected count and
    /// per-task statistics.
    pub fn run_stateful(
        &mut self,
        inputs: Vec<(usize, RecordBatch)>,
        sb: StatefulBatch<'_>,
    ) -> Result<StatefulRun, EngineError> {
        let mut groups: BTreeMap<(usize, u32), Vec<RecordBatch>> = BTreeMap::new();
        for (i, b) in inputs {
            let key = (i, self.sources[i].task_of(b.partition));
            groups.entry(key).or_default().push(b);
        }
        if sb.options.stateful {
            for k in sb.known.iter() {
                groups.entry(*k).or_default();
            }
        }
        let mut work = Vec::with_capacity(groups.len());
        for (key, batches) in groups {
            let (i, task) = key;
            let name = || self.sources[i].description();
            let t = match self.transforms.remove(&key) {
                Some(t) => t,
                None => self
                    .factory
                    .create(i, task)
                    .map_err(|err| EngineError::Transform {
                        source_name: name(),
                        partition: task,
                        err,
                    })?,
            };
            let state = if sb.options.stateful {
                match sb.states.remove(&key) {
                    Some(p) if p.version == sb.version => Some(p),
                    _ => Some(StatePartition::load(
                        sb.store,
                        &state_dir(i, task),
                        sb.version,
                        sb.options.files.backend,
                    )?),
                }
            } else {
                None
            };
            work.push((key, t, state, batches));
        }
        let options = sb.options;
        let time = sb.time;
        let store = sb.store;
        let run_one = |t: &mut Box<dyn Transform>,
                       state: &mut Option<StatePartition>,
                       task: u32,
                       batches: Vec<RecordBatch>|
         -> TaskResult {
            let mut run = TaskRun {
                partition: task,
                options,
                state: state.as_mut(),
                time,
                stats: TaskStats::default(),
            };
            let mut parts = Vec::new();
            for b in batches {
                run.process(&mut **t, b, &mut parts)?;
            }
            run.finish(&mut **t, store, &mut parts)?;
            Ok((parts, run.stats))
        };
        let mut results: Vec<TaskResult> = Vec::with_capacity(work.len());
        if work.len() == 1 {
            let (key, t, state, batches) = &mut work[0];
            results.push(run_one(t, state, key.1, std::mem::take(batches)));
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = work
                    .iter_mut()
                    .map(|(key, t, state, batches)| {
                        let batches = std::mem::take(batches);
                        let task = key.1;
                        scope.spawn(move || run_one(t, state, task, batches))
                    })
                    .collect();
                for h in handles {
                    results.push(h.join().expect("transform task panicked"));
                }
            });
        }
        let mut parts_out = Vec::new();
        let mut rejected = 0;
        let mut stats = BTreeMap::new();
        let mut failure = None;
        for ((key, t, state, _), result) in work.into_iter().zip(results) {
            self.transforms.insert(key, t);
            let name = self.sources[key.0].description();
            match result {
                Ok((parts, s)) => {
                    if let Some(p) = state {
                        sb.known.insert(key);
                        sb.states.insert(key, p);
                    }
                    for (b, mut out) in parts {
                        rejected += check_rejected(&self.policy, &name, &b, &mut out)?;
                        parts_out.push((b, out));
                    }
                    stats.insert(key, s);
                }
                // A failed task's state is dropped: it is reloaded from the
                // checkpoint when the batch runs again.
                Err(e) if failure.is_none() => {
                    failure = Some(match e {
                        StepError::Transform(err) => EngineError::Transform {
                            source_name: name,
                            partition: key.1,
                            err,
                        },
                        StepError::Checkpoint(e) => EngineError::Checkpoint(e),
                    })
                }
                Err(_) => {}
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok((parts_out, rejected, stats)),
        }
    }
}

/// Tasks with state in the checkpoint, from `state/<source>/<task>`.
pub(crate) fn known_tasks(
    store: &dyn CheckpointStore,
    sources: usize,
) -> Result<BTreeSet<(usize, u32)>, EngineError> {
    let mut known = BTreeSet::new();
    for i in 0..sources {
        for t in store.list_numbered(&format!("state/{i}"))? {
            known.insert((i, t as u32));
        }
    }
    Ok(known)
}
