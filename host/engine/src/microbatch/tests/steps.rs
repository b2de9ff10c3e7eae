//! The loop a step at a time, as an executor that parks idle queries
//! drives it: a step runs at most one batch and says what comes next.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::*;
use crate::microbatch::{Step, Wait};

fn store(dir: &std::path::Path) -> Arc<LocalCheckpointStore> {
    Arc::new(LocalCheckpointStore::open(dir).unwrap())
}

#[test]
fn a_step_runs_one_batch_then_waits_for_data_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let topic = records(25);
    let sink = MemorySink::default();
    let mut q = MicroBatchQuery::new(
        store(dir.path()),
        vec![Box::new(
            topic.source("records").max_records_per_trigger(10),
        )],
        upper(Duration::ZERO),
        vec![(None, Box::new(sink.clone()))],
        QueryOptions::default(),
    )
    .unwrap();
    let mut sizes = Vec::new();
    for _ in 0..3 {
        let step = q.step(&mut |p| sizes.push(p.num_input_rows)).unwrap();
        assert!(matches!(step, Step::Ran));
    }
    assert_eq!(sizes, [10, 10, 5]);
    // Idle: each step returns at once, counting the empty looks.
    for polls in 0..3 {
        let started = Instant::now();
        match q.step(&mut |_| panic!("no batch")).unwrap() {
            Step::Wait(Wait::ForData { polls: p }) => assert_eq!(p, polls),
            _ => panic!("expected a wait for data"),
        }
        assert!(started.elapsed() < Duration::from_millis(500));
    }
    topic.append(0, "late");
    assert!(matches!(q.step(&mut |_| {}).unwrap(), Step::Ran));
    assert_eq!(sink.values().last().unwrap(), "LATE");
    q.stop_handle().store(true, Ordering::Relaxed);
    match q.step(&mut |_| {}).unwrap() {
        Step::Finished(s) => assert_eq!((s.batches, s.input_rows), (4, 26)),
        _ => panic!("expected the stop to finish the run"),
    }
}

#[test]
fn a_processing_time_step_says_when_the_next_batch_is_due() {
    let dir = tempfile::tempdir().unwrap();
    let interval = Duration::from_millis(300);
    let topic = records(5);
    let mut q = MicroBatchQuery::new(
        store(dir.path()),
        vec![Box::new(topic.source("records"))],
        upper(Duration::ZERO),
        vec![(None, Box::new(MemorySink::default()))],
        QueryOptions {
            trigger: Trigger::ProcessingTime(interval),
            ..QueryOptions::default()
        },
    )
    .unwrap();
    let started = Instant::now();
    assert!(matches!(q.step(&mut |_| {}).unwrap(), Step::Ran));
    topic.append(0, "more");
    // Data is there, but the interval is not over: no batch before it.
    let Step::Wait(Wait::Until(due)) = q.step(&mut |_| panic!("early")).unwrap() else {
        panic!("expected the interval's end");
    };
    assert!(due >= started + interval - Duration::from_millis(5));
    assert!(due <= Instant::now() + interval);
    let Step::Wait(Wait::Until(again)) = q.step(&mut |_| panic!("early")).unwrap() else {
        panic!("still the interval's end");
    };
    assert_eq!(again, due);
    std::thread::sleep(due.saturating_duration_since(Instant::now()));
    let mut rows = 0;
    assert!(matches!(
        q.step(&mut |p| rows += p.num_input_rows).unwrap(),
        Step::Ran
    ));
    assert_eq!(rows, 1);
}

/// Counts the records it sees as the guest SDKs' counters do.
struct Counting {
    seen: u64,
}

impl Transform for Counting {
    fn process_batch(
        &mut self,
        input: &RecordBatch,
    ) -> Result<crate::TransformOutput, TransformError> {
        let mut out = crate::OutputBatch::default();
        for (i, r) in input.iter().enumerate() {
            out.push(i as u32, None, None, Some(r.value), &[], r.timestamp);
        }
        self.seen += input.len() as u64;
        Ok(crate::TransformOutput {
            batch: out,
            ..Default::default()
        })
    }

    fn reported_metrics(&self) -> crate::progress::TransformMetrics {
        let mut m = crate::progress::TransformMetrics::default();
        m.counters.insert("seen".into(), self.seen);
        m.gauges.insert("live".into(), 1.0);
        m
    }
}

#[test]
fn an_idle_query_lets_its_instances_go_and_keeps_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let topic = records(3);
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let factory = {
        let made = made.clone();
        Box::new(
            move |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
                made.fetch_add(1, Ordering::Relaxed);
                Ok(Box::new(Counting { seen: 0 }))
            },
        )
    };
    let mut q = MicroBatchQuery::new(
        store(dir.path()),
        vec![Box::new(topic.source("records"))],
        factory,
        vec![(None, Box::new(MemorySink::default()))],
        QueryOptions {
            idle: crate::IdleWait {
                retire: Duration::ZERO,
                ..crate::IdleWait::default()
            },
            ..QueryOptions::default()
        },
    )
    .unwrap();
    let mut last = None;
    assert!(matches!(
        q.step(&mut |p| last = Some(p.transform_metrics.clone()))
            .unwrap(),
        Step::Ran
    ));
    assert_eq!(made.load(Ordering::Relaxed), 1);
    assert!(matches!(q.step(&mut |_| {}).unwrap(), Step::Wait(_)));
    assert!(
        q.transforms.is_empty(),
        "the idle query let its instance go"
    );
    topic.append(0, "one more");
    assert!(matches!(
        q.step(&mut |p| last = Some(p.transform_metrics.clone()))
            .unwrap(),
        Step::Ran
    ));
    assert_eq!(made.load(Ordering::Relaxed), 2, "made again on data");
    let m = last.unwrap();
    assert_eq!(m.counters["seen"], 4, "the first instance's count is kept");
    assert_eq!(m.gauges["live"], 1.0, "only the live instance's gauge");
}
