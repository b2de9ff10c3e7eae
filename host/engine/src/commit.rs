//! Making one batch (micro-batch) or epoch (continuous) durable, and
//! reporting it. Both modes commit in the one order exactly-once rests on:
//! the ranges written ahead (`offsets/N`), then the output handed to the
//! sinks (idempotent per batch id), then the watermark moved, then
//! `commits/N`, then old entries pruned. A crash before `commits/N` re-runs
//! batch N over the same ranges; after it, N is done. The fault points
//! between the steps are where the SIGKILL tests stop the process.

use std::time::{Duration, Instant};

use super::checkpoint::{CheckpointStore, encode_entry};
use super::connector::Sink;
use super::faults;
use super::options::{EngineError, RunSummary};
use super::output::{Parts, Rejections};
use super::progress::{
    DurationMs, LatencyMs, Progress, SinkProgress, SourceProgress, StateOperatorProgress,
    TransformMetrics,
};
use super::state::Watermark;
use super::tasks::{sinks_description, write_sinks};
use super::wal::{self, CommitEntry, OffsetEntry, commits_path, offsets_path};

/// Where a commit writes: the query's checkpoint and its sinks.
pub(crate) struct Durable<'a> {
    pub store: &'a dyn CheckpointStore,
    pub sinks: &'a mut [(Option<String>, Box<dyn Sink>)],
    /// Batches whose entries are kept (older ones are pruned).
    pub keep_batches: u64,
}

/// Proof that a batch's range is durable ahead of its side effects: the
/// only way to [`Durable::commit`] it.
#[must_use]
pub(crate) struct WrittenAhead {
    batch_id: u64,
    took: Duration,
}

/// A batch as committed: its output rows and how long each step took.
pub(crate) struct Committed {
    pub output_rows: u64,
    /// Writing `offsets/N` ahead.
    pub wal: Duration,
    /// The sinks taking the output.
    pub sinks: Duration,
    /// The watermark, `commits/N` and pruning.
    pub commit: Duration,
}

/// Write batch `entry.batch_id`'s ranges ahead, before anything of the
/// batch touches state or sinks (a re-run's entry exists already).
pub(crate) fn write_ahead(
    store: &dyn CheckpointStore,
    entry: &OffsetEntry,
    rerun: bool,
) -> Result<WrittenAhead, EngineError> {
    let started = Instant::now();
    if !rerun {
        store.create(&offsets_path(entry.batch_id), &encode_entry(entry))?;
    }
    faults::point("after-offsets-write", entry.batch_id);
    Ok(WrittenAhead {
        batch_id: entry.batch_id,
        took: started.elapsed(),
    })
}

impl Durable<'_> {
    /// Commit the batch written ahead: `parts` to the sinks, then
    /// `watermark` asked for the watermark to record with the commit
    /// (event-time queries move it here, once the output is in the sinks).
    pub fn commit(
        self,
        ahead: WrittenAhead,
        parts: &Parts,
        watermark: impl FnOnce() -> Option<Watermark>,
    ) -> Result<Committed, EngineError> {
        let id = ahead.batch_id;

        let started = Instant::now();
        let output_rows = write_sinks(self.sinks, id, parts)?;
        faults::point("after-sink-commit", id);
        let sinks = started.elapsed();

        let started = Instant::now();
        let commit = CommitEntry {
            batch_id: id,
            num_output_rows: output_rows,
            watermark: watermark(),
        };
        self.store
            .create(&commits_path(id), &encode_entry(&commit))?;
        faults::point("after-commit-write", id);
        wal::prune(self.store, id, self.keep_batches)?;
        Ok(Committed {
            output_rows,
            sinks,
            wal: ahead.took,
            commit: started.elapsed(),
        })
    }
}

/// What a mode knows of a committed batch; the report is built from it the
/// same way in both modes.
pub(crate) struct BatchReport<'a> {
    /// The query's id (its checkpoint's) and this run's.
    pub query_id: &'a str,
    pub run_id: &'a str,
    pub batch_id: u64,
    /// When the batch (trigger or epoch) started, ms since the Unix epoch.
    pub timestamp: i64,
    pub input_rows: u64,
    /// From the previous batch's start to this one's: the input rate's
    /// window (Spark's `inputRowsPerSecond`).
    pub since_previous: Duration,
    /// From this batch's start to its commit: the processing rate's.
    pub execution: Duration,
    /// Asking the sources for their latest offsets.
    pub latest_offset: Duration,
    /// Transforming the batch before its commit (a micro-batch's; a
    /// continuous epoch's records were transformed as they came).
    pub processing: Duration,
    pub committed: &'a Committed,
    pub rejected: &'a Rejections,
    pub lag: Option<u64>,
    pub sources: Vec<SourceProgress>,
    pub latency: Option<LatencyMs>,
    pub state_operators: Vec<StateOperatorProgress>,
    pub event_time: std::collections::BTreeMap<String, String>,
    pub transform_metrics: TransformMetrics,
}

impl BatchReport<'_> {
    /// Build the batch's progress, record it as the checkpoint's latest
    /// (`progress`), show it to `on_progress` and count it in `summary`.
    pub fn publish(
        self,
        store: &dyn CheckpointStore,
        sinks: &[(Option<String>, Box<dyn Sink>)],
        on_progress: &mut dyn FnMut(&Progress),
        summary: &mut RunSummary,
    ) -> Result<(), EngineError> {
        let rate = |d: Duration| self.input_rows as f64 / d.as_secs_f64().max(1e-6);
        let ms = |d: Duration| d.as_millis() as u64;
        let c = self.committed;
        let progress = Progress {
            id: self.query_id.to_string(),
            run_id: self.run_id.to_string(),
            batch_id: self.batch_id,
            timestamp: self.timestamp,
            num_input_rows: self.input_rows,
            input_rows_per_second: rate(self.since_previous),
            processed_rows_per_second: rate(self.execution),
            num_rejected_rows: self.rejected.total(),
            rejected_rows_by_kind: self.rejected.by_kind(),
            lag: self.lag,
            duration_ms: DurationMs {
                latest_offset: ms(self.latest_offset),
                wal_commit: ms(c.wal),
                add_batch: ms(self.processing + c.sinks),
                commit: ms(c.commit),
                trigger_execution: ms(self.execution),
            },
            sources: self.sources,
            sink: SinkProgress {
                description: sinks_description(sinks),
                num_output_rows: c.output_rows,
            },
            latency_ms: self.latency,
            state_operators: self.state_operators,
            event_time: self.event_time,
            transform_metrics: self.transform_metrics,
        };
        store.write("progress", &encode_entry(&progress))?;
        on_progress(&progress);
        summary.batches += 1;
        summary.input_rows += self.input_rows;
        summary.output_rows += c.output_rows;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connector::{ConnectorError, SinkBatch};
    use crate::{LocalCheckpointStore, RecordBatch, TransformOutput};

    /// A sink that takes every batch or refuses every one.
    struct Sink1 {
        refuse: bool,
    }

    impl Sink for Sink1 {
        fn description(&self) -> String {
            "test".into()
        }
        fn add_batch(&mut self, _: u64, b: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
            if self.refuse {
                return Err(ConnectorError::new("full"));
            }
            Ok(b.parts.iter().map(|(_, o)| o.batch.len() as u64).sum())
        }
    }

    fn entry(batch_id: u64) -> OffsetEntry {
        OffsetEntry {
            batch_id,
            timestamp_ms: 0,
            sources: vec![],
            watermark: None,
            task_times: Default::default(),
        }
    }

    fn parts(n: usize) -> Parts {
        let mut out = TransformOutput::default();
        for _ in 0..n {
            out.batch.push(0, None, None, Some(b"x"), &[], 0);
        }
        vec![(RecordBatch::new(0), out)]
    }

    #[test]
    fn a_batch_is_committed_only_after_its_sinks_and_written_ahead_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalCheckpointStore::open(dir.path()).unwrap();
        let mut sinks: Vec<(Option<String>, Box<dyn Sink>)> =
            vec![(None, Box::new(Sink1 { refuse: true }))];
        let ahead = write_ahead(&store, &entry(0), false).unwrap();
        assert!(store.read(&offsets_path(0)).unwrap().is_some());
        let durable = Durable {
            store: &store,
            sinks: &mut sinks,
            keep_batches: 10,
        };
        let mut asked = false;
        let refused = durable.commit(ahead, &parts(3), || {
            asked = true;
            None
        });
        assert!(refused.is_err());
        assert!(
            !asked,
            "the watermark moves only once the sinks have the output"
        );
        assert!(store.read(&commits_path(0)).unwrap().is_none());

        sinks[0].1 = Box::new(Sink1 { refuse: false });
        // The re-run keeps the entry written ahead.
        let ahead = write_ahead(&store, &entry(0), true).unwrap();
        let durable = Durable {
            store: &store,
            sinks: &mut sinks,
            keep_batches: 10,
        };
        let done = durable.commit(ahead, &parts(3), || None).unwrap();
        assert_eq!(done.output_rows, 3);
        assert!(store.read(&commits_path(0)).unwrap().is_some());
    }

    #[test]
    fn the_input_rate_counts_from_the_previous_batch_and_the_processing_rate_from_this_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalCheckpointStore::open(dir.path()).unwrap();
        let committed = Committed {
            output_rows: 7,
            wal: Duration::from_millis(1),
            sinks: Duration::from_millis(2),
            commit: Duration::from_millis(3),
        };
        let mut seen = None;
        let mut summary = RunSummary::default();
        BatchReport {
            query_id: "q",
            run_id: "r",
            batch_id: 4,
            timestamp: 0,
            input_rows: 100,
            since_previous: Duration::from_secs(2),
            execution: Duration::from_millis(500),
            latest_offset: Duration::ZERO,
            processing: Duration::from_millis(10),
            committed: &committed,
            rejected: &Rejections::default(),
            lag: None,
            sources: vec![],
            latency: None,
            state_operators: vec![],
            event_time: Default::default(),
            transform_metrics: Default::default(),
        }
        .publish(&store, &[], &mut |p| seen = Some(p.clone()), &mut summary)
        .unwrap();
        let p = seen.unwrap();
        assert_eq!(p.input_rows_per_second, 50.0);
        assert_eq!(p.processed_rows_per_second, 200.0);
        assert_eq!(p.duration_ms.add_batch, 12, "transforming and the sinks");
        assert_eq!(p.duration_ms.trigger_execution, 500);
        assert_eq!((summary.batches, summary.output_rows), (1, 7));
        assert!(store.read("progress").unwrap().is_some());
    }
}
