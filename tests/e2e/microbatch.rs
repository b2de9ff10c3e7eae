//! Golden micro-batch pipelines run by the real `weir run` binary, straight
//! through and with SIGKILLs at every fault point and at random moments: the
//! sink must hold exactly the expected output, nothing lost, nothing twice.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use weir_engine::RecordBatch;
use weir_log::Topic;

use crate::testkit::{guest, run_command, run_ok, topic_values, weir};

pub(crate) const FAULT_POINTS: [&str; 4] = [
    "after-offsets-write",
    "mid-sink",
    "after-sink-commit",
    "after-commit-write",
];

/// A pipeline over a fresh directory: input topic `in` (2 partitions) with
/// `n` JSON records, output to topic `out` and to a file sink for the
/// router's `odd` output.
pub(crate) struct Fixture {
    dir: tempfile::TempDir,
    n: usize,
    continuous: bool,
}

/// How the fixture runs.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    MicroBatch(usize),
    Continuous,
    /// Continuous, the log sinks with `write = "as-produced"`.
    AsProduced,
}

impl Fixture {
    pub(crate) fn new(n: usize, batch: usize) -> Fixture {
        Self::with_mode(n, Mode::MicroBatch(batch), &std::env::temp_dir())
    }

    /// The same pipeline in continuous mode (20 ms epochs), stopping once idle.
    pub(crate) fn continuous(n: usize) -> Fixture {
        Self::with_mode(n, Mode::Continuous, &std::env::temp_dir())
    }

    /// Continuous, with the log sinks writing records as tasks produce
    /// them: both input partitions' tasks write the one partition of `even`.
    pub(crate) fn as_produced(n: usize) -> Fixture {
        Self::with_mode(n, Mode::AsProduced, &std::env::temp_dir())
    }

    /// [`Fixture::new`] (or with `continuous`, [`Fixture::continuous`]) in a
    /// directory under `parent`.
    pub(crate) fn in_dir(parent: &Path, n: usize, continuous: bool) -> Fixture {
        let mode = if continuous {
            Mode::Continuous
        } else {
            Mode::MicroBatch(n / 8)
        };
        let f = Self::with_mode(n, mode, parent);
        // Small segments, so the log sinks roll over many times.
        let spec = std::fs::read_to_string(f.path().join("p.toml")).unwrap();
        let spec = spec.replace(
            "topic = \"out\"",
            "topic = \"out\"\nsegment-size = \"4KiB\"",
        );
        let spec = spec.replace(
            "topic = \"even\"",
            "topic = \"even\"\nsegment-size = \"4KiB\"",
        );
        std::fs::write(f.path().join("p.toml"), spec).unwrap();
        f
    }

    fn with_mode(n: usize, mode: Mode, parent: &Path) -> Fixture {
        let continuous = !matches!(mode, Mode::MicroBatch(_));
        let dir = tempfile::tempdir_in(parent).unwrap();
        let log = dir.path().join("log");
        let mut t = Topic::create(&log, "in", 2).unwrap();
        let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
        for i in 0..n {
            let v = format!(
                r#"{{"id":{i},"kind":"{}","value":"record {i}"}}"#,
                if i % 2 == 0 { "even" } else { "odd" }
            );
            let key = format!("k{}", i % 7);
            parts[i % 2].push(Some(key.as_bytes()), v.as_bytes(), i as i64, 0);
        }
        t.append(None, &parts, || {}).unwrap();
        let (run_mode, limit, trigger) = match mode {
            Mode::MicroBatch(batch) => (
                String::new(),
                format!("max-records-per-trigger = {batch}"),
                "[trigger]\ntype = \"available-now\"",
            ),
            // Records written as produced wait up to an epoch for their
            // commit: longer epochs make a SIGKILL land in that window.
            Mode::AsProduced => (
                "mode = \"continuous\"\ncheckpoint-interval = \"200ms\"".to_string(),
                String::new(),
                "",
            ),
            Mode::Continuous => (
                "mode = \"continuous\"\ncheckpoint-interval = \"20ms\"".to_string(),
                String::new(),
                "",
            ),
        };
        let write = if mode == Mode::AsProduced {
            "write = \"as-produced\""
        } else {
            ""
        };
        let spec = format!(
            r#"
name = "golden"
checkpoint = "ckpt"
{run_mode}
[[source]]
type = "log"
path = "log"
topic = "in"
{limit}
[transform]
component = "{router}"
[transform.config]
field = "kind"
route.even = "even"
[sink.default]
type = "log"
path = "log"
topic = "out"
partitions = 2
{write}
[sink.odd]
type = "files"
path = "odd"
[sink.even]
type = "log"
path = "log"
topic = "even"
{write}
{trigger}
"#,
            router = guest("router").display()
        );
        std::fs::write(dir.path().join("p.toml"), spec).unwrap();
        Fixture { dir, n, continuous }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn command(&self) -> std::process::Command {
        run_command(self.path(), self.continuous.then_some("300ms"))
    }

    /// Run to completion; panics unless it exits 0.
    pub(crate) fn run_to_end(&self) {
        run_ok(self.command());
    }

    /// Everything committed to the sinks, sorted, as (sink, value) pairs.
    pub(crate) fn output(&self) -> Vec<(String, String)> {
        let mut got = Vec::new();
        for topic in ["out", "even"] {
            for v in topic_values(&self.path().join("log"), topic).unwrap_or_default() {
                got.push((topic.to_string(), v));
            }
        }
        for line in weir_connectors::file_sink::read_committed(&self.path().join("odd")).unwrap() {
            got.push(("odd".into(), String::from_utf8(line).unwrap()));
        }
        got.sort();
        got
    }

    pub(crate) fn expected(&self) -> Vec<(String, String)> {
        let mut want: Vec<(String, String)> = (0..self.n)
            .map(|i| {
                let kind = if i % 2 == 0 { "even" } else { "odd" };
                let sink = if kind == "even" { "even" } else { "odd" };
                (
                    sink.to_string(),
                    format!(r#"{{"id":{i},"kind":"{kind}","value":"record {i}"}}"#),
                )
            })
            .collect();
        want.sort();
        want
    }
}

#[test]
fn golden_pipeline_straight_through() {
    let f = Fixture::new(3000, 250);
    f.run_to_end();
    assert_eq!(f.output(), f.expected());
    // Running again finds nothing new and changes nothing.
    f.run_to_end();
    assert_eq!(f.output(), f.expected());
}

#[test]
fn sigkill_at_every_fault_point_then_restore() {
    for point in FAULT_POINTS {
        for batch in [0, 3] {
            let f = Fixture::new(2000, 250);
            let out = f
                .command()
                .env("WEIR_FAULT", format!("{point}@{batch}"))
                .output()
                .unwrap();
            assert_eq!(
                out.status.signal(),
                Some(9),
                "{point}@{batch} should have been killed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            f.run_to_end();
            assert_eq!(
                f.output(),
                f.expected(),
                "after a SIGKILL at {point} of batch {batch}"
            );
        }
    }
}

#[test]
fn sigkill_at_random_moments_then_restore() {
    let mut next = crate::testkit::xorshift(0x9e37_79b9_7f4a_7c15);
    let started = Instant::now();
    let mut kills = 0;
    // Each round kills one pipeline at random moments until it manages to
    // finish, then checks its output; rounds repeat until >= 20 kills.
    while kills < 20 {
        let f = Fixture::new(10_000, 100);
        loop {
            let mut child = f.command().spawn().unwrap();
            std::thread::sleep(Duration::from_millis(5 + next() % 150));
            match child.try_wait().unwrap() {
                Some(status) => {
                    assert!(status.success(), "run ended with {status}");
                    break;
                }
                None => {
                    child.kill().unwrap(); // SIGKILL
                    child.wait().unwrap();
                    kills += 1;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(900),
                "random-kill test is taking too long"
            );
        }
        assert_eq!(
            f.output(),
            f.expected(),
            "after {kills} random SIGKILLs so far"
        );
    }
}

#[test]
fn corrupt_checkpoint_files_are_named() {
    let f = Fixture::new(500, 100);
    f.run_to_end();
    let ckpt: PathBuf = f.path().join("ckpt");
    let last = std::fs::read_dir(ckpt.join("offsets")).unwrap().count() - 1;
    std::fs::write(
        ckpt.join("offsets").join(last.to_string()),
        b"v1\n{\"batchId\": 4, \"sour",
    )
    .unwrap();
    let out = f.command().output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("offsets/{last}: invalid entry")),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

#[test]
fn restarting_on_another_sources_checkpoint_is_refused() {
    let f = Fixture::new(100, 100);
    f.run_to_end();
    let spec = std::fs::read_to_string(f.path().join("p.toml"))
        .unwrap()
        .replace("topic = \"in\"", "topic = \"out\"");
    std::fs::write(f.path().join("p.toml"), spec).unwrap();
    let out = f.command().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("was written for source(s)") && err.contains("use a new checkpoint location"),
        "{err}"
    );
}

/// Files in, uppercase, files out: straight, and with a crash in the middle.
#[test]
fn golden_file_pipeline_straight_and_with_a_crash() {
    let expected: Vec<String> = {
        let mut v: Vec<String> = (0..3)
            .flat_map(|f| (0..400).map(move |i| format!("FILE {f} LINE {i}")))
            .collect();
        v.sort();
        v
    };
    for crash in [None, Some("mid-sink@1"), Some("after-offsets-write@2")] {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::create_dir_all(&input).unwrap();
        for f in 0..3 {
            let body: String = (0..400).map(|i| format!("file {f} line {i}\n")).collect();
            std::fs::write(input.join(format!("f{f}.txt")), body).unwrap();
        }
        // In-progress files (dot or underscore) are not picked up.
        std::fs::write(input.join(".partial"), "ignored\n").unwrap();
        let spec = format!(
            "checkpoint = \"ckpt\"\n[[source]]\ntype = \"files\"\npath = \"in\"\nformat = \"raw\"\nmax-files-per-trigger = 1\n[transform]\ncomponent = \"{}\"\n[sink.default]\ntype = \"files\"\npath = \"out\"\n[trigger]\ntype = \"available-now\"\n",
            guest("uppercase").display()
        );
        std::fs::write(dir.path().join("p.toml"), spec).unwrap();
        let cmd = || {
            let mut c = weir();
            c.arg("run")
                .arg(dir.path().join("p.toml"))
                .args(["--progress", "none"]);
            c
        };
        if let Some(fault) = crash {
            let out = cmd().env("WEIR_FAULT", fault).output().unwrap();
            assert_eq!(out.status.signal(), Some(9), "{fault}");
        }
        let out = cmd().output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut got: Vec<String> =
            weir_connectors::file_sink::read_committed(&dir.path().join("out"))
                .unwrap()
                .into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect();
        got.sort();
        assert_eq!(got, expected, "crash: {crash:?}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("ckpt/sources/0"))
                .unwrap()
                .count(),
            1,
            "files listed once"
        );
    }
}
