//! The group consumer's rebalances: newly assigned partitions are
//! assigned at exactly the offsets committed for them (read with their
//! metadata first), and every change is queued for the member's next poll
//! to hand to the engine in order.

use std::sync::Mutex;
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer as _, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{Offset, TopicPartitionList};

use super::super::{Context, REQUEST_TIMEOUT, with_retry};
use crate::kafka::KafkaStarting;
use weir_engine::group::Assigned;

pub(super) enum Event {
    Assigned(Vec<Assigned>),
    Revoked(Vec<u32>),
    Failed(String),
}

/// The consumer's context: logs as every weir client does, and runs the
/// rebalances (see the module doc).
pub(super) struct GroupContext {
    pub base: Context,
    pub topic: String,
    pub starting: KafkaStarting,
    pub retry_timeout: Duration,
    pub events: Mutex<Vec<Event>>,
}

impl ClientContext for GroupContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        self.base.log(level, fac, message)
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.base.error(error, reason)
    }
}

impl GroupContext {
    fn push(&self, e: Event) {
        self.events.lock().expect("not poisoned").push(e);
    }

    /// Where a partition with no committed offset starts.
    pub fn start_of(&self, partition: i32) -> Offset {
        match &self.starting {
            KafkaStarting::Latest => Offset::End,
            KafkaStarting::Offsets(m) => match m.get(&self.topic).and_then(|t| t.get(&partition)) {
                Some(-1) => Offset::End,
                Some(&o) if o >= 0 => Offset::Offset(o),
                _ => Offset::Beginning,
            },
            KafkaStarting::Earliest | KafkaStarting::Timestamp(_) => Offset::Beginning,
        }
    }

    fn assign(&self, c: &BaseConsumer<Self>, tpl: &TopicPartitionList) -> Result<(), String> {
        let committed = with_retry(
            "reading the committed offsets of newly assigned partitions",
            self.retry_timeout,
            || c.committed_offsets(tpl.clone(), REQUEST_TIMEOUT),
        )
        .map_err(|e| e.to_string())?;
        let mut assign = TopicPartitionList::new();
        let mut assigned = Vec::new();
        for e in committed.elements() {
            let position = match e.offset() {
                Offset::Offset(o) => Some(o),
                _ => None,
            };
            let from = position.map_or_else(|| self.start_of(e.partition()), Offset::Offset);
            assign
                .add_partition_offset(e.topic(), e.partition(), from)
                .map_err(|e| e.to_string())?;
            assigned.push(Assigned {
                partition: e.partition() as u32,
                position,
                metadata: e.metadata().to_string(),
            });
        }
        let r = match c.rebalance_protocol() {
            RebalanceProtocol::Cooperative => c.incremental_assign(&assign),
            _ => c.assign(&assign),
        };
        r.map_err(|e| e.to_string())?;
        let list: Vec<u32> = assigned.iter().map(|a| a.partition).collect();
        tracing::info!(topic = %self.topic, "rebalance: assigned partitions {list:?}");
        self.push(Event::Assigned(assigned));
        Ok(())
    }
}

impl ConsumerContext for GroupContext {
    fn rebalance(&self, c: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                if let Err(e) = self.assign(c, tpl) {
                    self.push(Event::Failed(format!("assigning partitions: {e}")));
                }
            }
            _ => {
                let list: Vec<u32> = tpl
                    .elements()
                    .iter()
                    .map(|e| e.partition() as u32)
                    .collect();
                let lost = c.assignment_lost();
                tracing::info!(
                    topic = %self.topic,
                    "rebalance: {} partitions {list:?}",
                    if lost { "lost (this member was dropped from the group)" } else { "revoked" }
                );
                self.push(Event::Revoked(list));
                let r = match c.rebalance_protocol() {
                    RebalanceProtocol::Cooperative => c.incremental_unassign(tpl),
                    _ => c.unassign(),
                };
                if let Err(e) = r {
                    self.push(Event::Failed(format!("unassigning partitions: {e}")));
                }
            }
        }
    }
}
