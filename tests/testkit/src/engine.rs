//! In-process engine pieces for tests and benches: the runtime, guarded
//! guests, the latency benches' continuous query, and batches.

use std::path::Path;

use weir_engine::RecordBatch;
use weir_runtime::{Runtime, RuntimeOptions};

use super::target_tmpdir;

/// A runtime whose compile cache lives under the test target dir.
pub fn runtime() -> Runtime {
    Runtime::new(RuntimeOptions {
        cache_dir: Some(target_tmpdir().join("component-cache")),
        ..RuntimeOptions::default()
    })
    .expect("runtime")
}

/// A factory of `guest` (built from `tests/guests`) with `config`, each
/// instance behind the guard with default limits, as `weir run` runs it.
pub fn guarded_guest(
    guest: &str,
    config: Vec<(String, String)>,
) -> Box<dyn weir_engine::TransformFactory> {
    use weir_engine::{Guarded, RecordLimits, Transform, TransformError};
    use weir_runtime::{CallMode, Limits, WasmTransform};
    let component = runtime()
        .load(&super::guest(guest), &[])
        .expect("load guest");
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

/// The latency benches' continuous query: embedded-log topic `in` of the
/// log in `dir/log` through the guarded uppercase guest to topic `out`
/// (with `write = "as-produced"` when `as_produced`), epochs of
/// `interval`, checkpoint in `dir/ckpt`. Both topics get one partition.
pub fn uppercase_log_query(
    dir: &Path,
    interval: std::time::Duration,
    as_produced: bool,
) -> weir_engine::ContinuousQuery {
    use weir_connectors::log_sink::LogSink;
    use weir_connectors::log_source::{LogSource, StartingOffsets};
    use weir_engine::{ContinuousOptions, ContinuousQuery, LocalCheckpointStore, Sink};
    let log = dir.join("log");
    weir_log::Topic::create(&log, "in", 1).unwrap();
    weir_log::Topic::create(&log, "out", 1).unwrap();
    let source = LogSource::open(log.clone(), "in", None, StartingOffsets::Earliest).unwrap();
    let sink = LogSink::open(log, "out", "default", None)
        .unwrap()
        .as_produced(as_produced);
    let sinks: Vec<(Option<String>, Box<dyn Sink>)> = vec![(None, Box::new(sink))];
    let store = LocalCheckpointStore::open(dir.join("ckpt")).unwrap();
    let options = ContinuousOptions {
        checkpoint_interval: interval,
        ..ContinuousOptions::default()
    };
    ContinuousQuery::new(
        std::sync::Arc::new(store),
        Box::new(source),
        guarded_guest("uppercase", vec![]),
        sinks,
        options,
    )
    .unwrap()
}

/// A batch of plain values on partition 0, offsets from 100, timestamps 1000+i.
pub fn batch(values: &[&str]) -> RecordBatch {
    let mut b = RecordBatch::new(0);
    for (i, v) in values.iter().enumerate() {
        b.push(None, v.as_bytes(), 1000 + i as i64, 100 + i as i64);
    }
    b
}

/// Output values of a transform result as strings.
pub fn values(out: &weir_engine::TransformOutput, input: &RecordBatch) -> Vec<String> {
    out.batch
        .iter(input)
        .map(|o| String::from_utf8_lossy(o.value).into_owned())
        .collect()
}

/// `records` lowercase-letter values of `value_len` bytes in batches of
/// `batch_size`: the transform benchmarks' uppercase input.
pub fn letter_batches(records: usize, value_len: usize, batch_size: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut value = vec![0u8; value_len];
    for start in (0..records).step_by(batch_size) {
        let n = batch_size.min(records - start);
        let mut b = RecordBatch::with_capacity(0, n, n * value_len);
        for i in start..start + n {
            for (j, c) in value.iter_mut().enumerate() {
                *c = b'a' + ((i + j) % 26) as u8;
            }
            b.push(None, &value, i as i64, i as i64);
        }
        out.push(b);
    }
    out
}
