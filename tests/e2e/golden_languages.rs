//! The golden suite across guest languages: the same pipeline, input and
//! expected output for each language's guest, through `weir run` in
//! micro-batch and continuous mode, each SIGKILLed at a fixed step and at
//! a varied moment, then restored. Today: uppercase in Rust (the example
//! crate), C, Go, Python and JavaScript (built by `weir new` + `weir build`, as a user
//! would); other languages join as their SDKs land.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use weir::engine::RecordBatch;
use weir::log::Topic;

use crate::testkit::{guest, run_command, run_ok, topic_values, weir, xorshift};

/// The scaffold's uppercase guest in `lang`, made and built as a user
/// would (`weir new` + `weir build`).
fn scaffolded(lang: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("golden-{lang}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let o = weir()
        .args(["new", "--lang", lang, "upper"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = weir()
        .arg("build")
        .current_dir(dir.join("upper"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    dir.join("upper/upper.wasm")
}

const RECORDS: usize = 20_000;

fn value(i: usize) -> String {
    format!("record {i} of the golden suite, héllo")
}

fn expected() -> Vec<String> {
    // The guests uppercase ASCII only.
    let mut v: Vec<String> = (0..RECORDS)
        .map(|i| value(i).to_ascii_uppercase())
        .collect();
    v.sort();
    v
}

/// A pipeline over 4 partitions of input with `component`, in `dir`.
fn fixture(dir: &Path, component: &Path, continuous: bool) {
    let mut t = Topic::create(&dir.join("log"), "in", 4).unwrap();
    let mut parts: Vec<RecordBatch> = (0..4).map(RecordBatch::new).collect();
    for i in 0..RECORDS {
        parts[i % 4].push(None, value(i).as_bytes(), i as i64, 0);
    }
    t.append(None, &parts, || {}).unwrap();
    let (mode, limit, trigger) = if continuous {
        (
            "mode = \"continuous\"\ncheckpoint-interval = \"20ms\"",
            "",
            "",
        )
    } else {
        (
            "",
            "max-records-per-trigger = 500",
            "[trigger]\ntype = \"available-now\"",
        )
    };
    // CPython's runtime imports wasi:sockets (the network stays off).
    let grants = if component.to_string_lossy().contains("golden-python") {
        "grants = [\"wasi:sockets\"]\n"
    } else {
        ""
    };
    let spec = format!(
        "checkpoint = \"ckpt\"\n{mode}\n[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n{limit}\n[transform]\ncomponent = \"{}\"\n{grants}[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\npartitions = 2\n{trigger}\n",
        component.display()
    );
    std::fs::write(dir.join("p.toml"), spec).unwrap();
}

fn output(dir: &Path) -> Vec<String> {
    let mut v = topic_values(&dir.join("log"), "out").unwrap_or_default();
    v.sort();
    v
}

fn golden(component: &Path, lang: &str) {
    let mut next = xorshift(0x601d_e1a9);
    for continuous in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        fixture(dir.path(), component, continuous);
        let idle = continuous.then_some("300ms");
        // First a kill at a fixed step, so one always lands mid-run however
        // fast the machine: batch 5 of 40 committed its output, or the first
        // epoch wrote part of its output and not its commit.
        let fault = if continuous {
            "mid-sink#1"
        } else {
            "after-sink-commit@5"
        };
        let out = run_command(dir.path(), idle)
            .env("WEIR_FAULT", fault)
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{lang}: {fault}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(output(dir.path()).len() < RECORDS, "{lang}: {fault}");
        // Then one at a varied moment, which may land anywhere, even after
        // the end.
        let mut child = run_command(dir.path(), idle).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(20 + next() % 60));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        run_ok(run_command(dir.path(), idle));
        assert_eq!(
            output(dir.path()),
            expected(),
            "{lang}, continuous={continuous}: after 2 SIGKILLs and a restore"
        );
    }
}

#[test]
fn uppercase_in_rust_matches_the_golden_output_in_both_modes_across_sigkills() {
    golden(&guest("uppercase"), "rust");
}

#[test]
fn uppercase_in_c_matches_the_golden_output_in_both_modes_across_sigkills() {
    golden(&scaffolded("c"), "c");
}

#[test]
fn uppercase_in_go_matches_the_golden_output_in_both_modes_across_sigkills() {
    golden(&scaffolded("go"), "go");
}

#[test]
fn uppercase_in_python_matches_the_golden_output_in_both_modes_across_sigkills() {
    // componentize-py, as scripts/build-polyglot installs it.
    crate::testkit::polyglot_guest("uppercase-py.wasm");
    golden(&scaffolded("python"), "python");
}

#[test]
fn uppercase_in_js_matches_the_golden_output_in_both_modes_across_sigkills() {
    // componentize-js, as scripts/build-polyglot installs it.
    crate::testkit::polyglot_guest("uppercase-js.wasm");
    golden(&scaffolded("js"), "js");
}
