//! Continuous mode over Kafka: the partitions are fixed when the query
//! starts, and each long-running task reads its partition with its own
//! consumer, which it waits on (librdkafka's queue) when nothing is there.

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;

use super::consumer::PartitionConsumer;
use super::{KafkaOffsets, KafkaSource};
use weir_engine::{ConnectorError, Offset, RecordBatch, Source};
use weir_engine::{ContinuousSource, PartitionReader};

/// Continuous mode: one reader per partition, each with its own consumer.
struct KafkaReader(PartitionConsumer);

impl PartitionReader for KafkaReader {
    fn read(
        &mut self,
        from: u64,
        until: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, ConnectorError> {
        let until = until.min(i64::MAX as u64) as i64;
        // What librdkafka has fetched, without waiting: the task waits in
        // wait_for_data when nothing is there.
        let next = self
            .0
            .read(from as i64, until, max, Some(Duration::ZERO), out)?;
        Ok(next as u64)
    }

    fn wait_for_data(&mut self, timeout: Duration) -> bool {
        self.0.wait(timeout);
        true
    }
}

impl ContinuousSource for KafkaSource {
    fn identity(&self) -> String {
        Source::identity(self)
    }

    fn partition_count(&self) -> u32 {
        self.fixed.len() as u32
    }

    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
        let parts = self.fixed.iter().cloned().collect();
        let o = self.start_offsets(&parts)?;
        Ok(self
            .fixed
            .iter()
            .map(|(t, p)| o.get(t, *p) as u64)
            .collect())
    }

    fn reader(&self, partition: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
        let (t, p) = &self.fixed[partition as usize];
        // A task reads without an end, so it needs no prompt end-of-partition
        // notice: the broker may hold an idle fetch for 500 ms (it answers
        // at once when records arrive) instead of 10, so an idle reader
        // sends two fetches a second, not a hundred.
        let mut config = self.config.clone();
        config.set("fetch.wait.max.ms", "500");
        let c = PartitionConsumer::new(
            &config,
            t,
            *p,
            self.spec.fail_on_data_loss,
            self.spec.retry_timeout,
        )?;
        Ok(Box::new(KafkaReader(c)))
    }

    fn to_offset(&self, positions: &[u64]) -> Offset {
        let mut o = KafkaOffsets::default();
        for (tp, pos) in self.fixed.iter().zip(positions) {
            o.0.insert(tp.clone(), *pos as i64);
        }
        o.to_offset()
    }

    fn positions(&self, offset: &Offset) -> Result<Vec<u64>, ConnectorError> {
        let o = KafkaOffsets::from_offset(offset)?;
        Ok(self
            .fixed
            .iter()
            .map(|(t, p)| o.get(t, *p) as u64)
            .collect())
    }

    fn latest_positions(&mut self) -> Option<Vec<u64>> {
        // Watermarks cost a round trip per partition: refresh once a second.
        if let Some((at, v)) = &self.lag_cache
            && at.elapsed() < Duration::from_secs(1)
        {
            return Some(v.clone());
        }
        let v: Option<Vec<u64>> = self
            .fixed
            .iter()
            .map(|(t, p)| {
                let w = self
                    .admin
                    .fetch_watermarks(t, *p, Duration::from_millis(500));
                w.ok().map(|(_, h)| h as u64)
            })
            .collect();
        self.lag_cache = v.clone().map(|v| (Instant::now(), v));
        v
    }
}
