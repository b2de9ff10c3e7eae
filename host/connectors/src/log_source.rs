//! Reads a topic of the embedded log. Offsets: `[end of partition 0, ...]`.

use std::path::PathBuf;

use super::{err, min_limit, rate_limited_ends};
use weir_engine::{ConnectorError, Offset, RecordBatch, Source};
use weir_engine::{ContinuousSource, PartitionReader};
use weir_log::Topic;
use weir_log::watch::Watch;

/// Where a new query starts reading an embedded-log topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartingOffsets {
    Earliest,
    Latest,
}

pub struct LogSource {
    root: PathBuf,
    topic: Topic,
    max_records_per_trigger: Option<u64>,
    max_bytes_per_trigger: u64,
    /// The last estimate of the average record size: (records then, bytes).
    average: Option<(u64, u64)>,
    /// Set by backpressure.
    rate_limit: Option<u64>,
    starting: StartingOffsets,
    /// Commits to the topic wake an idle query (when they can be watched).
    watch: Watch,
}

impl LogSource {
    pub fn open(
        root: PathBuf,
        topic: &str,
        max_records_per_trigger: Option<u64>,
        starting: StartingOffsets,
    ) -> Result<Self, ConnectorError> {
        let topic = Topic::open(&root, topic).map_err(|e| ConnectorError(e.to_string()))?;
        let watch = Watch::new(topic.dir());
        Ok(LogSource {
            root,
            topic,
            max_records_per_trigger,
            max_bytes_per_trigger: super::DEFAULT_MAX_BYTES_PER_TRIGGER,
            average: None,
            rate_limit: None,
            starting,
            watch,
        })
    }

    /// Batches hold about `bytes` of input at most (estimated from the
    /// topic's average record size on disk).
    pub fn with_max_bytes_per_trigger(mut self, bytes: u64) -> Self {
        self.max_bytes_per_trigger = bytes;
        self
    }

    /// The topic's average record size on disk, estimated again only when
    /// the committed records (`records`) grew by a quarter since the last
    /// estimate: listing the segments at every trigger would be repeated I/O.
    fn average_record_bytes(&mut self, records: u64) -> Result<Option<u64>, ConnectorError> {
        if let Some((at, avg)) = self.average
            && records <= at.saturating_add(at / 4)
        {
            return Ok(Some(avg));
        }
        let avg = self
            .topic
            .average_record_bytes()
            .map_err(err(Source::description(self)))?;
        self.average = avg.map(|a| (records, a));
        Ok(avg)
    }

    fn partitions(&self) -> usize {
        self.topic.partition_count() as usize
    }
}

impl Source for LogSource {
    fn identity(&self) -> String {
        format!("log:{}", self.root.join(self.topic.name()).display())
    }

    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        Ok(match self.starting {
            StartingOffsets::Earliest => Offset::of(&vec![0u64; self.partitions()]),
            StartingOffsets::Latest => self.latest_offset()?,
        })
    }

    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        self.watch.look();
        let ends = self
            .topic
            .committed_ends()
            .map_err(err(Source::description(self)))?;
        Ok(Offset::of(&ends))
    }

    fn wakes_on_data(&self) -> bool {
        self.watch.wakes()
    }

    fn wait_for_data(&mut self, timeout: std::time::Duration) {
        self.watch.wait(timeout);
    }

    fn wake_on_data(&mut self, waker: &std::task::Waker) -> bool {
        self.watch.wake_after(waker)
    }

    fn wakes_parked(&self) -> bool {
        self.watch.wakes()
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let start = start.partitions(self.partitions())?;
        let upto = upto.partitions(self.partitions())?;
        let limit = min_limit(self.max_records_per_trigger, self.rate_limit);
        let by_bytes = self
            .average_record_bytes(upto.iter().sum())?
            .map(|avg| (self.max_bytes_per_trigger / avg).max(1));
        Ok(Offset::of(&rate_limited_ends(
            &start,
            &upto,
            min_limit(limit, by_bytes),
        )))
    }

    fn set_rate_limit(&mut self, max_records: Option<u64>) {
        self.rate_limit = max_records;
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        let start = start.partitions(self.partitions())?;
        let end = end.partitions(self.partitions())?;
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
        let a = offset.partitions(self.partitions()).ok()?;
        let b = latest.partitions(self.partitions()).ok()?;
        Some(a.iter().zip(&b).map(|(a, b)| b.saturating_sub(*a)).sum())
    }
}

/// Continuous mode: each partition task polls its own topic handle.
struct LogReader {
    topic: Topic,
    partition: u32,
    /// Commits to the topic wake a waiting reader (when they can be
    /// watched); the committed end its last look saw, and when it looked
    /// (the first read always looks).
    watch: Watch,
    end: u64,
    looked: Option<std::time::Instant>,
}

/// A watched reader still reads the commit file this often without a
/// change event (an event can be missed).
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

impl PartitionReader for LogReader {
    fn read(
        &mut self,
        from: u64,
        until: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, ConnectorError> {
        // Nothing committed since the last look: no need to read.
        let moved = self.watch.look();
        let recent = self.looked.is_some_and(|t| t.elapsed() < LOOK_EVERY);
        if !moved && self.end <= from && recent {
            return Ok(from);
        }
        let end = self
            .topic
            .committed_ends()
            .map_err(err(self.topic.name().to_string()))?[self.partition as usize];
        self.end = end;
        self.looked = Some(std::time::Instant::now());
        if end <= from {
            return Ok(from);
        }
        let to = end.min(until).min(from.saturating_add(max as u64));
        let name = self.topic.name().to_string();
        self.topic
            .read(self.partition, from, to, out)
            .map_err(err(name))?;
        Ok(to)
    }

    fn wait_for_data(&mut self, timeout: std::time::Duration) -> bool {
        if !self.watch.wakes() {
            return false;
        }
        self.watch.wait(timeout);
        true
    }
}

impl ContinuousSource for LogSource {
    fn identity(&self) -> String {
        Source::identity(self)
    }

    fn partition_count(&self) -> u32 {
        self.topic.partition_count()
    }

    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
        let o = Source::initial_offset(self)?;
        o.partitions(self.partitions())
    }

    fn reader(&self, partition: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
        let topic = Topic::open(&self.root, self.topic.name())
            .map_err(|e| ConnectorError(e.to_string()))?;
        Ok(Box::new(LogReader {
            watch: Watch::new(topic.dir()),
            topic,
            partition,
            end: 0,
            looked: None,
        }))
    }

    fn positions(&self, offset: &Offset) -> Result<Vec<u64>, ConnectorError> {
        offset.partitions(self.partitions())
    }

    fn latest_positions(&mut self) -> Option<Vec<u64>> {
        self.topic.committed_ends().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_is_read_in_batches_of_about_the_byte_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Topic::create(dir.path(), "in", 2).unwrap();
        let mut parts = vec![RecordBatch::new(0), RecordBatch::new(1)];
        for i in 0..10_000u32 {
            let v = format!("{i:0>100}");
            parts[(i % 2) as usize].push(None, v.as_bytes(), 0, 0);
        }
        t.append(None, &parts, || {}).unwrap();
        let budget = 100 << 10;
        let mut s = LogSource::open(dir.path().into(), "in", None, StartingOffsets::Earliest)
            .unwrap()
            .with_max_bytes_per_trigger(budget);
        let latest = s.latest_offset().unwrap();
        let mut at = s.initial_offset().unwrap();
        let (mut batches, mut records) = (0, 0);
        while at != latest {
            let end = s.next_end(&at, &latest).unwrap();
            let read = s.read(&at, &end).unwrap();
            let bytes: usize = read.iter().map(|b| b.columns().data_len()).sum();
            // The estimate counts frames on disk, a little more than values.
            assert!(bytes as u64 <= budget, "{bytes}");
            assert!(end == latest || bytes as u64 > budget / 2, "{bytes}");
            records += read.iter().map(RecordBatch::len).sum::<usize>();
            batches += 1;
            at = end;
            if batches > 20 {
                break;
            }
        }
        assert_eq!(records, 10_000);
        assert!(batches >= 10, "{batches} batches");
    }
}
