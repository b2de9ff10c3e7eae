//! Waiting for new records while a micro-batch query is idle, without
//! asking the brokers for end offsets every few milliseconds.
//!
//! The range readers fetch with a short broker wait (`fetch.wait.max.ms`
//! 10), which a range read needs to see the end of a partition promptly, but
//! which makes an idle assigned consumer send about 100 fetches a second. So
//! while the query is idle the readers are unassigned (the next read assigns
//! its partition again at its position), and one watching consumer,
//! assigned to every partition at the end the query last saw, long-polls the
//! brokers (one fetch per broker every 500 ms while nothing comes). A record
//! arriving anywhere wakes the query, which then asks for end offsets as
//! usual. The watcher is unassigned as soon as the query reads again, so it
//! does not fetch the data a second time while the query is busy.

use std::time::Duration;

use rdkafka::consumer::Consumer as _;
use rdkafka::message::Message as _;
use rdkafka::{ClientConfig, Offset as KOffset, TopicPartitionList};

use super::{Consumer, KafkaOffsets, create};
use weir_engine::ConnectorError;

pub(super) struct Watch {
    consumer: Consumer,
    armed: bool,
}

impl Watch {
    pub fn new(config: &ClientConfig) -> Result<Self, ConnectorError> {
        let mut config = config.clone();
        config
            .set("fetch.wait.max.ms", "500")
            .set("enable.partition.eof", "false")
            // It only needs to see that a record exists.
            .set("max.partition.fetch.bytes", "1024")
            .set("queued.max.messages.kbytes", "64");
        Ok(Watch {
            consumer: create(&config, "kafka source idle watcher")?,
            armed: false,
        })
    }

    /// Whether it is assigned and waiting.
    pub fn armed(&self) -> bool {
        self.armed
    }

    /// Assign every partition of `ends` at its end offset.
    pub fn arm(&mut self, ends: &KafkaOffsets) -> Result<(), ConnectorError> {
        let mut tpl = TopicPartitionList::new();
        for ((t, p), o) in &ends.0 {
            tpl.add_partition_offset(t, *p, KOffset::Offset(*o))
                .map_err(super::kafka_err("idle watcher"))?;
        }
        self.consumer
            .assign(&tpl)
            .map_err(super::kafka_err("idle watcher"))?;
        self.armed = true;
        Ok(())
    }

    /// Wait up to `timeout` for a record past the ends it was armed at;
    /// true when one came (the watcher is then disarmed: the query looks).
    pub fn wait(&mut self, timeout: Duration) -> bool {
        match self.consumer.poll(super::consumer::whole_ms(timeout)) {
            None => false,
            Some(Ok(m)) => {
                tracing::debug!(
                    "kafka idle watcher: woken by {}/{} offset {}",
                    m.topic(),
                    m.partition(),
                    m.offset()
                );
                self.disarm();
                true
            }
            Some(Err(e)) => {
                // The query's own requests report what matters; look now.
                tracing::debug!("kafka idle watcher: {e}");
                self.disarm();
                true
            }
        }
    }

    pub fn disarm(&mut self) {
        if self.armed {
            if let Err(e) = self.consumer.unassign() {
                tracing::debug!("kafka idle watcher: unassign: {e}");
            }
            self.armed = false;
        }
    }
}
