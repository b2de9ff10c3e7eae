//! Kafka with the rest: named outputs to several topics and a files sink,
//! headers and keys carried through, and an upstream transactional producer
//! whose commit markers and aborted records leave offset gaps.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use rdkafka::ClientConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use super::{broker, create_topic, read_committed, sorted_values, unique};
use crate::testkit::{guest, run_pipeline as run, weir};

/// Upstream: 3 committed transactions with an aborted one in between.
fn produce_transactionally(topic: &str) -> Vec<String> {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", broker())
        .set("transactional.id", unique("upstream"))
        .create()
        .unwrap();
    p.init_transactions(Duration::from_secs(30)).unwrap();
    let mut committed = Vec::new();
    for (t, commit) in [(0, true), (1, false), (2, true), (3, true)] {
        p.begin_transaction().unwrap();
        for i in 0..50 {
            let v = format!(
                r#"{{"kind":"{}","n":"t{t}-{i}"}}"#,
                if i % 2 == 0 { "even" } else { "odd" }
            );
            let key = format!("k{i}");
            let headers = OwnedHeaders::new().insert(Header {
                key: "trace",
                value: Some(format!("t{t}-{i}").as_bytes()),
            });
            p.send(BaseRecord::to(topic).payload(&v).key(&key).headers(headers))
                .map_err(|(e, _)| e)
                .unwrap();
            if commit {
                committed.push(v);
            }
        }
        if commit {
            p.commit_transaction(Duration::from_secs(30)).unwrap();
        } else {
            p.flush(Duration::from_secs(30)).unwrap();
            p.abort_transaction(Duration::from_secs(30)).unwrap();
        }
    }
    committed
}

#[test]
fn named_outputs_reach_their_topics_and_a_files_sink_exactly_once_from_a_transactional_upstream() {
    let b = broker();
    let input = unique("txin");
    let even = unique("even");
    let rest = unique("rest");
    create_topic(b, &input, 2, &[]);
    create_topic(b, &even, 2, &[]);
    create_topic(b, &rest, 1, &[]);
    let committed = produce_transactionally(&input);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        r#"
checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
max-offsets-per-trigger = 40
[transform]
component = "{router}"
[transform.config]
field = "kind"
route.even = "even"
route.odd = "odd"
[sink.default]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{rest}"
[sink.even]
type = "kafka"
bootstrap-servers = "{b}"
topic = "{even}"
[sink.odd]
type = "files"
path = "odd"
[trigger]
type = "available-now"
"#,
        router = guest("router").display()
    );
    std::fs::write(dir.path().join("p.toml"), spec).unwrap();
    // A crash between the two Kafka sinks' commits and the files sink.
    let out = run(dir.path(), Some("mid-sink@2"));
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = run(dir.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut want_even: Vec<String> = committed
        .iter()
        .filter(|v| v.contains("even"))
        .cloned()
        .collect();
    want_even.sort();
    let mut want_odd: Vec<String> = committed
        .iter()
        .filter(|v| v.contains("odd"))
        .cloned()
        .collect();
    want_odd.sort();
    assert_eq!(
        sorted_values(b, &even),
        want_even,
        "even: committed records only, once"
    );
    assert!(sorted_values(b, &rest).is_empty());
    let files = weir()
        .arg("files")
        .arg(dir.path().join("odd"))
        .output()
        .unwrap();
    let mut odd: Vec<String> = String::from_utf8_lossy(&files.stdout)
        .lines()
        .map(String::from)
        .collect();
    odd.sort();
    assert_eq!(odd, want_odd, "odd: in the files sink, once");
    // Keys survive the trip (headers are checked by the guest-level tests).
    let keyed = read_committed(b, &even);
    assert!(
        keyed
            .iter()
            .all(|(_, k, _)| k.as_deref().is_some_and(|k| k.starts_with('k')))
    );
}

#[test]
fn a_kafka_source_feeds_the_embedded_log_and_headers_survive() {
    let b = broker();
    let input = unique("hdr");
    create_topic(b, &input, 1, &[]);
    produce_transactionally(&input);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        r#"
checkpoint = "ckpt"
[[source]]
type = "kafka"
bootstrap-servers = "{b}"
topics = ["{input}"]
starting-offsets = "earliest"
[sink.default]
type = "log"
path = "log"
topic = "copy"
[trigger]
type = "available-now"
"#
    );
    std::fs::write(dir.path().join("p.toml"), spec).unwrap();
    let out = run(dir.path(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = super::log_json(&dir.path().join("log"), "copy");
    assert_eq!(lines.len(), 150, "3 committed transactions of 50");
    let first = &lines[0];
    assert_eq!(first["key"], "k0", "{first}");
    assert!(
        first.to_string().contains("trace"),
        "headers carried: {first}"
    );
}
