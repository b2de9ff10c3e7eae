//! The `weir` binary: validate and transform, as a user runs them.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::testkit::{guest, progress_of, progress_run, weir};

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
    let examples = [
        ("uppercase", false),
        ("json_filter", false),
        ("json_enrich", false),
        ("router", false),
        ("window_count", true),
        ("sessionize", true),
        ("dedup", true),
    ];
    for (name, stateful) in examples {
        let out = weir().arg("validate").arg(guest(name)).output().unwrap();
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(
            stdout.contains("package:   weir:transform@0.2.0"),
            "{stdout}"
        );
        let world = if stateful {
            "world:     stateful-transformer"
        } else {
            "world:     transformer"
        };
        assert!(stdout.contains(world), "{name}: {stdout}");
        let exports = stdout.lines().find(|l| l.starts_with("exports:")).unwrap();
        assert!(
            exports.contains("weir:transform/transform@0.2.0"),
            "{stdout}"
        );
        // Only stateful guests import state; the SDK adds nothing else.
        let imports = stdout.lines().find(|l| l.starts_with("imports:")).unwrap();
        assert_eq!(
            imports.contains("weir:transform/state"),
            stateful,
            "{name}: {imports}"
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
            "does not export `weir:transform/transform@0.2.0`",
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
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("line 2: bad-record: value is not JSON"),
        "{stderr}"
    );
    assert!(
        stderr.contains("3 in, 2 out, 1 rejected (bad-record 1)"),
        "{stderr}"
    );
}

#[test]
fn transform_isolates_a_trapping_and_a_looping_record_and_keeps_the_rest() {
    let m = guest("misbehave");
    for extra in [None, Some("--per-record")] {
        let mut args = vec![
            "transform",
            m.to_str().unwrap(),
            "--limit",
            "call-timeout=300ms",
        ];
        args.extend(extra);
        let out = run_with_stdin(&args, "a\npanic\nb\nloop\nc\n");
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{extra:?}: {stderr}");
        assert_eq!(text(&out.stdout), "a\nb\nc\n", "{extra:?}");
        assert!(stderr.contains("line 2: trap: "), "{stderr}");
        assert!(stderr.contains("line 4: deadline: "), "{stderr}");
        assert!(
            stderr.contains("5 in, 3 out, 2 rejected (deadline 1, trap 1)"),
            "{stderr}"
        );
    }
    let out = run_with_stdin(
        &[
            "transform",
            m.to_str().unwrap(),
            "--limit",
            "call-timeout=0s",
        ],
        "a\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("call-timeout must be longer than zero"),
        "{}",
        text(&out.stderr)
    );
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

#[test]
fn log_create_append_read_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("log");
    let root_s = root.to_str().unwrap();
    let out = weir()
        .args(["log", "create", root_s, "events", "-p", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run_with_stdin(
        &["log", "append", root_s, "events", "--key-field", "u"],
        "{\"u\":\"a\",\"n\":1}\n{\"u\":\"b\",\"n\":2}\n{\"u\":\"a\",\"n\":3}\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = weir()
        .args(["log", "read", root_s, "events", "--json"])
        .output()
        .unwrap();
    let recs: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 3);
    // Same key, same partition, in append order.
    let a: Vec<_> = recs.iter().filter(|r| r["key"] == "a").collect();
    assert_eq!(a[0]["partition"], a[1]["partition"]);
    assert!(a[0]["offset"].as_i64() < a[1]["offset"].as_i64());
    let err = run_with_stdin(
        &["log", "append", root_s, "events", "--key-field", "u"],
        "not json\n",
    );
    assert!(!err.status.success());
    assert!(
        text(&err.stderr).contains("stdin line 1: not JSON"),
        "{}",
        text(&err.stderr)
    );

    // A pipeline over it, then `weir status` and `weir files`.
    let spec = format!(
        "checkpoint = \"ckpt\"\n[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"events\"\n[transform]\ncomponent = \"{}\"\n[sink.default]\ntype = \"files\"\npath = \"out\"\n[trigger]\ntype = \"once\"\n",
        guest("uppercase").display()
    );
    std::fs::write(dir.path().join("p.toml"), spec).unwrap();
    let (progress, _) = progress_of(progress_run(&dir.path().join("p.toml")));
    let progress = &progress[0];
    assert_eq!(progress["batchId"], 0);
    assert_eq!(progress["numInputRows"], 3);
    assert_eq!(progress["sink"]["numOutputRows"], 3);
    for field in [
        "latestOffset",
        "walCommit",
        "addBatch",
        "commit",
        "triggerExecution",
    ] {
        assert!(progress["durationMs"][field].is_u64(), "{field}");
    }
    let out = weir()
        .arg("status")
        .arg(dir.path().join("ckpt"))
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("committed:  batch 0"),
        "{}",
        text(&out.stdout)
    );
    let out = weir()
        .arg("files")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let mut lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(
        lines,
        vec![
            "{\"U\":\"A\",\"N\":1}",
            "{\"U\":\"A\",\"N\":3}",
            "{\"U\":\"B\",\"N\":2}"
        ]
    );
}

#[test]
fn run_rejects_a_misspelled_pipeline_key_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, "checkpoint = \"c\"\n[[source]]\ntype = \"rate\"\nrows-per-secnd = 5\n[sink.default]\ntype = \"console\"\n").unwrap();
    let out = weir().arg("run").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("p.toml:4:1: unknown field `rows-per-secnd`"),
        "{stderr}"
    );
}

#[test]
fn exit_when_idle_is_refused_in_micro_batch_mode() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.toml");
    std::fs::write(&p, "checkpoint = \"c\"\n[[source]]\ntype = \"rate\"\nrows-per-second = 5\n[sink.default]\ntype = \"console\"\n").unwrap();
    let out = weir()
        .arg("run")
        .arg(&p)
        .args(["--exit-when-idle", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--exit-when-idle applies to continuous mode"),
        "{stderr}"
    );
}

#[test]
fn every_example_pipeline_file_is_valid() {
    let dir = crate::testkit::repo_root().join("examples/pipelines");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "toml") {
            weir_pipeline::spec::Pipeline::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 4, "{n} example pipelines");
}

#[test]
fn log_read_shows_uncommitted_records_only_when_asked() {
    use weir_engine::RecordBatch;
    use weir_log::{EpochWriter, Topic};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let t = Topic::create(dir.path(), "t", 1).unwrap();
    let w = EpochWriter::open(t, [1; 16], "this test").unwrap();
    w.begin(0);
    let mut b = RecordBatch::new(0);
    b.push(None, b"early", 0, 0);
    w.write(0, vec![b]).unwrap();
    let read = |isolation: &str| {
        let out = weir()
            .args(["log", "read", root, "t", "--isolation", isolation])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert_eq!(read("read-committed"), "");
    assert_eq!(read("read-uncommitted"), "early\n");
    w.end_epoch(0).unwrap();
    w.commit(0).unwrap();
    assert_eq!(read("read-committed"), "early\n");
}
