//! Pipeline benchmarks (issue 3), in-process with the same wiring `weir run`
//! uses:
//!
//! - W1: 1 M JSON records in 8 JSON-lines files, guest parses JSON,
//!   uppercases `value`, writes JSON; file source -> file sink, exactly-once,
//!   AvailableNow. Reports records/s.
//! - Latency: 1,000 records/s appended to the embedded log, default trigger,
//!   uppercase guest, embedded-log sink; time from append to visible
//!   (committed) in the sink, p50 / p99 / max.
//!
//! Run: cargo bench -p weir --bench pipeline

#[path = "../../tests/e2e/testkit.rs"]
mod testkit;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weir::connectors::file_sink::{FileFormat, FileSink};
use weir::connectors::file_source::{FileSource, LineFormat};
use weir::connectors::log_sink::LogSink;
use weir::connectors::log_source::{LogSource, StartingOffsets};
use weir::engine::{
    LocalCheckpointStore, MicroBatchQuery, QueryOptions, RecordBatch, Sink, Source, Transform,
    TransformError, TransformFactory, Trigger,
};
use weir::log::Topic;
use weir::runtime::{CallMode, Limits, WasmTransform};

fn wasm_factory(guest: &str, config: Vec<(String, String)>) -> Box<dyn TransformFactory> {
    let rt = testkit::runtime();
    let component = rt.load(&testkit::guest(guest), &[]).expect("load guest");
    Box::new(
        move |_: usize, task: u32| -> Result<Box<dyn Transform>, TransformError> {
            Ok(Box::new(WasmTransform::new(
                &component,
                config.clone(),
                Limits::default(),
                &format!("task-{task}"),
                CallMode::Batch,
            )?))
        },
    )
}

fn w1() {
    const RECORDS: usize = 1_000_000;
    const FILES: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    let value: String = (0..100).map(|i| (b'a' + (i % 26) as u8) as char).collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    for f in 0..FILES {
        let mut w = std::io::BufWriter::new(
            std::fs::File::create(input.join(format!("part-{f}.jsonl"))).unwrap(),
        );
        for i in (f..RECORDS).step_by(FILES) {
            writeln!(
                w,
                r#"{{"id": {i}, "key": "user-{}", "value": "{value}", "ts": {}}}"#,
                i % 1000,
                now + i as u128
            )
            .unwrap();
        }
    }
    let sources: Vec<Box<dyn Source>> =
        vec![Box::new(FileSource::new(input, LineFormat::Json, None))];
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![(
        None,
        Box::new(FileSink::new(dir.path().join("out"), FileFormat::Values)),
    )];
    let factory = wasm_factory("json_enrich", vec![("uppercase".into(), "value".into())]);
    let store = Arc::new(LocalCheckpointStore::open(dir.path().join("ckpt")).unwrap());
    let options = QueryOptions {
        trigger: Trigger::AvailableNow,
        ..QueryOptions::default()
    };
    let started = Instant::now();
    let mut q = MicroBatchQuery::new(store, sources, factory, sinks, options).unwrap();
    let summary = q.run(&mut |_| {}).unwrap();
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(summary.output_rows, RECORDS as u64);
    let sample = weir::connectors::file_sink::read_committed(&dir.path().join("out")).unwrap();
    assert_eq!(sample.len(), RECORDS);
    println!(
        "W1: {RECORDS} JSON records, {FILES} files -> json_enrich(uppercase=value) -> file sink, AvailableNow: {:.2} s, {:.0} k rec/s ({} batch(es))",
        secs,
        RECORDS as f64 / secs / 1e3,
        summary.batches
    );
}

fn latency(rate: u64, seconds: u64) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    Topic::create(&log, "in", 1).unwrap();
    Topic::create(&log, "out", 1).unwrap();
    let sources: Vec<Box<dyn Source>> = vec![Box::new(
        LogSource::open(log.clone(), "in", None, StartingOffsets::Earliest).unwrap(),
    )];
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![(
        None,
        Box::new(LogSink::open(log.clone(), "out", "default", None).unwrap()),
    )];
    let store = Arc::new(LocalCheckpointStore::open(dir.path().join("ckpt")).unwrap());
    let mut q = MicroBatchQuery::new(
        store,
        sources,
        wasm_factory("uppercase", vec![]),
        sinks,
        QueryOptions::default(),
    )
    .unwrap();
    let stop = q.stop_handle();
    let engine = std::thread::spawn(move || q.run(&mut |_| {}).unwrap());

    let epoch = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let producer = {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || {
            let mut t = Topic::open(&log, "in").unwrap();
            let total = rate * seconds;
            for i in 0..total {
                let due = Duration::from_nanos(i * 1_000_000_000 / rate);
                if let Some(wait) = due.checked_sub(epoch.elapsed()) {
                    std::thread::sleep(wait);
                }
                let mut b = RecordBatch::new(0);
                let sent = epoch.elapsed().as_micros() as u64;
                b.push(None, format!("{sent:020}").as_bytes(), 0, 0);
                t.append(None, &[b], || {}).unwrap();
            }
            done.store(true, Ordering::Relaxed);
        })
    };
    let mut hist = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let mut t = Topic::open(&log, "out").unwrap();
    let mut pos = 0;
    let total = rate * seconds;
    while pos < total {
        let end = t.committed_ends().unwrap()[0];
        if end > pos {
            let now = epoch.elapsed().as_micros() as u64;
            let mut b = RecordBatch::new(0);
            t.read(0, pos, end, &mut b).unwrap();
            for r in b.iter() {
                let sent: u64 = std::str::from_utf8(r.value).unwrap().parse().unwrap();
                hist.record(now.saturating_sub(sent)).unwrap();
            }
            pos = end;
        } else {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    producer.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    engine.join().unwrap();
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "latency at {rate} rec/s for {seconds} s (append -> committed in sink), default trigger: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        ms(0.5),
        ms(0.99),
        ms(0.999),
        hist.max() as f64 / 1000.0
    );
}

fn main() {
    let only = std::env::var("WEIR_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "w1" {
        w1();
    }
    if only.is_empty() || only == "latency" {
        latency(1_000, 20);
    }
}
