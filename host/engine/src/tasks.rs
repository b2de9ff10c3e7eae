//! Running one batch's inputs through the transform tasks: one transform
//! instance per (source, task), a task's batches in order, tasks in parallel.

use std::collections::HashMap;

use super::batch::RecordBatch;
use super::connector::{Sink, SinkBatch, Source};
use super::options::{DEAD_LETTER, EngineError, ErrorPolicy, TransformFactory};
use super::output::{Parts, Rejections, TransformOutput};
use super::transform::{Transform, TransformError};

/// The (source, task) of each batch of one read, in order: a source's
/// `n`th batch of `partition` goes to its `task_of(partition, n)`.
pub(crate) struct TaskKeys<'a> {
    sources: &'a [Box<dyn Source>],
    pieces: Vec<usize>,
}

impl<'a> TaskKeys<'a> {
    pub fn new(sources: &'a [Box<dyn Source>]) -> Self {
        TaskKeys {
            sources,
            pieces: vec![0; sources.len()],
        }
    }

    pub fn next(&mut self, source: usize, b: &RecordBatch) -> (usize, u32) {
        let piece = self.pieces[source];
        self.pieces[source] += 1;
        (source, self.sources[source].task_of(b.partition, piece))
    }
}

/// What a batch's tasks gave.
pub(crate) struct TasksRan {
    /// Each input batch (and fired timers) with its output, in order.
    pub parts: Parts,
    pub rejected: Rejections,
    /// Stateful runs: each task's state statistics.
    pub per_task: std::collections::BTreeMap<(usize, u32), super::state::TaskStats>,
}

pub(crate) struct Tasks<'a> {
    pub sources: &'a [Box<dyn Source>],
    pub factory: &'a dyn TransformFactory,
    pub transforms: &'a mut HashMap<(usize, u32), Box<dyn Transform>>,
    pub policy: ErrorPolicy,
    /// The query's threads.
    pub workers: &'a super::parallel::Workers,
}

impl Tasks<'_> {
    /// Transform `inputs` (source index, batch); returns each batch with its
    /// output, in input order, and the number of rejected records.
    pub fn run(&mut self, inputs: Vec<(usize, RecordBatch)>) -> Result<TasksRan, EngineError> {
        // One transform instance per task; a task's batches run in order,
        // tasks side by side on the query's threads.
        let mut groups: Vec<((usize, u32), Vec<usize>)> = Vec::new();
        let mut keys = TaskKeys::new(self.sources);
        for (idx, (i, b)) in inputs.iter().enumerate() {
            let key = keys.next(*i, b);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, members)) => members.push(idx),
                None => groups.push((key, vec![idx])),
            }
        }
        let mut tasks = Vec::with_capacity(groups.len());
        for ((i, task), _) in &groups {
            let t = match self.transforms.remove(&(*i, *task)) {
                Some(t) => t,
                None => self
                    .factory
                    .create(*i, *task)
                    .map_err(|err| EngineError::Transform {
                        source_name: self.sources[*i].description(),
                        partition: *task,
                        err,
                    })?,
            };
            tasks.push(t);
        }
        // On the query's threads: a task's batches in order on one thread.
        let batches = &inputs;
        let work: Vec<(Box<dyn Transform>, &[usize])> = tasks
            .into_iter()
            .zip(groups.iter().map(|(_, members)| &members[..]))
            .collect();
        let ran = self.workers.map(work, |(mut t, members)| {
            let outputs: Vec<(usize, Result<TransformOutput, TransformError>)> = members
                .iter()
                .map(|&idx| (idx, t.process_batch(&batches[idx].1)))
                .collect();
            (t, outputs)
        });
        let mut results = Vec::with_capacity(inputs.len());
        for ((t, outputs), (key, _)) in ran.into_iter().zip(&groups) {
            self.transforms.insert(*key, t);
            results.extend(outputs);
        }
        results.sort_by_key(|(idx, _)| *idx);
        let results = results.into_iter().map(|(_, r)| r);
        let mut parts = Vec::with_capacity(inputs.len());
        let mut rejected = Rejections::default();
        for (result, (i, b)) in results.into_iter().zip(inputs) {
            let name = || self.sources[i].description();
            let out = result.map_err(|err| EngineError::Transform {
                source_name: name(),
                partition: b.partition,
                err,
            })?;
            let mut out = out;
            rejected += check_rejected(&self.policy, &name(), &b, &mut out)?;
            parts.push((b, out));
        }
        Ok(TasksRan {
            parts,
            rejected,
            per_task: Default::default(),
        })
    }
}

/// The sinks as one progress description.
pub(crate) fn sinks_description(sinks: &[(Option<String>, Box<dyn Sink>)]) -> String {
    sinks
        .iter()
        .map(|(_, s)| s.description())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Hand one batch's (or epoch's) output to every sink. Records routed to an
/// output without a sink stop the query rather than vanish. Returns the
/// rows written as output: dead letters are counted where they are
/// rejected, not a second time as output.
pub(crate) fn write_sinks(
    sinks: &mut [(Option<String>, Box<dyn Sink>)],
    batch_id: u64,
    parts: &[(RecordBatch, TransformOutput)],
) -> Result<u64, EngineError> {
    let default_used = parts.iter().any(|(_, o)| o.batch.uses_default_output());
    if default_used && !sinks.iter().any(|(r, _)| r.is_none()) {
        return Err(EngineError::Unrouted("default".into()));
    }
    for (_, out) in parts {
        for name in out.batch.output_names() {
            if !sinks.iter().any(|(r, _)| r.as_deref() == Some(name)) {
                return Err(EngineError::Unrouted(name.clone()));
            }
        }
    }
    let mut rows = 0;
    for (route, sink) in sinks.iter_mut() {
        let batch = SinkBatch {
            parts,
            route: route.as_deref(),
        };
        let written = sink
            .add_batch(batch_id, &batch)
            .map_err(|err| EngineError::Sink {
                name: sink.description(),
                err,
            })?;
        if route.as_deref() != Some(super::options::DEAD_LETTER) {
            rows += written;
        }
    }
    Ok(rows)
}

/// Records whose state key could not be read (`reasons`, one each) go
/// through the error policy as bad records, into `parts`; returns how many.
pub(crate) fn reject_unkeyed(
    policy: &ErrorPolicy,
    source_name: &str,
    batch: RecordBatch,
    reasons: &[String],
    parts: &mut Vec<(RecordBatch, TransformOutput)>,
) -> Result<Rejections, EngineError> {
    let mut out =
        super::state::run::reject_all(&batch, super::output::RejectKind::BadRecord, reasons);
    let n = check_rejected(policy, source_name, &batch, &mut out)?;
    parts.push((batch, out));
    Ok(n)
}

/// Rejected records logged per second (all are counted in progress).
static REJECTED_LOG: super::log_budget::SharedLogBudget =
    super::log_budget::SharedLogBudget::new(10);

/// Apply the error policy to a transform's rejected records: `fail` turns
/// the first into an error naming its position, `skip` logs and counts them,
/// `dead-letter` also appends each to the `dead-letter` output.
pub(crate) fn check_rejected(
    policy: &ErrorPolicy,
    source_name: &str,
    input: &RecordBatch,
    out: &mut TransformOutput,
) -> Result<Rejections, EngineError> {
    for r in &out.rejected {
        let offset = input.offsets()[r.index as usize];
        if *policy == ErrorPolicy::Fail {
            return Err(EngineError::BadRecord {
                source_name: source_name.to_string(),
                partition: input.partition,
                offset,
                place: format!("partition {}, offset {offset}", input.partition),
                reason: format!("{} ({})", r.reason, r.kind.as_str()),
            });
        }
        let a = REJECTED_LOG.admit();
        if a.suppressed_before > 0 {
            tracing::warn!(
                "{} more rejected records not logged (rate limit); progress numRejectedRows counts them all",
                a.suppressed_before
            );
        }
        if a.admit {
            tracing::warn!(
                source = source_name,
                partition = input.partition,
                offset,
                kind = r.kind.as_str(),
                "{}: {}",
                if matches!(policy, ErrorPolicy::Skip) {
                    "skipping record"
                } else {
                    "dead-lettering record"
                },
                r.reason
            );
        }
    }
    if let ErrorPolicy::DeadLetter { component } = policy {
        let rejected = std::mem::take(&mut out.rejected);
        for r in &rejected {
            let rec = input.get(r.index as usize);
            let letter = dead_letter(component, source_name, input.partition, &rec, r);
            let headers: Vec<_> = rec.headers().collect();
            out.batch.push(
                r.index,
                Some(DEAD_LETTER),
                rec.key,
                Some(letter.as_bytes()),
                &headers,
                rec.timestamp,
            );
        }
        out.rejected = rejected;
    }
    let mut n = Rejections::default();
    for r in &out.rejected {
        n.count(r.kind);
    }
    Ok(n)
}

/// A dead letter: the record (value as text when it is UTF-8, else base64),
/// where it came from, what failed and in which component.
fn dead_letter(
    component: &str,
    source: &str,
    partition: u32,
    rec: &super::batch::RecordRef<'_>,
    r: &super::output::Rejected,
) -> String {
    use base64::Engine as _;
    let text = |b: &[u8]| match std::str::from_utf8(b) {
        Ok(s) => serde_json::json!({ "text": s }),
        Err(_) => {
            serde_json::json!({ "base64": base64::engine::general_purpose::STANDARD.encode(b) })
        }
    };
    serde_json::json!({
        "error": { "kind": r.kind.as_str(), "message": r.reason },
        "component": component,
        "source": { "name": source, "partition": partition, "offset": rec.offset },
        "timestamp": rec.timestamp,
        "key": rec.key.map(text),
        "value": rec.value_opt().map(text),
    })
    .to_string()
}
