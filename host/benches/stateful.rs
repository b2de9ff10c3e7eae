//! W2 (issues 6 and 12): the W1 input (1 M JSON records, 1,000 keys,
//! `{"id","key":"user-<i%1000>","value":<100 chars>,"ts"}`), windowed count
//! per key over 10-second tumbling windows on `ts` with a 1-second
//! watermark delay, append mode, through the `window_count` guest with the
//! engine's guard, as `weir run` wires it, into 4 state partitions. Each
//! mode runs, side by side in one run:
//! - the key exchange over an unkeyed topic (4 partitions, round-robin;
//!   `key-field = "key"`);
//! - the same query over a topic keyed by `key` (weir's murmur2, 4
//!   partitions) without the exchange (`key = "record-key"`,
//!   `exchange = false`: records are only checked, not moved);
//! - the stateless `uppercase` guest over the unkeyed topic, the baseline.
//!
//! Reports records/s, output windows, peak state memory (the largest
//! `memoryUsedBytes` in progress, summed over state partitions) and state
//! bytes per state row at that moment (a row is a key-window's count or a
//! timer).
//!
//! Last, the micro-batch W2 with state in memory and on disk (redb), side
//! by side.
//!
//! Run: cargo bench -p weir --bench stateful

use weir_testkit as testkit;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weir_connectors::log_sink::LogSink;
use weir_connectors::log_source::{LogSource, StartingOffsets};
use weir_engine::exchange::{Partitioning, StateKey};
use weir_engine::state::{
    EventTimeOptions, LatePolicy, StateBackend, StateFileOptions, StatefulOptions, WatermarkRule,
};
use weir_engine::{
    ContinuousOptions, ContinuousQuery, LocalCheckpointStore, MicroBatchQuery, Progress,
    QueryOptions, RecordBatch, Sink, Source, Trigger,
};
use weir_log::Topic;

const RECORDS: usize = 1_000_000;
const PARTITIONS: u32 = 4;

/// The W1 records in topic `in`: keyed by `key` (and partitioned by it),
/// or without keys, round-robin.
fn input(log: &std::path::Path, keyed: bool) {
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
            let k = format!("user-{key}");
            if keyed {
                let p = t.partition_for(k.as_bytes()) as usize;
                parts[p].push(Some(k.as_bytes()), v.as_bytes(), ts, 0);
            } else {
                parts[i % PARTITIONS as usize].push(None, v.as_bytes(), ts, 0);
            }
        }
        t.append(None, &parts, || {}).unwrap();
    }
}

fn state_options(stateful: bool, keyed: bool, disk: bool, continuous: bool) -> StatefulOptions {
    let mut files = StateFileOptions::default();
    if disk {
        files.backend = StateBackend::Disk;
    }
    StatefulOptions {
        stateful,
        files,
        event_time: Some(EventTimeOptions {
            field: Some("ts".into()),
            source_fields: Default::default(),
            delay: Duration::from_secs(1),
            late: LatePolicy::Drop,
            idle_timeout: None,
            // The pipeline defaults of each mode.
            rule: if continuous {
                WatermarkRule::SlowestPartition
            } else {
                WatermarkRule::MaxEventTime
            },
        }),
        partitioning: if keyed {
            Partitioning {
                key: StateKey::RecordKey,
                source_keys: Default::default(),
                partitions: PARTITIONS,
                exchange: false,
            }
        } else {
            Partitioning {
                key: StateKey::Field(vec!["key".into()]),
                source_keys: Default::default(),
                partitions: PARTITIONS,
                exchange: true,
            }
        },
        ..StatefulOptions::default()
    }
}

struct Outcome {
    seconds: f64,
    output: u64,
    peak_state: u64,
    rows_at_peak: u64,
}

fn run(continuous: bool, stateful: bool, keyed: bool, disk: bool) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    input(&log, keyed);
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![(
        None,
        Box::new(LogSink::open(log.clone(), "out", "default", None).unwrap()),
    )];
    let store = Arc::new(LocalCheckpointStore::open(dir.path().join("ckpt")).unwrap());
    let f = if stateful {
        testkit::guarded_guest("window_count", vec![("size".into(), "10s".into())])
    } else {
        testkit::guarded_guest("uppercase", vec![])
    };
    let (mut peak_state, mut rows_at_peak) = (0, 0);
    let mut on_progress = |p: &Progress| {
        if let Some(op) = p.state_operators.first()
            && op.memory_used_bytes > peak_state
        {
            peak_state = op.memory_used_bytes;
            rows_at_peak = op.num_rows_total;
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
            state: state_options(stateful, keyed, disk, continuous),
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
            state: state_options(stateful, keyed, disk, continuous),
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
        rows_at_peak,
    }
}

fn main() {
    weir::allocator::keep_batch_buffers();
    for continuous in [false, true] {
        let mode = if continuous {
            "continuous (100 ms epochs)"
        } else {
            "micro-batch (200 k batches)"
        };
        let base = run(continuous, false, false, false);
        let exchanged = run(continuous, true, false, false);
        let keyed = run(continuous, true, true, false);
        let rate = |o: &Outcome| RECORDS as f64 / o.seconds;
        for (what, o) in [
            ("exchange, unkeyed topic", &exchanged),
            ("keyed topic, no exchange", &keyed),
        ] {
            println!(
                "W2 {mode}, {what}: {:.0} rec/s ({:.2} s), {} windows out, peak state {:.1} KiB over {} rows ({:.0} B/row); W2 / stateless = {:.0}%",
                rate(o),
                o.seconds,
                o.output,
                o.peak_state as f64 / 1024.0,
                o.rows_at_peak,
                o.peak_state as f64 / o.rows_at_peak.max(1) as f64,
                100.0 * base.seconds / o.seconds
            );
        }
        println!(
            "W2 {mode}: stateless uppercase on the same input {:.0} rec/s; exchange / keyed = {:.0}% (the exchange costs {:.0}%)",
            rate(&base),
            100.0 * keyed.seconds / exchanged.seconds,
            100.0 * (exchanged.seconds / keyed.seconds - 1.0)
        );
    }
    let memory = run(false, true, false, false);
    let disk = run(false, true, false, true);
    println!(
        "W2 micro-batch with the exchange, state backend: memory {:.0} rec/s, disk (redb) {:.0} rec/s; disk / memory = {:.0}%",
        RECORDS as f64 / memory.seconds,
        RECORDS as f64 / disk.seconds,
        100.0 * memory.seconds / disk.seconds
    );
}
