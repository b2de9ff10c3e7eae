mod formats;
mod kafka;
mod window;

use std::path::Path;
use std::time::Duration;

use super::*;

const GOOD: &str = r#"
name = "demo"
checkpoint = "ckpt"

[[source]]
type = "log"
path = "data"
topic = "events"
max-records-per-trigger = 500

[transform]
component = "up.wasm"
call = "record"
on-error = "fail"
[transform.config]
field = "region"
limit = 5
route.eu = "europe"
[transform.limits]
memory = "64MiB"
call-timeout = "250ms"

[sink.default]
type = "files"
path = "out"

[sink.eu]
type = "log"
path = "data"
topic = "eu"

[trigger]
type = "processing-time"
interval = "1s"
"#;

fn parse(text: &str) -> Result<Pipeline, String> {
    Pipeline::parse(text, "p.toml", Path::new("/base")).map_err(|e| e.to_string())
}

#[test]
fn a_full_pipeline_validates() {
    let p = parse(GOOD).unwrap();
    assert_eq!(p.checkpoint.dir(), Some(Path::new("/base/ckpt")));
    assert_eq!(p.trigger, Trigger::ProcessingTime(Duration::from_secs(1)));
    let t = p.transform.unwrap();
    assert_eq!(t.call, CallMode::PerRecord);
    assert_eq!(t.on_error, OnError::Fail);
    assert_eq!(t.limits.max_memory, 64 << 20);
    assert_eq!(t.limits.call_deadline, Duration::from_millis(250));
    assert_eq!(
        t.config,
        vec![
            ("field".into(), "region".into()),
            ("limit".into(), "5".into()),
            ("route.eu".into(), "europe".into())
        ]
    );
    assert_eq!(p.sinks.len(), 2);
    assert!(p.sinks.iter().any(|(n, _)| n.is_none()));
    assert!(matches!(
        &p.sources[0],
        SourceSpec::Log {
            max_records_per_trigger: Some(500),
            ..
        }
    ));
}

#[test]
fn a_misspelled_key_is_named_with_its_line() {
    let text = GOOD.replace("max-records-per-trigger", "max-record-per-trigger");
    let err = parse(&text).unwrap_err();
    assert!(
        err.starts_with("p.toml:9:1: unknown field `max-record-per-trigger`"),
        "{err}"
    );
    let text = GOOD.replace("call = \"record\"", "cal = \"record\"");
    let err = parse(&text).unwrap_err();
    assert!(err.starts_with("p.toml:13:1: unknown field `cal`"), "{err}");
    assert!(!err.contains('\n'));
    // A console sink takes no keys: a stray one is not silently ignored.
    let text = GOOD.replacen(
        "[sink.default]\ntype = \"files\"\npath = \"out\"",
        "[sink.default]\ntype = \"console\"\npath = \"out\"",
        1,
    );
    assert_ne!(text, GOOD);
    let err = parse(&text).unwrap_err();
    assert!(err.contains("unknown field `path`"), "{err}");
}

#[test]
fn bad_values_are_explained() {
    let err = parse(&GOOD.replace("\"1s\"", "\"soon\"")).unwrap_err();
    assert!(
        err.contains("trigger.interval: `soon` is not a duration"),
        "{err}"
    );
    let err = parse(&GOOD.replace("\"64MiB\"", "\"64 furlongs\"")).unwrap_err();
    assert!(err.contains("unknown size unit `furlongs`"), "{err}");
    let err = parse(&GOOD.replace("type = \"files\"", "type = \"ftp\"")).unwrap_err();
    assert!(err.contains("unknown variant `ftp`"), "{err}");
    let err = parse(&GOOD.replace("checkpoint = \"ckpt\"", "")).unwrap_err();
    assert!(err.contains("missing field `checkpoint`"), "{err}");
}

#[test]
fn sizes_and_durations() {
    assert_eq!(parse_size("512KiB").unwrap(), 512 << 10);
    assert_eq!(parse_size("2GB").unwrap(), 2_000_000_000);
    assert_eq!(parse_size("100").unwrap(), 100);
    assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    // An absurd size is refused with the key, never wrapped to a small one.
    let err = parse(&GOOD.replace("\"64MiB\"", "\"99999999999999GiB\"")).unwrap_err();
    assert!(
        err.contains("transform.limits.memory: `99999999999999GiB` is too large"),
        "{err}"
    );
}

#[test]
fn sandbox_grants_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ref")).unwrap();
    let with = |table: &str| {
        let text = GOOD.replace(
            "[transform.config]",
            &format!("[transform.sandbox]\n{table}\n[transform.config]"),
        );
        Pipeline::parse(&text, "p.toml", dir.path()).map_err(|e| e.to_string())
    };
    let p = with("dirs = { \"/ref\" = \"ref\" }\nwall-clock = true\nenv = [\"PATH\"]").unwrap();
    let s = p.transform.unwrap().sandbox;
    assert_eq!(s.dirs, vec![(dir.path().join("ref"), "/ref".to_string())]);
    assert!(s.wall_clock);
    assert_eq!(s.env[0].0, "PATH");
    let err = with("dirs = { \"/data\" = \"missing\" }").unwrap_err();
    assert!(
        err.contains("transform.sandbox.dirs.\"/data\"") && err.contains("is not a directory"),
        "{err}"
    );
    let err = with("dirs = { \"data\" = \"ref\" }").unwrap_err();
    assert!(err.contains("must be absolute"), "{err}");
    let err = with("env = [\"WEIR_SURELY_UNSET_VAR\"]").unwrap_err();
    assert!(err.contains("`WEIR_SURELY_UNSET_VAR` is not set"), "{err}");
    let err = with("network = true").unwrap_err();
    assert!(err.contains("unknown field `network`"), "{err}");
}

#[test]
fn batches_are_capped_by_bytes_by_default_and_as_set() {
    let p = parse(GOOD).unwrap();
    assert!(matches!(
        &p.sources[0],
        SourceSpec::Log {
            max_bytes_per_trigger: weir_connectors::DEFAULT_MAX_BYTES_PER_TRIGGER,
            ..
        }
    ));
    let set = GOOD.replace(
        "max-records-per-trigger = 500",
        "max-bytes-per-trigger = \"1MiB\"",
    );
    assert!(matches!(
        &parse(&set).unwrap().sources[0],
        SourceSpec::Log {
            max_bytes_per_trigger: 1_048_576,
            ..
        }
    ));
    for (value, want) in [
        ("2GiB", "source 0: max-bytes-per-trigger is at most 1GiB"),
        (
            "0",
            "source 0: max-bytes-per-trigger must be at least 1 byte",
        ),
        ("lots", "source 0: max-bytes-per-trigger: `lots`"),
    ] {
        let err = parse(&set.replace("\"1MiB\"", &format!("\"{value}\""))).unwrap_err();
        assert!(err.contains(want), "{value}: {err}");
    }
}

#[test]
fn idle_waits_are_read_and_checked() {
    let p = parse(&GOOD.replace(
        "interval = \"1s\"",
        "interval = \"1s\"\nidle-poll = \"5ms\"\nmax-idle-poll = \"500ms\"\nwake-timeout = \"10s\"",
    ))
    .unwrap();
    assert_eq!(
        p.idle,
        weir_engine::IdleWait {
            poll: Duration::from_millis(5),
            max_poll: Duration::from_millis(500),
            wake: Duration::from_secs(10),
            ..weir_engine::IdleWait::default()
        }
    );
    assert_eq!(parse(GOOD).unwrap().idle, weir_engine::IdleWait::default());
    for (line, want) in [
        (
            "idle-poll = \"0s\"",
            "trigger.idle-poll: must be above zero",
        ),
        (
            "wake-timeout = \"never\"",
            "trigger.wake-timeout: `never` is not a duration",
        ),
        (
            "idle-poll = \"1s\"",
            "trigger.max-idle-poll (20ms) is below trigger.idle-poll (1s)",
        ),
    ] {
        let err = parse(&GOOD.replace("interval = \"1s\"", &format!("interval = \"1s\"\n{line}")))
            .unwrap_err();
        assert!(err.contains(want), "{line}: {err}");
    }
}

#[test]
fn a_log_sink_writes_as_produced_only_in_continuous_mode() {
    let as_produced = GOOD.replace("topic = \"eu\"", "topic = \"eu\"\nwrite = \"as-produced\"");
    let err = parse(&as_produced).unwrap_err();
    assert!(
        err.contains("sink.eu.write = \"as-produced\" applies to mode = \"continuous\""),
        "{err}"
    );
    let continuous = as_produced
        .replace("max-records-per-trigger = 500", "")
        .replace(
            "[trigger]\ntype = \"processing-time\"\ninterval = \"1s\"",
            "",
        )
        .replace("name = \"demo\"", "name = \"demo\"\nmode = \"continuous\"");
    let p = parse(&continuous).unwrap();
    assert!(p.sinks.iter().any(|(n, s)| n.as_deref() == Some("eu")
        && matches!(
            s,
            SinkSpec::Log {
                as_produced: true,
                ..
            }
        )));
    let err =
        parse(&GOOD.replace("topic = \"eu\"", "topic = \"eu\"\nwrite = \"soon\"")).unwrap_err();
    assert!(
        err.contains("sink.eu.write: `soon` (use \"at-commit\" or \"as-produced\")"),
        "{err}"
    );
}

#[test]
fn a_log_sink_rolls_its_segments_at_the_size_given() {
    let with = |size: &str| {
        parse(&GOOD.replace(
            "topic = \"eu\"",
            &format!("topic = \"eu\"\nsegment-size = \"{size}\""),
        ))
    };
    let p = with("64KiB").unwrap();
    assert!(p.sinks.iter().any(|(n, s)| n.as_deref() == Some("eu")
        && matches!(
            s,
            SinkSpec::Log {
                segment_bytes: 65536,
                ..
            }
        )));
    let p = parse(GOOD).unwrap();
    assert!(p.sinks.iter().all(|(_, s)| !matches!(
        s,
        SinkSpec::Log { segment_bytes, .. } if *segment_bytes != weir_log::SEGMENT_BYTES
    )));
    let err = with("1KiB").unwrap_err();
    assert!(
        err.contains("sink.eu.segment-size: `1KiB` is outside 4KiB..=1GiB"),
        "{err}"
    );
    let err = with("2GiB").unwrap_err();
    assert!(err.contains("outside 4KiB..=1GiB"), "{err}");
    let err = with("lots").unwrap_err();
    assert!(err.contains("sink.eu.segment-size"), "{err}");
}
