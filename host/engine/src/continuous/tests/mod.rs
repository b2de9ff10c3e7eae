//! Epoch ordering and slow-partition behaviour, with native transforms and an
//! in-memory two-partition source.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::coordinate::all_ran_with;
use super::*;
use crate::batch::RecordBatch;
use crate::checkpoint::LocalCheckpointStore;
use crate::connector::{ConnectorError, PartitionReader};
use crate::transform::{FnTransform, TransformError};
use crate::{OutputBatch, SinkBatch};

type Partitions = Arc<Vec<Mutex<Vec<String>>>>;

struct MemSource(Partitions);

struct MemReader(Partitions, u32);

impl PartitionReader for MemReader {
    fn read(
        &mut self,
        from: u64,
        until: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, ConnectorError> {
        let data = self.0[self.1 as usize].lock().unwrap();
        let to = data
            .len()
            .min((from as usize).saturating_add(max))
            .min(until as usize);
        for i in from as usize..to {
            out.push(None, data[i].as_bytes(), 0, i as i64);
        }
        Ok(to.max(from as usize) as u64)
    }

    /// Woken by new records (looked for every millisecond), so tasks may
    /// go quiet.
    fn wait_for_data(&mut self, timeout: Duration) -> bool {
        let start = Instant::now();
        let len = || self.0[self.1 as usize].lock().unwrap().len();
        let seen = len();
        while start.elapsed() < timeout && len() == seen {
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }
}

impl ContinuousSource for MemSource {
    fn description(&self) -> String {
        "mem".into()
    }
    fn partition_count(&self) -> u32 {
        self.0.len() as u32
    }
    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
        Ok(vec![0; self.0.len()])
    }
    fn reader(&self, partition: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
        Ok(Box::new(MemReader(self.0.clone(), partition)))
    }
    fn positions(&self, offset: &crate::Offset) -> Result<Vec<u64>, ConnectorError> {
        Ok(offset
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect())
    }
}

/// Every committed batch id with its values.
type Batches = Arc<Mutex<Vec<(u64, Vec<String>)>>>;

#[derive(Clone, Default)]
struct Committed(Batches);

impl Sink for Committed {
    fn description(&self) -> String {
        "committed".into()
    }
    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let rows: Vec<String> = batch
            .records()
            .map(|o| String::from_utf8_lossy(o.value).into_owned())
            .collect();
        let n = rows.len() as u64;
        self.0.lock().unwrap().push((batch_id, rows));
        Ok(n)
    }
}

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
                    for r in input.iter() {
                        out.values.extend_from_slice(r.value);
                        out.value_ends.push(out.values.len() as u32);
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
    parts: Partitions,
    transforms: Box<dyn TransformFactory>,
    sink: &Committed,
    options: ContinuousOptions,
) -> ContinuousQuery {
    query_on(dir, Box::new(MemSource(parts)), transforms, sink, options)
}

/// A query over `source` into `sink`, checkpointed in `dir`.
fn query_on(
    dir: &std::path::Path,
    source: Box<dyn ContinuousSource>,
    transforms: Box<dyn TransformFactory>,
    sink: &Committed,
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

fn data(n: usize) -> Partitions {
    Arc::new(
        (0..2)
            .map(|p| Mutex::new((0..n).map(|i| format!("p{p}-{i}")).collect()))
            .collect(),
    )
}

#[test]
fn epochs_commit_in_order_with_contiguous_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let parts = data(2000);
    let sink = Committed::default();
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
    let committed: Vec<u64> = sink.0.lock().unwrap().iter().map(|(b, _)| *b).collect();
    assert_eq!(committed, ids, "the sink saw the same epochs, in order");
    let all: usize = sink.0.lock().unwrap().iter().map(|(_, r)| r.len()).sum();
    assert_eq!(all, 4000);
    // Per partition, records arrive in order across epochs.
    let rows: Vec<String> = sink
        .0
        .lock()
        .unwrap()
        .iter()
        .flat_map(|(_, r)| r.clone())
        .collect();
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
    let sink = Committed::default();
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
    let epochs = sink.0.lock().unwrap();
    // Each partition stops after the chunk that reaches 4 KiB: at most
    // 4 KiB (records take 28 bytes or more) plus one chunk of 64 records a
    // partition, although a task that is behind reads larger chunks.
    let most = epochs.iter().map(|(_, r)| r.len()).max().unwrap();
    assert!(most <= 2 * (4096 / 28 + 64), "an epoch held {most} records");
    let all: usize = epochs.iter().map(|(_, r)| r.len()).sum();
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
    let sink = Committed::default();
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
    let (epoch, rows) = sink.0.lock().unwrap()[0].clone();
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
                for r in input.iter() {
                    out.values.extend_from_slice(r.value);
                    out.value_ends.push(out.values.len() as u32);
                }
                Ok(())
            },
        )))
    };
    let mut q = ContinuousQuery::new(
        store,
        Box::new(MemSource(data(500))),
        Box::new(factory),
        vec![(None, Box::new(Committed::default()))],
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
        err.contains("task thread for partition 1 of `mem` stopped: partition one gave up"),
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
