//! Event time, state and timers through the micro-batch engine with a
//! native stateful transform (a tumbling-window count).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::LocalCheckpointStore;
use crate::exchange::{Partitioning, StateKey};
use crate::state::{
    EventTimeOptions, FiredTimers, LatePolicy, StateContext, StatefulOptions, TimeDomain,
    WatermarkRule,
};
use crate::testing::{ManualClock, MemorySink, MemoryTopic, TopicSource};
use crate::{
    Clock, MicroBatchQuery, QueryOptions, RecordBatch, Transform, TransformError, TransformOutput,
    Trigger,
};

const SIZE: i64 = 10;

/// Counts records per key in 10 ms tumbling windows; emits `key:end:count`
/// when the watermark closes a window.
struct WindowCount;

impl Transform for WindowCount {
    fn process_batch(&mut self, _: &RecordBatch) -> Result<TransformOutput, TransformError> {
        Err(TransformError::Fatal("stateful only".into()))
    }

    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        for r in input.iter() {
            let v: serde_json::Value = serde_json::from_slice(r.value).unwrap();
            let end = (r.timestamp / SIZE + 1) * SIZE;
            let key = format!("{end:08}:{}", v["k"].as_str().unwrap());
            let n = ctx.state.get(key.as_bytes()).map_or(0, |b| b[0]);
            ctx.state.put(key.as_bytes(), vec![n + 1]);
            ctx.state
                .register_timer(TimeDomain::EventTime, key.as_bytes(), end);
        }
        Ok(TransformOutput::default())
    }

    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let mut out = TransformOutput::default();
        for (i, r) in fired.batch.iter().enumerate() {
            let key = r.key.unwrap();
            let n = ctx.state.get(key).map_or(0, |b| b[0]);
            ctx.state.delete(key);
            let v = format!("{}={n}", String::from_utf8_lossy(key));
            out.batch
                .push(i as u32, None, None, Some(v.as_bytes()), &[], r.timestamp);
        }
        Ok(out)
    }
}

fn events() -> Vec<String> {
    // Event times 0..60 over keys a/b, one late record (ts 1) near the end.
    let mut v: Vec<String> = (0..60)
        .map(|i| {
            format!(
                r#"{{"k":"{}","ts":{i}}}"#,
                if i % 3 == 0 { "a" } else { "b" }
            )
        })
        .collect();
    v.insert(50, r#"{"k":"a","ts":1}"#.into());
    v
}

/// The windows the final watermark (59 - 5 = 54) closes: ends 10..=50.
fn expected() -> Vec<String> {
    let mut counts: BTreeMap<String, u8> = BTreeMap::new();
    for i in 0..50i64 {
        let k = if i % 3 == 0 { "a" } else { "b" };
        *counts
            .entry(format!("{:08}:{k}", (i / SIZE + 1) * SIZE))
            .or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect()
}

fn query(dir: &std::path::Path, sink: &MemorySink, trigger: Trigger) -> MicroBatchQuery {
    let source = MemoryTopic::with(vec![events()])
        .source("events")
        .max_records_per_trigger(7);
    let event_time = EventTimeOptions {
        field: Some("ts".into()),
        source_fields: Default::default(),
        delay: Duration::from_millis(5),
        late: LatePolicy::Drop,
        idle_timeout: None,
        rule: Default::default(),
    };
    window_query(dir, source, sink, trigger, event_time, Clock::system())
}

/// The window count of `source`'s `k` per 10 ms of event time `ts`.
fn window_query(
    dir: &std::path::Path,
    source: TopicSource,
    sink: &MemorySink,
    trigger: Trigger,
    event_time: EventTimeOptions,
    clock: Clock,
) -> MicroBatchQuery {
    let store = Arc::new(LocalCheckpointStore::open(dir).unwrap());
    let factory = |_: usize, _: u32| -> Result<Box<dyn Transform>, TransformError> {
        Ok(Box::new(WindowCount))
    };
    let state = StatefulOptions {
        stateful: true,
        event_time: Some(event_time),
        partitioning: Partitioning {
            key: StateKey::Field(vec!["k".into()]),
            partitions: 3,
            ..Partitioning::default()
        },
        clock,
        ..Default::default()
    };
    MicroBatchQuery::new(
        store,
        vec![Box::new(source)],
        Box::new(factory),
        vec![(None, Box::new(sink.clone()))],
        QueryOptions {
            trigger,
            state,
            ..QueryOptions::default()
        },
    )
    .unwrap()
}

fn output(sink: &MemorySink) -> Vec<String> {
    let mut v = sink.values();
    v.sort();
    v
}

#[test]
fn windows_close_exactly_once_with_the_watermark_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::default();
    let mut progress = Vec::new();
    query(dir.path(), &sink, Trigger::AvailableNow)
        .run(&mut |p| progress.push(p.clone()))
        .unwrap();
    assert_eq!(output(&sink), expected());
    let last = progress.last().unwrap();
    assert_eq!(
        last.num_input_rows, 0,
        "a no-data batch closes the last windows"
    );
    let ops = &progress[progress.len() - 2].state_operators[0];
    let dropped: u64 = progress
        .iter()
        .map(|p| p.state_operators[0].num_rows_dropped_by_watermark)
        .sum();
    assert_eq!(dropped, 1, "the late record is dropped and counted");
    assert!(
        ops.num_rows_total > 0 && ops.memory_used_bytes > 0,
        "{ops:?}"
    );
    assert_eq!(
        progress[1].event_time["watermark"], "1970-01-01T00:00:00.001Z",
        "batch 1 runs with max(0..7) - 5"
    );

    // Stop after every batch and start again: the state and the watermark
    // come back from the checkpoint, and the output is the same, once.
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::default();
    for _ in 0..20 {
        let mut q = query(dir.path(), &sink, Trigger::AvailableNow);
        let stop = q.stop_handle();
        q.run(&mut |_| stop.store(true, std::sync::atomic::Ordering::Relaxed))
            .unwrap();
    }
    assert_eq!(output(&sink), expected());
}

/// `{"k":..,"ts":..}` records for event times `times`, keys a/b as in
/// [`events`].
fn events_at(times: std::ops::Range<i64>) -> Vec<String> {
    times
        .map(|i| {
            let k = if i % 3 == 0 { "a" } else { "b" };
            format!(r#"{{"k":"{k}","ts":{i}}}"#)
        })
        .collect()
}

/// The window count over `topic` with the slowest partition holding the
/// watermark back unless it has been silent for an hour of `clock`.
fn idle_query(
    dir: &std::path::Path,
    topic: &MemoryTopic,
    sink: &MemorySink,
    clock: &ManualClock,
) -> MicroBatchQuery {
    let event_time = EventTimeOptions {
        field: Some("ts".into()),
        source_fields: Default::default(),
        delay: Duration::from_millis(5),
        late: LatePolicy::Drop,
        idle_timeout: Some(Duration::from_secs(3600)),
        rule: WatermarkRule::SlowestPartition,
    };
    let source = topic.source("events");
    window_query(
        dir,
        source,
        sink,
        Trigger::AvailableNow,
        event_time,
        clock.clock(),
    )
}

#[test]
fn a_partition_silent_past_the_idle_timeout_stops_holding_the_watermark_back() {
    let dir = tempfile::tempdir().unwrap();
    let sink = MemorySink::default();
    let clock = ManualClock::at(1_000_000);
    // Partition 1 says one thing at event time 0 and falls silent.
    let topic = MemoryTopic::with(vec![events_at(0..30), vec![r#"{"k":"a","ts":0}"#.into()]]);
    let run = || {
        idle_query(dir.path(), &topic, &sink, &clock)
            .run(&mut |_| {})
            .unwrap()
    };
    run();
    assert_eq!(
        output(&sink),
        Vec::<String>::new(),
        "partition 1 holds it at 0 - 5"
    );

    // 59 minutes of silence are not an hour: still held back.
    topic.extend(0, events_at(30..40));
    clock.advance(Duration::from_secs(59 * 60));
    run();
    assert_eq!(output(&sink), Vec::<String>::new(), "{:?}", sink.batches());

    // Past the hour partition 1 no longer counts: the watermark is
    // partition 0's 49 - 5, closing the windows that end by 40, with
    // partition 1's record in its window.
    topic.extend(0, events_at(40..50));
    clock.advance(Duration::from_secs(2 * 60));
    run();
    let mut counts: BTreeMap<String, u8> = BTreeMap::new();
    for i in (0..40).chain([0]) {
        let k = if i % 3 == 0 { "a" } else { "b" };
        *counts
            .entry(format!("{:08}:{k}", (i / SIZE + 1) * SIZE))
            .or_default() += 1;
    }
    let expected: Vec<String> = counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
    assert_eq!(output(&sink), expected);
}
