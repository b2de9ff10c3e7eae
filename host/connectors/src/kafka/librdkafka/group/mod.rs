//! A member of a Kafka consumer group for `engine::group`: a subscribed
//! consumer (cooperative-sticky assignment) and one transactional producer
//! per process (exactly-once v2, KIP-447): each batch's output and its
//! input offsets, with the consumer's group metadata, commit in one
//! transaction, so a member whose partitions moved on is fenced by the
//! group's generation.
//!
//! Newly assigned partitions start exactly at their committed offsets,
//! read (with the metadata committed beside them) in the rebalance
//! callback before the partitions are assigned, so the state a partition
//! restores and the offset it reads from always belong together. A
//! read_committed consumer's offset fetch waits for a transaction still
//! open on the partition (a fenced or dead member's, until it aborts).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer as _};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::Producer as _;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

use super::consumer::{meta, whole_ms};
use super::{Context, Producer, REQUEST_TIMEOUT, client_config, create, kafka_err, with_retry};
use crate::kafka::{
    ConsumerGroup, KafkaSinkOptions, KafkaSourceOptions, KafkaStarting, KafkaTopics,
};
use weir_engine::group::{Assigned, CommitError, GroupMember, Polled, Position};
use weir_engine::{ConnectorError, RecordBatch, RecordRef, TransformOutput};

/// Each transactional step waits at most this long.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

mod rebalance;
mod transaction;

use rebalance::{Event, GroupContext};
use transaction::TxnError;

pub struct KafkaGroupMember {
    source: KafkaSourceOptions,
    topic: String,
    partitions: u32,
    member: String,
    consumer: BaseConsumer<GroupContext>,
    producer: Producer,
    producer_config: ClientConfig,
    /// Output name to topic.
    routes: BTreeMap<Option<String>, String>,
    headers: Vec<u8>,
}

impl KafkaGroupMember {
    pub fn new(
        source: KafkaSourceOptions,
        group: &ConsumerGroup,
        sinks: Vec<(Option<String>, KafkaSinkOptions)>,
    ) -> Result<Self, ConnectorError> {
        let KafkaTopics::List(topics) = &source.topics else {
            return Err(ConnectorError::new("[group] reads one named topic"));
        };
        let topic = topics[0].clone();
        let member = group
            .member
            .clone()
            .or_else(|| std::env::var("WEIR_GROUP_MEMBER").ok())
            .unwrap_or_else(|| {
                let id = uuid::Uuid::new_v4().simple().to_string();
                let host = crate::hostname::hostname().unwrap_or_else(|_| "weir".into());
                format!("{host}-{}", &id[..8])
            });
        let session = group.session_timeout.as_millis().to_string();
        let reset = match source.starting {
            KafkaStarting::Latest => "latest",
            _ => "earliest",
        };
        let config = client_config(
            &source.bootstrap_servers,
            &[
                ("group.id", &group.id),
                ("client.id", &format!("weir-{member}")),
                ("partition.assignment.strategy", "cooperative-sticky"),
                ("session.timeout.ms", &session),
                ("enable.auto.commit", "false"),
                ("enable.auto.offset.store", "false"),
                ("auto.offset.reset", reset),
                ("isolation.level", "read_committed"),
                ("fetch.wait.max.ms", "10"),
            ],
            &source.properties,
        );
        let context = GroupContext {
            base: Context::default(),
            topic: topic.clone(),
            starting: source.starting.clone(),
            retry_timeout: source.retry_timeout,
            events: Mutex::new(Vec::new()),
        };
        let consumer: BaseConsumer<GroupContext> = config
            .create_with_context(context)
            .map_err(kafka_err("kafka group consumer"))?;
        let md = with_retry(
            &format!("metadata of {topic}"),
            source.retry_timeout,
            || consumer.fetch_metadata(Some(&topic), REQUEST_TIMEOUT),
        )?;
        let partitions = md
            .topics()
            .iter()
            .find(|t| t.name() == topic && t.error().is_none())
            .map(|t| t.partitions().len() as u32)
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                ConnectorError(format!(
                    "kafka topic `{topic}` does not exist on {} (create it first)",
                    source.bootstrap_servers
                ))
            })?;
        let first = &sinks[0].1;
        let txn_id = format!("weir-{}-{member}", group.id);
        let timeout = first.transaction_timeout.as_millis().to_string();
        let producer_config = client_config(
            &source.bootstrap_servers,
            &[
                ("enable.idempotence", "true"),
                ("acks", "all"),
                ("partitioner", "murmur2_random"),
                ("linger.ms", "5"),
                ("transactional.id", &txn_id),
                ("transaction.timeout.ms", &timeout),
            ],
            &first.properties,
        );
        let producer = Self::producer(&producer_config, source.retry_timeout)?;
        consumer
            .subscribe(&[&topic])
            .map_err(kafka_err(format!("subscribing to {topic}")))?;
        tracing::info!(
            "joined consumer group {} as {member} (transactional id {txn_id}); {topic} has {partitions} partitions",
            group.id
        );
        Ok(KafkaGroupMember {
            routes: sinks.into_iter().map(|(r, s)| (r, s.topic)).collect(),
            source,
            topic,
            partitions,
            member,
            consumer,
            producer,
            producer_config,
            headers: Vec::new(),
        })
    }

    /// A transactional producer; initialising it fences any earlier one
    /// with the same id and aborts its open transaction.
    fn producer(config: &ClientConfig, retry: Duration) -> Result<Producer, ConnectorError> {
        let producer: Producer = create(config, "kafka group producer")?;
        with_retry("initialising transactions", retry, || {
            producer.init_transactions(REQUEST_TIMEOUT)
        })?;
        Ok(producer)
    }

    fn take_events(
        &self,
        polled: &mut Polled,
        batches: &mut BTreeMap<i32, RecordBatch>,
    ) -> Result<(), ConnectorError> {
        let events =
            std::mem::take(&mut *self.consumer.context().events.lock().expect("not poisoned"));
        for e in events {
            match e {
                Event::Revoked(list) => {
                    for p in &list {
                        // Read before the revoke: the next owner reads them.
                        batches.remove(&(*p as i32));
                        polled.assigned.retain(|a| a.partition != *p);
                    }
                    polled.revoked.extend(list);
                }
                Event::Assigned(list) => polled.assigned.extend(list),
                Event::Failed(why) => {
                    return Err(ConnectorError(format!("kafka group {}: {why}", self.topic)));
                }
            }
        }
        Ok(())
    }
}

impl GroupMember for KafkaGroupMember {
    fn description(&self) -> String {
        format!("kafka:{}", self.topic)
    }

    fn member_id(&self) -> String {
        self.member.clone()
    }

    fn partition_count(&self) -> u32 {
        self.partitions
    }

    fn poll(&mut self, max: usize, timeout: Duration) -> Result<Polled, ConnectorError> {
        let deadline = Instant::now() + timeout;
        let mut polled = Polled::default();
        let mut batches: BTreeMap<i32, RecordBatch> = BTreeMap::new();
        let mut taken = 0;
        loop {
            // After the first record, take only what is already here.
            let wait = if taken == 0 {
                whole_ms(deadline.saturating_duration_since(Instant::now()))
            } else {
                Duration::ZERO
            };
            let m = self.consumer.poll(wait);
            self.take_events(&mut polled, &mut batches)?;
            match m {
                Some(Ok(m)) => {
                    let ts = meta(&mut self.headers, &m);
                    let p = m.partition();
                    batches
                        .entry(p)
                        .or_insert_with(|| RecordBatch::new(p as u32))
                        .push_record(&RecordRef::new(
                            m.key(),
                            m.payload(),
                            &self.headers,
                            ts,
                            m.offset(),
                        ));
                    taken += 1;
                    if taken >= max {
                        break;
                    }
                }
                Some(Err(KafkaError::PartitionEOF(_))) => {}
                Some(Err(e)) => {
                    tracing::warn!("kafka group {}: {e}", self.topic);
                    break;
                }
                None if taken > 0 || Instant::now() >= deadline => break,
                None => {}
            }
        }
        polled.batches = batches.into_values().collect();
        Ok(polled)
    }

    fn commit(
        &mut self,
        parts: &[(RecordBatch, TransformOutput)],
        positions: &[Position],
    ) -> Result<u64, CommitError> {
        let e = match self.transaction(parts, positions) {
            Ok(rows) => return Ok(rows),
            Err(TxnError::Record(e)) => {
                let _ = self.producer.abort_transaction(STEP_TIMEOUT);
                return Err(CommitError::Failed(ConnectorError(format!(
                    "kafka group {}: producing a record: {e}",
                    self.topic
                ))));
            }
            Err(TxnError::Unrouted(name)) => {
                let _ = self.producer.abort_transaction(STEP_TIMEOUT);
                return Err(CommitError::Failed(ConnectorError(format!(
                    "the transform sent records to output `{name}`, but the pipeline has no sink named `{name}`"
                ))));
            }
            Err(TxnError::Kafka(e)) => e,
        };
        let fatal = matches!(&e, KafkaError::Transaction(t) if t.is_fatal());
        if fatal {
            // Another producer with this id took over, or the broker
            // aborted the transaction for running too long: a new
            // producer fences nothing of ours and starts clean.
            self.producer = Self::producer(&self.producer_config, self.source.retry_timeout)?;
        } else if let Err(a) = self.producer.abort_transaction(STEP_TIMEOUT) {
            tracing::warn!("kafka: aborting a group transaction: {a}");
            self.producer = Self::producer(&self.producer_config, self.source.retry_timeout)?;
        }
        // Not a hot loop while the cluster is away.
        std::thread::sleep(Duration::from_millis(200));
        Err(CommitError::Fenced(e.to_string()))
    }

    fn rewind(&mut self) -> Result<Vec<Assigned>, ConnectorError> {
        let held = self
            .consumer
            .assignment()
            .map_err(kafka_err("reading the assignment"))?;
        if held.count() == 0 {
            return Ok(Vec::new());
        }
        let committed = with_retry(
            "reading committed offsets",
            self.source.retry_timeout,
            || {
                self.consumer
                    .committed_offsets(held.clone(), REQUEST_TIMEOUT)
            },
        )?;
        let ctx = self.consumer.context();
        let mut seek = TopicPartitionList::new();
        let mut out = Vec::new();
        for e in committed.elements() {
            let position = match e.offset() {
                Offset::Offset(o) => Some(o),
                _ => None,
            };
            let to = position.map_or_else(|| ctx.start_of(e.partition()), Offset::Offset);
            seek.add_partition_offset(e.topic(), e.partition(), to)
                .map_err(kafka_err("seeking"))?;
            out.push(Assigned {
                partition: e.partition() as u32,
                position,
                metadata: e.metadata().to_string(),
            });
        }
        let r = self
            .consumer
            .seek_partitions(seek, REQUEST_TIMEOUT)
            .map_err(kafka_err("seeking back to the committed offsets"))?;
        for e in r.elements() {
            if let Err(err) = e.error() {
                return Err(ConnectorError(format!(
                    "seeking {} partition {} back to its committed offset: {err}",
                    self.topic,
                    e.partition()
                )));
            }
        }
        Ok(out)
    }

    fn close(&mut self) {
        self.consumer.unsubscribe();
        // Serve the revocation so the group moves the partitions at once.
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let _ = self.consumer.poll(Duration::from_millis(50));
            if self.consumer.assignment().map_or(true, |a| a.count() == 0) {
                break;
            }
        }
    }
}
