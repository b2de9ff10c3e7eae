//! Continuous-mode visibility with `write = "as-produced"` (issue 16):
//! how soon a record appended to the input topic is seen in the output
//! topic by a read-uncommitted reader and by a read-committed reader, both
//! following the same run.
//!
//! Wiring as `weir run` builds it: embedded-log source (1 partition),
//! uppercase guest behind the guard, embedded-log sink with
//! `write = "as-produced"`, continuous mode. A producer appends (and
//! commits) in 1 ms chunks and notes when it writes each commit entry: the
//! moment the records became readable by the pipeline. Latency = seen by
//! the reader - that moment; the producer's own chunking and data fsync
//! are not in it.
//!
//! Run: cargo bench -p weir --bench visibility
//! (`WEIR_BENCH_RATE`, `WEIR_BENCH_INTERVAL_MS`, `WEIR_BENCH_SECONDS`.)

use weir_testkit as testkit;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use weir_engine::RecordBatch;
use weir_log::{Fetched, Topic, UncommittedReader};

/// (index just past the chunk, microseconds since start when its commit
/// entry was about to be written), in order.
type Appended = Arc<Mutex<Vec<(u64, u64)>>>;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// When record `i` became readable by the pipeline; waits the moment
/// between the append returning and the producer noting it.
fn readable_at(appended: &Appended, i: u64) -> u64 {
    loop {
        {
            let a = appended.lock().unwrap();
            let k = a.partition_point(|(end, _)| *end <= i);
            if let Some((_, t)) = a.get(k) {
                return *t;
            }
        }
        std::thread::yield_now();
    }
}

fn record(hist: &mut Histogram<u64>, appended: &Appended, start: Instant, b: &RecordBatch) {
    let now = start.elapsed().as_micros() as u64;
    for r in b.iter() {
        let i: u64 = std::str::from_utf8(r.value).unwrap().parse().unwrap();
        hist.record(now.saturating_sub(readable_at(appended, i)))
            .unwrap();
    }
}

fn uncommitted(
    log: &std::path::Path,
    total: u64,
    appended: Appended,
    start: Instant,
) -> Histogram<u64> {
    let mut hist = Histogram::new(3).unwrap();
    let mut r = UncommittedReader::new(Topic::open(log, "out").unwrap(), vec![0]).unwrap();
    while r.position(0) < total {
        match r.fetch(0, 10_000).unwrap() {
            Fetched::Records(b) if b.is_empty() => r.wait(Duration::from_millis(5)),
            Fetched::Records(b) => record(&mut hist, &appended, start, &b),
            Fetched::Rewound(to) => panic!("nothing is cut in this run (rewound to {to})"),
        }
    }
    hist
}

fn committed(
    log: &std::path::Path,
    total: u64,
    appended: Appended,
    start: Instant,
) -> Histogram<u64> {
    let mut hist = Histogram::new(3).unwrap();
    let mut t = Topic::open(log, "out").unwrap();
    let mut watch = weir_log::watch::Watch::new(t.dir());
    let mut pos = 0;
    while pos < total {
        watch.look();
        let end = t.committed_ends().unwrap()[0];
        if end > pos {
            let mut b = RecordBatch::new(0);
            t.read(0, pos, end, &mut b).unwrap();
            record(&mut hist, &appended, start, &b);
            pos = end;
        } else {
            watch.wait(Duration::from_millis(5));
        }
    }
    hist
}

fn report(label: &str, hist: &Histogram<u64>) {
    let ms = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "  {label:<17} {:>8} {:>9.3} ms {:>9.3} ms {:>9.3} ms {:>9.3} ms",
        hist.len(),
        ms(0.5),
        ms(0.99),
        ms(0.999),
        hist.max() as f64 / 1000.0
    );
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let rate = env("WEIR_BENCH_RATE", 10_000);
    let interval = Duration::from_millis(env("WEIR_BENCH_INTERVAL_MS", 10));
    let seconds = env("WEIR_BENCH_SECONDS", 10);
    let total = rate * seconds;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut q = testkit::uppercase_log_query(dir.path(), interval, true);
    let stop = q.stop_handle();
    let engine = std::thread::spawn(move || q.run(&mut |_| {}).unwrap());
    let start = Instant::now();
    let appended: Appended = Arc::default();
    let readers = [true, false].map(|read_uncommitted| {
        let (log, appended) = (log.clone(), appended.clone());
        std::thread::spawn(move || match read_uncommitted {
            true => uncommitted(&log, total, appended, start),
            false => committed(&log, total, appended, start),
        })
    });
    let mut t = Topic::open(&log, "in").unwrap();
    let mut i = 0;
    while i < total {
        std::thread::sleep(Duration::from_millis(1));
        let due = (start.elapsed().as_nanos() as u64 * rate / 1_000_000_000).min(total);
        let mut b = RecordBatch::new(0);
        while i < due {
            b.push(None, format!("{i:020}").as_bytes(), 0, 0);
            i += 1;
        }
        if !b.is_empty() {
            // Just before the commit entry: the records are readable a
            // few microseconds later, once it is written (before its fsync
            // returns), so this errs on the slow side.
            let mut readable = 0;
            t.append(None, &[b], || readable = start.elapsed().as_micros() as u64)
                .unwrap();
            appended.lock().unwrap().push((i, readable));
        }
    }
    let [u, c] = readers.map(|h| h.join().unwrap());
    stop.store(true, Ordering::Relaxed);
    engine.join().unwrap();
    println!(
        "visibility: continuous, write = \"as-produced\", {rate} rec/s for {seconds} s, checkpoint-interval {interval:?}; input readable -> seen by the reader"
    );
    println!(
        "  {:<17} {:>8} {:>12} {:>12} {:>12} {:>12}",
        "reader", "records", "p50", "p99", "p99.9", "max"
    );
    report("read-uncommitted", &u);
    report("read-committed", &c);
}
