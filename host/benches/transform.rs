//! Transform throughput, measured side by side in one run: 1 M records with
//! 100-byte values, uppercased.
//!
//!   (a) native closure over the engine's columnar batches (the limit here)
//!   (b) WASM component, one `process-batch` call per batch
//!   (c) WASM component, one `process-record` call per record
//!   (d) native closure that allocates each record separately
//!   (e) WASM component over the naive `list<record>` contract (rejected design)
//!
//! plus the compile cache: cold compile vs cached load, per guest language.
//! Run: cargo bench -p weir --bench transform

use weir_testkit as testkit;

use std::path::Path;
use std::time::{Duration, Instant};

use weir_engine::{FnTransform, RecordBatch, Transform};
use weir_runtime::{CallMode, Limits, Runtime, RuntimeOptions, WasmTransform};

const RECORDS: usize = 1_000_000;
const VALUE_LEN: usize = 100;
const RUNS: usize = 3;

fn make_batches(batch_size: usize) -> Vec<RecordBatch> {
    testkit::letter_batches(RECORDS, VALUE_LEN, batch_size)
}

/// Median records/second of `RUNS` passes of `run` over all batches.
fn measure(batches: &[RecordBatch], mut run: impl FnMut(&RecordBatch) -> usize) -> f64 {
    let mut rates = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let mut produced = 0;
        for b in batches {
            produced += run(b);
        }
        assert_eq!(produced, RECORDS, "every record must produce one output");
        rates.push(RECORDS as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates[RUNS / 2]
}

fn through(t: &mut dyn Transform, b: &RecordBatch) -> usize {
    let out = t.process_batch(b).expect("transform");
    std::hint::black_box(&out);
    out.batch.len()
}

/// (d): one owned record per input, the way a row-at-a-time engine works.
struct OwnedRecord {
    _key: Option<Vec<u8>>,
    _value: Vec<u8>,
    _timestamp: i64,
}

fn native_per_record_alloc(input: &RecordBatch) -> usize {
    let out: Vec<OwnedRecord> = input
        .iter()
        .map(|r| OwnedRecord {
            _key: r.key.map(<[u8]>::to_vec),
            _value: r.value.to_ascii_uppercase(),
            _timestamp: r.timestamp,
        })
        .collect();
    std::hint::black_box(&out);
    out.len()
}

mod naive {
    wasmtime::component::bindgen!({ world: "naive", path: "../tests/bench-wit" });
}

struct NaiveState {
    wasi: wasmtime_wasi::WasiCtx,
    table: wasmtime::component::ResourceTable,
}

impl wasmtime_wasi::WasiView for NaiveState {
    fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
        wasmtime_wasi::WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// (e): the naive contract, converting engine batches to `list<record>`.
fn naive_rate(path: &Path, batches: &[RecordBatch]) -> f64 {
    use wasmtime::component::{Component, Linker};
    let engine = wasmtime::Engine::default();
    let component = Component::from_file(&engine, path).expect("naive guest");
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    let state = NaiveState {
        wasi: wasmtime_wasi::WasiCtx::builder().build(),
        table: Default::default(),
    };
    let mut store = wasmtime::Store::new(&engine, state);
    let guest = naive::Naive::instantiate(&mut store, &component, &linker).unwrap();
    measure(batches, |b| {
        let recs: Vec<naive::Rec> = b
            .iter()
            .map(|r| naive::Rec {
                key: r.key.map(<[u8]>::to_vec),
                value: r.value.to_vec(),
                timestamp: r.timestamp,
            })
            .collect();
        let out = guest.call_process_naive(&mut store, &recs).unwrap();
        out.len()
    })
}

fn wasm_rate(rt: &Runtime, path: &Path, mode: CallMode, batches: &[RecordBatch]) -> f64 {
    let c = rt.load(path, &[]).expect("load");
    let mut t = WasmTransform::new(&c, vec![], Limits::default(), "bench", mode).expect("init");
    measure(batches, |b| through(&mut t, b))
}

/// The batch path on a component compiled with fuel metering, with a budget
/// no call reaches: the cost of metering itself.
fn metered_rate(rt: &Runtime, path: &Path, batches: &[RecordBatch]) -> f64 {
    let c = rt.load_metered(path, &[]).expect("load");
    let limits = Limits {
        fuel: Some(u64::MAX / 2),
        ..Limits::default()
    };
    let mut t = WasmTransform::new(&c, vec![], limits, "bench", CallMode::Batch).expect("init");
    measure(batches, |b| through(&mut t, b))
}

fn load_times(path: &Path, grants: &[String]) -> (Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::new(RuntimeOptions {
        cache_dir: Some(dir.path().into()),
        ..Default::default()
    })
    .unwrap();
    let cold = rt.load(path, grants).expect("cold load").info().load_time;
    let warm = rt.load(path, grants).expect("cached load").info().load_time;
    (cold, warm)
}

fn main() {
    weir::allocator::keep_batch_buffers();
    if let Ok(mode) = std::env::var("WEIR_BENCH_PROFILE") {
        // Run one WASM path for a while, for `perf record`, on batches of
        // `WEIR_BENCH_PROFILE_BATCH` records (1,000 by default).
        let rt = testkit::runtime();
        let size = std::env::var("WEIR_BENCH_PROFILE_BATCH")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000);
        let batches = make_batches(size);
        let mode = if mode == "record" {
            CallMode::PerRecord
        } else {
            CallMode::Batch
        };
        for _ in 0..5 {
            println!(
                "{:.2} M/s",
                wasm_rate(&rt, &testkit::guest("uppercase"), mode, &batches) / 1e6
            );
        }
        return;
    }
    let upper = testkit::guest("uppercase");
    let naive_guest = testkit::guest("naive-uppercase");
    let rt = testkit::runtime();
    println!(
        "transform throughput: {RECORDS} records x {VALUE_LEN}-byte values, uppercase, median of {RUNS} runs\n"
    );
    for batch_size in [1_000, 10_000] {
        let batches = make_batches(batch_size);
        let a = measure(&batches, |b| {
            through(&mut FnTransform(testkit::native_uppercase), b)
        });
        let rows = [
            ("(a) native closure, columnar batches", a),
            (
                "(b) WASM, process-batch (columnar)",
                wasm_rate(&rt, &upper, CallMode::Batch, &batches),
            ),
            (
                "(b') WASM, process-batch, fuel metering on",
                metered_rate(&rt, &upper, &batches),
            ),
            (
                "(c) WASM, process-record",
                wasm_rate(&rt, &upper, CallMode::PerRecord, &batches),
            ),
            (
                "(d) native closure, one allocation per record",
                measure(&batches, native_per_record_alloc),
            ),
            (
                "(e) WASM, naive list<record> contract",
                naive_rate(&naive_guest, &batches),
            ),
        ];
        println!("batch size {batch_size}:");
        println!("  {:<48} {:>14} {:>10}", "path", "records/s", "vs (a)");
        for (name, rate) in rows {
            println!(
                "  {name:<48} {:>14} {:>9.1}%",
                format!("{:.2} M", rate / 1e6),
                100.0 * rate / a
            );
        }
        println!();
    }
    println!("component load: cold compile vs cached artifact");
    let mut guests = vec![("Rust uppercase", upper.clone(), vec![])];
    if std::env::var_os("WEIR_BENCH_SKIP_POLYGLOT").is_none() {
        guests.push((
            "Python uppercase",
            testkit::polyglot_guest("uppercase-py.wasm"),
            vec!["wasi:sockets".to_string()],
        ));
        guests.push((
            "JavaScript uppercase",
            testkit::polyglot_guest("uppercase-js.wasm"),
            vec![],
        ));
    }
    for (name, path, grants) in guests {
        let (cold, warm) = load_times(&path, &grants);
        println!(
            "  {name:<22} {:>9.1} ms compile  {:>7.1} ms cached  ({:.0}x)",
            cold.as_secs_f64() * 1e3,
            warm.as_secs_f64() * 1e3,
            cold.as_secs_f64() / warm.as_secs_f64()
        );
    }
}
