//! A streaming query's durable identity and write-ahead logs: the
//! `metadata` file and the `offsets/N` and `commits/N` entries, plus the
//! recovery decision Spark makes from them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::checkpoint::{CheckpointError, CheckpointStore, encode_entry, read_entry};
use super::connector::Offset;
use super::options::EngineError;
use super::state::Watermark;

/// `metadata`: written once when a query first starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub id: String,
    pub mode: ExecutionMode,
    pub sources: Vec<String>,
    /// The component and state settings (see `super::identity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<super::identity::Settings>,
}

/// How a query executes; a checkpoint keeps the mode it was written in
/// (`metadata`'s `mode`: `micro-batch` or `continuous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutionMode {
    MicroBatch,
    Continuous,
}

impl ExecutionMode {
    pub fn name(self) -> &'static str {
        match self {
            ExecutionMode::MicroBatch => "micro-batch",
            ExecutionMode::Continuous => "continuous",
        }
    }

    /// What one commit is called in this mode: `batch` or `epoch`.
    pub fn unit(self) -> &'static str {
        match self {
            ExecutionMode::MicroBatch => "batch",
            ExecutionMode::Continuous => "epoch",
        }
    }
}

impl std::fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `offsets/N`: the exact input range of batch N, durable before it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetEntry {
    pub batch_id: u64,
    /// When the batch was planned; also its processing time.
    pub timestamp_ms: i64,
    pub sources: Vec<OffsetRange>,
    /// Queries with event time: the watermark the batch runs with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<Watermark>,
    /// Continuous queries with state: the clocks each task ran the epoch with.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_times: BTreeMap<u32, TaskTime>,
}

/// The clocks of one continuous task for one epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskTime {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_ms: Option<i64>,
    pub processing_time_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffsetRange {
    pub start: Offset,
    pub end: Offset,
}

/// `commits/N`: batch N's output is committed in every sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommitEntry {
    pub batch_id: u64,
    pub num_output_rows: u64,
    /// Queries with event time: the watermark after this batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<Watermark>,
}

/// Where a (re)started query resumes.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// No batch ever planned: start at the sources' initial offsets, batch 0.
    Fresh,
    /// Batch N was planned but not committed: re-run it over the same range.
    Rerun(OffsetEntry),
    /// Batch N committed: continue with N+1 from its end offsets, with the
    /// watermark as it was after N.
    Continue {
        next_batch: u64,
        start: Vec<Offset>,
        watermark: Watermark,
    },
}

pub fn offsets_path(n: u64) -> String {
    format!("offsets/{n}")
}

pub fn commits_path(n: u64) -> String {
    format!("commits/{n}")
}

/// Load the query's metadata, creating it on first start, and refuse a
/// checkpoint that belongs to other sources or another mode, or whose
/// settings differ (see `super::identity::check`; `upgrade` accepts
/// upgradable changes and records them).
pub fn load_or_create_metadata(
    store: &dyn CheckpointStore,
    mode: ExecutionMode,
    sources: Vec<String>,
    settings: super::identity::Settings,
    upgrade: bool,
) -> Result<Metadata, CheckpointError> {
    if let Some(mut existing) = read_entry::<Metadata>(store, "metadata")? {
        if existing.sources != sources {
            return Err(CheckpointError::Mismatch(format!(
                "checkpoint {} was written for source(s) [{}], not [{}]; use a new checkpoint location for a different source",
                store.location(),
                existing.sources.join(", "),
                sources.join(", ")
            )));
        }
        if existing.mode != mode {
            return Err(CheckpointError::Mismatch(format!(
                "checkpoint {} was written in {} mode; restarting it in {mode} mode is not supported (use a new checkpoint location)",
                store.location(),
                existing.mode
            )));
        }
        let fresh = store.list_numbered("offsets")?.is_empty();
        let rewrite = super::identity::check(
            &store.location(),
            existing.settings.as_ref(),
            &settings,
            fresh,
            upgrade,
        )?;
        if rewrite {
            existing.settings = Some(settings);
            store.write("metadata", &encode_entry(&existing))?;
        }
        return Ok(existing);
    }
    let meta = Metadata {
        id: uuid::Uuid::new_v4().to_string(),
        mode,
        sources,
        settings: Some(settings),
    };
    store.write("metadata", &encode_entry(&meta))?;
    Ok(meta)
}

/// Spark's recovery rule: the highest `offsets/N` decides; if `commits/N`
/// exists continue at N+1, else re-run N over its recorded range.
pub fn resume(store: &dyn CheckpointStore) -> Result<Resume, CheckpointError> {
    let offsets = store.list_numbered("offsets")?;
    let commits = store.list_numbered("commits")?;
    let Some(&last) = offsets.last() else {
        if let Some(c) = commits.last() {
            return Err(CheckpointError::Corrupt {
                path: format!("{}/commits/{c}", store.location()),
                problem: "commit without any offsets entry".into(),
            });
        }
        return Ok(Resume::Fresh);
    };
    if let Some(&c) = commits.last()
        && c > last
    {
        return Err(CheckpointError::Corrupt {
            path: format!("{}/commits/{c}", store.location()),
            problem: format!("commit for batch {c} but the offsets log ends at {last}"),
        });
    }
    let entry: OffsetEntry = read_entry(store, &offsets_path(last))?.expect("listed");
    if entry.batch_id != last {
        return Err(CheckpointError::Corrupt {
            path: format!("{}/offsets/{last}", store.location()),
            problem: format!("holds batch {} instead of {last}", entry.batch_id),
        });
    }
    if commits.last() == Some(&last) {
        // Validate the commit entry too: a torn commit must not be trusted.
        let commit: CommitEntry = read_entry(store, &commits_path(last))?.expect("listed");
        return Ok(Resume::Continue {
            next_batch: last + 1,
            start: entry.sources.into_iter().map(|r| r.end).collect(),
            watermark: commit.watermark.unwrap_or_default(),
        });
    }
    Ok(Resume::Rerun(entry))
}

/// Where a new query starts reading source `i`: decided once and recorded
/// (`initial-offsets/<i>`), like Spark's initial offsets, so that a query
/// stopped before its first batch does not drift (e.g. "latest" would
/// otherwise move on every restart).
pub fn initial_offset(
    store: &dyn CheckpointStore,
    source: usize,
    compute: impl FnOnce() -> Result<Offset, EngineError>,
) -> Result<Offset, EngineError> {
    let path = format!("initial-offsets/{source}");
    if let Some(o) = super::checkpoint::read_entry(store, &path)? {
        return Ok(o);
    }
    let o = compute()?;
    store.write(&path, &super::checkpoint::encode_entry(&o))?;
    Ok(o)
}

/// Delete log entries older than the newest `keep` batches.
pub fn prune(store: &dyn CheckpointStore, latest: u64, keep: u64) -> Result<(), CheckpointError> {
    if latest < keep {
        return Ok(());
    }
    let cutoff = latest - keep;
    for dir in ["offsets", "commits"] {
        for n in store.list_numbered(dir)? {
            if n > cutoff {
                break;
            }
            store.delete(&format!("{dir}/{n}"))?;
        }
    }
    Ok(())
}

mod stale;
pub use stale::{discard_stale, stale};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::LocalCheckpointStore;

    pub(super) fn entry(n: u64, start: i64, end: i64) -> Vec<u8> {
        encode_entry(&OffsetEntry {
            batch_id: n,
            timestamp_ms: 0,
            sources: vec![OffsetRange {
                start: Offset::of(&start),
                end: Offset::of(&end),
            }],
            watermark: None,
            task_times: BTreeMap::new(),
        })
    }

    pub(super) fn commit(n: u64) -> Vec<u8> {
        encode_entry(&CommitEntry {
            batch_id: n,
            num_output_rows: 1,
            watermark: None,
        })
    }

    /// The recovery decision table.
    #[test]
    fn resume_decisions() {
        let dir = tempfile::tempdir().unwrap();
        let s = LocalCheckpointStore::open(dir.path()).unwrap();
        assert_eq!(resume(&s).unwrap(), Resume::Fresh);

        s.write("offsets/0", &entry(0, 0, 5)).unwrap();
        let Resume::Rerun(e) = resume(&s).unwrap() else {
            panic!()
        };
        assert_eq!((e.batch_id, e.sources[0].end.clone()), (0, Offset::of(&5)));

        s.write("commits/0", &commit(0)).unwrap();
        assert_eq!(
            resume(&s).unwrap(),
            Resume::Continue {
                next_batch: 1,
                start: vec![Offset::of(&5)],
                watermark: Watermark::default(),
            }
        );

        s.write("offsets/1", &entry(1, 5, 9)).unwrap();
        assert!(matches!(resume(&s).unwrap(), Resume::Rerun(e) if e.batch_id == 1));

        s.write("commits/1", b"v1\n{\"batchId\":").unwrap();
        let err = resume(&s).unwrap_err().to_string();
        assert!(err.contains("commits/1: invalid entry"), "{err}");

        s.write("commits/1", &commit(1)).unwrap();
        s.write("commits/2", &commit(2)).unwrap();
        let err = resume(&s).unwrap_err().to_string();
        assert!(
            err.contains("commit for batch 2 but the offsets log ends at 1"),
            "{err}"
        );
        s.delete("commits/2").unwrap();

        s.write("offsets/2", b"").unwrap();
        let err = resume(&s).unwrap_err().to_string();
        assert!(err.contains("offsets/2: file is empty"), "{err}");
    }

    #[test]
    fn metadata_refuses_another_source_or_mode() {
        let dir = tempfile::tempdir().unwrap();
        let s = LocalCheckpointStore::open(dir.path()).unwrap();
        let load = |mode: ExecutionMode, source: &str| {
            load_or_create_metadata(&s, mode, vec![source.into()], Default::default(), false)
        };
        let m = load(ExecutionMode::MicroBatch, "log:a").unwrap();
        let again = load(ExecutionMode::MicroBatch, "log:a").unwrap();
        assert_eq!(m.id, again.id);
        let err = load(ExecutionMode::MicroBatch, "log:b").unwrap_err();
        assert!(
            err.to_string()
                .contains("was written for source(s) [log:a], not [log:b]")
        );
        let err = load(ExecutionMode::Continuous, "log:a").unwrap_err();
        assert!(err.to_string().contains("written in micro-batch mode"));
    }

    #[test]
    fn prune_keeps_the_newest_entries() {
        let dir = tempfile::tempdir().unwrap();
        let s = LocalCheckpointStore::open(dir.path()).unwrap();
        for n in 0..10 {
            s.write(&offsets_path(n), &entry(n, 0, 0)).unwrap();
            s.write(&commits_path(n), &commit(n)).unwrap();
        }
        prune(&s, 9, 3).unwrap();
        assert_eq!(s.list_numbered("offsets").unwrap(), vec![7, 8, 9]);
        assert_eq!(s.list_numbered("commits").unwrap(), vec![7, 8, 9]);
    }
}
