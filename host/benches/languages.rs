//! Guests in each language side by side, in one run, on the batch path
//! (batches of 1,000): uppercase over 100-byte values, and a JSON filter
//! (keep `amount > 100`) over JSON records of about 100 bytes, each against
//! the same loop native; with each component's size and cached load time.
//! Guests are built from source as users build them: Rust by cargo (the
//! `uppercase` and `json-filter` examples), C, Go, Python and JavaScript by
//! `weir new` + `weir build` (uppercase: the scaffolds; JSON filter: the
//! scaffold with `examples/<lang>/json-filter` dropped in). The Python and
//! JavaScript guests use their SDKs: one function call per record, except
//! Python's JSON filter, one call per batch (`@weir.filter_batch`, the
//! column read by the host); "Python per-record" is that filter written per
//! record (`examples/python/json-filter/per_record.py`); "raw"
//! rows are the examples that handle the columnar batch themselves (one
//! call per batch), built by `scripts/build-polyglot`, which also installs
//! componentize-py and componentize-js.
//!
//! Run: cargo bench -p weir --bench languages
//! WEIR_BENCH_RECORDS (default 1,000,000); WEIR_BENCH_LANGS (e.g. "Go,JS":
//! only the rows whose names start so).

use weir_testkit as testkit;

use std::path::{Path, PathBuf};
use std::time::Instant;

use weir_engine::{FnTransform, OutputBatch, RecordBatch, Transform, TransformError};
use weir_runtime::{CallMode, Limits, Runtime, RuntimeOptions, WasmTransform};

const VALUE_LEN: usize = 100;
const BATCH: usize = 1_000;

/// JSON records of about 100 bytes; `amount` spread over 0..250.
fn json_batches(records: usize) -> Vec<RecordBatch> {
    (0..records.div_ceil(BATCH))
        .map(|b| {
            let mut batch = RecordBatch::new(0);
            for i in b * BATCH..((b + 1) * BATCH).min(records) {
                let v = format!(
                    r#"{{"id":{i},"amount":{},"region":"{}","note":"a note to make it about one hundred bytes"}}"#,
                    (i * 37) % 250,
                    ["eu", "us", "apac"][i % 3]
                );
                batch.push(None, v.as_bytes(), 0, i as i64);
            }
            batch
        })
        .collect()
}

/// Records per second through `t` (best of 3 passes), checking it keeps
/// `expected` of them.
fn rate(t: &mut dyn Transform, batches: &[RecordBatch], expected: usize) -> f64 {
    let records: usize = batches.iter().map(RecordBatch::len).sum();
    let mut best: f64 = 0.0;
    for _ in 0..3 {
        let start = Instant::now();
        let mut produced = 0;
        for b in batches {
            let out = t.process_batch(b).expect("transform");
            produced += out.batch.len();
            std::hint::black_box(&out);
        }
        assert_eq!(produced, expected, "outputs");
        best = best.max(records as f64 / start.elapsed().as_secs_f64());
    }
    best
}

fn native_filter(input: &RecordBatch, out: &mut OutputBatch) -> Result<(), TransformError> {
    for (i, r) in input.iter().enumerate() {
        let doc: serde_json::Value = serde_json::from_slice(r.value).expect("json");
        if doc["amount"].as_f64().is_some_and(|a| a > 100.0) {
            out.push(i as u32, None, None, Some(r.value), &[], r.timestamp);
        }
    }
    Ok(())
}

/// An uppercase guest, and a JSON filter guest with its config.
type Guests = (PathBuf, Option<(PathBuf, Vec<(String, String)>)>);

/// `lang`'s uppercase guest (the `weir new` scaffold) and its JSON filter
/// (the scaffold with `examples/<lang>/<filter>`), built by `weir build`.
fn sdk_guests(dir: &Path, lang: &str, filter: &str) -> Guests {
    // Projects named after the filter file: two rows may share a language.
    let tag = format!("{lang}-{}", filter.replace(['/', '.', '_'], "-"));
    let upper = testkit::scaffold(dir, lang, &format!("{tag}-upper"), None);
    let json = testkit::scaffold(dir, lang, &format!("{tag}-json"), Some(filter));
    (upper, Some((json, vec![])))
}

fn fmt_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.0} k", r / 1e3)
    }
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let records = std::env::var("WEIR_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000usize);
    let upper = testkit::letter_batches(records, VALUE_LEN, BATCH);
    let json = json_batches(records);
    let kept = json
        .iter()
        .flat_map(|b| b.iter())
        .filter(|r| {
            serde_json::from_slice::<serde_json::Value>(r.value).unwrap()["amount"]
                .as_f64()
                .is_some_and(|a| a > 100.0)
        })
        .count();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let py = vec!["wasi:sockets".to_string()];
    let filter_config = vec![
        ("field".to_string(), "amount".to_string()),
        ("op".to_string(), "gt".to_string()),
        ("value".to_string(), "100".to_string()),
    ];
    // (name, grants, and how to build its uppercase guest and its JSON
    // filter guest with the filter's config), built only when benched.
    type Row<'a> = (&'static str, Vec<String>, Box<dyn Fn() -> Guests + 'a>);
    let rows: Vec<Row> = vec![
        (
            "Rust",
            vec![],
            Box::new(move || {
                let json = (testkit::guest("json-filter"), filter_config.clone());
                (testkit::guest("uppercase"), Some(json))
            }),
        ),
        (
            "C",
            vec![],
            Box::new(|| sdk_guests(d, "c", "json-filter/transform.c")),
        ),
        (
            "Go",
            vec![],
            Box::new(|| sdk_guests(d, "go", "json-filter/main.go")),
        ),
        (
            "Python raw",
            py.clone(),
            Box::new(|| (testkit::polyglot_guest("uppercase-py.wasm"), None)),
        ),
        (
            "Python SDK",
            py,
            Box::new(|| sdk_guests(d, "python", "json-filter/app.py")),
        ),
        (
            "Python per-record",
            vec!["wasi:sockets".to_string()],
            Box::new(|| sdk_guests(d, "python", "json-filter/per_record.py")),
        ),
        (
            "JS raw",
            vec![],
            Box::new(|| (testkit::polyglot_guest("uppercase-js.wasm"), None)),
        ),
        (
            "JS SDK",
            vec![],
            Box::new(|| sdk_guests(d, "js", "json-filter/app.js")),
        ),
    ];
    // WEIR_BENCH_LANGS=Go,JS benches only the rows whose names start so.
    let only = std::env::var("WEIR_BENCH_LANGS").ok();
    let benched = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|p| name.starts_with(p.trim())))
    };
    let native_upper = rate(&mut FnTransform(testkit::native_uppercase), &upper, records);
    let native_filter = rate(&mut FnTransform(native_filter), &json, kept);
    println!(
        "languages: batch path, batches of {BATCH}, best of 3; uppercase of {VALUE_LEN}-byte values, JSON filter (amount > 100) of ~100-byte records\n"
    );
    println!(
        "  {:<17} {:>8} {:>11} {:>8} {:>11} {:>8} {:>11} {:>11}",
        "guest",
        "records",
        "uppercase",
        "native",
        "JSON filter",
        "native",
        "component",
        "cached load"
    );
    println!(
        "  {:<17} {:>8} {:>11} {:>8} {:>11} {:>8} {:>11} {:>11}",
        "native",
        records,
        fmt_rate(native_upper),
        "100%",
        fmt_rate(native_filter),
        "100%",
        "-",
        "-"
    );
    for (name, grants, build) in rows {
        if !benched(name) {
            continue;
        }
        let (upper_guest, filter_guest) = build();
        let cache = tempfile::tempdir().unwrap();
        let rt = Runtime::new(RuntimeOptions {
            cache_dir: Some(cache.path().into()),
            ..Default::default()
        })
        .unwrap();
        let run = |path: &Path, config: Vec<(String, String)>, input: &[RecordBatch], want| {
            rt.load(path, &grants).expect("cold load");
            let c = rt.load(path, &grants).expect("cached load");
            let mut t = WasmTransform::new(&c, config, Limits::default(), "bench", CallMode::Batch)
                .expect("init");
            (rate(&mut t, input, want), c.info().size, c.info().load_time)
        };
        let (u, size, load) = run(&upper_guest, vec![], &upper, records);
        let f = filter_guest.map(|(p, config)| run(&p, config, &json, kept).0);
        let n = records;
        println!(
            "  {:<17} {:>8} {:>11} {:>7.1}% {:>11} {:>8} {:>7} KiB {:>8.1} ms",
            name,
            n,
            fmt_rate(u),
            100.0 * u / native_upper,
            f.map_or("-".into(), fmt_rate),
            f.map_or("-".into(), |f| format!("{:.1}%", 100.0 * f / native_filter)),
            size / 1024,
            load.as_secs_f64() * 1e3
        );
    }
}
