//! The contract is usable beyond Rust: one-file uppercase guests built with
//! componentize-py and componentize-js run through the same host.

use weir_engine::{RecordBatch, Transform};
use weir_runtime::{CallMode, Limits, WasmTransform};

use crate::testkit::{polyglot_guest, runtime, values};

fn check(file: &str, grants: &[String]) {
    let rt = runtime();
    let c = rt
        .load(&polyglot_guest(file), grants)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut input = RecordBatch::new(2);
    input.push_with_headers(Some(b"k"), b"hello", &[("h", b"v")], 7, 40);
    input.push(None, b"Wasm 2", 8, 41);
    for mode in [CallMode::Batch, CallMode::PerRecord] {
        let mut t = WasmTransform::new(&c, vec![], Limits::default(), file, mode)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let out = t
            .process_batch(&input)
            .unwrap_or_else(|e| panic!("{file} {mode:?}: {e}"));
        assert_eq!(
            values(&out, &input),
            vec!["HELLO", "WASM 2"],
            "{file} {mode:?}"
        );
        let first = out.batch.get(&input, 0);
        assert_eq!(first.key, Some(&b"k"[..]), "{file} {mode:?}");
        assert_eq!(first.headers().collect::<Vec<_>>(), vec![("h", &b"v"[..])]);
        assert_eq!(first.timestamp, 7);
    }
    let err = WasmTransform::new(
        &c,
        vec![("x".into(), "1".into())],
        Limits::default(),
        file,
        CallMode::Batch,
    )
    .err()
    .expect("config must be refused");
    assert!(
        err.to_string().contains("unknown config key"),
        "{file}: {err}"
    );
}

#[test]
fn python_guest_runs_through_the_host() {
    // CPython's runtime imports wasi:sockets; granting the interfaces links
    // them, but the sandbox still has networking switched off.
    let file = "uppercase-py.wasm";
    let refused = runtime()
        .load(&polyglot_guest(file), &[])
        .err()
        .expect("sockets not granted");
    assert!(refused.to_string().contains("wasi:sockets/"), "{refused}");
    check(file, &["wasi:sockets".to_string()]);
}

#[test]
fn javascript_guest_runs_through_the_host() {
    check("uppercase-js.wasm", &[]);
}

#[test]
fn weir_transform_takes_grants_for_a_python_guest() {
    use std::io::Write;
    let file = polyglot_guest("uppercase-py.wasm");
    let run = |grant: bool| {
        let mut c = crate::testkit::weir();
        c.arg("transform").arg(&file);
        if grant {
            c.args(["--grant", "wasi:sockets"]);
        }
        let mut child = c
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(b"abc\n").unwrap();
        child.wait_with_output().unwrap()
    };
    let refused = run(false);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("wasi:sockets/"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let out = run(true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ABC");
}
