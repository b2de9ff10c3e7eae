//! `weir replay` of a pipeline reading Kafka: the recorded offset ranges
//! are read again from the broker, and the source's monitoring group is not
//! moved by it.

use super::{Rec, broker, create_topic, produce, unique};
use crate::replay::{replay, report, run_uppercase};
use crate::testkit::guest;

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
    run_uppercase(
        dir.path(),
        &format!(
            "type = \"kafka\"\nbootstrap-servers = \"{b}\"\ntopics = [\"{input}\"]\n\
             starting-offsets = \"earliest\"\nmax-offsets-per-trigger = 600"
        ),
    );
    let r = report(&replay(dir.path(), &guest("uppercase"), &["--from", "0"]));
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
    let r = report(&replay(
        dir.path(),
        &guest("uppercase-canary"),
        &["--from", "0"],
    ));
    assert_eq!(r["total-differences"], 3);
}
