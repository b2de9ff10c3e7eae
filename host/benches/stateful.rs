//! W2 (issue 6): the W1 input (1 M JSON records, 1,000 keys,
//! `{"id","key":"user-<i%1000>","value":<100 chars>,"ts"}`), windowed count
//! per key over 10-second tumbling windows on `ts` with a 1-second
//! watermark delay, append mode, through the `window_count` guest with the
//! engine's guard, as `weir run` wires it. Both modes read the same
//! embedded-log topic (4 partitions, keyed by `key`: state is per
//! partition) and write to an embedded-log topic. In the same run, the
//! stateless `uppercase` guest over the same records gives the baseline, so
//! the printed ratio is the cost of state and event time.
//!
//! Reports records/s, output windows, and peak state memory (the largest
//! `memoryUsedBytes` in progress, summed over partitions).
//!
//! Last, the micro-batch W2 with state in memory and on disk (redb), side
//! by side.
//!
//! Run: cargo bench -p weir --bench stateful

#[path = "../../tests/e2e/testkit.rs"]
mod testkit;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weir::connectors::log_sink::LogSink;
use weir::connectors::log_source::{LogSource, StartingOffsets};
use weir::engine::state::{
    EventTimeOptions, LatePolicy, StateBackend, StateFileOptions, StatefulOptions,
};
use weir::engine::{
    ContinuousOptions, ContinuousQuery, Guarded, LocalCheckpointStore, MicroBatchQuery, Progress,
    QueryOptions, RecordBatch, RecordLimits, Sink, Source, Transform, TransformError,
    TransformFactory, Trigger,
};
use weir::log::Topic;
use weir::runtime::{CallMode, Limits, WasmTransform};

const RECORDS: usize = 1_000_000;
const PARTITIONS: u32 = 4;

fn factory(guest: &str, config: Vec<(String, String)>) -> Box<dyn TransformFactory> {
    let rt = testkit::runtime();
    let component = rt.load(&testkit::guest(guest), &[]).expect("load guest");
    Box::new(
        move |_: usize, task: u32| -> Result<Box<dyn Transform>, TransformError> {
            let guest = WasmTransform::new(
                &component,
                config.clone(),
                Limits::default(),
                &format!("task-{task}"),
                CallMode::Batch,
            )?;
            Ok(Box::new(Guarded::new(
                Box::new(guest),
                RecordLimits::default(),
            )))
        },
    )
}

/// The W1 records in topic `in`, partitioned by key.
fn input(log: &std::path::Path) {
    let mut t = Topic::create(log, "in", PARTITIONS).unwrap();
    Topic::create(log, "out", PARTITIONS).unwrap();
    let value: String = (0..100).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for chunk in 0..10 {
        let mut parts: Vec<RecordBatch> = (0..PARTITIONS).map(RecordBatch::new).collect();
        for i in chunk * RECORDS / 10..(chunk + 1) * RECORDS / 10 {
            let key = i % 1000;
            let ts = now + i as i64;
            let v =
                format!(r#"{{"id": {i}, "key": "user-{key}", "value": "{value}", "ts": {ts}}}"#);
            parts[key % PARTITIONS as usize].push(None, v.as_bytes(), ts, 0);
        }
        t.append(None, &parts, || {}).unwrap();
    }
}

fn state_options(stateful: bool, disk: bool) -> StatefulOptions {
    let mut files = StateFileOptions::default();
    if disk {
        files.backend = StateBackend::Disk;
    }
    StatefulOptions {
        stateful,
        files,
        event_time: Some(EventTimeOptions {
            field: Some("ts".into()),
            delay: Duration::from_secs(1),
            late: LatePolicy::Drop,
            idle_timeout: None,
        }),
        ..StatefulOptions::default()
    }
}

struct Outcome {
    seconds: f64,
    output: u64,
    peak_state: u64,
}

fn run(continuous: bool, stateful: bool, disk: bool) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    input(&log);
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![(
        None,
        Box::new(LogSink::open(log.clone(), "out", "default", None).unwrap()),
    )];
    let store = Arc::new(LocalCheckpointStore::open(dir.path().join("ckpt")).unwrap());
    let f = if stateful {
        factory("window_count", vec![("size".into(), "10s".into())])
    } else {
        factory("uppercase", vec![])
    };
    let mut peak_state = 0;
    let mut on_progress = |p: &Progress| {
        if let Some(op) = p.state_operators.first() {
            peak_state = peak_state.max(op.memory_used_bytes);
        }
    };
    let started = Instant::now();
    let summary = if continuous {
        let source =
            Box::new(LogSource::open(log.clone(), "in", None, StartingOffsets::Earliest).unwrap());
        let options = ContinuousOptions {
            checkpoint_interval: Duration::from_millis(100),
            max_chunk: 4096,
            exit_when_idle: Some(Duration::from_millis(300)),
            state: state_options(stateful, disk),
            ..ContinuousOptions::default()
        };
        let mut q = ContinuousQuery::new(store, source, f, sinks, options).unwrap();
        q.run(&mut on_progress).unwrap()
    } else {
        let sources: Vec<Box<dyn Source>> = vec![Box::new(
            LogSource::open(log.clone(), "in", Some(200_000), StartingOffsets::Earliest).unwrap(),
        )];
        let options = QueryOptions {
            trigger: Trigger::AvailableNow,
            state: state_options(stateful, disk),
            ..QueryOptions::default()
        };
        let mut q = MicroBatchQuery::new(store, sources, f, sinks, options).unwrap();
        q.run(&mut on_progress).unwrap()
    };
    let mut seconds = started.elapsed().as_secs_f64();
    if continuous {
        // The idle wait that ends the run is not processing time.
        seconds -= 0.3;
    }
    assert_eq!(summary.input_rows, RECORDS as u64);
    Outcome {
        seconds,
        output: summary.output_rows,
        peak_state,
    }
}

fn main() {
    for continuous in [false, true] {
        let mode = if continuous {
            "continuous (100 ms epochs)"
        } else {
            "micro-batch (200 k batches)"
        };
        let base = run(continuous, false, false);
        let w2 = run(continuous, true, false);
        println!(
            "W2 {mode}: {:.0} rec/s ({:.2} s), {} windows out, peak state {:.1} KiB; stateless uppercase on the same input {:.0} rec/s; W2 / stateless = {:.0}%",
            RECORDS as f64 / w2.seconds,
            w2.seconds,
            w2.output,
            w2.peak_state as f64 / 1024.0,
            RECORDS as f64 / base.seconds,
            100.0 * base.seconds / w2.seconds
        );
    }
    let memory = run(false, true, false);
    let disk = run(false, true, true);
    println!(
        "W2 micro-batch, state backend: memory {:.0} rec/s, disk (redb) {:.0} rec/s; disk / memory = {:.0}%",
        RECORDS as f64 / memory.seconds,
        RECORDS as f64 / disk.seconds,
        100.0 * memory.seconds / disk.seconds
    );
}
