//! The 30 pipelines the tenants deploy (Kafka in -> guest -> Kafka out,
//! each with its own topics), the input the test produces for them, what
//! each output must hold, and a read_committed consumer of every output.

use crate::kafka::group::base;
use crate::kafka::group::windows::WINDOWS;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use crate::kafka::{create_topic, produce_numbers, sorted_values, unique};
use crate::stateful::Input;
use crate::stateful::examples::windows_until;

pub(super) const PIPELINES: usize = 30;
pub(super) const TENANTS: [&str; 2] = ["acme", "globex"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Uppercase, micro-batches on a 200 ms processing-time trigger.
    Upper,
    /// Uppercase in continuous mode.
    Continuous,
    /// The windowed count (tumbling 1 s windows per key), micro-batch.
    Windows,
    /// Uppercase as a `[group]` pipeline on a 12-partition topic.
    Group,
}

/// Records (or, for the windowed count, events) per round of input.
fn per_round(kind: Kind) -> usize {
    match kind {
        Kind::Upper | Kind::Continuous => 150,
        Kind::Windows => 1_000,
        Kind::Group => 2_000,
    }
}

/// One pipeline of the test, its topics and the input sent to it so far.
pub(super) struct Deployed {
    pub tenant: &'static str,
    pub name: String,
    pub kind: Kind,
    /// The node (2 or 3) its tenant deploys it through.
    pub via: usize,
    pub input: String,
    pub output: String,
    pub out_partitions: i32,
    /// A group pipeline's consumer group.
    group: String,
    /// Records produced (uppercase kinds).
    sent: usize,
    /// Events produced (the windowed count), each (partition 0, value, ts).
    events: Vec<Input>,
    /// The windowed count's last record, far ahead, was sent.
    flushed: bool,
}

/// The 30 pipelines and their topics (created here): p00 is the group
/// pipeline; p01, p03 and p05 count windows; p02 and p07 run continuously;
/// the rest are micro-batch uppercase. Even ones are acme's, odd ones
/// globex's (so every windowed count is globex's); each tenant deploys
/// through nodes 2 and 3 in turn.
pub(super) fn plan(bootstrap: &str) -> Vec<Deployed> {
    (0..PIPELINES)
        .map(|i| {
            let kind = match i {
                0 => Kind::Group,
                1 | 3 | 5 => Kind::Windows,
                2 | 7 => Kind::Continuous,
                _ => Kind::Upper,
            };
            // The windowed count reads one partition: its events stay in
            // event-time order, so none is late.
            let (in_partitions, out_partitions) = match kind {
                Kind::Group => (12, 4),
                Kind::Windows => (1, 1),
                Kind::Upper | Kind::Continuous => (2, 2),
            };
            let input = unique(&format!("cluster-in-{i:02}"));
            let output = unique(&format!("cluster-out-{i:02}"));
            create_topic(bootstrap, &input, in_partitions, &[]);
            create_topic(bootstrap, &output, out_partitions, &[]);
            Deployed {
                tenant: TENANTS[i % 2],
                name: format!("p{i:02}"),
                kind,
                via: 2 + (i / 2) % 2,
                input,
                output,
                out_partitions,
                group: unique("cluster-group"),
                sent: 0,
                events: Vec::new(),
                flushed: false,
            }
        })
        .collect()
}

impl Deployed {
    pub fn key(&self) -> (String, String) {
        (self.tenant.to_string(), self.name.clone())
    }

    /// Its pipeline file, `component` the uploaded guest's id. No
    /// `checkpoint`: in a cluster the node places it on the object store.
    pub fn spec(&self, bootstrap: &str, component: &str) -> String {
        const TRIGGER: &str = "[trigger]\ntype = \"processing-time\"\ninterval = \"200ms\"";
        let (top, trigger, windows) = match self.kind {
            Kind::Upper => (String::new(), TRIGGER, ""),
            Kind::Windows => (String::new(), TRIGGER, WINDOWS),
            Kind::Continuous => (
                "mode = \"continuous\"\ncheckpoint-interval = \"500ms\"".to_string(),
                "",
                "",
            ),
            Kind::Group => (
                format!("[group]\nid = \"{}\"\nsession-timeout = \"6s\"", self.group),
                TRIGGER,
                "",
            ),
        };
        format!(
            r#"{top}
[[source]]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topics = ["{input}"]
starting-offsets = "earliest"
[transform]
component = "{component}"
on-error = "fail"
{windows}
[sink.default]
type = "kafka"
bootstrap-servers = "{bootstrap}"
topic = "{output}"
transaction-timeout = "10s"
{trigger}
"#,
            input = self.input,
            output = self.output,
        )
    }

    /// Produce `1 / parts` of a round of input.
    pub fn feed(&mut self, bootstrap: &str, parts: usize) {
        let n = per_round(self.kind) / parts;
        match self.kind {
            Kind::Windows => {
                let from = self.events.len();
                let new: Vec<Input> = (from..from + n)
                    .map(|i| {
                        let ts = base() + 2 * i as i64;
                        (0, format!(r#"{{"key":"k{}","ts":{ts}}}"#, i % 7), ts)
                    })
                    .collect();
                self.send_events(bootstrap, &new);
                self.events.extend(new);
            }
            _ => {
                produce_numbers(bootstrap, &self.input, self.sent, n);
                self.sent += n;
            }
        }
    }

    /// The windowed count: one record ten minutes past the events (brokers
    /// refuse timestamps over an hour ahead), whose watermark closes every
    /// window of theirs.
    pub fn flush(&mut self, bootstrap: &str) {
        if self.kind == Kind::Windows {
            let ts = base() + 2 * self.events.len() as i64 + 600_000;
            let last = (0, format!(r#"{{"key":"flush","ts":{ts}}}"#), ts);
            self.send_events(bootstrap, &[last]);
            self.flushed = true;
        }
    }

    fn send_events(&self, bootstrap: &str, events: &[Input]) {
        let records: Vec<(String, String, i64)> = events
            .iter()
            .map(|(_, v, ts)| (v.split('"').nth(3).unwrap().to_string(), v.clone(), *ts))
            .collect();
        crate::kafka::group::produce(bootstrap, &self.input, &records);
    }

    /// Output records it owes by now (at least): every record sent,
    /// uppercased; the windows its watermark closes (less the last second,
    /// as a margin), all of them once flushed.
    pub fn owed(&self) -> usize {
        match self.kind {
            Kind::Windows => match self.events.last() {
                _ if self.flushed => self.expected().len(),
                Some((_, _, ts)) => windows_until(&self.events, 1_000, ts - 500 - 1_000).len(),
                None => 0,
            },
            _ => self.sent,
        }
    }

    /// Its whole output, sorted, once the input is done.
    pub fn expected(&self) -> Vec<String> {
        match self.kind {
            Kind::Windows => {
                assert!(
                    self.flushed,
                    "{}: windows are complete once flushed",
                    self.name
                );
                windows_until(&self.events, 1_000, i64::MAX)
            }
            _ => {
                let mut v: Vec<String> = (0..self.sent)
                    .map(|i| format!(r#"{{"id":{i},"name":"record {i}"}}"#).to_uppercase())
                    .collect();
                v.sort();
                v
            }
        }
    }

    /// Its output as a read_committed consumer finds it equals the
    /// expected exactly (each record once), or why not.
    pub fn check(&self, bootstrap: &str) -> Result<(), String> {
        let got = sorted_values(bootstrap, &self.output);
        let want = self.expected();
        if got == want {
            return Ok(());
        }
        let missing: Vec<&String> = want
            .iter()
            .filter(|w| got.binary_search(w).is_err())
            .collect();
        let extra: Vec<&String> = got
            .iter()
            .filter(|g| want.binary_search(g).is_err())
            .collect();
        let mut once = got.clone();
        once.dedup();
        // Whether the input itself holds a record twice (a producer retry)
        // tells a pipeline's duplicate from the feed's.
        let mut input = sorted_values(bootstrap, &self.input);
        let input_records = input.len();
        input.dedup();
        Err(format!(
            "{}/{} ({:?}): {} records out, {} expected; {} missing (first {:?}), {} not expected (first {:?}), {} duplicated; its input topic holds {} records, {} of them duplicates",
            self.tenant,
            self.name,
            self.kind,
            got.len(),
            want.len(),
            missing.len(),
            missing.first(),
            extra.len(),
            extra.first(),
            got.len() - once.len(),
            input_records,
            input_records - input.len(),
        ))
    }
}

/// Feed every pipeline `1 / parts` of a round.
pub(super) fn feed_all(ps: &mut [Deployed], bootstrap: &str, parts: usize) {
    for p in ps {
        p.feed(bootstrap, parts);
    }
}

/// One read_committed consumer of every output topic, counting what it
/// has seen of each.
pub(super) struct Outputs {
    consumer: BaseConsumer,
    seen: HashMap<String, usize>,
}

impl Outputs {
    pub fn new(bootstrap: &str, ps: &[Deployed]) -> Outputs {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("isolation.level", "read_committed")
            .set("group.id", "weir-test-cluster-tail")
            .create()
            .expect("consumer");
        let mut tpl = TopicPartitionList::new();
        for p in ps {
            for part in 0..p.out_partitions {
                tpl.add_partition_offset(&p.output, part, Offset::Beginning)
                    .unwrap();
            }
        }
        consumer.assign(&tpl).unwrap();
        Outputs {
            consumer,
            seen: HashMap::new(),
        }
    }

    /// Count what has been committed since, for up to a second.
    fn pump(&mut self) {
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            match self.consumer.poll(Duration::from_millis(100)) {
                Some(Ok(m)) => *self.seen.entry(m.topic().to_string()).or_default() += 1,
                Some(Err(e)) => eprintln!("cluster test: reading outputs: {e}"),
                None => break,
            }
        }
    }

    fn seen(&self, topic: &str) -> usize {
        self.seen.get(topic).copied().unwrap_or(0)
    }

    /// Wait (at most `limit`) until every output holds what its pipeline
    /// owes by now; past it, fail naming `what`, the pipelines behind and
    /// `context()`.
    pub fn wait_all(
        &mut self,
        ps: &[Deployed],
        limit: Duration,
        what: &str,
        context: &dyn Fn() -> String,
    ) {
        let started = Instant::now();
        loop {
            self.pump();
            let behind: Vec<String> = ps
                .iter()
                .filter(|p| self.seen(&p.output) < p.owed())
                .map(|p| {
                    format!(
                        "{}/{} ({:?}) {} of {}",
                        p.tenant,
                        p.name,
                        p.kind,
                        self.seen(&p.output),
                        p.owed()
                    )
                })
                .collect();
            if behind.is_empty() {
                eprintln!(
                    "cluster: {what}: every output complete after {} ms",
                    started.elapsed().as_millis()
                );
                return;
            }
            assert!(
                started.elapsed() < limit,
                "{what}: outputs behind after {limit:?}: {behind:?}\n{}",
                context()
            );
        }
    }
}
