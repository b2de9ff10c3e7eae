//! Reads a topic of the embedded log. Offsets: `[end of partition 0, ...]`.

use std::path::PathBuf;

use serde_json::json;

use super::{err, parse_offsets};
use crate::engine::connector::{ContinuousSource, PartitionReader};
use crate::engine::{ConnectorError, Offset, RecordBatch, Source};
use crate::log::Topic;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartingOffsets {
    Earliest,
    Latest,
}

pub struct LogSource {
    root: PathBuf,
    topic: Topic,
    max_records_per_trigger: Option<u64>,
    starting: StartingOffsets,
}

impl LogSource {
    pub fn open(
        root: PathBuf,
        topic: &str,
        max_records_per_trigger: Option<u64>,
        starting: StartingOffsets,
    ) -> Result<Self, ConnectorError> {
        let topic = Topic::open(&root, topic).map_err(|e| ConnectorError(e.to_string()))?;
        Ok(LogSource {
            root,
            topic,
            max_records_per_trigger,
            starting,
        })
    }

    fn partitions(&self) -> usize {
        self.topic.partition_count() as usize
    }
}

/// Share `limit` records among partitions in proportion to their lag (as
/// Spark's Kafka source does), always letting at least one record through.
pub(crate) fn rate_limited_ends(start: &[u64], upto: &[u64], limit: Option<u64>) -> Vec<u64> {
    let lags: Vec<u64> = start
        .iter()
        .zip(upto)
        .map(|(s, u)| u.saturating_sub(*s))
        .collect();
    let total: u64 = lags.iter().sum();
    let Some(limit) = limit.filter(|l| *l < total) else {
        return start.iter().zip(&lags).map(|(s, l)| s + l).collect();
    };
    let mut ends: Vec<u64> = start
        .iter()
        .zip(&lags)
        .map(|(s, l)| s + ((*l as u128 * limit as u128) / total as u128) as u64)
        .collect();
    if ends == start {
        let (p, _) = lags
            .iter()
            .enumerate()
            .rev()
            .max_by_key(|(_, l)| **l)
            .expect("some lag");
        ends[p] += 1;
    }
    ends
}

impl Source for LogSource {
    fn description(&self) -> String {
        format!("log:{}", self.root.join(self.topic.name()).display())
    }

    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        Ok(match self.starting {
            StartingOffsets::Earliest => json!(vec![0u64; self.partitions()]),
            StartingOffsets::Latest => self.latest_offset()?,
        })
    }

    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        let ends = self
            .topic
            .committed_ends()
            .map_err(err(Source::description(self)))?;
        Ok(json!(ends))
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let start = parse_offsets(start, self.partitions())?;
        let upto = parse_offsets(upto, self.partitions())?;
        Ok(json!(rate_limited_ends(
            &start,
            &upto,
            self.max_records_per_trigger
        )))
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        let start = parse_offsets(start, self.partitions())?;
        let end = parse_offsets(end, self.partitions())?;
        let mut out = Vec::new();
        for (p, (s, e)) in start.iter().zip(&end).enumerate() {
            if e > s {
                let mut b = RecordBatch::with_capacity(p as u32, (e - s) as usize, 0);
                let name = Source::description(self);
                self.topic
                    .read(p as u32, *s, *e, &mut b)
                    .map_err(err(name))?;
                out.push(b);
            }
        }
        Ok(out)
    }

    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        let a = parse_offsets(offset, self.partitions()).ok()?;
        let b = parse_offsets(latest, self.partitions()).ok()?;
        Some(a.iter().zip(&b).map(|(a, b)| b.saturating_sub(*a)).sum())
    }
}

/// Continuous mode: each partition task polls its own topic handle.
struct LogReader {
    topic: Topic,
    partition: u32,
}

impl PartitionReader for LogReader {
    fn read(
        &mut self,
        from: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<usize, ConnectorError> {
        let end = self
            .topic
            .committed_ends()
            .map_err(err(self.topic.name().to_string()))?[self.partition as usize];
        if end <= from {
            return Ok(0);
        }
        let to = end.min(from + max as u64);
        let name = self.topic.name().to_string();
        self.topic
            .read(self.partition, from, to, out)
            .map_err(err(name))?;
        Ok((to - from) as usize)
    }
}

impl ContinuousSource for LogSource {
    fn description(&self) -> String {
        Source::description(self)
    }

    fn partition_count(&self) -> u32 {
        self.topic.partition_count()
    }

    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
        let o = Source::initial_offset(self)?;
        parse_offsets(&o, self.partitions())
    }

    fn reader(&self, partition: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
        let topic = Topic::open(&self.root, self.topic.name())
            .map_err(|e| ConnectorError(e.to_string()))?;
        Ok(Box::new(LogReader { topic, partition }))
    }

    fn positions(&self, offset: &Offset) -> Result<Vec<u64>, ConnectorError> {
        parse_offsets(offset, self.partitions())
    }

    fn latest_positions(&mut self) -> Option<Vec<u64>> {
        self.topic.committed_ends().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::rate_limited_ends;

    #[test]
    fn limit_is_shared_by_lag() {
        assert_eq!(rate_limited_ends(&[0, 0], &[90, 10], Some(50)), vec![45, 5]);
        assert_eq!(rate_limited_ends(&[0, 0], &[90, 10], None), vec![90, 10]);
        assert_eq!(rate_limited_ends(&[5, 0], &[6, 1], Some(1)), vec![6, 0]);
        assert_eq!(rate_limited_ends(&[3, 3], &[3, 3], Some(10)), vec![3, 3]);
    }
}
