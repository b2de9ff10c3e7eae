//! Stateful answers do not depend on the input's layout: the same events
//! split over files, log partitions (written round-robin, not by key),
//! batch sizes and cores give the same windows in both modes, equal to a
//! straightforward reference computed here; and the same with SIGKILLs,
//! from both the `window_count` guest and the host's `[window]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use weir_engine::RecordBatch;
use weir_log::Topic;

use super::BASE;
use crate::testkit::{guest, run_command, run_ok, topic_values, xorshift};

const SIZE: i64 = 10_000;
const DELAY: i64 = 1_000;

/// Event `i`: key `user-<i % keys>`, event time BASE + i ms.
fn event(i: u64, keys: u64) -> String {
    format!(
        r#"{{"id":{i},"key":"user-{}","value":"v-{i:08}","ts":{}}}"#,
        i % keys,
        BASE + i as i64
    )
}

/// 10 s tumbling counts per key that the final watermark (newest event
/// time - 1 s) closes, as the window_count guest prints them.
fn reference(n: u64, keys: u64) -> Vec<String> {
    let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
    for i in 0..n {
        let ts = BASE + i as i64;
        *counts
            .entry((i % keys, ts - ts.rem_euclid(SIZE)))
            .or_default() += 1;
    }
    let wm = BASE + n as i64 - 1 - DELAY;
    let mut out: Vec<String> = counts
        .into_iter()
        .filter(|((_, start), _)| start + SIZE <= wm)
        .map(|((k, start), c)| {
            format!(
                r#"{{"key":"user-{k}","start":{start},"end":{},"count":{c}}}"#,
                start + SIZE
            )
        })
        .collect();
    out.sort();
    out
}

/// The events in `files` files, contiguous ranges in name order.
fn write_files(dir: &Path, n: u64, keys: u64, files: u64) {
    std::fs::create_dir_all(dir).unwrap();
    for f in 0..files {
        let mut text = String::new();
        for i in f * n / files..(f + 1) * n / files {
            text.push_str(&event(i, keys));
            text.push('\n');
        }
        std::fs::write(dir.join(format!("part-{f:03}.jsonl")), text).unwrap();
    }
}

/// The events in a topic of `partitions` partitions, round-robin and
/// without keys, so no partition holds a key's events alone.
fn write_topic(log: &Path, n: u64, keys: u64, partitions: u32) {
    let mut t = Topic::create(log, "in", partitions).unwrap();
    let mut parts: Vec<RecordBatch> = (0..partitions).map(RecordBatch::new).collect();
    for i in 0..n {
        let p = (i % partitions as u64) as usize;
        parts[p].push(None, event(i, keys).as_bytes(), BASE + i as i64, 0);
        if parts[p].len() >= 10_000 {
            t.append(None, &parts, || {}).unwrap();
            parts.iter_mut().for_each(RecordBatch::clear);
        }
    }
    t.append(None, &parts, || {}).unwrap();
}

/// Who counts: the `window_count` guest, or the host's `[window]`.
#[derive(Clone, Copy, Debug)]
enum Counter {
    Guest,
    Host,
}

impl Counter {
    fn section(self) -> String {
        match self {
            Counter::Guest => format!(
                "[transform]\ncomponent = \"{}\"\non-error = \"fail\"\n[transform.config]\nkey-field = \"key\"\nsize = \"10s\"",
                guest("window_count").display()
            ),
            Counter::Host => "[window]\nsize = \"10s\"\non-error = \"fail\"".into(),
        }
    }
}

enum Input {
    Files { files: u64, per_trigger: u64 },
    Log { partitions: u32, continuous: bool },
}

/// A window-count pipeline over `input` in a fresh directory.
fn pipeline(
    n: u64,
    keys: u64,
    input: &Input,
    extra_state: &str,
    counter: Counter,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (source, mode, trigger, watermark, sink) = match input {
        // per_trigger 0: trigger "once", everything in one batch.
        Input::Files {
            files,
            per_trigger: 0,
        } => {
            write_files(&dir.path().join("in"), n, keys, *files);
            (
                "type = \"files\"\npath = \"in\"".to_string(),
                "",
                "[trigger]\ntype = \"once\"",
                "",
                "type = \"files\"\npath = \"out\"",
            )
        }
        Input::Files { files, per_trigger } => {
            write_files(&dir.path().join("in"), n, keys, *files);
            (
                format!("type = \"files\"\npath = \"in\"\nmax-files-per-trigger = {per_trigger}"),
                "",
                "[trigger]\ntype = \"available-now\"",
                "",
                "type = \"files\"\npath = \"out\"",
            )
        }
        Input::Log {
            partitions,
            continuous,
        } => {
            write_topic(&dir.path().join("log"), n, keys, *partitions);
            let source = "type = \"log\"\npath = \"log\"\ntopic = \"in\"".to_string();
            let sink = "type = \"log\"\npath = \"log\"\ntopic = \"out\"";
            if *continuous {
                // Continuous readers progress independently, so there the
                // slowest partition leads the watermark by default; with one
                // partition Spark's rule is the same thing, and is tested.
                let rule = if *partitions > 1 {
                    ""
                } else {
                    "watermark = \"max-event-time\""
                };
                let mode = "mode = \"continuous\"\ncheckpoint-interval = \"20ms\"";
                (source, mode, "", rule, sink)
            } else {
                let source = format!("{source}\nmax-records-per-trigger = 7000");
                (source, "", "[trigger]\ntype = \"available-now\"", "", sink)
            }
        }
    };
    let text = format!(
        r#"
name = "layout"
checkpoint = "ckpt"
{mode}
[[source]]
{source}
[event-time]
field = "ts"
delay = "1s"
{watermark}
[state]
key-field = "key"
{extra_state}
{counter}
[sink.default]
{sink}
{trigger}
"#,
        counter = counter.section()
    );
    std::fs::write(dir.path().join("p.toml"), text).unwrap();
    dir
}

fn command(dir: &Path, input: &Input) -> Command {
    let continuous = matches!(
        input,
        Input::Log {
            continuous: true,
            ..
        }
    );
    run_command(dir, continuous.then_some("500ms"))
}

fn output(dir: &Path, input: &Input) -> Vec<String> {
    let mut got = match input {
        Input::Files { .. } => weir_connectors::file_sink::read_committed(&dir.join("out"))
            .unwrap()
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect(),
        Input::Log { .. } => topic_values(&dir.join("log"), "out").unwrap_or_default(),
    };
    got.sort();
    got
}

/// Kill `weir run` at `kills` random moments (each within `40 + within_ms`
/// ms of a start), restarting each time, then let it finish; returns how
/// many kills landed.
fn run_with_random_kills(
    dir: &Path,
    input: &Input,
    seed: u64,
    kills: usize,
    within_ms: u64,
) -> usize {
    let mut next = xorshift(seed);
    let mut landed = 0;
    while landed < kills {
        let mut child = command(dir, input).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(40 + next() % within_ms));
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "run ended with {status}");
            return landed;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        landed += 1;
    }
    run_ok(command(dir, input));
    landed
}

/// The issue's workload: 1,000,000 events of 1,000 keys in 8 files, 10 s
/// windows, 1 s delay: 99,000 windows of exactly 10 events, whatever the
/// number of files per trigger, and with 20 SIGKILLs.
#[test]
fn a_million_events_in_eight_files_give_every_window_once() {
    let (n, keys) = (1_000_000, 1_000);
    let expected = reference(n, keys);
    assert_eq!(expected.len(), 99_000);
    assert!(expected.iter().all(|w| w.ends_with(r#""count":10}"#)));
    for (per_trigger, counter) in [(1, Counter::Guest), (8, Counter::Guest), (8, Counter::Host)] {
        let input = Input::Files {
            files: 8,
            per_trigger,
        };
        let dir = pipeline(n, keys, &input, "", counter);
        run_ok(command(dir.path(), &input));
        let got = output(dir.path(), &input);
        let case = format!("max-files-per-trigger = {per_trigger}, {counter:?}");
        assert_eq!(got.len(), 99_000, "{case}");
        assert!(got == expected, "{case}");
    }
    // The host's run is shorter: its kills come sooner, and the run may
    // still end before all of them (at least half must land).
    for (seed, counter, within_ms, least) in [
        (0x9e37_79b9, Counter::Guest, 200, 20),
        (0x7f4a_7c15, Counter::Host, 40, 10),
    ] {
        let input = Input::Files {
            files: 8,
            per_trigger: 1,
        };
        let dir = pipeline(n, keys, &input, "", counter);
        let kills = run_with_random_kills(dir.path(), &input, seed, 20, within_ms);
        assert!(kills >= least, "{kills} kills landed, {counter:?}");
        let got = output(dir.path(), &input);
        assert_eq!(got.len(), 99_000, "after {kills} SIGKILLs, {counter:?}");
        assert!(got == expected, "after {kills} SIGKILLs, {counter:?}");
    }
}

/// The same records over 1, 3 and 8 files (with `once`, whose batches
/// without data close the last windows, and `available-now`), and over a
/// log topic of 1 and 4 partitions in both modes, on 1 and 2 cores and 3 or
/// 8 state partitions: one answer, the reference's.
#[test]
fn the_answer_does_not_depend_on_files_partitions_modes_or_cores() {
    let (n, keys) = (100_000, 100);
    let expected = reference(n, keys);
    assert_eq!(expected.len(), 900);
    let files = |files, per_trigger| Input::Files { files, per_trigger };
    let log = |partitions, continuous| Input::Log {
        partitions,
        continuous,
    };
    let cases = [
        (files(3, 0), "2", ""),
        (files(1, 1), "1", ""),
        (files(3, 2), "2", ""),
        (files(8, 3), "2", "partitions = 3"),
        (log(1, false), "2", ""),
        (log(4, false), "1", "partitions = 3"),
        (log(1, true), "2", ""),
        (log(4, true), "2", "partitions = 3"),
    ];
    let runs = cases
        .iter()
        .flat_map(|case| [Counter::Guest, Counter::Host].map(|counter| (case, counter)));
    for ((input, cores, state), counter) in runs {
        let dir = pipeline(n, keys, input, state, counter);
        run_ok({
            let mut c = command(dir.path(), input);
            c.env("WEIR_PARALLELISM", cores);
            c
        });
        let got = output(dir.path(), input);
        let case = match input {
            Input::Files { files, per_trigger } => {
                format!("{files} files, {per_trigger} per trigger")
            }
            Input::Log {
                partitions,
                continuous,
            } => format!("{partitions} partitions, continuous: {continuous}"),
        };
        let case = format!("{case}, {cores} cores, {state}, {counter:?}");
        assert_eq!(got.len(), expected.len(), "{case}");
        assert!(got == expected, "{case}");
    }
}

/// A continuous stateful run killed at random moments and restored still
/// gives the reference's windows.
#[test]
fn continuous_exchange_survives_random_sigkills() {
    let (n, keys) = (100_000, 100);
    let input = Input::Log {
        partitions: 4,
        continuous: true,
    };
    for counter in [Counter::Guest, Counter::Host] {
        let dir = pipeline(n, keys, &input, "partitions = 3", counter);
        let kills = run_with_random_kills(dir.path(), &input, 0x51ce_55ed, 8, 200);
        assert!(kills > 0);
        assert!(
            output(dir.path(), &input) == reference(n, keys),
            "after {kills} SIGKILLs, {counter:?}"
        );
    }
}
