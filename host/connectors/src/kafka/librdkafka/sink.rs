//! The Kafka sink, exactly once by transactions.
//!
//! Each batch (or epoch) is one transaction of a producer whose
//! `transactional.id` is derived from the query id and the sink's output
//! name, so a restarted pipeline fences its predecessor's producer and
//! aborts whatever transaction it left open. Inside the same transaction the
//! sink commits a consumer-group offset (`batch id + 1`) for a marker group
//! of its own: the batch's records and "batch N is written" become visible
//! together, and after a crash the sink reads the marker to skip batches
//! whose transaction had already committed.

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, Producer as _};
use rdkafka::{Offset, TopicPartitionList};

use super::{Consumer, Producer, REQUEST_TIMEOUT, client_config, create, kafka_err, with_retry};
use crate::kafka::KafkaSinkOptions;
use weir_engine::{ConnectorError, OutputRef, Sink, SinkBatch, faults};

/// Each transactional step waits at most this long before it is retried
/// (and logged), so an unreachable cluster shows up in the log within
/// seconds; the whole batch still has `retry-timeout` to get through.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

pub struct KafkaSink {
    spec: KafkaSinkOptions,
    route: String,
    producer: Option<Producer>,
    marker: Option<Consumer>,
    /// The last batch id whose transaction is committed in Kafka.
    last_committed: Option<u64>,
}

impl KafkaSink {
    /// `route` names the output this sink serves (part of its identity).
    pub fn new(spec: KafkaSinkOptions, route: &str) -> Self {
        KafkaSink {
            spec,
            route: route.into(),
            producer: None,
            marker: None,
            last_committed: None,
        }
    }

    fn producer(&self) -> &Producer {
        self.producer.as_ref().expect("sink opened")
    }

    fn marker_offsets(&self, batch_id: u64) -> Result<TopicPartitionList, ConnectorError> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.spec.topic, 0, Offset::Offset(batch_id as i64 + 1))
            .map_err(kafka_err("marker offset"))?;
        Ok(tpl)
    }

    /// Queue every record, serving delivery reports when the queue is full.
    fn produce(&self, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let mut rows = 0;
        for o in batch.records() {
            send(self.producer(), &self.spec.topic, &o).map_err(|e| {
                ConnectorError(format!("{}: producing a record: {e}", self.description()))
            })?;
            rows += 1;
        }
        Ok(rows)
    }

    /// One attempt at writing `batch` as transaction `batch_id`.
    fn transaction(&self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, TxnError> {
        let producer = self.producer();
        // Failures of an earlier, aborted attempt do not concern this one.
        producer.context().take_failure();
        producer.begin_transaction()?;
        let rows = self.produce(batch).map_err(TxnError::Produce)?;
        faults::point("mid-sink", batch_id);
        let marker = self.marker.as_ref().expect("sink opened");
        let cgm = marker
            .group_metadata()
            .expect("the marker consumer has a group id");
        let tpl = self.marker_offsets(batch_id).map_err(TxnError::Produce)?;
        producer.send_offsets_to_transaction(&tpl, &cgm, STEP_TIMEOUT)?;
        // A retriable commit failure may still have committed: retry the
        // commit itself, never the whole transaction.
        let started = Instant::now();
        loop {
            match producer.commit_transaction(STEP_TIMEOUT) {
                Ok(()) => return Ok(rows),
                Err(KafkaError::Transaction(t))
                    if t.is_retriable() && started.elapsed() < self.spec.retry_timeout =>
                {
                    tracing::warn!(
                        "kafka: committing transaction of batch {batch_id}: {t}; retrying"
                    );
                    std::thread::sleep(Duration::from_millis(200));
                }
                // The records are still being delivered: keep waiting.
                Err(KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut))
                    if started.elapsed() < self.spec.retry_timeout =>
                {
                    tracing::warn!(
                        "kafka: delivering batch {batch_id} to {} is slow; still trying",
                        self.spec.topic
                    );
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Queue one output record for `topic`, serving delivery reports while
/// the producer's queue is full.
pub(super) fn send(producer: &Producer, topic: &str, o: &OutputRef<'_>) -> Result<(), KafkaError> {
    let mut record = BaseRecord::<[u8], [u8]>::to(topic);
    // No value: a null payload (a tombstone, which compaction honours).
    if let Some(v) = o.value_opt() {
        record = record.payload(v);
    }
    // Most records have no headers: no header list to allocate.
    if !o.headers.is_empty() {
        let mut headers = OwnedHeaders::new();
        for (name, value) in o.headers() {
            headers = headers.insert(Header {
                key: name,
                value: Some(value),
            });
        }
        record = record.headers(headers);
    }
    if let Some(k) = o.key {
        record = record.key(k);
    }
    if o.timestamp > 0 {
        record = record.timestamp(o.timestamp);
    }
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                producer.poll(Duration::from_millis(5));
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// Why a transaction attempt failed: Kafka's verdict (which says whether to
/// abort and retry), or a record Kafka refused outright.
enum TxnError {
    Kafka(KafkaError),
    Produce(ConnectorError),
}

impl From<KafkaError> for TxnError {
    fn from(e: KafkaError) -> Self {
        TxnError::Kafka(e)
    }
}

impl Sink for KafkaSink {
    fn description(&self) -> String {
        format!("kafka:{}", self.spec.topic)
    }

    fn open(&mut self, query_id: &str) -> Result<(), ConnectorError> {
        let id = format!("weir-{query_id}-{}", self.route);
        let timeout = self.spec.transaction_timeout.as_millis().to_string();
        let mut ours = vec![
            ("enable.idempotence", "true"),
            ("acks", "all"),
            ("partitioner", "murmur2_random"),
            ("linger.ms", "5"),
        ];
        if self.spec.exactly_once {
            ours.push(("transactional.id", &id));
            ours.push(("transaction.timeout.ms", &timeout));
        }
        let producer: Producer = create(
            &client_config(&self.spec.bootstrap_servers, &ours, &self.spec.properties),
            &format!("{}: producer", self.description()),
        )?;
        if self.spec.exactly_once {
            // Fences an earlier producer with this id and aborts its open
            // transaction, so its records never become visible.
            with_retry(
                &format!("initialising transactions of {}", self.description()),
                self.spec.retry_timeout,
                // Short attempts, so an unreachable broker is reported
                // while the retries go on.
                || producer.init_transactions(REQUEST_TIMEOUT),
            )?;
            let marker: Consumer = create(
                &client_config(
                    &self.spec.bootstrap_servers,
                    &[
                        ("group.id", &id),
                        ("enable.auto.commit", "false"),
                        ("isolation.level", "read_committed"),
                    ],
                    &self.spec.properties,
                ),
                &format!("{}: marker consumer", self.description()),
            )?;
            let tpl = self.marker_offsets(0)?;
            let committed = with_retry(
                &format!("reading the batch marker of {}", self.description()),
                self.spec.retry_timeout,
                || marker.committed_offsets(tpl.clone(), REQUEST_TIMEOUT),
            )?;
            self.last_committed = committed
                .find_partition(&self.spec.topic, 0)
                .and_then(|e| e.offset().to_raw())
                .filter(|o| *o > 0)
                .map(|o| o as u64 - 1);
            self.marker = Some(marker);
        }
        self.producer = Some(producer);
        Ok(())
    }

    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        if !self.spec.exactly_once {
            let rows = self.produce(batch)?;
            faults::point("mid-sink", batch_id);
            self.producer()
                .flush(self.spec.retry_timeout)
                .map_err(kafka_err(self.description()))?;
            if let Some(e) = self.producer().context().take_failure() {
                return Err(ConnectorError(format!(
                    "{}: batch {batch_id}: a record was not delivered: {e}",
                    self.description()
                )));
            }
            return Ok(rows);
        }
        if self.last_committed.is_some_and(|l| batch_id <= l) {
            return Ok(0);
        }
        let started = Instant::now();
        loop {
            match self.transaction(batch_id, batch) {
                Ok(rows) => {
                    self.last_committed = Some(batch_id);
                    return Ok(rows);
                }
                Err(TxnError::Produce(e)) => {
                    let _ = self.producer().abort_transaction(STEP_TIMEOUT);
                    return Err(e);
                }
                Err(TxnError::Kafka(e)) => {
                    let fatal = matches!(&e, KafkaError::Transaction(t) if t.is_fatal());
                    if fatal {
                        return Err(ConnectorError(format!(
                            "{}: batch {batch_id}: {e} (another weir process with this checkpoint took over the sink?)",
                            self.description()
                        )));
                    }
                    // Abortable or retriable: abort, then write the batch again.
                    if let Err(a) = self.producer().abort_transaction(STEP_TIMEOUT) {
                        tracing::warn!("kafka: aborting transaction of batch {batch_id}: {a}");
                    }
                    if started.elapsed() >= self.spec.retry_timeout {
                        return Err(ConnectorError(format!(
                            "{}: batch {batch_id} not committed after {:.0?}: {e}",
                            self.description(),
                            started.elapsed()
                        )));
                    }
                    tracing::warn!(
                        "kafka: transaction of batch {batch_id} to {} failed ({e}); retrying",
                        self.spec.topic
                    );
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
    }
}
