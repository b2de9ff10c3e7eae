//! Guests in each language side by side, in one run, on the batch path
//! (batches of 1,000): uppercase over 100-byte values, and a JSON filter
//! (keep `amount > 100`) over JSON records of about 100 bytes, each against
//! the same loop native; with each component's size and cached load time.
//! Guests are built from source as users build them: Rust by cargo (the
//! `uppercase` and `json-filter` examples), C, Go, Python and JavaScript by
//! `weir new` + `weir build` (uppercase: the scaffolds; JSON filter: the
//! scaffold with `examples/<lang>/json-filter` dropped in). The Python and
//! JavaScript guests use their SDKs (one function call per record); "raw"
//! rows are the examples that handle the columnar batch themselves (one
//! call per batch), built by `scripts/build-polyglot`, which also installs
//! componentize-py and componentize-js.
//!
//! Run: cargo bench -p weir --bench languages
//! WEIR_BENCH_RECORDS (default 1,000,000; Python and JavaScript get a tenth).

#[path = "../../tests/e2e/testkit.rs"]
mod testkit;

use std::path::{Path, PathBuf};
use std::time::Instant;

use weir::engine::{FnTransform, OutputBatch, RecordBatch, Transform, TransformError};
use weir::runtime::{CallMode, Limits, Runtime, RuntimeOptions, WasmTransform};

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

fn native_upper(input: &RecordBatch, out: &mut OutputBatch) -> Result<(), TransformError> {
    out.values.reserve(input.values.len());
    for r in input.iter() {
        let start = out.values.len();
        out.values.extend_from_slice(r.value);
        out.values[start..].make_ascii_uppercase();
        out.value_ends.push(out.values.len() as u32);
    }
    Ok(())
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

/// A `lang` project made by `weir new`, with `example` (under
/// `examples/<lang>/`) as its transform when given, built by `weir build`.
fn scaffolded(dir: &Path, lang: &str, example: Option<&str>) -> PathBuf {
    let name = format!(
        "{lang}-{}",
        example.map_or("upper", |e| e.split('/').next().unwrap())
    );
    testkit::scaffold(dir, lang, &name, example)
}

fn fmt_rate(r: f64) -> String {
    if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else {
        format!("{:.0} k", r / 1e3)
    }
}

fn main() {
    let records = std::env::var("WEIR_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000usize);
    let upper = [
        testkit::letter_batches(records, VALUE_LEN, BATCH),
        testkit::letter_batches(records / 10, VALUE_LEN, BATCH),
    ];
    let json = [json_batches(records), json_batches(records / 10)];
    let kept = |b: &[RecordBatch]| {
        b.iter()
            .flat_map(|b| b.iter())
            .filter(|r| {
                serde_json::from_slice::<serde_json::Value>(r.value).unwrap()["amount"]
                    .as_f64()
                    .is_some_and(|a| a > 100.0)
            })
            .count()
    };
    let kept = [kept(&json[0]), kept(&json[1])];
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let py = vec!["wasi:sockets".to_string()];
    let filter_config = vec![
        ("field".to_string(), "amount".to_string()),
        ("op".to_string(), "gt".to_string()),
        ("value".to_string(), "100".to_string()),
    ];
    // (name, uppercase guest, JSON filter guest and its config, grants, tenth of the input)
    type Row = (
        &'static str,
        PathBuf,
        Option<(PathBuf, Vec<(String, String)>)>,
        Vec<String>,
        usize,
    );
    let rows: Vec<Row> = vec![
        (
            "Rust",
            testkit::guest("uppercase"),
            Some((testkit::guest("json-filter"), filter_config)),
            vec![],
            0,
        ),
        (
            "C",
            scaffolded(d, "c", None),
            Some((scaffolded(d, "c", Some("json-filter/transform.c")), vec![])),
            vec![],
            0,
        ),
        (
            "Go",
            scaffolded(d, "go", None),
            Some((scaffolded(d, "go", Some("json-filter/main.go")), vec![])),
            vec![],
            0,
        ),
        (
            "Python raw",
            testkit::polyglot_guest("uppercase-py.wasm"),
            None,
            py.clone(),
            1,
        ),
        (
            "Python SDK",
            scaffolded(d, "python", None),
            Some((scaffolded(d, "python", Some("json-filter/app.py")), vec![])),
            py,
            1,
        ),
        (
            "JS raw",
            testkit::polyglot_guest("uppercase-js.wasm"),
            None,
            vec![],
            1,
        ),
        (
            "JS SDK",
            scaffolded(d, "js", None),
            Some((scaffolded(d, "js", Some("json-filter/app.js")), vec![])),
            vec![],
            1,
        ),
    ];
    let native_upper = rate(&mut FnTransform(native_upper), &upper[0], records);
    let native_filter = rate(&mut FnTransform(native_filter), &json[0], kept[0]);
    println!(
        "languages: batch path, batches of {BATCH}, best of 3; uppercase of {VALUE_LEN}-byte values, JSON filter (amount > 100) of ~100-byte records\n"
    );
    println!(
        "  {:<11} {:>8} {:>11} {:>8} {:>11} {:>8} {:>11} {:>11}",
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
        "  {:<11} {:>8} {:>11} {:>8} {:>11} {:>8} {:>11} {:>11}",
        "native",
        records,
        fmt_rate(native_upper),
        "100%",
        fmt_rate(native_filter),
        "100%",
        "-",
        "-"
    );
    for (name, upper_guest, filter_guest, grants, tenth) in rows {
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
        let (u, size, load) = run(
            &upper_guest,
            vec![],
            &upper[tenth],
            upper[tenth].iter().map(RecordBatch::len).sum(),
        );
        let f = filter_guest.map(|(p, config)| run(&p, config, &json[tenth], kept[tenth]).0);
        let n: usize = upper[tenth].iter().map(RecordBatch::len).sum();
        println!(
            "  {:<11} {:>8} {:>11} {:>7.1}% {:>11} {:>8} {:>7} KiB {:>8.1} ms",
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
