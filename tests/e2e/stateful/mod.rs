//! Golden stateful pipelines: the three stateful examples (windowed count,
//! sessionization, dedup with TTL) run by the real `weir run`, in both
//! modes, straight through and with SIGKILLs at every step, against
//! expected outputs computed here by plain reference implementations.

pub(crate) mod examples;
mod failures;
mod identity;
pub(crate) mod joins;
mod layout;
mod lookups;
mod object_store;
mod pipelines;

use std::path::Path;
use std::time::Duration;

use weir_engine::RecordBatch;
use weir_log::Topic;

use crate::testkit::{guest, run_command, run_ok, topic_values};

/// Event times start here (ms since the Unix epoch).
pub(crate) const BASE: i64 = 1_700_000_000_000;

/// One input record: partition, JSON value, event time.
pub(crate) type Input = (u32, String, i64);

/// A stateful pipeline over a fresh directory: input topic `in` (2
/// partitions), output topic `out`.
pub(crate) struct Fixture {
    dir: tempfile::TempDir,
    continuous: bool,
    /// Environment of every `weir run` (an object store's settings).
    env: Vec<(String, String)>,
}

pub(crate) struct Spec<'a> {
    pub component: &'a str,
    pub config: &'a str,
    pub delay: &'a str,
    pub continuous: bool,
    /// Records per micro-batch.
    pub batch: usize,
    /// Extra pipeline lines (sinks, options).
    pub extra: &'a str,
    /// Keep state in the disk backend (redb) instead of memory.
    pub disk: bool,
    /// The JSON field state is keyed by (empty: no `[state]` key).
    pub key: &'a str,
    /// Extra `[transform]` lines (grants).
    pub transform: &'a str,
}

impl Fixture {
    pub(crate) fn new(spec: &Spec<'_>, inputs: &[Input]) -> Fixture {
        Self::new_in(&std::env::temp_dir(), spec, inputs)
    }

    /// [`Fixture::new`] in a directory under `parent`.
    pub(crate) fn new_in(parent: &Path, spec: &Spec<'_>, inputs: &[Input]) -> Fixture {
        let dir = tempfile::tempdir_in(parent).unwrap();
        let log = dir.path().join("log");
        let mut t = Topic::create(&log, "in", 2).unwrap();
        let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
        for (p, v, ts) in inputs {
            parts[*p as usize].push(None, v.as_bytes(), *ts, 0);
        }
        t.append(None, &parts, || {}).unwrap();
        let (mode, limit, trigger) = if spec.continuous {
            (
                "mode = \"continuous\"\ncheckpoint-interval = \"20ms\"".to_string(),
                String::new(),
                "",
            )
        } else {
            (
                String::new(),
                format!("max-records-per-trigger = {}", spec.batch),
                "[trigger]\ntype = \"available-now\"",
            )
        };
        let text = format!(
            r#"
name = "stateful"
checkpoint = "ckpt"
{mode}
[[source]]
type = "log"
path = "log"
topic = "in"
{limit}
[transform]
component = "{component}"
on-error = "fail"
{transform}
[transform.config]
{config}
[event-time]
field = "ts"
delay = "{delay}"
watermark = "slowest-partition"
[state]
snapshot-interval = 3
backend = "{backend}"
{key}
[sink.default]
type = "log"
path = "log"
topic = "out"
{extra}
{trigger}
"#,
            // A guest name, or a built component's path.
            component = if spec.component.ends_with(".wasm") {
                std::path::PathBuf::from(spec.component)
            } else {
                guest(spec.component)
            }
            .display(),
            transform = spec.transform,
            config = spec.config,
            delay = spec.delay,
            extra = spec.extra,
            backend = if spec.disk { "disk" } else { "memory" },
            key = if spec.key.is_empty() {
                String::new()
            } else {
                format!("key-field = \"{}\"", spec.key)
            },
        );
        std::fs::write(dir.path().join("p.toml"), text).unwrap();
        Fixture {
            dir,
            continuous: spec.continuous,
            env: Vec::new(),
        }
    }

    /// As `new`, with the checkpoint at `url` (an object store, whose
    /// settings `env` gives each run).
    pub(crate) fn with_checkpoint(
        spec: &Spec<'_>,
        inputs: &[Input],
        url: &str,
        env: Vec<(String, String)>,
    ) -> Fixture {
        let mut f = Fixture::new(spec, inputs);
        let p = f.path().join("p.toml");
        let text = std::fs::read_to_string(&p).unwrap();
        // Epochs of 20 ms would be a stream of requests the test server
        // (single-threaded Python) cannot keep up with.
        let text = text
            .replace("checkpoint = \"ckpt\"", &format!("checkpoint = \"{url}\""))
            .replace(
                "checkpoint-interval = \"20ms\"",
                "checkpoint-interval = \"300ms\"",
            );
        std::fs::write(p, text).unwrap();
        f.env = env;
        f
    }

    /// Append more input (as in `new`).
    pub(crate) fn append(&self, inputs: &[Input]) {
        let mut t = Topic::open(&self.path().join("log"), "in").unwrap();
        let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
        for (p, v, ts) in inputs {
            parts[*p as usize].push(None, v.as_bytes(), *ts, 0);
        }
        t.append(None, &parts, || {}).unwrap();
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn command(&self) -> std::process::Command {
        let mut c = run_command(self.path(), self.continuous.then_some("400ms"));
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Run to completion; panics unless it exits 0.
    pub(crate) fn run_to_end(&self) {
        run_ok(self.command());
    }

    /// Run with `WEIR_FAULT=fault`; true if the process was killed there.
    pub(crate) fn run_with_fault(&self, fault: &str) -> bool {
        let out = self.command().env("WEIR_FAULT", fault).output().unwrap();
        if out.status.success() {
            return false;
        }
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{fault}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        true
    }

    /// Every value committed to topic `topic`, sorted.
    pub(crate) fn output_of(&self, topic: &str) -> Vec<String> {
        let mut got = topic_values(&self.path().join("log"), topic).unwrap_or_default();
        got.sort();
        got
    }

    pub(crate) fn output(&self) -> Vec<String> {
        self.output_of("out")
    }
}

/// Run `spec` over `inputs` straight through, then again with a SIGKILL at
/// each of `faults` in turn (restarting after each), and compare both
/// outputs with `expected`.
pub(crate) fn golden(spec: &Spec<'_>, inputs: &[Input], expected: &[String], faults: &[String]) {
    golden_with(spec, inputs, expected, faults, &Fixture::new);
}

/// `golden` over fixtures made by `fixture` (a checkpoint elsewhere).
pub(crate) fn golden_with(
    spec: &Spec<'_>,
    inputs: &[Input],
    expected: &[String],
    faults: &[String],
    fixture: &dyn Fn(&Spec<'_>, &[Input]) -> Fixture,
) {
    assert!(!expected.is_empty(), "a golden test needs expected output");
    let straight = fixture(spec, inputs);
    straight.run_to_end();
    assert_eq!(straight.output(), expected, "straight through");
    // A second run finds nothing new and writes nothing.
    straight.run_to_end();
    assert_eq!(straight.output(), expected, "second run");

    let crashed = fixture(spec, inputs);
    let mut kills = 0;
    for f in faults {
        if crashed.run_with_fault(f) {
            kills += 1;
        }
    }
    assert!(kills > 0, "no fault point was reached: {faults:?}");
    crashed.run_to_end();
    let got = crashed.output();
    if got != expected {
        // Kept for a post-mortem (checkpoint, offsets, state).
        let kept = crashed.dir.keep();
        assert_eq!(
            got,
            expected,
            "after {kills} SIGKILLs (continuous: {}; kept {})",
            spec.continuous,
            kept.display()
        );
    }
}

/// Kill a run at random moments until it finishes; returns the kills.
pub(crate) fn random_kills(f: &Fixture, seed: u64, max_kills: usize) -> usize {
    random_kills_of(&|| f.command(), seed, max_kills)
}

/// `random_kills` of the runs `command` makes.
pub(crate) fn random_kills_of(
    command: &dyn Fn() -> std::process::Command,
    seed: u64,
    max_kills: usize,
) -> usize {
    let mut next = crate::testkit::xorshift(seed);
    let mut kills = 0;
    loop {
        let mut child = command().spawn().unwrap();
        std::thread::sleep(Duration::from_millis(30 + next() % 250));
        match child.try_wait().unwrap() {
            Some(status) => {
                assert!(status.success(), "run ended with {status}");
                return kills;
            }
            None if kills < max_kills => {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                kills += 1;
            }
            None => {
                let out = child.wait_with_output().unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                return kills;
            }
        }
    }
}

const POINTS: [&str; 5] = [
    "after-offsets-write",
    "after-state-write",
    "mid-sink",
    "after-sink-commit",
    "after-commit-write",
];

/// Fault points to kill at, for batches `batches`.
pub(crate) fn faults_at(batches: &[u64]) -> Vec<String> {
    let mut v = Vec::new();
    for (i, b) in batches.iter().enumerate() {
        for p in POINTS.iter().skip(i % 2) {
            v.push(format!("{p}@{b}"));
        }
    }
    v
}

/// Fault points for continuous mode, whose epoch ids depend on timing:
/// the `n`-th time a run reaches each point.
pub(crate) fn faults_nth(ns: &[u64]) -> Vec<String> {
    let mut v = Vec::new();
    for n in ns {
        for p in POINTS {
            v.push(format!("{p}#{n}"));
        }
    }
    v
}
