//! Neighbour isolation (issue 7): how much of its solo throughput a
//! pipeline keeps while a hostile neighbour runs in the same host process.
//!
//! Pipeline A: 3 M records of 100 bytes on a 1-partition embedded-log topic
//! -> uppercase guest -> embedded-log sink, AvailableNow in 100k batches.
//! Neighbour B, in the same process with its own Store and threads: a guest
//! that hits its 50 ms CPU deadline on every record (each call traps, the
//! instance is recycled, the guard isolates the record and dead-letters it),
//! for as long as A runs. Reported: A's rec/s solo, A's rec/s beside B, and
//! the ratio (target >= 90%), measured side by side in one run, five
//! rounds each.
//!
//! Run: cargo bench -p weir --bench neighbour

use weir_testkit as testkit;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use weir_connectors::log_sink::LogSink;
use weir_connectors::log_source::{LogSource, StartingOffsets};
use weir_engine::{
    ErrorPolicy, Guarded, LocalCheckpointStore, MicroBatchQuery, QueryOptions, RecordBatch,
    RecordLimits, Sink, Source, Transform, TransformError, TransformFactory, Trigger,
};
use weir_log::Topic;
use weir_runtime::{CallMode, Limits, WasmTransform};

const RECORDS: usize = 3_000_000;
const ROUNDS: usize = 5;

fn factory(
    guest: &str,
    config: Vec<(String, String)>,
    limits: Limits,
) -> Box<dyn TransformFactory> {
    let rt = testkit::runtime();
    let component = rt.load(&testkit::guest(guest), &[]).unwrap();
    let record_limits = RecordLimits {
        crash_loop_traps: usize::MAX,
        ..RecordLimits::default()
    };
    Box::new(
        move |_: usize, task: u32| -> Result<Box<dyn Transform>, TransformError> {
            let t = WasmTransform::new(
                &component,
                config.clone(),
                limits,
                &format!("task-{task}"),
                CallMode::Batch,
            )?;
            Ok(Box::new(Guarded::new(Box::new(t), record_limits)))
        },
    )
}

fn fill(log: &Path, topic: &str, n: usize, value: &[u8]) {
    let mut t = Topic::create(log, topic, 1).unwrap();
    let mut i = 0;
    while i < n {
        let mut b = RecordBatch::new(0);
        for _ in 0..100_000.min(n - i) {
            b.push(None, value, 0, 0);
            i += 1;
        }
        t.append(None, &[b], || {}).unwrap();
    }
}

fn query(
    dir: &Path,
    log: &Path,
    input: &str,
    output: &str,
    factory: Box<dyn TransformFactory>,
    options: QueryOptions,
    batch: u64,
) -> MicroBatchQuery {
    let sources: Vec<Box<dyn Source>> = vec![Box::new(
        LogSource::open(
            log.to_path_buf(),
            input,
            Some(batch),
            StartingOffsets::Earliest,
        )
        .unwrap(),
    )];
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![
        (
            None,
            Box::new(LogSink::open(log.to_path_buf(), output, "default", Some(1)).unwrap()),
        ),
        (
            Some("dead-letter".into()),
            Box::new(
                LogSink::open(
                    log.to_path_buf(),
                    &format!("{output}-dead"),
                    "dead-letter",
                    Some(1),
                )
                .unwrap(),
            ),
        ),
    ];
    let store = Arc::new(LocalCheckpointStore::open(dir.join(format!("ckpt-{output}"))).unwrap());
    MicroBatchQuery::new(store, sources, factory, sinks, options).unwrap()
}

/// One run of pipeline A over the shared input in `dir`, optionally beside
/// neighbour B; A's rec/s.
fn run_a(dir: &Path, round: usize, neighbour: bool) -> f64 {
    let log = dir.join("log");
    let b = neighbour.then(|| {
        let limits = Limits {
            call_deadline: Duration::from_millis(50),
            ..Limits::default()
        };
        let options = QueryOptions {
            trigger: Trigger::Default,
            error_policy: ErrorPolicy::DeadLetter {
                component: "neighbour".into(),
            },
            ..QueryOptions::default()
        };
        let mut q = query(
            dir,
            &log,
            "b",
            &format!("b-out-{round}"),
            factory("misbehave", vec![], limits),
            options,
            // Small batches: each hostile record costs a 50 ms deadline.
            4,
        );
        let stop = q.stop_handle();
        let handle = std::thread::spawn(move || q.run(&mut |_| {}).unwrap());
        // Let the neighbour get going before A starts.
        std::thread::sleep(Duration::from_millis(300));
        (stop, handle)
    });
    let options = QueryOptions {
        trigger: Trigger::AvailableNow,
        ..QueryOptions::default()
    };
    let mut a = query(
        dir,
        &log,
        "a",
        &format!("a-out-{round}-{neighbour}"),
        factory("uppercase", vec![], Limits::default()),
        options,
        100_000,
    );
    let started = Instant::now();
    let s = a.run(&mut |_| {}).unwrap();
    let rate = s.output_rows as f64 / started.elapsed().as_secs_f64();
    assert_eq!(s.output_rows as usize, RECORDS);
    if let Some((stop, handle)) = b {
        stop.store(true, Ordering::Relaxed);
        let summary = handle.join().unwrap();
        println!(
            "  neighbour: {} hostile records dead-lettered meanwhile",
            summary.input_rows
        );
    }
    rate
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let value: Vec<u8> = (0..100).map(|i| b'a' + (i % 26) as u8).collect();
    fill(&log, "a", RECORDS, &value);
    fill(&log, "b", 10_000, b"loop");
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        let solo = run_a(dir.path(), round, false);
        let beside = run_a(dir.path(), round, true);
        let ratio = beside / solo;
        println!(
            "round {round}: A solo {solo:.0} rec/s, A beside a hostile neighbour {beside:.0} rec/s: {:.0}%",
            100.0 * ratio
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "neighbour isolation: A keeps {:.0}% of its solo throughput (median of {ROUNDS}; min {:.0}%, max {:.0}%)",
        100.0 * ratios[ROUNDS / 2],
        100.0 * ratios[0],
        100.0 * ratios[ROUNDS - 1]
    );
}
