//! `weir replay` of a pipeline reading Kafka: the recorded offset ranges
//! are read again from the broker, and the source's monitoring group is not
//! moved by it.

use super::{Rec, broker, create_topic, produce, unique};
use crate::testkit::{guest, run_ok, weir};

#[test]
fn a_kafka_sourced_pipeline_replays_its_committed_batches() {
    let b = broker();
    let input = unique("replay-in");
    create_topic(b, &input, 2, &[]);
    let keys: Vec<String> = (0..11).map(|k| format!("k{k}")).collect();
    let recs: Vec<Rec<'_>> = (0..3000)
        .map(|i| Rec {
            partition: Some((i % 2) as i32),
            key: Some(&keys[i % 11]),
            value: format!("record {i}"),
            timestamp: None,
        })
        .collect();
    produce(b, &input, &recs);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        r#"
checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
max-offsets-per-trigger = 600
[transform]
component = "{}"
[sink.default]
type = "files"
path = "out"
[trigger]
type = "available-now"
"#,
        guest("uppercase").display()
    );
    std::fs::write(dir.path().join("p.toml"), &spec).unwrap();
    let mut run = weir();
    run.arg("run")
        .arg(dir.path().join("p.toml"))
        .args(["--progress", "none"]);
    run_ok(run);

    let replay = |component: &str, range: &[&str]| {
        let out = weir()
            .arg("replay")
            .arg(dir.path().join("p.toml"))
            .arg("--component")
            .arg(guest(component))
            .args(range)
            .arg("--json")
            .output()
            .unwrap();
        let r: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), r)
    };
    let (code, r) = replay("uppercase", &["--from", "0"]);
    assert_eq!(code, Some(0), "{r}");
    assert_eq!(r["batches"].as_array().unwrap().len(), 5);
    assert_eq!(r["total-differences"], 0);
    let input_rows: u64 = r["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["input-rows"].as_u64().unwrap())
        .sum();
    assert_eq!(input_rows, 3000);
    // `record 999`, `record 1999` and `record 2999` change.
    let (code, r) = replay("uppercase-canary", &["--from", "0"]);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["total-differences"], 3);
}
