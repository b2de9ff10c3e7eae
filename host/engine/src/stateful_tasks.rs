//! Running one micro-batch through the tasks of a query with event time or
//! state. A stateful query's tasks are its state partitions, fed by the key
//! exchange; a query with event time only keeps one task per source task.
//! Every task with state runs every batch, with or without input, so its
//! timers fire as the watermark moves and its state gets the batch's
//! version.

use crate::Rejections;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::batch::RecordBatch;
use super::checkpoint::CheckpointStore;
use super::options::EngineError;
use super::output::TransformOutput;
use super::state::run::{StepError, TaskRun};
use super::state::{BatchTime, StatePartition, StatefulOptions, TaskStats, state_dir};
use super::tasks::{Tasks, TasksRan, check_rejected};
use super::transform::Transform;

/// The state side of one batch.
pub(crate) struct StatefulBatch<'a> {
    pub options: &'a StatefulOptions,
    /// In-memory state per task, at `version` when present.
    pub states: &'a mut HashMap<(usize, u32), StatePartition>,
    /// Tasks known to have state, which run even without input.
    pub known: &'a mut BTreeSet<(usize, u32)>,
    /// The batch id: the state version the batch starts from.
    pub version: u64,
    pub time: BatchTime,
    pub store: &'a dyn CheckpointStore,
    /// The query's threads, which run the tasks.
    pub workers: &'a super::parallel::Workers,
}

/// A batch's input by task ((operator, partition) for state partitions,
/// (source, task) otherwise): each record batch with its source index, in
/// the order the task must see them.
pub(crate) type Groups = BTreeMap<(usize, u32), Vec<(usize, RecordBatch)>>;

/// Parts with the source each came from (`None`: fired timers).
type TaskParts = Vec<(Option<usize>, (RecordBatch, TransformOutput))>;
type TaskResult = Result<(TaskParts, TaskStats), StepError>;

/// One task's share of the batch, moved to the thread that runs it.
struct Work {
    key: (usize, u32),
    transform: Box<dyn Transform>,
    state: Option<StatePartition>,
    input: Vec<(usize, RecordBatch)>,
}

impl Tasks<'_> {
    /// Transform each task's input (tasks in parallel), with event time and
    /// state. Returns the parts in task order, the rejected count and
    /// per-task statistics.
    pub fn run_stateful(
        &mut self,
        mut groups: Groups,
        sb: StatefulBatch<'_>,
    ) -> Result<TasksRan, EngineError> {
        if sb.options.stateful {
            for k in sb.known.iter() {
                groups.entry(*k).or_default();
            }
        }
        let mut work = Vec::with_capacity(groups.len());
        for (key, input) in groups {
            let transform = match self.transforms.remove(&key) {
                Some(t) => t,
                None => self
                    .factory
                    .create(key.0, key.1)
                    .map_err(|err| self.task_error(key, sb.options, err))?,
            };
            let state = if sb.options.stateful {
                match sb.states.remove(&key) {
                    Some(p) if p.version == sb.version => Some(p),
                    _ => Some(StatePartition::load(
                        sb.store,
                        &state_dir(key.0, key.1),
                        sb.version,
                        sb.options.files.backend,
                    )?),
                }
            } else {
                None
            };
            work.push(Work {
                key,
                transform,
                state,
                input,
            });
        }
        let (options, time, store) = (sb.options, sb.time, sb.store);
        let run_one = |mut w: Work| -> (Work, TaskResult) {
            let mut run = TaskRun {
                partition: w.key.1,
                options,
                state: w.state.as_mut(),
                time,
                stats: TaskStats::default(),
            };
            let mut parts = Vec::new();
            let mut sources = Vec::new();
            let result = (|| {
                for (i, b) in std::mem::take(&mut w.input) {
                    run.process(&mut *w.transform, i, b, &mut parts)?;
                    sources.resize(parts.len(), Some(i));
                }
                run.finish(&mut *w.transform, store, &mut parts)?;
                Ok(())
            })();
            let stats = std::mem::take(&mut run.stats);
            sources.resize(parts.len(), None);
            let r = result.map(|()| (sources.into_iter().zip(parts).collect(), stats));
            (w, r)
        };
        let done = sb.workers.map(work, run_one);
        let mut parts_out = Vec::new();
        let mut rejected = Rejections::default();
        let mut stats = BTreeMap::new();
        let mut failure = None;
        for (w, result) in done {
            let key = w.key;
            self.transforms.insert(key, w.transform);
            match result {
                Ok((parts, s)) => {
                    if let Some(p) = w.state {
                        sb.known.insert(key);
                        sb.states.insert(key, p);
                    }
                    for (source, (b, mut out)) in parts {
                        let name = match source {
                            Some(i) => self.sources[i].description(),
                            None => format!("timers of state partition {}", key.1),
                        };
                        rejected += check_rejected(&self.policy, &name, &b, &mut out)?;
                        parts_out.push((b, out));
                    }
                    stats.insert(key, s);
                }
                // A failed task's state is dropped: it is reloaded from the
                // checkpoint when the batch runs again.
                Err(e) if failure.is_none() => {
                    failure = Some(match e {
                        StepError::Transform(err) => self.task_error(key, sb.options, err),
                        StepError::Checkpoint(e) => EngineError::Checkpoint(e),
                    })
                }
                Err(_) => {}
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(TasksRan {
                parts: parts_out,
                rejected,
                per_task: stats,
            }),
        }
    }

    fn task_error(
        &self,
        key: (usize, u32),
        options: &StatefulOptions,
        err: super::transform::TransformError,
    ) -> EngineError {
        if options.stateful {
            EngineError::StatePartition {
                partition: key.1,
                err,
            }
        } else {
            EngineError::Transform {
                source_name: self.sources[key.0].description(),
                partition: key.1,
                err,
            }
        }
    }
}

/// Tasks with state in the checkpoint, from `state/<operator>/<partition>`.
pub(crate) fn known_tasks(
    store: &dyn CheckpointStore,
    operators: usize,
) -> Result<BTreeSet<(usize, u32)>, EngineError> {
    let mut known = BTreeSet::new();
    for i in 0..operators {
        for t in store.list_numbered(&format!("state/{i}"))? {
            known.insert((i, t as u32));
        }
    }
    Ok(known)
}
