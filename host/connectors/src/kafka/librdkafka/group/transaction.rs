//! One group transaction: the batch's records, then its offsets with the
//! consumer's group metadata, then the commit.

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;
use rdkafka::error::KafkaError;
use rdkafka::producer::Producer as _;
use rdkafka::{Offset, TopicPartitionList};

use super::super::sink::send;
use super::{KafkaGroupMember, STEP_TIMEOUT};
use weir_engine::group::Position;
use weir_engine::{RecordBatch, TransformOutput};

/// A record Kafka refused (the batch cannot commit as it is), or
/// Kafka's verdict on the transaction.
pub(super) enum TxnError {
    Record(KafkaError),
    Unrouted(String),
    Kafka(KafkaError),
}

impl From<KafkaError> for TxnError {
    fn from(e: KafkaError) -> Self {
        TxnError::Kafka(e)
    }
}

impl KafkaGroupMember {
    /// One transaction: the records, then the offsets with the group's
    /// metadata, then the commit (a retriable commit failure is retried
    /// alone: it may have committed).
    pub(super) fn transaction(
        &self,
        parts: &[(RecordBatch, TransformOutput)],
        positions: &[Position],
    ) -> Result<u64, TxnError> {
        let producer = &self.producer;
        producer.context().take_failure();
        producer.begin_transaction()?;
        let mut rows = 0;
        for (input, out) in parts {
            for o in out.batch.iter(input) {
                let Some(topic) = self.routes.get(&o.output.map(str::to_string)) else {
                    return Err(TxnError::Unrouted(
                        o.output.unwrap_or("default").to_string(),
                    ));
                };
                send(producer, topic, &o).map_err(TxnError::Record)?;
                // Dead letters are counted as rejected, not as output.
                if o.output != Some(weir_engine::DEAD_LETTER) {
                    rows += 1;
                }
            }
        }
        weir_engine::faults::point("group-mid-transaction", 0);
        let mut tpl = TopicPartitionList::new();
        for p in positions {
            tpl.add_partition_offset(&self.topic, p.partition as i32, Offset::Offset(p.next))?;
            if let Some(mut e) = tpl.find_partition(&self.topic, p.partition as i32) {
                e.set_metadata(p.metadata.clone());
            }
        }
        let cgm = self
            .consumer
            .group_metadata()
            .expect("the consumer has a group id");
        producer.send_offsets_to_transaction(&tpl, &cgm, STEP_TIMEOUT)?;
        let started = Instant::now();
        loop {
            match producer.commit_transaction(STEP_TIMEOUT) {
                Err(KafkaError::Transaction(t))
                    if t.is_retriable() && started.elapsed() < self.source.retry_timeout =>
                {
                    tracing::warn!("kafka: committing a group transaction: {t}; retrying");
                    std::thread::sleep(Duration::from_millis(200));
                }
                r => return Ok(r.map(|()| rows)?),
            }
        }
    }
}
