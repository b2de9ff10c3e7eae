//! The scratch side of a replay: the candidate's pipeline (its sinks moved
//! into the scratch directory) and the copy of the live checkpoint it
//! resumes from. Only files are read from the live checkpoint; nothing
//! there is opened for writing or locked.

use std::path::{Path, PathBuf};

use super::{ReplayError, io};
use crate::spec::{Mode, Pipeline, SinkSpec};
use weir_connectors::file_sink::FileFormat;
use weir_engine::durable::encode_entry;
use weir_engine::wal::Metadata;
use weir_engine::{CheckpointStore, LocalCheckpointStore};

/// The live pipeline with the candidate component, a scratch checkpoint,
/// and each sink replaced by one of the same kind under `dir` (Kafka and
/// console outputs by files of records: they cannot be read back live, and
/// a replay must not write to them). Runs as micro-batches: a continuous
/// pipeline's epochs are replayed as batches over the same ranges.
pub(super) fn spec(live: &Pipeline, dir: &Path, candidate: &Path) -> Pipeline {
    let mut spec = live.clone();
    if let Some(t) = spec.transform.as_mut() {
        t.component = candidate.to_path_buf();
    }
    spec.checkpoint = weir_connectors::checkpoints::CheckpointLocation::Dir(dir.join("checkpoint"));
    spec.mode = Mode::MicroBatch;
    spec.sinks = live
        .sinks
        .iter()
        .enumerate()
        .map(|(i, (route, sink))| {
            let out = dir.join(format!("output-{i}"));
            let sink = match sink {
                SinkSpec::Log {
                    topic,
                    partitions,
                    segment_bytes,
                    ..
                } => SinkSpec::Log {
                    root: out,
                    topic: topic.clone(),
                    partitions: *partitions,
                    segment_bytes: *segment_bytes,
                    as_produced: false,
                },
                SinkSpec::Files { format, .. } => SinkSpec::Files {
                    dir: out,
                    format: *format,
                },
                SinkSpec::Console | SinkSpec::Kafka(_) => SinkSpec::Files {
                    dir: out,
                    format: FileFormat::Records,
                },
            };
            (route.clone(), sink)
        })
        .collect();
    spec
}

/// Copy what a query resuming at batch `from` reads from `live` into
/// `scratch`: the metadata `meta` (as a micro-batch query's), the sources' own
/// logs and initial offsets, and every state file of a version at or below
/// `from` (version `from` is the state batch `from` starts with).
pub(super) fn checkpoint(
    live: &Path,
    scratch: &Path,
    meta: &Metadata,
    from: u64,
) -> Result<(), ReplayError> {
    let store = LocalCheckpointStore::open(scratch).map_err(io)?;
    let mut meta = meta.clone();
    meta.mode = weir_engine::wal::ExecutionMode::MicroBatch;
    store.write("metadata", &encode_entry(&meta)).map_err(io)?;
    for dir in ["sources", "initial-offsets"] {
        copy_tree(&live.join(dir), &scratch.join(dir), &|_| true)?;
    }
    // state/<operator>/<partition>/{snapshots,deltas}/<version>
    copy_tree(&live.join("state"), &scratch.join("state"), &|p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .is_none_or(|v| v <= from)
    })?;
    Ok(())
}

/// Copy the files under `from` that `keep` accepts (a missing `from` is
/// an empty tree).
fn copy_tree(from: &Path, to: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<(), ReplayError> {
    let entries = match std::fs::read_dir(from) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(format!("{}: {e}", from.display()))),
    };
    std::fs::create_dir_all(to).map_err(|e| io(format!("{}: {e}", to.display())))?;
    for entry in entries {
        let entry = entry.map_err(|e| io(format!("{}: {e}", from.display())))?;
        let path: PathBuf = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| io(format!("{}: {e}", path.display())))?;
        if kind.is_dir() {
            copy_tree(&path, &target, keep)?;
        } else if kind.is_file() && keep(&path) {
            std::fs::copy(&path, &target)
                .map_err(|e| io(format!("copying {}: {e}", path.display())))?;
        }
    }
    Ok(())
}
