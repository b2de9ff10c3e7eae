//! Power cuts: weir runs with its checkpoint, embedded log and file sink on
//! a file system that forgets everything not fsynced when the power goes
//! (`testkit::powerfs`, FUSE), is SIGKILLed at random moments and at every
//! fault point, loses its unsynced writes, and restarts. Its output must
//! equal the reference exactly (nothing lost, nothing twice) and every
//! restart must read its checkpoint.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use crate::microbatch::{FAULT_POINTS, Fixture};
use crate::stateful::examples::{window_expected, window_inputs, window_spec};
use crate::stateful::{faults_at, faults_nth};
use crate::testkit::powerfs::PowerMount;
use crate::testkit::{run_ok, xorshift};

mod semantics;
mod serve;

/// A power-loss file system mounted in a fresh directory under the test
/// target, unmounted when dropped. FUSE must work here: the failure says
/// what is missing.
pub(crate) fn power_mount() -> (tempfile::TempDir, PowerMount) {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("power");
    std::fs::create_dir_all(&base).unwrap();
    let dir = tempfile::tempdir_in(&base).unwrap();
    let mount = PowerMount::mount(dir.path()).unwrap_or_else(|e| {
        panic!(
            "mounting the power-loss file system (FUSE) at {}: {e}; it needs /dev/fuse and \
             fusermount3 (scripts/ensure-fuse installs Debian's fuse3)",
            dir.path().display()
        )
    });
    (dir, mount)
}

/// Start the pipeline, cut the power at a random moment (SIGKILL, then drop
/// what was not synced), until it runs to its end or `max_cuts` were made;
/// then run it to its end. The number of cuts made.
fn cut_at_random(
    command: &dyn Fn() -> std::process::Command,
    mount: &PowerMount,
    seed: u64,
    max_cuts: usize,
    within_ms: u64,
) -> usize {
    let mut next = xorshift(seed);
    let mut cuts = 0;
    while cuts < max_cuts {
        let mut child = command().spawn().unwrap();
        // The sleep is the point: the cut lands at a random moment of the run.
        std::thread::sleep(Duration::from_millis(2 + next() % within_ms));
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "run ended with {status}");
            return cuts;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        cut(mount, next());
        cuts += 1;
    }
    run_ok(command());
    cuts
}

/// How many random power cuts each random test makes at least: `default`,
/// or `WEIR_POWER_CUTS` (scripts/power-torture sets it).
fn cuts_wanted(default: usize) -> usize {
    std::env::var("WEIR_POWER_CUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// Output equal to the reference, or a panic saying what is missing and
/// what is extra (not the whole of both).
fn same(got: &[(String, String)], want: &[(String, String)], context: &str) {
    if got == want {
        return;
    }
    let missing: Vec<_> = want.iter().filter(|w| !got.contains(w)).take(5).collect();
    let mut counts = std::collections::HashMap::new();
    for g in got {
        *counts.entry(g).or_insert(0) += 1;
    }
    let extra: Vec<_> = counts
        .iter()
        .filter(|(g, n)| **n > 1 || !want.contains(g))
        .take(5)
        .collect();
    panic!(
        "{context}: {} records, {} expected; missing (first 5) {missing:?}; extra or repeated {extra:?}",
        got.len(),
        want.len()
    );
}

/// Lose power: half the time with nothing written back since the last
/// syncs, half the time after the kernel wrote back a random share.
fn cut(mount: &PowerMount, dice: u64) {
    if dice.is_multiple_of(2) {
        mount.cut_power();
    } else {
        mount.cut_power_after_writeback(dice);
    }
}

/// The pipeline's input, made durable as input written long before.
fn fixture(mount: &PowerMount, n: usize, continuous: bool) -> Fixture {
    let f = Fixture::in_dir(mount.path(), n, continuous);
    mount.sync_all();
    f
}

/// Rounds of random power cuts until `at_least` were made in all; each
/// round's output checked exactly.
fn random_cuts(continuous: bool, seed: u64, at_least: usize) {
    let at_least = cuts_wanted(at_least);
    let (_dir, mount) = power_mount();
    let mut cuts = 0;
    let mut round = 0;
    // A micro-batch run of these records takes about 100 ms here; a
    // continuous one runs until idle for 300 ms.
    let within_ms = if continuous { 400 } else { 80 };
    while cuts < at_least {
        round += 1;
        let f = fixture(&mount, 8_000, continuous);
        cuts += cut_at_random(&|| f.command(), &mount, seed ^ round, 15, within_ms);
        same(
            &f.output(),
            &f.expected(),
            &format!("continuous {continuous}: after {cuts} power cuts so far"),
        );
    }
    eprintln!("continuous {continuous}: {cuts} power cuts in {round} rounds, output exact");
}

#[test]
fn random_power_cuts_keep_micro_batch_output_exact() {
    random_cuts(false, 0x5eed_0001, 120);
}

#[test]
fn random_power_cuts_keep_continuous_output_exact() {
    random_cuts(true, 0x5eed_0002, 100);
}

/// The process dies at each fault point, the power goes with it, and the
/// restart finishes the job exactly.
#[test]
fn a_power_cut_at_every_fault_point_loses_and_repeats_nothing() {
    let (_dir, mount) = power_mount();
    let mut next = xorshift(0x5eed_0003);
    for point in FAULT_POINTS {
        for batch in [0, 3] {
            let f = fixture(&mount, 2_000, false);
            let out = f
                .command()
                .env("WEIR_FAULT", format!("{point}@{batch}"))
                .output()
                .unwrap();
            assert_eq!(
                out.status.signal(),
                Some(9),
                "{point}@{batch}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            cut(&mount, next());
            run_ok(f.command());
            same(
                &f.output(),
                &f.expected(),
                &format!("after a power cut at {point} of batch {batch}"),
            );
        }
    }
}

/// A run that finished, then the power goes: what it reported done stays
/// done (its output and its checkpoint agree), in both modes.
#[test]
fn a_power_cut_after_a_finished_run_keeps_its_output() {
    let (_dir, mount) = power_mount();
    let mut next = xorshift(0x5eed_0004);
    for continuous in [false, true] {
        for _ in 0..4 {
            let f = fixture(&mount, 3_000, continuous);
            run_ok(f.command());
            let dice = next();
            cut(&mount, dice);
            run_ok(f.command());
            same(
                &f.output(),
                &f.expected(),
                &format!("continuous {continuous}, cut {dice}"),
            );
        }
    }
}

/// Windowed counts per key (state snapshots and deltas in the checkpoint,
/// memory and disk state backends) through random power cuts, in both
/// modes: the windows equal the reference computed from the input.
fn random_cuts_of_windows(continuous: bool, seed: u64, at_least: usize) {
    let at_least = cuts_wanted(at_least);
    let (_dir, mount) = power_mount();
    let inputs = window_inputs(3_000);
    let expected = window_expected(&inputs);
    let mut next = xorshift(seed);
    let (mut cuts, mut round) = (0, 0);
    while cuts < at_least {
        round += 1;
        let mut spec = window_spec(continuous);
        spec.disk = round % 2 == 0;
        let f = crate::stateful::Fixture::new_in(mount.path(), &spec, &inputs);
        mount.sync_all();
        let within_ms = if continuous { 500 } else { 150 };
        cuts += cut_at_random(&|| f.command(), &mount, next(), 15, within_ms);
        assert_eq!(
            f.output(),
            expected,
            "windows, continuous {continuous}, after {cuts} power cuts so far"
        );
    }
    eprintln!(
        "windows, continuous {continuous}: {cuts} power cuts in {round} rounds, output exact"
    );
}

#[test]
fn random_power_cuts_keep_micro_batch_windows_exact() {
    random_cuts_of_windows(false, 0x5eed_0005, 40);
}

#[test]
fn random_power_cuts_keep_continuous_windows_exact() {
    random_cuts_of_windows(true, 0x5eed_0006, 40);
}

/// The windowed count dies at each fault point of a stateful run (state
/// written, sinks half written, committed...), the power goes with it, and
/// the restart's windows equal the reference, in both modes.
#[test]
fn a_power_cut_at_every_stateful_fault_point_keeps_windows_exact() {
    let (_dir, mount) = power_mount();
    let inputs = window_inputs(2_000);
    let expected = window_expected(&inputs);
    let mut next = xorshift(0x5eed_0008);
    for continuous in [false, true] {
        let points = if continuous {
            faults_nth(&[1, 2])
        } else {
            faults_at(&[1, 3])
        };
        for point in points {
            let f =
                crate::stateful::Fixture::new_in(mount.path(), &window_spec(continuous), &inputs);
            mount.sync_all();
            let killed = f.run_with_fault(&point);
            cut(&mount, next());
            run_ok(f.command());
            assert_eq!(
                f.output(),
                expected,
                "windows, continuous {continuous}, power cut at {point} (killed there: {killed})"
            );
        }
    }
}
