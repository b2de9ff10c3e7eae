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

use weir_testkit as testkit;

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use weir_connectors::file_sink::{FileFormat, FileSink};
use weir_connectors::file_source::{FileSource, LineFormat};
use weir_connectors::log_sink::LogSink;
use weir_connectors::log_source::{LogSource, StartingOffsets};
use weir_engine::{
    LocalCheckpointStore, MicroBatchQuery, QueryOptions, RecordBatch, Sink, Source, Trigger,
};
use weir_log::Topic;

/// W1 over `records` records (1 M in the issue; `WEIR_BENCH_W1_RECORDS`
/// runs other sizes, e.g. "1000000,2000000,4000000" to check that memory
/// stays flat and time linear; `WEIR_BENCH_W1_CAP` sets the source's
/// max-bytes-per-trigger in MiB instead of the default). Peak RSS is the process's high-water mark
/// from just before the query starts to just after it ends (reset per
/// size), so neither writing the input nor checking the output counts. The
/// input is synced to disk first.
fn w1(records: usize) {
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
        for i in (f..records).step_by(FILES) {
            writeln!(
                w,
                r#"{{"id": {i}, "key": "user-{}", "value": "{value}", "ts": {}}}"#,
                i % 1000,
                now + i as u128
            )
            .unwrap();
        }
    }
    // The input on disk before the clock starts: otherwise its writeback
    // runs during the query and its fsyncs wait behind it.
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    let mut files = FileSource::new(input, LineFormat::Json, None);
    if let Ok(cap) = std::env::var("WEIR_BENCH_W1_CAP") {
        files = files.with_max_bytes_per_trigger(cap.parse::<u64>().unwrap() << 20);
    }
    let sources: Vec<Box<dyn Source>> = vec![Box::new(files)];
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![(
        None,
        Box::new(FileSink::new(dir.path().join("out"), FileFormat::Values)),
    )];
    let factory = testkit::guarded_guest("json_enrich", vec![("uppercase".into(), "value".into())]);
    let store = Arc::new(LocalCheckpointStore::open(dir.path().join("ckpt")).unwrap());
    let options = QueryOptions {
        trigger: Trigger::AvailableNow,
        ..QueryOptions::default()
    };
    reset_peak_rss();
    let started = Instant::now();
    let mut q = MicroBatchQuery::new(store, sources, factory, sinks, options).unwrap();
    let summary = q.run(&mut |_| {}).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let peak = peak_rss_kb();
    drop(q);
    assert_eq!(summary.output_rows, records as u64);
    let sample = weir_connectors::file_sink::read_committed(&dir.path().join("out")).unwrap();
    assert_eq!(sample.len(), records);
    println!(
        "W1: {records} JSON records, {FILES} files -> json_enrich(uppercase=value) -> file sink, AvailableNow: {:.2} s, {:.0} k rec/s ({} batch(es)), peak RSS {} MB",
        secs,
        records as f64 / secs / 1e3,
        summary.batches,
        peak / 1024
    );
}

/// Reset the process's peak resident set to its current one (Linux
/// `clear_refs` 5).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Append `rate` records/s for `seconds` to `log/in` (in 1 ms chunks, each
/// record stamped with its due time), and measure until each is committed in
/// `log/out`.
fn measure_latency(log: &std::path::Path, rate: u64, seconds: u64) -> hdrhistogram::Histogram<u64> {
    let epoch = Instant::now();
    let producer = {
        let log = log.to_path_buf();
        std::thread::spawn(move || {
            let mut t = Topic::open(&log, "in").unwrap();
            let total = rate * seconds;
            let mut i = 0;
            while i < total {
                std::thread::sleep(Duration::from_millis(1));
                let due_now = (epoch.elapsed().as_nanos() as u64 * rate / 1_000_000_000).min(total);
                let mut b = RecordBatch::new(0);
                while i < due_now {
                    let due = i * 1_000_000 / rate; // microseconds since start
                    b.push(None, format!("{due:020}").as_bytes(), 0, 0);
                    i += 1;
                }
                if !b.is_empty() {
                    t.append(None, &[b], || {}).unwrap();
                }
            }
        })
    };
    let mut hist = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let mut t = Topic::open(log, "out").unwrap();
    let mut pos = 0;
    while pos < rate * seconds {
        let end = t.committed_ends().unwrap()[0];
        if end > pos {
            let now = epoch.elapsed().as_micros() as u64;
            let mut b = RecordBatch::new(0);
            t.read(0, pos, end, &mut b).unwrap();
            for r in b.iter() {
                let due: u64 = std::str::from_utf8(r.value).unwrap().parse().unwrap();
                hist.record(now.saturating_sub(due)).unwrap();
            }
            pos = end;
        } else {
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    producer.join().unwrap();
    hist
}

fn report(label: &str, hist: &hdrhistogram::Histogram<u64>) {
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{label}: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        ms(0.5),
        ms(0.99),
        ms(0.999),
        hist.max() as f64 / 1000.0
    );
}

fn log_pair() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    Topic::create(&log, "in", 1).unwrap();
    Topic::create(&log, "out", 1).unwrap();
    (dir, log)
}

fn latency(rate: u64, seconds: u64) {
    let (dir, log) = log_pair();
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
        testkit::guarded_guest("uppercase", vec![]),
        sinks,
        QueryOptions::default(),
    )
    .unwrap();
    let stop = q.stop_handle();
    let engine = std::thread::spawn(move || q.run(&mut |_| {}).unwrap());
    let hist = measure_latency(&log, rate, seconds);
    stop.store(true, Ordering::Relaxed);
    engine.join().unwrap();
    report(
        &format!(
            "micro-batch latency at {rate} rec/s for {seconds} s (append -> committed in sink), default trigger"
        ),
        &hist,
    );
}

fn continuous_latency(rate: u64, seconds: u64, interval: Duration) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut q = testkit::uppercase_log_query(dir.path(), interval, false);
    let stop = q.stop_handle();
    let commits = Arc::new(std::sync::Mutex::new(Vec::new()));
    let c2 = commits.clone();
    let engine = std::thread::spawn(move || {
        // The commit's steps: the entry ahead, the sinks, `commits/E`.
        q.run(&mut |p| {
            let d = &p.duration_ms;
            c2.lock()
                .unwrap()
                .push(d.wal_commit + d.add_batch + d.commit)
        })
        .unwrap()
    });
    let hist = measure_latency(&log, rate, seconds);
    stop.store(true, Ordering::Relaxed);
    engine.join().unwrap();
    let mut c = commits.lock().unwrap().clone();
    c.sort_unstable();
    let median_commit = c.get(c.len() / 2).copied().unwrap_or(0);
    report(
        &format!(
            "continuous latency at {rate} rec/s for {seconds} s, checkpoint-interval {interval:?} (epoch commit median {median_commit} ms)"
        ),
        &hist,
    );
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let only = std::env::var("WEIR_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "w1" {
        let sizes = std::env::var("WEIR_BENCH_W1_RECORDS").unwrap_or_else(|_| "1000000".into());
        for n in sizes.split(',') {
            w1(n.trim()
                .parse()
                .expect("WEIR_BENCH_W1_RECORDS: record counts"));
        }
    }
    if only.is_empty() || only == "latency" {
        latency(1_000, 20);
    }
    if only.is_empty() || only == "continuous" {
        for rate in [1_000, 10_000, 100_000] {
            continuous_latency(rate, 5, Duration::from_millis(10));
        }
        for interval in [2, 50] {
            continuous_latency(10_000, 5, Duration::from_millis(interval));
        }
    }
}
