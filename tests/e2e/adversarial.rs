//! The adversarial suite through `weir run`: a stream mixing every kind of
//! hostile record (trap, busy loop, memory bomb, stack overflow, output
//! bomb, oversized output, oversized input, bad record) between good ones.
//! The host survives each, the pipeline's policy decides what happens to
//! the record, dead letters are exactly-once like any output, and a guest
//! that fails on every record is stopped as a crash loop.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use weir_engine::RecordBatch;
use weir_log::Topic;

use crate::testkit::{guest, progress_of, progress_run, run_pipeline as run, weir};

/// The hostile stream, and the error kind each hostile record must get.
const STREAM: &[(&str, Option<&str>)] = &[
    ("ok-1", None),
    ("panic", Some("trap")),
    ("loop", Some("deadline")),
    ("ok-2", None),
    ("oom", Some("out-of-memory")),
    ("recurse", Some("trap")),
    ("bomb", Some("output-limit")),
    ("huge-output", Some("output-limit")),
    ("HUGE-INPUT", Some("too-large")),
    ("bad", Some("bad-record")),
    ("ok-3", None),
];

fn value(v: &str) -> Vec<u8> {
    if v == "HUGE-INPUT" {
        vec![b'h'; 2 << 20]
    } else {
        v.as_bytes().to_vec()
    }
}

fn setup(dir: &Path, values: &[Vec<u8>], on_error: &str, extra_sinks: &str) {
    let mut t = Topic::create(&dir.join("log"), "in", 1).unwrap();
    let mut b = RecordBatch::new(0);
    for (i, v) in values.iter().enumerate() {
        b.push(None, v, 1000 + i as i64, 0);
    }
    t.append(None, &[b], || {}).unwrap();
    let spec = format!(
        r#"
checkpoint = "ckpt"
[[source]]
type = "log"
path = "log"
topic = "in"
[transform]
component = "{misbehave}"
on-error = "{on_error}"
[transform.limits]
memory = "64MiB"
call-timeout = "300ms"
max-record-size = "1MiB"
max-outputs-per-record = 100
max-output-bytes = "8MiB"
crash-loop-traps = 8
[sink.default]
type = "log"
path = "log"
topic = "out"
{extra_sinks}
[trigger]
type = "available-now"
"#,
        misbehave = guest("misbehave").display()
    );
    std::fs::write(dir.join("p.toml"), spec).unwrap();
}

fn read(dir: &Path, topic: &str) -> Vec<serde_json::Value> {
    let out = weir()
        .args(["log", "read"])
        .arg(dir.join("log"))
        .args([topic, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn check_dead_letters(dir: &Path) {
    let good: Vec<String> = read(dir, "out")
        .iter()
        .map(|r| r["value"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(good, ["ok-1", "ok-2", "ok-3"]);
    let letters: Vec<serde_json::Value> = read(dir, "dead")
        .iter()
        .map(|r| serde_json::from_str(r["value"].as_str().unwrap()).unwrap())
        .collect();
    let want: Vec<(u64, &str)> = STREAM
        .iter()
        .enumerate()
        .filter_map(|(i, (_, k))| k.map(|k| (i as u64, k)))
        .collect();
    let got: Vec<(u64, &str)> = letters
        .iter()
        .map(|l| {
            (
                l["source"]["offset"].as_u64().unwrap(),
                l["error"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want, "{letters:#?}");
    for l in &letters {
        assert!(l["component"].as_str().unwrap().starts_with("sha256:"));
        assert!(!l["error"]["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(letters[0]["value"]["text"], "panic");
    // Rust guests overflow their own stack in linear memory first: an
    // out-of-bounds trap, reported in one short line.
    let overflow = letters[3]["error"]["message"].as_str().unwrap();
    assert!(overflow.contains("wasm trap"), "{overflow}");
    assert!(
        !overflow.contains("wasm function"),
        "backtrace dropped: {overflow}"
    );
}

#[test]
fn every_hostile_record_is_dead_lettered_and_the_rest_goes_through() {
    let dead = "[sink.dead-letter]\ntype = \"log\"\npath = \"log\"\ntopic = \"dead\"";
    let values: Vec<Vec<u8>> = STREAM.iter().map(|(v, _)| value(v)).collect();
    // Straight through.
    let straight = tempfile::tempdir().unwrap();
    setup(straight.path(), &values, "dead-letter", dead);
    let out = run(straight.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_dead_letters(straight.path());
    // With a SIGKILL between the sinks: same output, no duplicate letters.
    let crashed = tempfile::tempdir().unwrap();
    setup(crashed.path(), &values, "dead-letter", dead);
    let out = run(crashed.path(), Some("mid-sink"));
    assert_eq!(out.status.signal(), Some(9));
    let out = run(crashed.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_dead_letters(crashed.path());
}

#[test]
fn the_fail_policy_names_the_record_and_the_skip_policy_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    setup(
        dir.path(),
        &[value("ok-1"), value("recurse"), value("ok-2")],
        "fail",
        "",
    );
    let out = run(dir.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("partition 0 offset 1") || err.contains("offset 1"),
        "{err}"
    );
    assert!(err.contains("(trap)"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    setup(
        dir.path(),
        &[value("ok-1"), value("oom"), value("ok-2")],
        "skip",
        "",
    );
    let (progress, _) = progress_of(progress_run(&dir.path().join("p.toml")));
    assert_eq!(progress.last().unwrap()["numRejectedRows"], 1);
    let good: Vec<String> = read(dir.path(), "out")
        .iter()
        .map(|r| r["value"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(good, ["ok-1", "ok-2"]);
}

#[test]
fn a_guest_that_traps_on_every_record_is_stopped_as_a_crash_loop() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<Vec<u8>> = (0..50).map(|_| value("panic")).collect();
    setup(dir.path(), &values, "skip", "");
    let out = run(dir.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("crash loop: the guest failed 8 times"),
        "{err}"
    );
    assert!(read(dir.path(), "out").is_empty());
}

#[test]
fn dead_letter_without_a_dead_letter_sink_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &[value("ok")], "dead-letter", "");
    let out = run(dir.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("needs a [sink.dead-letter]"), "{err}");
}

#[test]
fn a_memory_limit_below_what_the_component_declares_is_refused_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    setup(dir.path(), &[value("ok")], "skip", "");
    let p = dir.path().join("p.toml");
    let spec = std::fs::read_to_string(&p).unwrap();
    std::fs::write(
        &p,
        spec.replace("memory = \"64MiB\"", "memory = \"256KiB\""),
    )
    .unwrap();
    let out = run(dir.path(), None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("declares a linear memory of at least")
            && err.contains("above this pipeline's limit of 262144 (transform.limits.memory)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
