//! End-to-end tests against a real Apache Kafka broker (KRaft, single node),
//! which `scripts/kafka-broker` builds from Maven Central's jars and runs on
//! the local Java. The tests share one broker, started on first use (or the
//! one named by `WEIR_KAFKA_BOOTSTRAP`) and stopped when the test process
//! exits; the outage test starts and stops a private one.

pub(crate) mod exactly_once;
mod formats;
pub(crate) mod group;
mod mixed;
pub(crate) mod outages;
mod replay;
mod source_options;
mod tombstones;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewPartitions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

use crate::testkit::repo_root;

/// A broker this process started, stopped by `stop_at_exit`.
static STARTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

extern "C" fn stop_brokers() {
    if let Ok(dirs) = STARTED.lock() {
        for d in dirs.iter() {
            let _ = script().arg("stop").arg(d).status();
        }
    }
}

fn script() -> Command {
    Command::new(repo_root().join("scripts/kafka-broker"))
}

/// Start a broker in `dir` (on `port`, 0 = any free one); returns its
/// bootstrap address. Stopped at process exit unless stopped earlier.
pub fn start_broker(dir: &Path, port: u16) -> String {
    start_broker_with(dir, port, None)
}

/// A broker whose second listener advertises `proxied`, the port of a
/// fault proxy forwarding to the listener on the broker's port + 2: clients
/// that bootstrap through the proxy keep to it. Returns the direct address.
pub fn start_broker_proxied(dir: &Path, proxied: u16) -> String {
    start_broker_with(dir, 0, Some(proxied))
}

fn start_broker_with(dir: &Path, port: u16, proxied: Option<u16>) -> String {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registering a plain extern "C" function with libc.
        unsafe { libc::atexit(stop_brokers) };
    });
    // A broker start can fail on a busy machine (a port taken in the
    // meantime); try again a couple of times before giving up.
    let mut attempt = 0;
    let out = loop {
        attempt += 1;
        let out = script()
            .arg("start")
            .arg(dir)
            .arg(port.to_string())
            .args(proxied.map(|p| p.to_string()))
            .output()
            .expect("running scripts/kafka-broker");
        if out.status.success() || attempt == 3 {
            break out;
        }
        let _ = script().arg("stop").arg(dir).status();
        std::thread::sleep(std::time::Duration::from_secs(1));
    };
    assert!(
        out.status.success(),
        "kafka-broker start failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    STARTED.lock().unwrap().push(dir.to_path_buf());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn stop_broker(dir: &Path) {
    let status = script().arg("stop").arg(dir).status().unwrap();
    assert!(status.success());
}

/// The shared broker.
pub fn broker() -> &'static str {
    static BOOTSTRAP: OnceLock<String> = OnceLock::new();
    BOOTSTRAP.get_or_init(|| {
        if let Ok(b) = std::env::var("WEIR_KAFKA_BOOTSTRAP") {
            return b;
        }
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        stop_orphans(tmp);
        let dir = tmp.join(format!("kafka-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        start_broker(&dir, 0)
    })
}

/// Stop brokers left by test processes that died without their exit hook
/// (killed by a signal): their directories are named after the dead pid.
fn stop_orphans(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name
            .strip_prefix("kafka-")
            .and_then(|p| p.parse::<u32>().ok())
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = script().arg("stop").arg(e.path()).status();
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// A topic name no other test (or earlier run on a reused broker) uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

fn admin(bootstrap: &str) -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("admin client")
}

pub fn create_topic(bootstrap: &str, name: &str, partitions: i32, config: &[(&str, &str)]) {
    let mut t = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (k, v) in config {
        t = t.set(k, v);
    }
    let r = futures::executor::block_on(admin(bootstrap).create_topics(&[t], &AdminOptions::new()))
        .expect("create_topics");
    for r in r {
        r.unwrap_or_else(|(t, e)| panic!("creating topic {t}: {e}"));
    }
}

pub fn add_partitions(bootstrap: &str, name: &str, total: usize) {
    let r = futures::executor::block_on(
        admin(bootstrap)
            .create_partitions(&[NewPartitions::new(name, total)], &AdminOptions::new()),
    )
    .expect("create_partitions");
    for r in r {
        r.unwrap_or_else(|(t, e)| panic!("adding partitions to {t}: {e}"));
    }
}

/// Set topic configs (e.g. to stop retention once a test has its loss).
pub fn alter_topic(bootstrap: &str, name: &str, config: &[(&str, &str)]) {
    let mut c = rdkafka::admin::AlterConfig::new(rdkafka::admin::ResourceSpecifier::Topic(name));
    for (k, v) in config {
        c = c.set(k, v);
    }
    let r = futures::executor::block_on(admin(bootstrap).alter_configs(&[c], &AdminOptions::new()))
        .expect("alter_configs");
    for r in r {
        r.unwrap_or_else(|(t, e)| panic!("altering {t:?}: {e}"));
    }
}

/// One record to produce: partition (`None`: by key), key, value, timestamp.
pub struct Rec<'a> {
    pub partition: Option<i32>,
    pub key: Option<&'a str>,
    pub value: String,
    pub timestamp: Option<i64>,
}

pub fn produce(bootstrap: &str, topic: &str, records: &[Rec<'_>]) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    for r in records {
        let mut rec = BaseRecord::<str, str>::to(topic).payload(&r.value);
        if let Some(k) = r.key {
            rec = rec.key(k);
        }
        if let Some(part) = r.partition {
            rec = rec.partition(part);
        }
        if let Some(ts) = r.timestamp {
            rec = rec.timestamp(ts);
        }
        loop {
            match p.send(rec) {
                Ok(()) => break,
                Err((KafkaError::MessageProduction(_), back)) => {
                    rec = back;
                    p.poll(Duration::from_millis(10));
                }
                Err((e, _)) => panic!("producing to {topic}: {e}"),
            }
        }
    }
    p.flush(Duration::from_secs(30)).expect("flush");
}

/// Values `0..n` as JSON records, spread over partitions by key.
pub fn produce_numbers(bootstrap: &str, topic: &str, from: usize, n: usize) {
    let keys: Vec<String> = (from..from + n).map(|i| format!("k{}", i % 11)).collect();
    let recs: Vec<Rec<'_>> = (from..from + n)
        .map(|i| Rec {
            partition: None,
            key: Some(&keys[i - from]),
            value: format!(r#"{{"id":{i},"name":"record {i}"}}"#),
            timestamp: None,
        })
        .collect();
    produce(bootstrap, topic, &recs);
}

/// Every record a `read_committed` consumer sees in `topic`, as
/// (partition, key, value), read from the beginning to the current end.
pub fn read_committed(bootstrap: &str, topic: &str) -> Vec<(i32, Option<String>, String)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", "true")
        .set("group.id", "weir-test-reader")
        .create()
        .expect("consumer");
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .expect("metadata");
    let mut tpl = TopicPartitionList::new();
    let mut pending = std::collections::BTreeSet::new();
    for p in md.topics()[0].partitions() {
        tpl.add_partition_offset(topic, p.id(), Offset::Beginning)
            .unwrap();
        pending.insert(p.id());
    }
    c.assign(&tpl).unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Done when every partition has reported reaching its (stable) end.
    while !pending.is_empty() {
        assert!(Instant::now() < deadline, "reading {topic} timed out");
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => out.push((
                m.partition(),
                m.key().map(|k| String::from_utf8_lossy(k).into_owned()),
                String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned(),
            )),
            Some(Err(KafkaError::PartitionEOF(p))) => {
                pending.remove(&p);
            }
            Some(Err(e)) => panic!("consuming {topic}: {e}"),
            None => {}
        }
    }
    out
}

/// Values of a topic, sorted (exactly-once checks compare multisets).
pub fn sorted_values(bootstrap: &str, topic: &str) -> Vec<String> {
    let mut v: Vec<String> = read_committed(bootstrap, topic)
        .into_iter()
        .map(|(_, _, v)| v)
        .collect();
    v.sort();
    v
}

/// The earliest offset still stored in a partition.
pub fn low_watermark(bootstrap: &str, topic: &str, partition: i32) -> i64 {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .expect("consumer");
    c.fetch_watermarks(topic, partition, Duration::from_secs(10))
        .expect("watermarks")
        .0
}

/// The committed records of embedded-log topic `topic` under `log`, as
/// `weir log read --json` prints them.
pub fn log_json(log: &Path, topic: &str) -> Vec<serde_json::Value> {
    let read = crate::testkit::weir()
        .args(["log", "read"])
        .arg(log)
        .args([topic, "--json"])
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    String::from_utf8_lossy(&read.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
