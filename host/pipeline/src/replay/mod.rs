//! Replay (canary): run a candidate component over the recorded input of
//! committed batches (or epochs) of a pipeline and compare what it makes
//! with what the live pipeline committed, before the candidate replaces
//! the running one.
//!
//! The live checkpoint is only read. A scratch checkpoint gets the query's
//! metadata, the sources' own logs and the state versions the first
//! replayed batch starts from; the engine then runs exactly the recorded
//! `offsets/N` entries (ranges, processing time, watermark; see
//! [`weir_engine::MicroBatchQuery::replay`]) into scratch copies of the
//! sinks. Each batch's output is then read back from both, per named
//! output, and compared as multisets of records: a record the live
//! pipeline committed that the candidate did not make is "missing", one
//! the candidate made that the live output lacks is "extra".

mod output;
mod scratch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

use crate::spec::{Pipeline, SinkSpec};
use crate::{Query, build_query};
use weir_engine::durable::read_entry;
use weir_engine::wal::{CommitEntry, Metadata, OffsetEntry, commits_path, offsets_path};
use weir_engine::{CheckpointStore, LocalCheckpointStore, Progress};
use weir_runtime::Runtime;
use weir_runtime::tenant::Tenant;

/// How many batches a replay without a range takes: the newest committed.
pub const DEFAULT_BATCHES: u64 = 5;
/// Differences shown per output unless asked otherwise.
pub const DEFAULT_SHOWN: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The request cannot be served as asked (range, pipeline, component).
    #[error("{0}")]
    Refused(String),
    /// Reading the live checkpoint or sinks, or writing the scratch copy.
    #[error("{0}")]
    Io(String),
    /// The candidate could not be built or failed while running.
    #[error("{0}")]
    Run(String),
}

fn io(what: impl std::fmt::Display) -> ReplayError {
    ReplayError::Io(what.to_string())
}

/// What to replay and how.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The candidate component (`.wasm`).
    pub candidate: PathBuf,
    /// First and last batch (or epoch) id, inclusive; the newest
    /// [`DEFAULT_BATCHES`] committed when absent.
    pub from: Option<u64>,
    pub to: Option<u64>,
    /// Differences listed per output and batch.
    pub shown: usize,
    /// Where the scratch checkpoint and sinks go (removed after).
    pub scratch_in: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Report {
    /// `batch` (micro-batch) or `epoch` (continuous).
    pub unit: &'static str,
    pub batches: Vec<BatchReport>,
    /// Summed over batches; `None` when no output could be compared.
    pub total_differences: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct BatchReport {
    pub id: u64,
    pub input_rows: u64,
    pub output_rows: u64,
    pub rejected_rows: BTreeMap<String, u64>,
    pub rows_per_second: f64,
    /// Rows the live pipeline committed for it, over the outputs it can be
    /// read back from.
    pub live_output_rows: Option<u64>,
    pub differences: Option<u64>,
    pub outputs: Vec<output::OutputDiff>,
    /// Why some output was not compared.
    pub note: Option<String>,
}

pub use output::{Difference, OutputDiff};

/// Replay `opts.candidate` over committed batches of `spec`'s pipeline
/// (as tenant `tenant`, when given, for its memory quota).
pub fn replay(
    runtime: &Runtime,
    spec: &Pipeline,
    tenant: Option<Arc<Tenant>>,
    opts: &ReplayOptions,
) -> Result<Report, ReplayError> {
    if spec.transform.is_none() {
        return Err(ReplayError::Refused(format!(
            "pipeline `{}` has no [transform] for a candidate to replace",
            spec.name
        )));
    }
    let Some(live_dir) = spec.checkpoint.dir() else {
        return Err(ReplayError::Refused(format!(
            "{}: replay reads a checkpoint in a local directory (copy the objects to one first)",
            spec.checkpoint
        )));
    };
    if !live_dir.join("metadata").exists() {
        return Err(ReplayError::Refused(format!(
            "{}: no checkpoint there yet: the pipeline has not run",
            live_dir.display()
        )));
    }
    let live = LocalCheckpointStore::open(live_dir).map_err(io)?;
    let meta: Metadata = read_entry(&live, "metadata")
        .map_err(io)?
        .ok_or_else(|| io("the checkpoint has no metadata"))?;
    let continuous = meta.mode == weir_engine::wal::ExecutionMode::Continuous;
    let unit = if continuous { "epoch" } else { "batch" };
    if continuous && meta.settings.as_ref().is_some_and(|s| s.stateful) {
        return Err(ReplayError::Refused(
            "replay of a stateful continuous pipeline is not supported: its tasks run each epoch with their own watermark; replay a micro-batch pipeline or a stateless continuous one".into(),
        ));
    }
    let (from, to) = range(&live, unit, opts)?;
    let entries = (from..=to)
        .map(|n| {
            read_entry::<OffsetEntry>(&live, &offsets_path(n))
                .map_err(io)?
                .ok_or_else(|| io(format!("{unit} {n}: its offsets entry is gone")))
        })
        .collect::<Result<Vec<_>, _>>()?;

    let dir = tempfile::Builder::new()
        .prefix("weir-replay-")
        .tempdir_in(&opts.scratch_in)
        .map_err(|e| io(format!("{}: {e}", opts.scratch_in.display())))?;
    let candidate = scratch::spec(spec, dir.path(), &opts.candidate);
    let scratch_dir = candidate
        .checkpoint
        .dir()
        .expect("the scratch checkpoint is a directory");
    scratch::checkpoint(live_dir, scratch_dir, &meta, from)?;
    let reports = run(runtime, &candidate, tenant, entries, unit)?;

    // Each output read once for the whole range, on both sides.
    let mut outputs = Vec::new();
    for ((route, live_sink), (_, scratch_sink)) in spec.sinks.iter().zip(&candidate.sinks) {
        let made = output::read(scratch_sink, &meta.id, route, from..=to)?.unwrap_or_default();
        let committed = output::read(live_sink, &meta.id, route, from..=to)?;
        outputs.push(Output {
            route,
            live_sink,
            made,
            committed,
        });
    }
    let mut batches = Vec::new();
    for n in from..=to {
        let p = reports.get(&n).ok_or_else(|| {
            ReplayError::Run(format!(
                "{unit} {n} did not run (the engine stopped before it)"
            ))
        })?;
        batches.push(compare(&mut outputs, n, p, opts.shown));
    }
    let total = batches
        .iter()
        .filter_map(|b| b.differences)
        .reduce(|a, b| a + b);
    Ok(Report {
        unit,
        batches,
        total_differences: total,
    })
}

/// The batch range asked for, each batch committed and still recorded.
fn range(
    live: &LocalCheckpointStore,
    unit: &str,
    opts: &ReplayOptions,
) -> Result<(u64, u64), ReplayError> {
    let commits = live.list_numbered("commits").map_err(io)?;
    let offsets = live.list_numbered("offsets").map_err(io)?;
    let (Some(&first), Some(&last)) = (commits.first(), commits.last()) else {
        return Err(ReplayError::Refused(format!(
            "no {unit} is committed yet: nothing to replay"
        )));
    };
    let to = opts.to.unwrap_or(last);
    let from = opts
        .from
        .unwrap_or_else(|| to.saturating_sub(DEFAULT_BATCHES - 1).max(first));
    if from > to {
        return Err(ReplayError::Refused(format!(
            "from = {from} is after to = {to}"
        )));
    }
    if to > last {
        return Err(ReplayError::Refused(format!(
            "{unit} {to} is not committed (the newest committed {unit} is {last})"
        )));
    }
    for n in from..=to {
        if commits.binary_search(&n).is_err() || offsets.binary_search(&n).is_err() {
            return Err(ReplayError::Refused(format!(
                "{unit} {n} is no longer recorded in the checkpoint: it keeps {unit} {first} to {last}",
            )));
        }
    }
    // A committed entry must be readable: a torn one is refused by name.
    read_entry::<CommitEntry>(live, &commits_path(to)).map_err(io)?;
    Ok((from, to))
}

/// Run the recorded `entries` with the candidate; the progress of each.
fn run(
    runtime: &Runtime,
    candidate: &Pipeline,
    tenant: Option<Arc<Tenant>>,
    entries: Vec<OffsetEntry>,
    unit: &str,
) -> Result<BTreeMap<u64, Progress>, ReplayError> {
    let mut query = build_query(
        runtime,
        candidate,
        crate::GuestScope {
            tenant,
            abort: None,
        },
        None,
        true,
    )
    .map_err(|e| ReplayError::Run(format!("the candidate: {e}")))?;
    let Query::MicroBatch(q) = &mut query else {
        return Err(ReplayError::Run("replay runs as micro-batches".into()));
    };
    q.replay(entries.clone());
    let mut reports = BTreeMap::new();
    let result = q.run(&mut |p: &Progress| {
        reports.insert(p.batch_id, p.clone());
    });
    if let Err(e) = result {
        let failed = entries
            .iter()
            .find(|en| !reports.contains_key(&en.batch_id));
        let (n, offsets) = failed.map_or((0, String::new()), |en| {
            let offsets = serde_json::to_string(&en.sources).unwrap_or_default();
            (en.batch_id, offsets)
        });
        return Err(ReplayError::Run(format!(
            "replaying {unit} {n} (input offsets {offsets}): {e}; if the input is no longer retained there, those offsets are gone"
        )));
    }
    Ok(reports)
}

/// One output's records by batch, the candidate's and, when its live sink
/// can be read back, the committed ones.
struct Output<'a> {
    route: &'a Option<String>,
    live_sink: &'a SinkSpec,
    made: BTreeMap<u64, Vec<String>>,
    committed: Option<BTreeMap<u64, Vec<String>>>,
}

/// Batch `n`'s report: the candidate's progress and each output compared
/// (its records taken out of `sinks`).
fn compare(sinks: &mut [Output<'_>], n: u64, p: &Progress, shown: usize) -> BatchReport {
    let mut notes = Vec::new();
    let mut outputs = Vec::new();
    for o in sinks.iter_mut() {
        let made = o.made.remove(&n).unwrap_or_default();
        let committed = o
            .committed
            .as_mut()
            .map(|c| c.remove(&n).unwrap_or_default());
        if committed.is_none() {
            notes.push(output::unreadable(o.route, o.live_sink));
        }
        outputs.push(output::diff(o.route, committed, made, shown));
    }
    let compared: Vec<&OutputDiff> = outputs.iter().filter(|o| o.live_rows.is_some()).collect();
    let (live_rows, differences) = if compared.is_empty() {
        (None, None)
    } else {
        (
            Some(compared.iter().filter_map(|o| o.live_rows).sum()),
            Some(compared.iter().map(|o| o.differing).sum()),
        )
    };
    BatchReport {
        id: n,
        input_rows: p.num_input_rows,
        output_rows: p.sink.num_output_rows,
        rejected_rows: p.rejected_rows_by_kind.clone(),
        rows_per_second: p.processed_rows_per_second,
        live_output_rows: live_rows,
        differences,
        outputs,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}
