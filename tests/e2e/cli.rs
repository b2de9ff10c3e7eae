//! The `weir` binary: validate and transform, as a user runs them.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::testkit::{guest, weir};

fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = weir()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn validate_accepts_every_example() {
    for name in ["uppercase", "json_filter", "json_enrich", "router"] {
        let out = weir().arg("validate").arg(guest(name)).output().unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(
            stdout.contains("package:   weir:transform@0.1.0"),
            "{stdout}"
        );
        assert!(stdout.contains("world:     transformer"), "{stdout}");
        assert!(
            stdout.contains("exports:   weir:transform/transform@0.1.0"),
            "{stdout}"
        );
        assert!(stdout.contains("runnable:  yes"), "{stdout}");
    }
}

#[test]
fn validate_rejects_bad_files_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text_file = dir.path().join("readme.txt");
    std::fs::write(&text_file, "just text\n").unwrap();
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, wat::parse_str("(module)").unwrap()).unwrap();
    let cases = [
        (text_file, "not a WebAssembly binary"),
        (core, "is a core wasm module, not a component"),
        (
            guest("not-a-transform"),
            "does not export `weir:transform/transform@0.1.0`",
        ),
    ];
    for (path, expected) in cases {
        let out = weir().arg("validate").arg(&path).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}", path.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(expected),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn transform_uppercases_stdin_lines() {
    let up = guest("uppercase");
    let out = run_with_stdin(&["transform", up.to_str().unwrap()], "abc\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "ABC\n");
    let out = run_with_stdin(
        &["transform", up.to_str().unwrap(), "--per-record"],
        "a\nb c\n",
    );
    assert_eq!(text(&out.stdout), "A\nB C\n");
}

#[test]
fn transform_prints_json_records_and_reports_bad_lines() {
    let router = guest("router");
    let out = run_with_stdin(
        &[
            "transform",
            router.to_str().unwrap(),
            "--config",
            "field=r",
            "--json",
        ],
        "{\"r\":\"eu\"}\nnope\n{}\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["output"], "eu");
    assert_eq!(lines[0]["offset"], 0);
    assert_eq!(lines[1]["output"], serde_json::Value::Null);
    assert_eq!(lines[1]["offset"], 2);
    assert!(text(&out.stderr).contains("line 2: bad record: value is not JSON"));
}

#[test]
fn transform_with_bad_config_fails_clearly() {
    let f = guest("json_filter");
    let out = run_with_stdin(&["transform", f.to_str().unwrap(), "-c", "feild=x"], "{}\n");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("init failed") && stderr.contains("unknown config key `feild`"),
        "{stderr}"
    );
}
