//! Records without a value (tombstones) stay without one: from Kafka into
//! the embedded log (no transform) and from there through a guest back to
//! Kafka, so compaction downstream still deletes their keys.

use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

use super::{broker, create_topic, log_json, unique};
use crate::testkit::{guest, run_pipeline as run};

/// (key, payload) of every record of a 1-partition topic, read committed.
fn payloads(topic: &str) -> Vec<(Option<String>, Option<String>)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker())
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .set("group.id", "weir-test-tombstones")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "reading {topic} timed out");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => out.push((m.key().map(text), m.payload().map(text))),
            Some(Err(KafkaError::PartitionEOF(_))) => return out,
            Some(Err(e)) => panic!("{e}"),
            None => {}
        }
    }
}

#[test]
fn tombstones_stay_tombstones_from_kafka_through_the_log_and_back() {
    let b = broker();
    let (input, output) = (unique("tomb-in"), unique("tomb-out"));
    create_topic(b, &input, 1, &[]);
    create_topic(b, &output, 1, &[]);
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", b)
        .create()
        .unwrap();
    for (key, value) in [
        ("k1", Some("v1")),
        ("k1", None),
        ("k2", Some("")),
        ("k2", Some("v2")),
    ] {
        let mut r = BaseRecord::<str, str>::to(&input).key(key);
        if let Some(v) = value {
            r = r.payload(v);
        }
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(Duration::from_secs(30)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let inbound = dir.path().join("in");
    std::fs::create_dir_all(&inbound).unwrap();
    std::fs::write(
        inbound.join("p.toml"),
        format!(
            "checkpoint = \"ckpt\"\n[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"{b}\"\ntopics = [\"{input}\"]\nstarting-offsets = \"earliest\"\n[sink.default]\ntype = \"log\"\npath = \"../log\"\ntopic = \"copy\"\npartitions = 1\n[trigger]\ntype = \"available-now\"\n"
        ),
    )
    .unwrap();
    let o = run(&inbound, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let values: Vec<serde_json::Value> = log_json(&dir.path().join("log"), "copy")
        .into_iter()
        .map(|l| l["value"].clone())
        .collect();
    // An absent value and an empty one are different things.
    assert_eq!(
        values,
        vec![
            serde_json::json!("v1"),
            serde_json::Value::Null,
            serde_json::json!(""),
            serde_json::json!("v2")
        ]
    );

    let outbound = dir.path().join("out");
    std::fs::create_dir_all(&outbound).unwrap();
    std::fs::write(
        outbound.join("p.toml"),
        format!(
            "checkpoint = \"ckpt\"\n[[source]]\ntype = \"log\"\npath = \"../log\"\ntopic = \"copy\"\n[transform]\ncomponent = \"{}\"\n[sink.default]\ntype = \"kafka\"\nbootstrap-servers = \"{b}\"\ntopic = \"{output}\"\n[trigger]\ntype = \"available-now\"\n",
            guest("uppercase").display()
        ),
    )
    .unwrap();
    let o = run(&outbound, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        payloads(&output),
        vec![
            (some("k1"), some("V1")),
            (some("k1"), None),
            (some("k2"), some("")),
            (some("k2"), some("V2")),
        ]
    );
}
