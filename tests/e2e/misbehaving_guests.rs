//! A guest that traps, spins, hogs memory or fails must never take the host
//! down; each failure is reported as its own kind, and the next call runs on
//! a fresh instance.

use std::time::{Duration, Instant};

use weir_engine::{Transform, TransformError};
use weir_runtime::{CallMode, Limits, WasmTransform};

use crate::testkit::{batch, guest, runtime, values};

fn misbehave(
    limits: Limits,
    config: &[(&str, &str)],
    mode: CallMode,
) -> Result<WasmTransform, TransformError> {
    let rt = runtime();
    let c = rt.load(&guest("misbehave"), &[]).unwrap();
    let config = config
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    WasmTransform::new(&c, config, limits, "misbehave", mode)
}

const MODES: [CallMode; 2] = [CallMode::Batch, CallMode::PerRecord];

#[test]
fn trap_reports_the_panic_message_and_the_next_call_gets_a_fresh_instance() {
    for mode in MODES {
        let mut t = misbehave(Limits::default(), &[], mode).unwrap();
        let err = t.process_batch(&batch(&["ok", "panic"])).unwrap_err();
        let TransformError::Trap { message } = &err else {
            panic!("{mode:?}: {err}")
        };
        assert!(
            message.contains("guest panicked on purpose at offset 101"),
            "{message}"
        );
        assert!(!message.contains('\n'));
        assert_eq!(t.instances_created(), 1);
        let input = batch(&["after", "trap"]);
        let out = t.process_batch(&input).expect("fresh instance works");
        assert_eq!(values(&out, &input), vec!["after", "trap"]);
        assert_eq!(t.instances_created(), 2, "{mode:?}");
    }
}

#[test]
fn busy_loop_hits_the_cpu_deadline() {
    let limits = Limits {
        call_deadline: Duration::from_millis(200),
        ..Limits::default()
    };
    for mode in MODES {
        let mut t = misbehave(limits, &[], mode).unwrap();
        let start = Instant::now();
        let err = t.process_batch(&batch(&["loop"])).unwrap_err();
        assert_eq!(
            err,
            TransformError::Deadline {
                limit: Duration::from_millis(200)
            }
        );
        // Generous bound: only checks that the loop was interrupted at all.
        assert!(start.elapsed() < Duration::from_secs(30));
        let input = batch(&["fine"]);
        assert_eq!(
            values(&t.process_batch(&input).unwrap(), &input),
            vec!["fine"]
        );
    }
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let limits = Limits {
        max_memory: 32 << 20,
        ..Limits::default()
    };
    for mode in MODES {
        let mut t = misbehave(limits, &[], mode).unwrap();
        let err = t.process_batch(&batch(&["oom"])).unwrap_err();
        assert_eq!(
            err,
            TransformError::OutOfMemory { limit: 32 << 20 },
            "{mode:?}"
        );
        let input = batch(&["fine"]);
        assert_eq!(
            values(&t.process_batch(&input).unwrap(), &input),
            vec!["fine"]
        );
    }
}

#[test]
fn an_instance_that_keeps_its_memory_is_replaced_before_it_hits_the_limit() {
    let limits = Limits {
        max_memory: 32 << 20,
        ..Limits::default()
    };
    for mode in MODES {
        let mut t = misbehave(limits, &[], mode).unwrap();
        // 1 MiB kept per record: 200 MiB over the calls, 32 MiB allowed.
        for _ in 0..100 {
            let input = batch(&["leak", "leak"]);
            assert_eq!(
                values(&t.process_batch(&input).unwrap(), &input),
                vec!["leak", "leak"],
                "{mode:?}"
            );
        }
        assert!(t.instances_recycled() >= 5, "{mode:?}");
        assert_eq!(t.instances_created(), t.instances_recycled() + 1);
        assert_eq!(
            t.reported_metrics().instances_recycled,
            t.instances_recycled()
        );
    }
}

#[test]
fn bad_records_are_rejected_and_the_rest_is_processed() {
    for mode in MODES {
        let mut t = misbehave(Limits::default(), &[], mode).unwrap();
        let input = batch(&["a", "bad", "b"]);
        let out = t.process_batch(&input).unwrap();
        assert_eq!(values(&out, &input), vec!["a", "b"]);
        assert_eq!(out.rejected.len(), 1);
        assert_eq!(out.rejected[0].index, 1);
        assert_eq!(out.rejected[0].reason, "this record is bad on purpose");
        assert_eq!(
            t.instances_created(),
            1,
            "a bad record does not recycle the instance"
        );
    }
}

#[test]
fn fatal_error_stops_with_the_record_position() {
    for mode in MODES {
        let mut t = misbehave(Limits::default(), &[], mode).unwrap();
        let err = t.process_batch(&batch(&["a", "fatal"])).unwrap_err();
        let TransformError::Fatal(msg) = &err else {
            panic!("{err}")
        };
        assert!(
            msg.contains("offset 101") && msg.contains("giving up on purpose"),
            "{msg}"
        );
    }
}

#[test]
fn init_refusal_and_slow_init_are_reported_at_start() {
    let err = misbehave(
        Limits::default(),
        &[("refuse", "key `x` must be set")],
        CallMode::Batch,
    )
    .err()
    .unwrap();
    assert_eq!(err, TransformError::Config("key `x` must be set".into()));
    let limits = Limits {
        call_deadline: Duration::from_millis(100),
        ..Limits::default()
    };
    let err = misbehave(limits, &[("slow-init", "1")], CallMode::Batch)
        .err()
        .unwrap();
    assert!(matches!(err, TransformError::Deadline { .. }), "{err}");
}

#[test]
fn guest_metrics_and_logs_reach_the_host_and_survive_a_trap() {
    let mut t = misbehave(Limits::default(), &[], CallMode::Batch).unwrap();
    t.process_batch(&batch(&["log", "log"])).unwrap();
    t.process_batch(&batch(&["panic"])).unwrap_err();
    t.process_batch(&batch(&["log"])).unwrap();
    assert_eq!(t.metrics().counters.get("logged"), Some(&3));
}

#[test]
fn malformed_batch_encodings_are_caught() {
    let rt = runtime();
    let c = rt.load(&guest("malformed"), &[]).unwrap();
    let cases = [
        (
            "ends-past-data",
            "value-ends: last end 4294967295 is past the data length",
        ),
        ("ends-decreasing", "value-ends: entry 1"),
        (
            "origin-out-of-range",
            "origins: entry 0 (2) is out of order or not below the input count 2",
        ),
        (
            "route-out-of-range",
            "routes: entry 0 names output 7 but only 0 are listed",
        ),
        ("count-mismatch", "timestamps: has 5 entries, expected 2"),
        (
            "bad-reject-index",
            "rejected: index 12 is not below the input count 2",
        ),
        (
            "header-ends-past-list",
            "header-ends: last end 2 is past the data length 0",
        ),
    ];
    for (mode, expected) in cases {
        let mut t = WasmTransform::new(
            &c,
            vec![("mode".into(), mode.into())],
            Limits::default(),
            "m",
            CallMode::Batch,
        )
        .unwrap();
        let err = t.process_batch(&batch(&["ab", "cd"])).unwrap_err();
        let TransformError::Malformed(msg) = &err else {
            panic!("{mode}: {err}")
        };
        assert!(msg.contains(expected), "{mode}: {msg}");
    }
}

#[test]
fn a_fuel_budget_stops_a_busy_guest_the_same_way_on_any_machine() {
    let rt = runtime();
    let metered = rt.load_metered(&guest("misbehave"), &[]).unwrap();
    let limits = Limits {
        fuel: Some(5_000_000),
        // The wall-clock deadline is far away: fuel stops the loop first.
        call_deadline: Duration::from_secs(120),
        ..Limits::default()
    };
    metered.check_limits(&limits).unwrap();
    for mode in MODES {
        let mut t = WasmTransform::new(&metered, vec![], limits, "fuel", mode).unwrap();
        let err = t.process_batch(&batch(&["ok", "loop"])).unwrap_err();
        assert_eq!(
            err,
            TransformError::OutOfFuel { limit: 5_000_000 },
            "{mode:?}"
        );
        assert_eq!(
            err.to_string(),
            "guest ran out of its fuel budget of 5000000 for one call"
        );
        // Ordinary records fit the budget; the next call gets a fresh instance.
        let out = t.process_batch(&batch(&["ok", "ok"])).unwrap();
        assert_eq!(out.batch.len(), 2, "{mode:?}");
        assert_eq!(t.instances_created(), 2, "{mode:?}");
    }
    // A component compiled without metering cannot take a fuel budget.
    let plain = rt.load(&guest("misbehave"), &[]).unwrap();
    let err = plain.check_limits(&limits).unwrap_err().to_string();
    assert!(
        err.contains("needs the component loaded with fuel metering"),
        "{err}"
    );
}

#[test]
fn a_tenant_memory_quota_spans_its_instances() {
    use weir_runtime::tenant::{Scheduler, Tenant};
    let rt = runtime();
    let scheduler = Scheduler::new(None, Duration::from_millis(5));
    let quota = 48 << 20;
    let acme = Tenant::new("acme", quota, 1, &scheduler);
    let c = rt
        .load(&guest("misbehave"), &[])
        .unwrap()
        .for_tenant(acme.clone());
    let mut a = WasmTransform::new(&c, vec![], Limits::default(), "a", CallMode::Batch).unwrap();
    let mut b = WasmTransform::new(&c, vec![], Limits::default(), "b", CallMode::Batch).unwrap();
    let both = acme.memory_used();
    assert!(both > 0, "instances charge their initial memory");
    // One instance alone may use 256 MiB; the tenant's guests together only 48.
    let err = a.process_batch(&batch(&["oom"])).unwrap_err();
    assert_eq!(
        err,
        TransformError::TenantMemory {
            tenant: "acme".into(),
            limit: quota
        }
    );
    assert_eq!(
        err.to_string(),
        format!("tenant `acme` reached its guest memory quota of {quota} bytes")
    );
    // The trapped instance was dropped and its memory released; the other
    // instance of the tenant keeps working.
    assert!(
        acme.memory_used() <= both,
        "{} > {both}",
        acme.memory_used()
    );
    assert_eq!(
        values(&b.process_batch(&batch(&["ok"])).unwrap(), &batch(&["ok"])),
        ["ok"]
    );
    drop((a, b));
    assert_eq!(acme.memory_used(), 0);
}

/// Through `weir run`: the guest's log lines are visible by default but on
/// a budget (100 a second), and its metrics reach the progress report.
#[test]
fn guest_logs_are_visible_but_rate_limited_and_metrics_reach_progress() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let mut t = weir_log::Topic::create(&log, "in", 1).unwrap();
    let mut b = weir_engine::RecordBatch::new(0);
    for i in 0..300 {
        b.push(None, b"log", i, 0);
    }
    t.append(None, &[b], || {}).unwrap();
    let spec = format!(
        "checkpoint = \"ckpt\"\n[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{}\"\n[sink.default]\ntype = \"log\"\npath = \"log\"\ntopic = \"out\"\n[trigger]\ntype = \"once\"\n",
        guest("misbehave").display()
    );
    std::fs::write(dir.path().join("p.toml"), spec).unwrap();
    let mut run = crate::testkit::progress_run(&dir.path().join("p.toml"));
    run.env_remove("WEIR_LOG");
    let (progress, stderr) = crate::testkit::progress_of(run);
    let seen = stderr.matches("log record seen").count();
    assert_eq!(seen, 100, "{stderr}");
    let progress = &progress[0];
    assert_eq!(
        progress["transformMetrics"]["counters"]["logged"], 300,
        "{progress}"
    );
}
