//! Epoch ordering and slow-partition behaviour, with native transforms over
//! the in-memory harness (`crate::testing`): a two-partition topic.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::coordinate::all_ran_with;
use super::*;
use crate::OutputBatch;
use crate::batch::RecordBatch;
use crate::checkpoint::LocalCheckpointStore;
use crate::connector::{ConnectorError, PartitionReader};
use crate::testing::{MemorySink, MemoryTopic};
use crate::transform::{FnTransform, TransformError};

/// Partition 1 is slow: each of its guest calls takes `slow`. Both record
/// when they finished their last call.
fn factory(slow: Duration, done: Arc<Mutex<[Option<Instant>; 2]>>) -> Box<dyn TransformFactory> {
    Box::new(
        move |_: usize, p: u32| -> Result<Box<dyn Transform>, TransformError> {
            let done = done.clone();
            Ok(Box::new(FnTransform(
                move |input: &RecordBatch, out: &mut OutputBatch| {
                    if p == 1 {
                        std::thread::sleep(slow);
                    }
                    for (i, r) in input.iter().enumerate() {
                        out.push(i as u32, None, None, Some(r.value), &[], r.timestamp);
                    }
                    done.lock().unwrap()[p as usize] = Some(Instant::now());
                    Ok(())
                },
            )))
        },
    )
}

/// A query over `parts` into `sink`, checkpointed in `dir`.
fn query(
    dir: &std::path::Path,
    parts: MemoryTopic,
    transforms: Box<dyn TransformFactory>,
    sink: &MemorySink,
    options: ContinuousOptions,
) -> ContinuousQuery {
    query_on(
        dir,
        Box::new(parts.source("mem")),
        transforms,
        sink,
        options,
    )
}

/// A query over `source` into `sink`, checkpointed in `dir`.
fn query_on(
    dir: &std::path::Path,
    source: Box<dyn ContinuousSource>,
    transforms: Box<dyn TransformFactory>,
    sink: &MemorySink,
    options: ContinuousOptions,
) -> ContinuousQuery {
    let store = Arc::new(LocalCheckpointStore::open(dir).unwrap());
    ContinuousQuery::new(
        store,
        source,
        transforms,
        vec![(None, Box::new(sink.clone()))],
        options,
    )
    .unwrap()
}

/// Two partitions of `n` records each, `p<partition>-<i>`.
fn data(n: usize) -> MemoryTopic {
    MemoryTopic::with(
        (0..2)
            .map(|p| (0..n).map(|i| format!("p{p}-{i}")).collect())
            .collect(),
    )
}

#[test]
fn epochs_commit_in_order_with_contiguous_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let parts = data(2000);
    let sink = MemorySink::default();
    let done = Arc::new(Mutex::new([None, None]));
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        max_chunk: 64,
        exit_when_idle: Some(Duration::from_millis(200)),
        ..ContinuousOptions::default()
    };
    let mut q = query(
        dir.path(),
        parts,
        factory(Duration::ZERO, done),
        &sink,
        options,
    );
    let mut progress = Vec::new();
    let summary = q.run(&mut |p| progress.push(p.clone())).unwrap();
    assert_eq!(summary.input_rows, 4000);
    let ids: Vec<u64> = progress.iter().map(|p| p.batch_id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "epochs commit in increasing order: {ids:?}"
    );
    for w in progress.windows(2) {
        assert_eq!(
            w[0].sources[0].end_offset, w[1].sources[0].start_offset,
            "ranges are contiguous"
        );
    }
    let committed: Vec<u64> = sink.batches().iter().map(|b| b.id).collect();
    assert_eq!(committed, ids, "the sink saw the same epochs, in order");
    let all: usize = sink.batches().iter().map(|b| b.values.len()).sum();
    assert_eq!(all, 4000);
    // Per partition, records arrive in order across epochs.
    let rows = sink.values();
    let p0: Vec<&String> = rows.iter().filter(|r| r.starts_with("p0-")).collect();
    assert!(
        p0.windows(2)
            .all(|w| w[0][3..].parse::<u32>().unwrap() < w[1][3..].parse::<u32>().unwrap())
    );
}

#[test]
fn an_epoch_reads_at_most_max_epoch_bytes_per_partition() {
    let dir = tempfile::tempdir().unwrap();
    let parts = data(20_000);
    let sink = MemorySink::default();
    // Records are about 32 bytes with their columns: 4 KiB is a bit over
    // one 64-record chunk a partition an epoch, so a 20,000-record backlog
    // takes many epochs instead of a few large ones.
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        max_chunk: 64,
        max_epoch_bytes: 4 << 10,
        exit_when_idle: Some(Duration::from_millis(200)),
        ..ContinuousOptions::default()
    };
    let mut q = query(
        dir.path(),
        parts,
        factory(Duration::ZERO, Arc::new(Mutex::new([None, None]))),
        &sink,
        options,
    );
    let summary = q.run(&mut |_| {}).unwrap();
    assert_eq!(summary.input_rows, 40_000);
    let epochs = sink.batches();
    // Each partition stops after the chunk that reaches 4 KiB: at most
    // 4 KiB (records take 28 bytes or more) plus one chunk of 64 records a
    // partition, although a task that is behind reads larger chunks.
    let most = epochs.iter().map(|b| b.values.len()).max().unwrap();
    assert!(most <= 2 * (4096 / 28 + 64), "an epoch held {most} records");
    let all: usize = epochs.iter().map(|b| b.values.len()).sum();
    assert_eq!(all, 40_000);
}

#[test]
fn a_slow_partition_does_not_stall_others_but_holds_back_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let parts = data(100);
    let done = Arc::new(Mutex::new([None, None]));
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        max_chunk: 1000,
        exit_when_idle: Some(Duration::from_millis(200)),
        ..ContinuousOptions::default()
    };
    let sink = MemorySink::default();
    let mut q = query(
        dir.path(),
        parts,
        factory(Duration::from_millis(300), done.clone()),
        &sink,
        options,
    );
    let mut first_commit = None;
    q.run(&mut |_| {
        first_commit.get_or_insert_with(Instant::now);
    })
    .unwrap();
    let [p0, p1] = *done.lock().unwrap();
    let (p0, p1, first_commit) = (p0.unwrap(), p1.unwrap(), first_commit.unwrap());
    // Partition 0 finished its records while partition 1 was still busy...
    assert!(
        p0 < p1,
        "the fast partition was not held up by the slow one"
    );
    // ...but nothing was committed until the slow partition reported.
    assert!(
        first_commit >= p1,
        "the epoch commit waited for the slow partition"
    );
    let first = sink.batches()[0].clone();
    let (epoch, rows) = (first.id, first.values);
    assert_eq!(epoch, 0);
    assert!(rows.iter().any(|r| r.starts_with("p0-")) && rows.iter().any(|r| r.starts_with("p1-")));
}

#[test]
fn a_panicking_task_stops_the_query_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
    let factory = |_: usize, p: u32| -> Result<Box<dyn Transform>, TransformError> {
        Ok(Box::new(FnTransform(
            move |input: &RecordBatch, out: &mut OutputBatch| {
                if p == 1 {
                    panic!("partition one gave up");
                }
                for (i, r) in input.iter().enumerate() {
                    out.push(i as u32, None, None, Some(r.value), &[], r.timestamp);
                }
                Ok(())
            },
        )))
    };
    let mut q = ContinuousQuery::new(
        store,
        Box::new(data(500).source("mem")),
        Box::new(factory),
        vec![(None, Box::new(MemorySink::default()))],
        ContinuousOptions {
            checkpoint_interval: Duration::from_millis(5),
            ..ContinuousOptions::default()
        },
    )
    .unwrap();
    // Without the report the coordinator would wait for partition 1 forever.
    let started = Instant::now();
    let err = q.run(&mut |_| {}).unwrap_err().to_string();
    assert!(
        err.contains("task thread for partition 1 of `memory:mem` stopped: partition one gave up"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn idle_exit_waits_until_every_state_task_ran_with_the_final_watermark() {
    // Partition 0 ran the last epoch with the final watermark, partition 1
    // with the one before: partition 1's due timers have not fired yet.
    assert!(!all_ran_with(&[Some(2_000), Some(1_000)], Some(2_000)));
    assert!(!all_ran_with(&[Some(2_000), None], Some(2_000)));
    assert!(all_ran_with(&[Some(2_000), Some(2_000)], Some(2_000)));
    assert!(all_ran_with(&[None, None], None));
}

mod reading;

/// A process that stalled past its lease and woke after another had taken
/// over wrote ahead an epoch (its ids skip empty epochs, so the id is still
/// ahead of the new owner's) over records the new owner had committed since.
/// The next run must not re-run it: each record stays written once.
#[test]
fn an_epoch_written_ahead_by_a_stalled_earlier_owner_is_not_run_again() {
    use crate::checkpoint::{encode_entry, read_entry};
    use crate::wal::{OffsetEntry, OffsetRange, offsets_path};
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::default();
    let options = || ContinuousOptions {
        checkpoint_interval: Duration::from_millis(5),
        exit_when_idle: Some(Duration::from_millis(200)),
        ..ContinuousOptions::default()
    };
    let done = Arc::new(Mutex::new([None, None]));
    let mut q = query(
        dir.path(),
        data(300),
        factory(Duration::ZERO, done.clone()),
        &sink,
        options(),
    );
    q.run(&mut |_| {}).unwrap();
    drop(q);
    assert_eq!(sink.values().len(), 600);
    // The stalled owner's entry: from where it had read (the start of the
    // first committed epoch) to the end, at an id far ahead.
    let store = LocalCheckpointStore::open(dir.path()).unwrap();
    let commits = store.list_numbered("commits").unwrap();
    let (first, last) = (commits[0], *commits.last().unwrap());
    let read = |n| -> OffsetEntry { read_entry(&store, &offsets_path(n)).unwrap().unwrap() };
    let (from, to) = (read(first), read(last));
    let stale = OffsetEntry {
        batch_id: last + 50,
        sources: from
            .sources
            .iter()
            .zip(&to.sources)
            .map(|(a, b)| OffsetRange {
                start: a.start.clone(),
                end: b.end.clone(),
            })
            .collect(),
        ..to.clone()
    };
    store
        .create(&offsets_path(last + 50), &encode_entry(&stale))
        .unwrap();
    let mut again = query(
        dir.path(),
        data(300),
        factory(Duration::ZERO, done),
        &sink,
        options(),
    );
    let summary = again.run(&mut |_| {}).unwrap();
    assert_eq!(summary.input_rows, 0, "nothing read again: {summary:?}");
    let mut values = sink.values();
    values.sort();
    let n = values.len();
    values.dedup();
    assert_eq!((n, values.len()), (600, 600), "every record once");
    assert!(
        store.read(&offsets_path(last + 50)).unwrap().is_none(),
        "the stale entry is discarded"
    );
}
