//! Kafka pipeline benchmark (issue 5): 1 M records of 100 bytes on a
//! 4-partition topic of a local single-node broker, Kafka source ->
//! uppercase guest -> transactional Kafka sink, micro-batch (AvailableNow)
//! and continuous. Beside it, in the same run, the broker's own ceiling:
//! Kafka's ProducerPerformance and ConsumerPerformance on the same broker.
//!
//! Run: cargo bench -p weir --bench kafka
//! (WEIR_KAFKA_BOOTSTRAP=host:port uses a running broker instead of
//! starting one with scripts/kafka-broker.)

use weir_testkit as testkit;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use weir_connectors::kafka::{KafkaSink, KafkaSource};
use weir_connectors::kafka::{KafkaSinkOptions, KafkaSourceOptions, KafkaStarting, KafkaTopics};
use weir_engine::{
    ContinuousOptions, ContinuousQuery, LocalCheckpointStore, MicroBatchQuery, QueryOptions, Sink,
    Source, Transform, TransformError, TransformFactory, Trigger,
};
use weir_runtime::{CallMode, Limits, WasmTransform};

const RECORDS: usize = 1_000_000;
const PARTITIONS: i32 = 4;

fn script() -> Command {
    Command::new(testkit::repo_root().join("scripts/kafka-broker"))
}

fn create_topic(bootstrap: &str, name: &str) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let t = NewTopic::new(name, PARTITIONS, TopicReplication::Fixed(1));
    for r in futures::executor::block_on(admin.create_topics(&[t], &AdminOptions::new())).unwrap() {
        r.unwrap();
    }
}

fn fill(bootstrap: &str, topic: &str) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    let value: Vec<u8> = (0..100).map(|i| b'a' + (i % 26) as u8).collect();
    for i in 0..RECORDS {
        let mut r = BaseRecord::<[u8], [u8]>::to(topic)
            .payload(&value)
            .partition((i % PARTITIONS as usize) as i32);
        loop {
            match p.send(r) {
                Ok(()) => break,
                Err((_, back)) => {
                    r = back;
                    p.poll(Duration::from_millis(5));
                }
            }
        }
    }
    p.flush(Duration::from_secs(120)).unwrap();
}

fn source_spec(bootstrap: &str, topic: &str) -> KafkaSourceOptions {
    KafkaSourceOptions {
        bootstrap_servers: bootstrap.into(),
        topics: KafkaTopics::List(vec![topic.into()]),
        starting: KafkaStarting::Earliest,
        max_offsets_per_trigger: Some(200_000),
        max_bytes_per_trigger: weir_connectors::DEFAULT_MAX_BYTES_PER_TRIGGER,
        max_rate_per_partition: None,
        fail_on_data_loss: true,
        group_id: None,
        retry_timeout: Duration::from_secs(60),
        properties: vec![],
    }
}

fn sink(bootstrap: &str, topic: &str) -> Vec<(Option<String>, Box<dyn Sink>)> {
    let spec = KafkaSinkOptions {
        bootstrap_servers: bootstrap.into(),
        topic: topic.into(),
        exactly_once: true,
        transaction_timeout: Duration::from_secs(60),
        retry_timeout: Duration::from_secs(60),
        properties: vec![("linger.ms".into(), "20".into())],
    };
    vec![(None, Box::new(KafkaSink::new(spec, "default")))]
}

fn factory() -> Box<dyn TransformFactory> {
    let rt = testkit::runtime();
    let component = rt.load(&testkit::guest("uppercase"), &[]).unwrap();
    Box::new(
        move |_: usize, task: u32| -> Result<Box<dyn Transform>, TransformError> {
            Ok(Box::new(WasmTransform::new(
                &component,
                vec![],
                Limits::default(),
                &format!("task-{task}"),
                CallMode::Batch,
            )?))
        },
    )
}

fn micro_batch(bootstrap: &str, input: &str) -> f64 {
    let out = format!("{input}-mb-out");
    create_topic(bootstrap, &out);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
    let source: Box<dyn Source> =
        Box::new(KafkaSource::new(source_spec(bootstrap, input), None).unwrap());
    let options = QueryOptions {
        trigger: Trigger::AvailableNow,
        ..QueryOptions::default()
    };
    let mut q = MicroBatchQuery::new(
        store,
        vec![source],
        factory(),
        sink(bootstrap, &out),
        options,
    )
    .unwrap();
    let started = Instant::now();
    let s = q.run(&mut |_| {}).unwrap();
    assert_eq!(s.output_rows as usize, RECORDS);
    RECORDS as f64 / started.elapsed().as_secs_f64()
}

fn continuous(bootstrap: &str, input: &str) -> f64 {
    let out = format!("{input}-c-out");
    create_topic(bootstrap, &out);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(LocalCheckpointStore::open(dir.path()).unwrap());
    let source = Box::new(KafkaSource::continuous(source_spec(bootstrap, input)).unwrap());
    let options = ContinuousOptions {
        checkpoint_interval: Duration::from_millis(100),
        exit_when_idle: Some(Duration::from_millis(500)),
        ..ContinuousOptions::default()
    };
    let mut q =
        ContinuousQuery::new(store, source, factory(), sink(bootstrap, &out), options).unwrap();
    let started = Instant::now();
    let mut last_commit = started;
    let s = q
        .run(&mut |p| {
            if p.num_input_rows > 0 {
                last_commit = Instant::now();
            }
        })
        .unwrap();
    assert_eq!(s.output_rows as usize, RECORDS);
    // Up to the last epoch with records (the idle wait is not work).
    RECORDS as f64 / last_commit.duration_since(started).as_secs_f64()
}

fn ceiling(bootstrap: &str) -> (f64, f64) {
    let out = script()
        .args(["perf", bootstrap, &RECORDS.to_string(), "100"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{k} missing from: {text}"))
    };
    (get("produce_rec_per_s="), get("consume_rec_per_s="))
}

fn main() {
    weir::allocator::keep_batch_buffers();
    let dir = tempfile::tempdir().unwrap();
    let (bootstrap, own) = match std::env::var("WEIR_KAFKA_BOOTSTRAP") {
        Ok(b) => (b, false),
        Err(_) => {
            let out = script().arg("start").arg(dir.path()).output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            (
                String::from_utf8(out.stdout).unwrap().trim().to_string(),
                true,
            )
        }
    };
    let input = format!("bench-{}", uuid::Uuid::new_v4().simple());
    create_topic(&bootstrap, &input);
    fill(&bootstrap, &input);
    let (produce, consume) = ceiling(&bootstrap);
    let ceiling = produce.min(consume);
    println!(
        "broker ceiling: produce {produce:.0} rec/s, consume {consume:.0} rec/s (1 M x 100 B, acks=all)"
    );
    let mb = micro_batch(&bootstrap, &input);
    println!(
        "kafka -> uppercase -> transactional kafka, micro-batch (200k/batch): {mb:.0} rec/s = {:.0}% of the ceiling",
        100.0 * mb / ceiling
    );
    let c = continuous(&bootstrap, &input);
    println!(
        "kafka -> uppercase -> transactional kafka, continuous (100 ms epochs): {c:.0} rec/s = {:.0}% of the ceiling",
        100.0 * c / ceiling
    );
    if own {
        let _ = script().arg("stop").arg(dir.path()).status();
    }
}
