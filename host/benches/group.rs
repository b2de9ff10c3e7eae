//! Group mode (issue 18): one pipeline (Kafka source, 12 partitions, 1 M
//! records of about 100 bytes -> uppercase guest -> transactional Kafka
//! sink) run by 1, 2 and 3 `weir run` processes in one consumer group, on
//! a local single-node broker, wired exactly as users run it (the release
//! `weir` binary and a pipeline file). Then the failover: 3 members, one
//! SIGKILLed mid-run, and the time until the partitions it held produce
//! committed output again (session timeout 6 s, transaction timeout 10 s).
//!
//! Run: cargo bench -p weir --bench group
//! (WEIR_KAFKA_BOOTSTRAP=host:port uses a running broker.)

use weir_testkit as testkit;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

const RECORDS: usize = 1_000_000;
const PARTITIONS: i32 = 12;

fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let t = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for r in futures::executor::block_on(admin.create_topics(&[t], &AdminOptions::new())).unwrap() {
        r.unwrap();
    }
}

/// Records name their partition, so output shows which partitions flow.
fn fill(bootstrap: &str, topic: &str) {
    let p: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    for i in 0..RECORDS {
        let part = (i % PARTITIONS as usize) as i32;
        let value = format!(r#"{{"p":{part},"i":{i:>10},"pad":"{}"}}"#, "x".repeat(60));
        let mut r = BaseRecord::<[u8], [u8]>::to(topic)
            .payload(value.as_bytes())
            .partition(part);
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

fn pipeline(
    dir: &std::path::Path,
    bootstrap: &str,
    input: &str,
    output: &str,
) -> std::path::PathBuf {
    let spec = format!(
        r#"
name = "group-bench"
checkpoint = "ckpt"
[group]
id = "bench-{output}"
session-timeout = "6s"
[[source]]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topics = ["{input}"]
starting-offsets = "earliest"
[transform]
component = "{guest}"
[sink.default]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topic = "{output}"
transaction-timeout = "10s"
"#,
        guest = testkit::guest("uppercase").display()
    );
    let path = dir.join(format!("{output}.toml"));
    std::fs::write(&path, spec).unwrap();
    path
}

/// A member; its log goes to `log`, its progress (JSON lines) to
/// `log` + `.progress`.
fn member(spec: &std::path::Path, log: std::path::PathBuf) -> Child {
    let progress = std::fs::File::create(log.with_extension("progress")).unwrap();
    Command::new(testkit::weir_bin())
        .arg("run")
        .arg(spec)
        .args(["--progress", "json"])
        .env("WEIR_LOG", "info")
        .stdout(progress)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Reads the output's committed records; each one's input partition.
struct Tail(BaseConsumer);

impl Tail {
    fn new(bootstrap: &str, topic: &str) -> Tail {
        let c: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("isolation.level", "read_committed")
            .set("group.id", "weir-bench-tail")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for p in 0..4 {
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .unwrap();
        }
        c.assign(&tpl).unwrap();
        Tail(c)
    }

    /// The next output record's input partition and offset.
    fn next(&self) -> Option<(i32, i64)> {
        match self.0.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let v = m.payload().unwrap_or_default();
                let s = std::str::from_utf8(v).unwrap();
                // {"P":3,"I":       123,"PAD":...}: i = offset * 12 + p.
                let p: i32 = s[5..s.find(',').unwrap()].parse().unwrap();
                let i: i64 = s[s.find("\"I\":").unwrap() + 4..s.find(",\"PAD").unwrap()]
                    .trim()
                    .parse()
                    .unwrap();
                Some((p, i / PARTITIONS as i64))
            }
            _ => None,
        }
    }
}

fn stop(members: &mut [Child]) {
    for m in members.iter_mut() {
        // SAFETY: a signal to a child this bench started.
        unsafe { libc::kill(m.id() as i32, libc::SIGTERM) };
        let _ = m.wait();
    }
}

/// 1 M records through `n` members; returns records per second from the
/// first member's start to the last record committed.
fn throughput(dir: &std::path::Path, bootstrap: &str, input: &str, n: usize) -> f64 {
    let output = format!("out-{n}-{}", uuid::Uuid::new_v4().simple());
    create_topic(bootstrap, &output, 4);
    let spec = pipeline(dir, bootstrap, input, &output);
    let tail = Tail::new(bootstrap, &output);
    let started = Instant::now();
    let mut members: Vec<Child> = (0..n)
        .map(|i| member(&spec, dir.join(format!("{output}-{i}.log"))))
        .collect();
    let mut seen = 0;
    while seen < RECORDS {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "only {seen} records"
        );
        if tail.next().is_some() {
            seen += 1;
        }
    }
    let rate = RECORDS as f64 / started.elapsed().as_secs_f64();
    stop(&mut members);
    rate
}

/// 3 members; SIGKILL one after 300 k records. Returns the seconds until
/// the first, and until every, partition it held produced output again.
fn failover(dir: &std::path::Path, bootstrap: &str, input: &str) -> (f64, f64, Vec<i32>) {
    let output = format!("out-failover-{}", uuid::Uuid::new_v4().simple());
    create_topic(bootstrap, &output, 4);
    let spec = pipeline(dir, bootstrap, input, &output);
    let tail = Tail::new(bootstrap, &output);
    let logs: Vec<_> = (0..3)
        .map(|i| dir.join(format!("{output}-{i}.log")))
        .collect();
    let mut members: Vec<Child> = logs.iter().map(|l| member(&spec, l.clone())).collect();
    let mut seen = 0;
    while seen < 300_000 {
        if tail.next().is_some() {
            seen += 1;
        }
    }
    // What it holds now, as its last progress line says.
    let held: Vec<i32> = loop {
        let text = std::fs::read_to_string(logs[0].with_extension("progress")).unwrap();
        let last: Option<serde_json::Value> = text
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok());
        let parts = last
            .as_ref()
            .and_then(|p| p["sources"][0]["metrics"]["partitions"].as_str())
            .unwrap_or_default()
            .split(',')
            .filter_map(|p| p.parse().ok())
            .collect::<Vec<i32>>();
        if !parts.is_empty() {
            break parts;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    members[0].kill().unwrap();
    members[0].wait().unwrap();
    let killed = Instant::now();
    // Where the dead member's partitions were last committed: output of
    // later input offsets is the new owners' work.
    let group: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("bench-{output}"))
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in &held {
        tpl.add_partition(input, *p);
    }
    let committed: BTreeMap<i32, i64> = group
        .committed_offsets(tpl, Duration::from_secs(60))
        .unwrap()
        .elements()
        .iter()
        .map(|e| (e.partition(), e.offset().to_raw().unwrap_or(0)))
        .collect();
    let mut back: BTreeSet<i32> = BTreeSet::new();
    let mut first = None;
    while back.len() < held.len() {
        if killed.elapsed() > Duration::from_secs(120) {
            for l in &logs[1..] {
                let text = std::fs::read_to_string(l).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                eprintln!(
                    "--- {} ---\n{}",
                    l.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            panic!("partitions {held:?} never came back (committed {committed:?}; back {back:?})");
        }
        let Some((p, offset)) = tail.next() else {
            continue;
        };
        if committed.get(&p).is_some_and(|&c| offset >= c) && back.insert(p) {
            first.get_or_insert(killed.elapsed().as_secs_f64());
        }
    }
    let all = killed.elapsed().as_secs_f64();
    stop(&mut members[1..]);
    (first.unwrap_or(all), all, held)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let (bootstrap, own) = match std::env::var("WEIR_KAFKA_BOOTSTRAP") {
        Ok(b) => (b, false),
        Err(_) => {
            let out = Command::new(testkit::repo_root().join("scripts/kafka-broker"))
                .arg("start")
                .arg(dir.path().join("broker"))
                .output()
                .unwrap();
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
    let input = format!("group-bench-{}", uuid::Uuid::new_v4().simple());
    create_topic(&bootstrap, &input, PARTITIONS);
    fill(&bootstrap, &input);
    if std::env::var("WEIR_BENCH_FAILOVER_ONLY").is_ok() {
        let (first, all, held) = failover(dir.path(), &bootstrap, &input);
        println!("failover: {first:.1} s / {all:.1} s ({held:?})");
        return;
    }
    let one = throughput(dir.path(), &bootstrap, &input, 1);
    println!("1 process:   {one:.0} rec/s (1 M records, 12 partitions, start to last commit)");
    for n in [2, 3] {
        let r = throughput(dir.path(), &bootstrap, &input, n);
        println!("{n} processes: {r:.0} rec/s = {:.2}x one process", r / one);
    }
    let (first, all, held) = failover(dir.path(), &bootstrap, &input);
    println!(
        "SIGKILL of 1 of 3 members (it held partitions {held:?}): first moved partition producing again after {first:.1} s, all of them after {all:.1} s"
    );
    if own {
        let _ = Command::new(testkit::repo_root().join("scripts/kafka-broker"))
            .arg("stop")
            .arg(dir.path().join("broker"))
            .status();
    }
}
