//! `weir replay`: a candidate component over committed batches (epochs) of
//! pipelines run by the real `weir run`, compared with what they committed.
//! The live checkpoint, state and sinks are hashed before and after: replay
//! must not change a byte of them.

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use sha2::{Digest, Sha256};

use weir_engine::RecordBatch;
use weir_log::Topic;

use crate::microbatch::Fixture as Golden;
use crate::stateful::Fixture as Stateful;
use crate::stateful::examples::{window_inputs, window_spec};
use crate::testkit::{guest, run_ok, weir};

/// Every file under `dir` (path and bytes), hashed in path order.
fn tree_hash(dir: &Path) -> String {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        h.update(f.to_string_lossy().as_bytes());
        h.update(std::fs::read(&f).unwrap());
    }
    hex::encode(h.finalize())
}

pub(crate) fn replay(dir: &Path, component: &Path, range: &[&str]) -> Output {
    weir()
        .arg("replay")
        .arg(dir.join("p.toml"))
        .arg("--component")
        .arg(component)
        .args(range)
        .arg("--json")
        .output()
        .unwrap()
}

/// The JSON report of a replay that ran, checking the exit code says
/// whether anything differed.
pub(crate) fn report(out: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let r: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no report ({e}): {stderr}"));
    let differs = r["total-differences"].as_u64().unwrap_or(0) > 0;
    assert_eq!(out.status.code(), Some(differs as i32), "{stderr}");
    r
}

fn batch_ids(r: &Value) -> Vec<u64> {
    let b = r["batches"].as_array().unwrap();
    b.iter().map(|b| b["id"].as_u64().unwrap()).collect()
}

/// Rows the candidate made over every batch and output.
fn candidate_rows(r: &Value) -> u64 {
    let b = r["batches"].as_array().unwrap();
    b.iter()
        .flat_map(|b| b["outputs"].as_array().unwrap())
        .map(|o| o["candidate-rows"].as_u64().unwrap())
        .sum()
}

#[test]
fn the_same_component_replays_without_differences_and_changes_nothing() {
    // 3,000 records in batches of 250 through the router: three outputs,
    // two log topics and a file sink.
    let f = Golden::new(3000, 250);
    f.run_to_end();
    let before = tree_hash(f.path());

    let r = report(&replay(f.path(), &guest("router"), &[]));
    assert_eq!(r["unit"], "batch");
    assert_eq!(batch_ids(&r), (7..=11).collect::<Vec<_>>(), "the newest 5");
    assert_eq!(r["total-differences"], 0);
    for b in r["batches"].as_array().unwrap() {
        assert_eq!(b["input-rows"], 250);
        assert_eq!(b["live-output-rows"], 250);
        assert_eq!(b["outputs"].as_array().unwrap().len(), 3);
    }

    let all = report(&replay(f.path(), &guest("router"), &["--from", "0"]));
    assert_eq!(batch_ids(&all), (0..=11).collect::<Vec<_>>());
    assert_eq!(all["total-differences"], 0);
    assert_eq!(candidate_rows(&all), 3000);
    assert_eq!(
        tree_hash(f.path()),
        before,
        "replay changed the live pipeline"
    );
}

/// Write `DIR/p.toml`, the `uppercase` guest from `source` (the lines of
/// its `[[source]]` table) to files in `out`, and run it to the end.
pub(crate) fn run_uppercase(dir: &Path, source: &str) {
    let spec = format!(
        "checkpoint = \"ckpt\"\n[[source]]\n{source}\n[transform]\ncomponent = \"{}\"\n\
         [sink.default]\ntype = \"files\"\npath = \"out\"\n[trigger]\ntype = \"available-now\"\n",
        guest("uppercase").display()
    );
    std::fs::write(dir.join("p.toml"), spec).unwrap();
    let mut c = weir();
    c.arg("run")
        .arg(dir.join("p.toml"))
        .args(["--progress", "none"]);
    run_ok(c);
}

/// `record <n>` values for n in 0..5000 over 2 partitions, uppercased into
/// a file sink in batches of 1,000.
fn uppercase_pipeline(dir: &Path) {
    let mut t = Topic::create(&dir.join("log"), "in", 2).unwrap();
    let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
    for i in 0..5000 {
        parts[i % 2].push(None, format!("record {i}").as_bytes(), i as i64, 0);
    }
    t.append(None, &parts, || {}).unwrap();
    run_uppercase(
        dir,
        "type = \"log\"\npath = \"log\"\ntopic = \"in\"\nmax-records-per-trigger = 1000",
    );
}

#[test]
fn a_candidate_changing_one_record_in_a_thousand_reports_exactly_those() {
    let dir = tempfile::tempdir().unwrap();
    uppercase_pipeline(dir.path());
    let before = tree_hash(dir.path());

    let same = report(&replay(dir.path(), &guest("uppercase"), &[]));
    assert_eq!(batch_ids(&same), vec![0, 1, 2, 3, 4]);
    assert_eq!(same["total-differences"], 0);

    let r = report(&replay(dir.path(), &guest("uppercase-canary"), &[]));
    assert_eq!(r["total-differences"], 5);
    let mut pairs = Vec::new();
    for b in r["batches"].as_array().unwrap() {
        assert_eq!(b["input-rows"], 1000);
        let o = &b["outputs"][0];
        assert_eq!(
            (o["live-rows"].as_u64(), o["candidate-rows"].as_u64()),
            (Some(1000), Some(1000))
        );
        assert_eq!(b["differences"], o["differing"]);
        for d in o["first-differences"].as_array().unwrap() {
            pairs.push((
                d["live"].as_str().unwrap().to_string(),
                d["candidate"].as_str().unwrap().to_string(),
            ));
        }
    }
    pairs.sort();
    let mut want: Vec<(String, String)> = [999, 1999, 2999, 3999, 4999]
        .iter()
        .map(|n| (format!("RECORD {n}"), format!("RECORD {n}!")))
        .collect();
    want.sort();
    assert_eq!(pairs, want);

    // The plain-text report says the same, for people.
    let text = weir()
        .arg("replay")
        .arg(dir.path().join("p.toml"))
        .arg("--component")
        .arg(guest("uppercase-canary"))
        .args(["--from", "1", "--to", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("candidate: RECORD 1999!"), "{stdout}");
    assert!(
        stdout.contains("1 differing record(s) in 1 batch(es)"),
        "{stdout}"
    );
    assert_eq!(
        tree_hash(dir.path()),
        before,
        "replay changed the live pipeline"
    );
}

#[test]
fn a_stateful_window_count_replays_from_the_middle_as_it_ran() {
    let inputs = window_inputs(3000);
    let f = Stateful::new(&window_spec(false), &inputs);
    f.run_to_end();
    let before = tree_hash(f.path());
    // From batch 4, windows opened before it are counted on from the
    // state version batch 4 started with: a replay from empty state would
    // emit smaller counts.
    let r = report(&replay(f.path(), &guest("window_count"), &["--from", "4"]));
    assert_eq!(r["total-differences"], 0);
    let live: u64 = r["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["live-output-rows"].as_u64().unwrap())
        .sum();
    assert!(live > 20, "the replayed batches closed windows: {live}");
    assert_eq!(
        tree_hash(f.path()),
        before,
        "replay changed the live pipeline"
    );
}

#[test]
fn continuous_epochs_replay_without_differences() {
    let f = Golden::continuous(2000);
    f.run_to_end();
    let before = tree_hash(f.path());
    let r = report(&replay(f.path(), &guest("router"), &["--from", "0"]));
    assert_eq!(r["unit"], "epoch");
    assert_eq!(r["total-differences"], 0);
    assert_eq!(candidate_rows(&r), 2000);
    assert_eq!(
        tree_hash(f.path()),
        before,
        "replay changed the live pipeline"
    );
}

#[test]
fn refusals_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    uppercase_pipeline(dir.path());
    let stderr = |o: Output| {
        assert_eq!(o.status.code(), Some(2));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = stderr(replay(dir.path(), &guest("uppercase"), &["--to", "9"]));
    assert!(
        e.contains("batch 9 is not committed (the newest committed batch is 4)"),
        "{e}"
    );
    let e = stderr(replay(
        dir.path(),
        &guest("uppercase"),
        &["--from", "3", "--to", "2"],
    ));
    assert!(e.contains("from = 3 is after to = 2"), "{e}");
    let e = stderr(replay(dir.path(), &guest("not-a-transform"), &[]));
    assert!(e.contains("the candidate"), "{e}");
    // Batches pruned from the checkpoint's logs (as after 100 batches).
    for d in ["offsets/0", "commits/0"] {
        std::fs::remove_file(dir.path().join("ckpt").join(d)).unwrap();
    }
    let e = stderr(replay(dir.path(), &guest("uppercase"), &["--from", "0"]));
    assert!(
        e.contains("batch 0 is no longer recorded in the checkpoint: it keeps batch 1 to 4"),
        "{e}"
    );
    // Input gone: the topic's segments removed under it.
    for p in ["0", "1"] {
        for f in std::fs::read_dir(dir.path().join("log/in").join(p)).unwrap() {
            std::fs::remove_file(f.unwrap().path()).unwrap();
        }
    }
    let e = stderr(replay(dir.path(), &guest("uppercase"), &[]));
    assert!(e.contains("replaying batch 1 (input offsets"), "{e}");
    assert!(e.contains("those offsets are gone"), "{e}");
}

#[test]
fn a_file_sourced_pipeline_replays_from_its_file_log() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(&input).unwrap();
    for f in 0..4 {
        let lines: String = (f * 500..(f + 1) * 500)
            .map(|i| format!("record {i}\n"))
            .collect();
        std::fs::write(input.join(format!("part-{f}.txt")), lines).unwrap();
    }
    run_uppercase(
        dir.path(),
        "type = \"files\"\npath = \"in\"\nmax-files-per-trigger = 1",
    );
    let before = tree_hash(dir.path());
    let r = report(&replay(
        dir.path(),
        &guest("uppercase-canary"),
        &["--from", "0"],
    ));
    assert_eq!(batch_ids(&r), vec![0, 1, 2, 3]);
    assert_eq!(r["total-differences"], 2, "record 999 and record 1999");
    assert_eq!(candidate_rows(&r), 2000);
    assert_eq!(
        tree_hash(dir.path()),
        before,
        "replay changed the live pipeline"
    );
    // A file gone: the batch that read it cannot be replayed, and says so.
    std::fs::remove_file(input.join("part-2.txt")).unwrap();
    let out = replay(dir.path(), &guest("uppercase"), &["--from", "0"]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("replaying batch 2 (input offsets"), "{e}");
    assert!(e.contains("part-2.txt"), "{e}");
}
