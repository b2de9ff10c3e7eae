//! Trigger semantics with a native transform over the in-memory harness
//! (`crate::testing`); event time, state and timers in [`stateful`].

mod ahead;
mod stateful;
mod steps;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::RecordBatch;
use crate::Trigger;
use crate::checkpoint::LocalCheckpointStore;
use crate::connector::{ConnectorError, Offset};
use crate::testing::{MemorySink, MemoryTopic, TopicSource};
use crate::transform::{FnTransform, TransformError};

fn upper(delay: Duration) -> Box<dyn TransformFactory> {
    Box::new(
        move |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
            Ok(Box::new(FnTransform(
                move |input: &RecordBatch, out: &mut crate::OutputBatch| {
                    std::thread::sleep(delay);
                    for (i, r) in input.iter().enumerate() {
                        let upper = r.value.to_ascii_uppercase();
                        out.push(i as u32, None, None, Some(&upper), &[], r.timestamp);
                    }
                    Ok(())
                },
            )))
        },
    )
}

/// One partition of `n` records `r0`, `r1`...
fn records(n: usize) -> MemoryTopic {
    MemoryTopic::with(vec![(0..n).map(|i| format!("r{i}")).collect()])
}

/// A source over `n` records taking at most `limit` a batch.
fn source(n: usize, limit: Option<u64>) -> TopicSource {
    let source = records(n).source("records");
    match limit {
        Some(l) => source.max_records_per_trigger(l),
        None => source,
    }
}

fn query(
    dir: &std::path::Path,
    n: usize,
    limit: Option<u64>,
    trigger: Trigger,
    delay: Duration,
) -> (MicroBatchQuery, MemorySink) {
    let sink = MemorySink::default();
    let store = Arc::new(LocalCheckpointStore::open(dir).unwrap());
    let q = MicroBatchQuery::new(
        store,
        vec![Box::new(source(n, limit))],
        upper(delay),
        vec![(None, Box::new(sink.clone()))],
        QueryOptions {
            trigger,
            ..QueryOptions::default()
        },
    )
    .unwrap();
    (q, sink)
}

#[test]
fn once_runs_one_batch_with_everything_ignoring_the_rate_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (mut q, sink) = query(dir.path(), 25, Some(10), Trigger::Once, Duration::ZERO);
    let s = q.run(&mut |_| {}).unwrap();
    assert_eq!((s.batches, s.input_rows), (1, 25));
    assert_eq!(sink.batches()[0].values.len(), 25);
    drop(q); // releases the checkpoint's lock
    // A second Once finds nothing new and stops without a batch.
    let (mut q, _) = query(dir.path(), 25, Some(10), Trigger::Once, Duration::ZERO);
    assert_eq!(q.run(&mut |_| {}).unwrap().batches, 0);
}

#[test]
fn available_now_drains_in_rate_limited_batches_then_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (mut q, sink) = query(
        dir.path(),
        25,
        Some(10),
        Trigger::AvailableNow,
        Duration::ZERO,
    );
    let mut sizes = Vec::new();
    let s = q.run(&mut |p| sizes.push(p.num_input_rows)).unwrap();
    assert_eq!(sizes, vec![10, 10, 5]);
    assert_eq!(s.output_rows, 25);
    assert_eq!(sink.values()[24], "R24");
}

#[test]
fn processing_time_paces_batches() {
    let dir = tempfile::tempdir().unwrap();
    let interval = Duration::from_millis(150);
    let (mut q, _) = query(
        dir.path(),
        30,
        Some(10),
        Trigger::ProcessingTime(interval),
        Duration::ZERO,
    );
    let stop = q.stop_handle();
    let started = Instant::now();
    let mut batches = 0;
    q.run(&mut |_| {
        batches += 1;
        if batches == 3 {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    })
    .unwrap();
    // Three batches, each waiting out its interval: a lower bound only.
    assert!(started.elapsed() >= interval * 2, "{:?}", started.elapsed());
}

#[test]
fn processing_time_starts_the_next_batch_at_once_after_an_overrun() {
    let dir = tempfile::tempdir().unwrap();
    // Each batch takes 4x the interval; the engine must not add a wait.
    let (mut q, _) = query(
        dir.path(),
        30,
        Some(10),
        Trigger::ProcessingTime(Duration::from_millis(50)),
        Duration::from_millis(200),
    );
    let stop = q.stop_handle();
    let mut starts = Vec::new();
    q.run(&mut |p| {
        starts.push(p.timestamp);
        if starts.len() == 3 {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    })
    .unwrap();
    assert_eq!(
        next_wait(Duration::from_millis(200), Duration::from_millis(50)),
        Duration::ZERO
    );
    assert_eq!(
        next_wait(Duration::from_millis(20), Duration::from_millis(50)),
        Duration::from_millis(30)
    );
    assert_eq!(starts.len(), 3);
}

/// A source that counts how often the query asks for its latest offset,
/// and cannot be woken by new data (the trait's defaults).
struct CountingSource(TopicSource, Arc<std::sync::atomic::AtomicU64>);

impl Source for CountingSource {
    fn identity(&self) -> String {
        self.0.identity()
    }
    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        self.0.initial_offset()
    }
    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.latest_offset()
    }
    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        self.0.next_end(start, upto)
    }
    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        self.0.read(start, end)
    }
}

/// How often an idle query over a source that cannot wake it polls in
/// 400 ms, under `trigger`, backing off from 10 to 40 ms.
fn idle_polls(trigger: Trigger) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let polls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let source = CountingSource(source(1, None), polls.clone());
    let mut q = MicroBatchQuery::new(
        Arc::new(LocalCheckpointStore::open(dir.path()).unwrap()),
        vec![Box::new(source)],
        upper(Duration::ZERO),
        vec![(None, Box::new(MemorySink::default()))],
        QueryOptions {
            trigger,
            idle: crate::IdleWait {
                poll: Duration::from_millis(10),
                max_poll: Duration::from_millis(40),
                wake: Duration::from_secs(1),
                ..crate::IdleWait::default()
            },
            ..QueryOptions::default()
        },
    )
    .unwrap();
    let stop = q.stop_handle();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    q.run(&mut |_| {}).unwrap();
    stopper.join().unwrap();
    polls.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn an_idle_query_backs_off_under_the_default_trigger_and_a_zero_interval() {
    // 10 + 20 + 40 + 40 ... ms: about 11 polls in 400 ms; a spin makes
    // thousands.
    for trigger in [Trigger::Default, Trigger::ProcessingTime(Duration::ZERO)] {
        let n = idle_polls(trigger);
        assert!((5..=20).contains(&n), "{trigger:?}: {n} polls in 400 ms");
    }
}

#[test]
fn uncommitted_batch_is_rerun_over_the_same_range() {
    let dir = tempfile::tempdir().unwrap();
    let (mut q, sink) = query(
        dir.path(),
        20,
        Some(10),
        Trigger::AvailableNow,
        Duration::ZERO,
    );
    q.run(&mut |_| {}).unwrap();
    drop(q);
    // Forget batch 1's commit, as if the process died before writing it.
    std::fs::remove_file(dir.path().join("commits/1")).unwrap();
    sink.retain(|id| id == 0);
    let (mut q, _) = query(
        dir.path(),
        30,
        Some(10),
        Trigger::AvailableNow,
        Duration::ZERO,
    );
    let mut ranges = Vec::new();
    q.run(&mut |p| {
        ranges.push((
            p.batch_id,
            p.sources[0].start_offset.clone(),
            p.sources[0].end_offset.clone(),
        ))
    })
    .unwrap();
    assert_eq!(
        ranges[0],
        (1, json!([10]), json!([20])),
        "batch 1 re-runs over its recorded range"
    );
    assert_eq!(ranges[1], (2, json!([20]), json!([30])));
}

/// The checkpoint keeps a source's identity, not its label: a label may be
/// reworded between versions, another source is refused.
#[test]
fn a_reworded_source_label_keeps_the_checkpoint_another_identity_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let topic = records(10);
    let open = |source: TopicSource| {
        MicroBatchQuery::new(
            Arc::new(LocalCheckpointStore::open(dir.path()).unwrap()),
            vec![Box::new(source)],
            upper(Duration::ZERO),
            vec![(None, Box::new(MemorySink::default()))],
            QueryOptions {
                trigger: Trigger::Once,
                ..QueryOptions::default()
            },
        )
    };
    let mut names = Vec::new();
    let mut q = open(
        topic
            .source("records")
            .labelled("records, as labelled before"),
    )
    .unwrap();
    q.run(&mut |p| names.push(p.sources[0].description.clone()))
        .unwrap();
    drop(q);
    topic.append(0, "r10");
    let mut q = open(topic.source("records").labelled("the records, reworded")).unwrap();
    q.run(&mut |p| names.push(p.sources[0].description.clone()))
        .unwrap();
    drop(q);
    assert_eq!(
        names,
        ["records, as labelled before", "the records, reworded"],
        "reports show the label; the checkpoint took the new one"
    );
    let Err(refused) = open(topic.source("other")) else {
        panic!("a checkpoint of another source was taken")
    };
    assert!(refused.to_string().contains("memory:records"), "{refused}");
}
