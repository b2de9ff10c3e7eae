use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::options::{DEAD_LETTER, EngineError, ErrorPolicy};
use crate::output::OutputBatch;
use crate::state::StateContext;
use crate::tasks::check_rejected;
use crate::transform::FnTransform;

fn batch(values: &[&str]) -> RecordBatch {
    let mut b = RecordBatch::new(3);
    for (i, v) in values.iter().enumerate() {
        b.push(Some(b"k"), v.as_bytes(), 100 + i as i64, 10 + i as i64);
    }
    b
}

/// Uppercases; traps on "boom"; emits `n` copies of "many-<n>".
fn guest() -> Box<dyn Transform> {
    Box::new(FnTransform(|input: &RecordBatch, out: &mut OutputBatch| {
        for (i, r) in input.iter().enumerate() {
            let v = std::str::from_utf8(r.value).unwrap();
            if v == "boom" {
                return Err(TransformError::Trap {
                    message: "unreachable executed".into(),
                });
            }
            if v == "bad" {
                return Err(TransformError::BadRecord {
                    index: i as u32,
                    reason: "not a number".into(),
                });
            }
            let copies = v.strip_prefix("many-").map_or(1, |n| n.parse().unwrap());
            for _ in 0..copies {
                out.push(
                    i as u32,
                    None,
                    None,
                    Some(v.to_uppercase().as_bytes()),
                    &[],
                    0,
                );
            }
        }
        Ok(())
    }))
}

fn values(out: &TransformOutput, input: &RecordBatch) -> Vec<String> {
    out.batch
        .iter(input)
        .map(|o| String::from_utf8_lossy(o.value).into_owned())
        .collect()
}

#[test]
fn a_trapping_record_is_isolated_and_the_rest_processed() {
    let mut g = Guarded::new(guest(), RecordLimits::default());
    let input = batch(&["a", "boom", "c"]);
    let out = g.process_batch(&input).unwrap();
    assert_eq!(values(&out, &input), ["A", "C"]);
    assert_eq!(out.rejected.len(), 1);
    assert_eq!(out.rejected[0].index, 1);
    assert_eq!(out.rejected[0].kind, RejectKind::Trap);
    assert!(out.rejected[0].reason.contains("unreachable executed"));
}

#[test]
fn a_bad_record_error_fails_only_that_record_and_is_no_failure_of_the_guest() {
    let limits = RecordLimits {
        crash_loop_traps: 1,
        ..RecordLimits::default()
    };
    let mut g = Guarded::new(guest(), limits);
    for _ in 0..3 {
        let input = batch(&["a", "bad", "c", "bad"]);
        let out = g.process_batch(&input).unwrap();
        assert_eq!(values(&out, &input), ["A", "C"]);
        let got: Vec<_> = out.rejected.iter().map(|r| (r.index, r.kind)).collect();
        assert_eq!(
            got,
            [(1, RejectKind::BadRecord), (3, RejectKind::BadRecord)]
        );
        assert_eq!(out.rejected[0].reason, "not a number");
    }
}

#[test]
fn a_guest_that_keeps_trapping_is_a_crash_loop() {
    let limits = RecordLimits {
        crash_loop_traps: 3,
        crash_window: Duration::from_secs(60),
        ..RecordLimits::default()
    };
    let mut g = Guarded::new(guest(), limits);
    let err = g
        .process_batch(&batch(&["boom", "boom", "boom"]))
        .unwrap_err();
    assert!(
        matches!(err, TransformError::CrashLoop { failures: 3, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .starts_with("crash loop: the guest failed 3 times")
    );
}

#[test]
fn amplification_and_size_limits_reject_the_offending_records() {
    let limits = RecordLimits {
        max_outputs_per_record: 3,
        max_record_bytes: 8,
        ..RecordLimits::default()
    };
    let mut g = Guarded::new(guest(), limits);
    let input = batch(&["a", "many-2", "many-9", "this one is too long"]);
    let out = g.process_batch(&input).unwrap();
    assert_eq!(values(&out, &input), ["A", "MANY-2", "MANY-2"]);
    let kinds: Vec<_> = out.rejected.iter().map(|r| (r.index, r.kind)).collect();
    assert_eq!(
        kinds,
        [(2, RejectKind::OutputLimit), (3, RejectKind::TooLarge)]
    );
}

#[test]
fn policies_fail_with_the_position_or_write_dead_letters() {
    let input = batch(&["a", "boom"]);
    let mut g = Guarded::new(guest(), RecordLimits::default());
    let out = g.process_batch(&input).unwrap();

    let err = check_rejected(&ErrorPolicy::Fail, "log:in", &input, &mut out.clone()).unwrap_err();
    let EngineError::BadRecord { offset, reason, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*offset, 11);
    assert!(reason.ends_with("(trap)"), "{reason}");

    let mut skipped = out.clone();
    assert_eq!(
        check_rejected(&ErrorPolicy::Skip, "log:in", &input, &mut skipped)
            .unwrap()
            .total(),
        1
    );
    assert_eq!(skipped.batch.len(), 1);

    let policy = ErrorPolicy::DeadLetter {
        component: Arc::from("sha256:abc"),
    };
    let mut dl = out;
    assert_eq!(
        check_rejected(&policy, "log:in", &input, &mut dl)
            .unwrap()
            .total(),
        1
    );
    let letters: Vec<_> = dl
        .batch
        .iter(&input)
        .filter(|o| o.output == Some(DEAD_LETTER))
        .collect();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].key, Some(&b"k"[..]));
    let v: serde_json::Value = serde_json::from_slice(letters[0].value).unwrap();
    assert_eq!(v["error"]["kind"], "trap");
    assert_eq!(v["component"], "sha256:abc");
    assert_eq!(v["source"]["partition"], 3);
    assert_eq!(v["source"]["offset"], 11);
    assert_eq!(v["value"]["text"], "boom");
}

/// Counts records per value in state; traps on "boom" after counting it.
struct Counter;

impl Transform for Counter {
    fn process_batch(&mut self, _: &RecordBatch) -> Result<TransformOutput, TransformError> {
        unreachable!("stateful only")
    }

    fn process_stateful(
        &mut self,
        input: &RecordBatch,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        for r in input.iter() {
            let n = ctx.state.get(r.value).map_or(0, |b| b[0]);
            ctx.state.put(r.value, vec![n + 1]);
            if r.value == b"boom" {
                return Err(TransformError::Trap {
                    message: "unreachable executed".into(),
                });
            }
        }
        Ok(TransformOutput::default())
    }
}

#[test]
fn state_changes_of_a_failed_call_are_rolled_back() {
    let mut g = Guarded::new(Box::new(Counter), RecordLimits::default());
    let mut ctx = StateContext::default();
    let input = batch(&["a", "b", "boom", "a"]);
    let out = g.process_stateful(&input, &mut ctx).unwrap();
    assert_eq!(out.rejected.len(), 1);
    assert_eq!(out.rejected[0].index, 2);
    // The whole-batch call was undone, then each record ran once: "a" twice,
    // "b" once, and nothing of the trapping record.
    assert_eq!(ctx.state.get(b"a").as_deref(), Some(&[2u8][..]));
    assert_eq!(ctx.state.get(b"b").as_deref(), Some(&[1u8][..]));
    assert_eq!(ctx.state.get(b"boom"), None);
    assert_eq!(ctx.state.rows(), 2);
}

/// Fires timers as records of their keys; traps on the timer keyed "bad".
struct Timers;

impl Transform for Timers {
    fn process_batch(&mut self, _: &RecordBatch) -> Result<TransformOutput, TransformError> {
        Ok(TransformOutput::default())
    }

    fn on_timers(
        &mut self,
        fired: &FiredTimers,
        ctx: &mut StateContext,
    ) -> Result<TransformOutput, TransformError> {
        let mut out = TransformOutput::default();
        for (i, t) in fired.batch.iter().enumerate() {
            ctx.state.put(t.key.unwrap(), b"fired".to_vec());
            if t.key == Some(&b"bad"[..]) {
                return Err(TransformError::Trap {
                    message: "timer trapped".into(),
                });
            }
            out.batch
                .push(i as u32, None, None, t.key, &[], t.timestamp);
        }
        Ok(out)
    }
}

#[test]
fn a_trapping_timer_is_isolated_and_goes_to_the_error_policy() {
    use crate::state::{TimeDomain, Timer};
    let mut g = Guarded::new(Box::new(Timers), RecordLimits::default());
    let timers: Vec<Timer> = ["a", "bad", "c"]
        .iter()
        .map(|k| Timer {
            domain: TimeDomain::EventTime,
            key: k.as_bytes().to_vec(),
            time: 5,
        })
        .collect();
    let fired = FiredTimers::new(2, &timers);
    let mut ctx = StateContext::default();
    let mut out = g.on_timers(&fired, &mut ctx).unwrap();
    assert_eq!(values(&out, &fired.batch), ["a", "c"]);
    assert_eq!(out.rejected.len(), 1);
    assert_eq!(
        (out.rejected[0].index, out.rejected[0].kind),
        (1, RejectKind::Trap)
    );
    assert!(
        out.rejected[0].reason.contains("timer handler: "),
        "{}",
        out.rejected[0].reason
    );
    // The failing timer's state change was undone; the others' kept.
    assert_eq!(ctx.state.get(b"a").as_deref(), Some(&b"fired"[..]));
    assert_eq!(ctx.state.get(b"bad"), None);
    // The policy decides: skip counts it, fail names it.
    let skipped = check_rejected(&ErrorPolicy::Skip, "timers", &fired.batch, &mut out).unwrap();
    assert_eq!(skipped.by_kind().get("trap"), Some(&1), "{skipped:?}");
    let err = check_rejected(&ErrorPolicy::Fail, "timers", &fired.batch, &mut out).unwrap_err();
    assert!(matches!(err, EngineError::BadRecord { .. }), "{err}");
}
