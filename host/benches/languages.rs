//! Guests in each language side by side, in one run: uppercase over records
//! of 100-byte values on the batch path (batches of 1,000), against the same
//! loop native; with each component's size and its cached load time.
//! Guests are built from source as users build them: Rust by cargo (the
//! `uppercase` example), C, Go, Python and JavaScript by `weir new` +
//! `weir build` (the Python and JavaScript scaffolds use their SDKs: one
//! function call per record). "raw" rows are the Python and JavaScript
//! examples that handle the columnar batch themselves (one call per batch),
//! built by `scripts/build-polyglot`, which also installs componentize-py
//! and componentize-js.
//!
//! Run: cargo bench -p weir --bench languages
//! WEIR_BENCH_RECORDS (default 1,000,000; Python and JavaScript get a tenth).

#[path = "../../tests/e2e/testkit.rs"]
mod testkit;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use weir::engine::{FnTransform, OutputBatch, RecordBatch, Transform, TransformError};
use weir::runtime::{CallMode, Limits, Runtime, RuntimeOptions, WasmTransform};

const VALUE_LEN: usize = 100;
const BATCH: usize = 1_000;

fn batches(records: usize) -> Vec<RecordBatch> {
    testkit::letter_batches(records, VALUE_LEN, BATCH)
}

/// Records per second through `t` (best of 3 passes).
fn rate(t: &mut dyn Transform, batches: &[RecordBatch]) -> f64 {
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
        assert_eq!(produced, records, "one output per record");
        best = best.max(records as f64 / start.elapsed().as_secs_f64());
    }
    best
}

fn native(input: &RecordBatch, out: &mut OutputBatch) -> Result<(), TransformError> {
    out.values.reserve(input.values.len());
    for r in input.iter() {
        let start = out.values.len();
        out.values.extend_from_slice(r.value);
        out.values[start..].make_ascii_uppercase();
        out.value_ends.push(out.values.len() as u32);
    }
    Ok(())
}

/// The `lang` scaffold, made and built by the `weir` binary as a user would.
fn scaffolded(dir: &Path, lang: &str) -> PathBuf {
    let weir = env!("CARGO_BIN_EXE_weir");
    let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
    let name = format!("upper-{lang}");
    let tools = testkit::repo_root().join(".tools");
    ok(Command::new(weir)
        .args(["new", "--lang", lang, &name])
        .current_dir(dir));
    ok(Command::new(weir)
        .arg("build")
        .env(
            "WEIR_COMPONENTIZE_PY",
            tools.join("venv/bin/componentize-py"),
        )
        .env(
            "WEIR_COMPONENTIZE_JS",
            tools.join("node/node_modules/.bin/componentize-js"),
        )
        .current_dir(dir.join(&name)));
    dir.join(&name).join(format!("{name}.wasm"))
}

fn main() {
    let records = std::env::var("WEIR_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000usize);
    let full = batches(records);
    let tenth = batches(records / 10);
    let dir = tempfile::tempdir().unwrap();
    let guests: Vec<(&str, PathBuf, Vec<String>, &[RecordBatch])> = vec![
        ("Rust", testkit::guest("uppercase"), vec![], &full),
        ("C", scaffolded(dir.path(), "c"), vec![], &full),
        ("Go", scaffolded(dir.path(), "go"), vec![], &full),
        (
            "Python raw",
            testkit::polyglot_guest("uppercase-py.wasm"),
            vec!["wasi:sockets".into()],
            &tenth,
        ),
        (
            "Python SDK",
            scaffolded(dir.path(), "python"),
            vec!["wasi:sockets".into()],
            &tenth,
        ),
        (
            "JS raw",
            testkit::polyglot_guest("uppercase-js.wasm"),
            vec![],
            &tenth,
        ),
        ("JS SDK", scaffolded(dir.path(), "js"), vec![], &tenth),
    ];
    let native_rate = rate(&mut FnTransform(native), &full);
    println!(
        "languages: uppercase, {VALUE_LEN}-byte values, batches of {BATCH}, process-batch, best of 3\n"
    );
    println!(
        "  {:<12} {:>9} {:>14} {:>9} {:>12} {:>12}",
        "guest", "records", "records/s", "vs native", "component", "cached load"
    );
    println!(
        "  {:<12} {:>9} {:>14} {:>9} {:>12} {:>12}",
        "native",
        records,
        format!("{:.2} M", native_rate / 1e6),
        "100%",
        "-",
        "-"
    );
    for (name, path, grants, input) in guests {
        let cache = tempfile::tempdir().unwrap();
        let rt = Runtime::new(RuntimeOptions {
            cache_dir: Some(cache.path().into()),
            ..Default::default()
        })
        .unwrap();
        rt.load(&path, &grants).expect("cold load");
        let c = rt.load(&path, &grants).expect("cached load");
        let load = c.info().load_time;
        let mut t = WasmTransform::new(&c, vec![], Limits::default(), "bench", CallMode::Batch)
            .expect("init");
        let r = rate(&mut t, input);
        let n: usize = input.iter().map(RecordBatch::len).sum();
        println!(
            "  {:<12} {:>9} {:>14} {:>8.1}% {:>9} KiB {:>9.1} ms",
            name,
            n,
            if r >= 1e6 {
                format!("{:.2} M", r / 1e6)
            } else {
                format!("{:.0} k", r / 1e3)
            },
            100.0 * r / native_rate,
            c.info().size / 1024,
            load.as_secs_f64() * 1e3
        );
    }
}
