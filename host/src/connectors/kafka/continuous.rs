//! Continuous mode over Kafka: the partitions are fixed when the query
//! starts, and each long-running task reads its partition with its own
//! consumer, polling for about a millisecond when nothing is there.

use std::time::{Duration, Instant};

use rdkafka::consumer::Consumer as _;

use super::consumer::PartitionConsumer;
use super::{KafkaOffsets, KafkaSource};
use crate::engine::connector::{ContinuousSource, PartitionReader};
use crate::engine::{ConnectorError, Offset, RecordBatch, Source};

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
        let next = self
            .0
            .read(from as i64, until, max, Some(Duration::from_millis(1)), out)?;
        Ok(next as u64)
    }
}

impl ContinuousSource for KafkaSource {
    fn description(&self) -> String {
        Source::description(self)
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
        let c = PartitionConsumer::new(
            &self.config,
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
        o.to_json()
    }

    fn positions(&self, offset: &Offset) -> Result<Vec<u64>, ConnectorError> {
        let o = KafkaOffsets::from_json(offset)?;
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
