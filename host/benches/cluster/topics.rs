//! The benchmark's Kafka side: topics (one partition each), the records
//! that fill the inputs, and read_committed readers of the outputs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use weir_testkit as testkit;

/// The broker: WEIR_KAFKA_BOOTSTRAP's, or one started here and stopped
/// when dropped (also when the bench panics).
pub struct Broker {
    pub bootstrap: String,
    own: Option<PathBuf>,
}

impl Broker {
    pub fn start(dir: &Path) -> Broker {
        if let Ok(b) = std::env::var("WEIR_KAFKA_BOOTSTRAP") {
            return Broker {
                bootstrap: b,
                own: None,
            };
        }
        let dir = dir.join("broker");
        let out = Command::new(testkit::repo_root().join("scripts/kafka-broker"))
            .arg("start")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Broker {
            bootstrap: String::from_utf8(out.stdout).unwrap().trim().to_string(),
            own: Some(dir),
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(dir) = &self.own {
            let _ = Command::new(testkit::repo_root().join("scripts/kafka-broker"))
                .arg("stop")
                .arg(dir)
                .status();
        }
    }
}

/// Create `names`, one partition each.
pub fn create(bootstrap: &str, names: &[String]) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .unwrap();
    let new: Vec<NewTopic> = names
        .iter()
        .map(|n| NewTopic::new(n, 1, TopicReplication::Fixed(1)))
        .collect();
    for r in futures::executor::block_on(admin.create_topics(&new, &AdminOptions::new())).unwrap() {
        r.unwrap_or_else(|(t, e)| panic!("creating topic {t}: {e}"));
    }
}

pub fn producer(bootstrap: &str) -> BaseProducer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap()
}

/// Queue one record for partition 0 of `topic`, waiting while the queue is full.
pub fn send(p: &BaseProducer, topic: &str, value: &[u8]) {
    let mut r = BaseRecord::<[u8], [u8]>::to(topic)
        .payload(value)
        .partition(0);
    loop {
        match p.send(r) {
            Ok(()) => return,
            Err((_, back)) => {
                r = back;
                p.poll(Duration::from_millis(5));
            }
        }
    }
}

/// Wait until every queued record is written.
pub fn flush(p: &BaseProducer) {
    p.flush(Duration::from_secs(300)).unwrap();
}

/// `records` records of 100 bytes in each of `topics` (in turn, so they
/// fill together), each naming its topic's index and its own.
pub fn fill(bootstrap: &str, topics: &[String], records: usize) {
    let p = producer(bootstrap);
    let pad = "x".repeat(68);
    for i in 0..records {
        for (t, topic) in topics.iter().enumerate() {
            let value = format!(r#"{{"t":{t:>2},"i":{i:>10},"pad":"{pad}"}}"#);
            send(&p, topic, value.as_bytes());
        }
    }
    flush(&p);
}

fn reader(bootstrap: &str, group: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("isolation.level", "read_committed")
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .unwrap()
}

/// One read_committed consumer of every output (partition 0 of each,
/// from the beginning), counting what it has seen of each.
pub struct Counts {
    consumer: BaseConsumer,
    seen: HashMap<String, usize>,
}

impl Counts {
    pub fn new(bootstrap: &str, topics: &[String]) -> Counts {
        let consumer = reader(bootstrap, "weir-bench-cluster-tail");
        let mut tpl = TopicPartitionList::new();
        for t in topics {
            tpl.add_partition_offset(t, 0, Offset::Beginning).unwrap();
        }
        consumer.assign(&tpl).unwrap();
        Counts {
            consumer,
            seen: HashMap::new(),
        }
    }

    /// Count what is committed, polling for `span`.
    pub fn pump(&mut self, span: Duration) {
        let until = Instant::now() + span;
        while Instant::now() < until {
            match self.consumer.poll(Duration::from_millis(50)) {
                Some(Ok(m)) => *self.seen.entry(m.topic().to_string()).or_default() += 1,
                Some(Err(e)) => eprintln!("cluster bench: reading outputs: {e}"),
                None => {}
            }
        }
    }

    pub fn get(&self, topic: &str) -> usize {
        self.seen.get(topic).copied().unwrap_or(0)
    }
}

/// A read_committed reader of partition 0 of `topic` from its current
/// end on: it sees only records written after it was made.
pub struct Tail(BaseConsumer);

impl Tail {
    pub fn new(bootstrap: &str, topic: &str) -> Tail {
        let c = reader(bootstrap, "weir-bench-cluster-marker");
        let (_, high) = c
            .fetch_watermarks(topic, 0, Duration::from_secs(10))
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, Offset::Offset(high))
            .unwrap();
        c.assign(&tpl).unwrap();
        Tail(c)
    }

    /// The time from `since` until a record whose value is `want` is read,
    /// or `None` once `limit` has passed since then without it.
    pub fn until(&self, want: &str, since: Instant, limit: Duration) -> Option<Duration> {
        while since.elapsed() < limit {
            if let Some(Ok(m)) = self.0.poll(Duration::from_millis(20))
                && m.payload() == Some(want.as_bytes())
            {
                return Some(since.elapsed());
            }
        }
        None
    }
}
