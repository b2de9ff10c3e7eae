//! The golden pipeline in continuous mode: same expected output as the
//! micro-batch run, straight through, after a SIGKILL at every fault point,
//! and after 20+ SIGKILLs at random moments.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use weir_log::{Fetched, Topic, UncommittedReader};

use crate::microbatch::{FAULT_POINTS, Fixture};

#[test]
fn continuous_golden_pipeline_straight_through() {
    let f = Fixture::continuous(3000);
    f.run_to_end();
    assert_eq!(f.output(), f.expected());
    f.run_to_end();
    assert_eq!(f.output(), f.expected());
}

/// A SIGKILL at each fault point of epoch 0, then a run to the end: the
/// output is exactly the expected.
fn sigkill_at_every_fault_point(fixture: fn(usize) -> Fixture) {
    for point in FAULT_POINTS {
        let f = fixture(2000);
        // Epoch 0 commits whatever the tasks read in its first interval:
        // with data already there it is never empty, so the fault fires.
        let out = f
            .command()
            .env("WEIR_FAULT", format!("{point}@0"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.signal(),
            Some(9),
            "{point}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        f.run_to_end();
        assert_eq!(f.output(), f.expected(), "after a SIGKILL at {point}");
    }
}

#[test]
fn continuous_sigkill_at_every_fault_point_then_restore() {
    sigkill_at_every_fault_point(Fixture::continuous);
}

#[test]
fn continuous_sigkill_at_random_moments_then_restore() {
    let mut next = crate::testkit::xorshift(0x2545_f491_4f6c_dd1d);
    let started = Instant::now();
    let mut kills = 0;
    // A continuous run only ends after an idle period, so each round kills
    // the pipeline 5 times at random moments, then lets it finish.
    while kills < 20 {
        let f = Fixture::continuous(20_000);
        for _ in 0..5 {
            let mut child = f.command().spawn().unwrap();
            std::thread::sleep(Duration::from_millis(5 + next() % 200));
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            kills += 1;
        }
        f.run_to_end();
        assert_eq!(
            f.output(),
            f.expected(),
            "after {kills} random SIGKILLs so far"
        );
        assert!(started.elapsed() < Duration::from_secs(900));
    }
}

#[test]
fn restarting_a_micro_batch_checkpoint_in_continuous_mode_is_refused() {
    let f = Fixture::new(100, 50);
    f.run_to_end();
    let spec = std::fs::read_to_string(f.path().join("p.toml")).unwrap();
    let spec = spec
        .replace(
            "checkpoint = \"ckpt\"",
            "checkpoint = \"ckpt\"\nmode = \"continuous\"",
        )
        .replace("[trigger]\ntype = \"available-now\"", "")
        .replace("max-records-per-trigger = 50", "");
    std::fs::write(f.path().join("p.toml"), spec).unwrap();
    let out = f
        .command()
        .args(["--exit-when-idle", "100ms"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "was written in micro-batch mode; restarting it in continuous mode is not supported"
        ),
        "{err}"
    );
}

#[test]
fn restarting_a_continuous_checkpoint_in_micro_batch_mode_is_refused() {
    let f = Fixture::continuous(100);
    f.run_to_end();
    let spec = std::fs::read_to_string(f.path().join("p.toml")).unwrap();
    let spec = spec.replace("mode = \"continuous\"\ncheckpoint-interval = \"20ms\"", "");
    std::fs::write(f.path().join("p.toml"), spec).unwrap();
    let out = crate::testkit::weir()
        .arg("run")
        .arg(f.path().join("p.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(
            "was written in continuous mode; restarting it in micro-batch mode is not supported"
        ),
        "{err}"
    );
}

#[test]
fn continuous_progress_reports_each_epoch_with_latency_and_lag() {
    let f = Fixture::continuous(3000);
    let mut run = crate::testkit::progress_run(&f.path().join("p.toml"));
    run.args(["--exit-when-idle", "300ms"]);
    let (epochs, _) = crate::testkit::progress_of(run);
    assert!(!epochs.is_empty());
    let rows: u64 = epochs
        .iter()
        .map(|p| p["numInputRows"].as_u64().unwrap())
        .sum();
    assert_eq!(rows, 3000);
    let mut last = None;
    for p in &epochs {
        let id = p["batchId"].as_u64().unwrap();
        assert!(last.is_none_or(|l| id > l), "epochs in order: {epochs:?}");
        last = Some(id);
        let l = &p["latencyMs"];
        assert!(l["p50"].as_u64().unwrap() <= l["p99"].as_u64().unwrap());
        assert!(l["p99"].as_u64().unwrap() <= l["max"].as_u64().unwrap());
        assert!(p["lag"].is_u64(), "{p}");
        assert!(p["durationMs"]["commit"].is_u64(), "{p}");
    }
    assert_eq!(epochs.last().unwrap()["lag"], 0);
}

/// Everything an uncommitted reader of `even` has been given, with the
/// reader's rule applied: a rewind to offset `to` voids what it gave from
/// there on.
fn drain_uncommitted(r: &mut UncommittedReader, seen: &mut Vec<String>) -> usize {
    let mut rewinds = 0;
    loop {
        match r.fetch(0, 1000).unwrap() {
            Fetched::Records(b) if b.is_empty() => return rewinds,
            Fetched::Records(b) => {
                for rec in b.iter() {
                    assert_eq!(rec.offset as usize, seen.len(), "offsets follow on");
                    seen.push(String::from_utf8(rec.value.to_vec()).unwrap());
                }
            }
            Fetched::Rewound(to) => {
                seen.truncate(to as usize);
                rewinds += 1;
            }
        }
    }
}

#[test]
fn as_produced_output_is_exactly_once_after_a_sigkill_at_every_fault_point() {
    sigkill_at_every_fault_point(Fixture::as_produced);
}

#[test]
fn as_produced_output_and_its_uncommitted_reader_agree_after_random_sigkills() {
    let mut next = crate::testkit::xorshift(0x9e37_79b9_7f4a_7c15);
    let (mut kills, mut rewinds) = (0, 0);
    while kills < 10 {
        let f = Fixture::as_produced(20_000);
        let log = f.path().join("log");
        // The sink creates `even` when it first opens: make it first, so
        // the reader follows it from the start.
        Topic::create(&log, "even", 1).unwrap();
        let mut reader =
            UncommittedReader::new(Topic::open(&log, "even").unwrap(), vec![0]).unwrap();
        let mut seen = Vec::new();
        for _ in 0..5 {
            let mut child = f.command().spawn().unwrap();
            let until = Instant::now() + Duration::from_millis(5 + next() % 200);
            while Instant::now() < until {
                rewinds += drain_uncommitted(&mut reader, &mut seen);
                std::thread::sleep(Duration::from_millis(2));
            }
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            rewinds += drain_uncommitted(&mut reader, &mut seen);
            kills += 1;
        }
        f.run_to_end();
        assert_eq!(f.output(), f.expected(), "after {kills} random SIGKILLs");
        rewinds += drain_uncommitted(&mut reader, &mut seen);
        let committed = crate::testkit::topic_values(&log, "even").unwrap();
        assert_eq!(
            seen, committed,
            "what the reader kept is what was committed"
        );
    }
    eprintln!("{kills} SIGKILLs, {rewinds} rewinds");
    // Killed mid-epoch, a run leaves records the reader saw uncommitted.
    assert!(rewinds > 0, "no SIGKILL left an uncommitted tail to cut");
}
