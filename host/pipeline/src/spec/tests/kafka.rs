use std::path::Path;
use std::time::Duration;

use super::super::*;
use weir_connectors::kafka::{KafkaStarting, KafkaTopics};

const KAFKA: &str = r#"
checkpoint = "ckpt"

[[source]]
type = "kafka"
bootstrap-servers = "127.0.0.1:9092"
topics = ["in"]
starting-offsets = "earliest"
max-offsets-per-trigger = 1000
max-rate-per-partition = 50
[source.properties]
"security.protocol" = "plaintext"
"fetch.max.bytes" = 1048576

[sink.default]
type = "kafka"
bootstrap-servers = "127.0.0.1:9092"
topic = "out"
transaction-timeout = "30s"

[trigger]
type = "processing-time"
interval = "500ms"

[backpressure]
min-rate = 50
"#;

fn parse(text: &str) -> Result<Pipeline, String> {
    Pipeline::parse(text, "k.toml", Path::new("/base")).map_err(|e| e.to_string())
}

#[test]
fn a_kafka_pipeline_validates() {
    let p = parse(KAFKA).unwrap();
    let SourceSpec::Kafka(k) = &p.sources[0] else {
        panic!("{:?}", p.sources)
    };
    assert_eq!(k.topics, KafkaTopics::List(vec!["in".into()]));
    assert_eq!(k.starting, KafkaStarting::Earliest);
    assert_eq!(k.max_offsets_per_trigger, Some(1000));
    assert!(k.fail_on_data_loss);
    assert_eq!(
        k.properties,
        vec![
            ("fetch.max.bytes".into(), "1048576".into()),
            ("security.protocol".into(), "plaintext".into())
        ]
    );
    let SinkSpec::Kafka(s) = &p.sinks[0].1 else {
        panic!("{:?}", p.sinks)
    };
    assert!(s.exactly_once);
    assert_eq!(s.transaction_timeout, Duration::from_secs(30));
    let b = p.backpressure.unwrap();
    assert_eq!((b.proportional, b.integral, b.min_rate), (1.0, 0.2, 50.0));
}

#[test]
fn starting_offsets_take_a_map_or_a_timestamp() {
    let text = KAFKA.replace(
        "starting-offsets = \"earliest\"",
        "starting-offsets = { in = { \"0\" = 5, \"1\" = -2 } }",
    );
    let SourceSpec::Kafka(k) = &parse(&text).unwrap().sources[0] else {
        panic!()
    };
    let KafkaStarting::Offsets(m) = &k.starting else {
        panic!("{:?}", k.starting)
    };
    assert_eq!(m["in"][&0], 5);
    assert_eq!(m["in"][&1], -2);
    let text = KAFKA.replace(
        "starting-offsets = \"earliest\"",
        "starting-timestamp = 1700000000000",
    );
    let SourceSpec::Kafka(k) = &parse(&text).unwrap().sources[0] else {
        panic!()
    };
    assert_eq!(k.starting, KafkaStarting::Timestamp(1_700_000_000_000));
}

#[test]
fn kafka_mistakes_are_explained() {
    let cases = [
        (
            "\"security.protocol\" = \"plaintext\"",
            "\"enable.auto.commit\" = true",
            "source 0.properties: `enable.auto.commit` is managed by weir",
        ),
        (
            "\"security.protocol\" = \"plaintext\"",
            "\"isolation.level\" = \"read_uncommitted\"",
            "source 0.properties: `isolation.level` is managed by weir (weir reads committed records only",
        ),
        (
            "topics = [\"in\"]",
            "topics = [\"in\"]\ntopic-pattern = \"in.*\"",
            "give either topics or topic-pattern",
        ),
        (
            "topics = [\"in\"]",
            "topic-pattern = \"in(\"",
            "source 0.topic-pattern:",
        ),
        (
            "starting-offsets = \"earliest\"",
            "starting-offsets = \"newest\"",
            "starting-offsets: `newest`",
        ),
        (
            "transaction-timeout = \"30s\"",
            "delivery = \"maybe\"",
            "sink.default.delivery: `maybe`",
        ),
        (
            "interval = \"500ms\"",
            "interval = \"500ms\"\n[x]",
            "unknown field `x`",
        ),
    ];
    for (from, to, want) in cases {
        let err = parse(&KAFKA.replace(from, to)).unwrap_err();
        assert!(err.contains(want), "{to}: {err}");
    }
    let err =
        parse(&KAFKA.replace("type = \"processing-time\"\ninterval = \"500ms\"", "")).unwrap_err();
    assert!(err.contains("backpressure sizes batches"), "{err}");
}

#[test]
fn continuous_mode_takes_a_kafka_source_but_no_backpressure() {
    let text = KAFKA
        .replace(
            "checkpoint = \"ckpt\"",
            "checkpoint = \"ckpt\"\nmode = \"continuous\"",
        )
        .replace(
            "[trigger]\ntype = \"processing-time\"\ninterval = \"500ms\"",
            "",
        );
    let err = parse(&text).unwrap_err();
    assert!(
        err.contains("[backpressure] applies to micro-batch mode only"),
        "{err}"
    );
    let text = text.replace("[backpressure]\nmin-rate = 50", "");
    assert!(matches!(
        parse(&text).unwrap().mode,
        Mode::Continuous { .. }
    ));
}

#[test]
fn a_group_pipeline_validates_and_its_rules_are_named() {
    let group = format!("{KAFKA}\n[group]\nid = \"orders\"\nsession-timeout = \"6s\"\n");
    let p = parse(&group).unwrap();
    let g = p.group.unwrap();
    assert_eq!(g.id, "orders");
    assert_eq!(g.session_timeout, Duration::from_secs(6));
    assert_eq!(g.member, None);
    let err = parse(&group.replace(
        "type = \"kafka\"\nbootstrap-servers = \"127.0.0.1:9092\"\ntopic = \"out\"\ntransaction-timeout = \"30s\"",
        "type = \"console\"",
    ))
    .unwrap_err();
    assert!(
        err.contains("sink.default: [group] needs Kafka sinks"),
        "{err}"
    );
    let err =
        parse(&group.replace("topics = [\"in\"]", "topics = [\"in\", \"more\"]")).unwrap_err();
    assert!(err.contains("[group] reads one Kafka topic"), "{err}");
    let err = parse(
        &group
            .replace(
                "\"processing-time\"\ninterval = \"500ms\"",
                "\"available-now\"",
            )
            .replace("[backpressure]\nmin-rate = 50\n", ""),
    )
    .unwrap_err();
    assert!(err.contains("members run until stopped"), "{err}");
    let err = parse(&group.replace(
        "topic = \"out\"",
        "topic = \"out\"\ndelivery = \"at-least-once\"",
    ))
    .unwrap_err();
    assert!(err.contains("the sink must be exactly-once"), "{err}");
    let err = parse(&group.replace("id = \"orders\"", "id = \"orders\"\nmembers = 3")).unwrap_err();
    assert!(err.contains("unknown field `members`"), "{err}");
}
