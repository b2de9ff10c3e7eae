//! An in-memory harness for engine tests, in the manner of Kafka Streams'
//! `TopologyTestDriver`: a [`MemoryTopic`] that a test appends to and a
//! query reads from (as a micro-batch [`Source`] and as a
//! [`ContinuousSource`]), a [`MemorySink`] that keeps every committed
//! batch, and a [`ManualClock`] a test moves to stand for processing time
//! passing (timers, expiries, idle timeouts) without waiting. Readers wake on appends (a condition variable), and the source
//! tells its end, so a test waits on events, never on a sleep; an idle
//! continuous query knows when it has caught up. Offsets are per-partition
//! record counts.
//!
//! Built for the engine's own tests, and with the `testing` feature for
//! other crates' (connectors, runtime) tests of the seams.

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::{
    ConnectorError, ContinuousSource, Offset, PartitionReader, RecordBatch, Sink, SinkBatch, Source,
};

mod clock;
pub use clock::ManualClock;

/// Partitions of text records, shared by the test and the query's sources.
#[derive(Clone, Default)]
pub struct MemoryTopic {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    partitions: Mutex<Vec<Vec<String>>>,
    appended: Condvar,
}

impl MemoryTopic {
    /// A topic of `partitions` empty partitions.
    pub fn new(partitions: u32) -> MemoryTopic {
        MemoryTopic::with(vec![Vec::new(); partitions as usize])
    }

    /// A topic holding `records`, one list per partition.
    pub fn with(records: Vec<Vec<String>>) -> MemoryTopic {
        MemoryTopic {
            shared: Arc::new(Shared {
                partitions: Mutex::new(records),
                appended: Condvar::new(),
            }),
        }
    }

    /// Append `value` to `partition`, waking its readers.
    pub fn append(&self, partition: u32, value: impl Into<String>) {
        self.shared.partitions.lock().unwrap()[partition as usize].push(value.into());
        self.shared.appended.notify_all();
    }

    /// Append every value of `values` to `partition`, waking its readers
    /// once.
    pub fn extend(&self, partition: u32, values: impl IntoIterator<Item = String>) {
        self.shared.partitions.lock().unwrap()[partition as usize].extend(values);
        self.shared.appended.notify_all();
    }

    /// The records of `partition`, in order.
    pub fn records(&self, partition: u32) -> Vec<String> {
        self.shared.partitions.lock().unwrap()[partition as usize].clone()
    }

    /// Records per partition.
    pub fn lengths(&self) -> Vec<u64> {
        let parts = self.shared.partitions.lock().unwrap();
        parts.iter().map(|p| p.len() as u64).collect()
    }

    pub fn partition_count(&self) -> u32 {
        self.shared.partitions.lock().unwrap().len() as u32
    }

    /// A source over this topic, identified as `memory:<name>`.
    pub fn source(&self, name: &str) -> TopicSource {
        TopicSource {
            topic: self.clone(),
            name: name.to_string(),
            label: None,
            max_records_per_trigger: None,
            rate_limit: None,
            latest_seen: Vec::new(),
        }
    }

    /// Copy records `[from, to)` of `partition` into `out`, their offsets
    /// as positions; returns the end and the partition's length.
    fn read_into(&self, partition: u32, from: u64, to: u64, out: &mut RecordBatch) -> (u64, u64) {
        let parts = self.shared.partitions.lock().unwrap();
        let data = &parts[partition as usize];
        let to = (to as usize).min(data.len()).max(from as usize);
        for (i, value) in data.iter().enumerate().take(to).skip(from as usize) {
            out.push(None, value.as_bytes(), 0, i as i64);
        }
        (to as u64, data.len() as u64)
    }

    /// Wait until the lengths of the partitions (`Some(p)`: of partition
    /// `p` only) differ from `seen`, or `timeout` passes.
    fn wait_past(&self, partition: Option<u32>, seen: &[u64], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut parts = self.shared.partitions.lock().unwrap();
        loop {
            let now: Vec<u64> = match partition {
                Some(p) => vec![parts[p as usize].len() as u64],
                None => parts.iter().map(|p| p.len() as u64).collect(),
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if now != seen || left.is_zero() {
                return;
            }
            parts = self.shared.appended.wait_timeout(parts, left).unwrap().0;
        }
    }
}

/// A [`MemoryTopic`] read by a query.
pub struct TopicSource {
    topic: MemoryTopic,
    name: String,
    /// The description, when other than the identity.
    label: Option<String>,
    max_records_per_trigger: Option<u64>,
    rate_limit: Option<u64>,
    /// The lengths at the last `latest_offset`, which `wait_for_data`
    /// waits past.
    latest_seen: Vec<u64>,
}

impl TopicSource {
    /// Describe the source as `label` in reports (its identity stays).
    pub fn labelled(mut self, label: &str) -> TopicSource {
        self.label = Some(label.to_string());
        self
    }

    /// At most `n` records per micro-batch (taken from the first
    /// partitions with records first).
    pub fn max_records_per_trigger(mut self, n: u64) -> TopicSource {
        self.max_records_per_trigger = Some(n);
        self
    }
}

impl Source for TopicSource {
    fn identity(&self) -> String {
        format!("memory:{}", self.name)
    }

    fn description(&self) -> String {
        self.label.clone().unwrap_or_else(|| Source::identity(self))
    }

    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        Ok(Offset::of(&vec![
            0u64;
            self.topic.partition_count() as usize
        ]))
    }

    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        self.latest_seen = self.topic.lengths();
        Ok(Offset::of(&self.latest_seen))
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let n = self.topic.partition_count() as usize;
        let (start, upto) = (start.partitions(n)?, upto.partitions(n)?);
        let limit = match (self.max_records_per_trigger, self.rate_limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut left = limit.unwrap_or(u64::MAX);
        let ends: Vec<u64> = start
            .iter()
            .zip(&upto)
            .map(|(s, u)| {
                let take = u.saturating_sub(*s).min(left);
                left -= take;
                s + take
            })
            .collect();
        Ok(Offset::of(&ends))
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        let n = self.topic.partition_count() as usize;
        let (start, end) = (start.partitions(n)?, end.partitions(n)?);
        let mut batches = Vec::new();
        for (p, (s, e)) in start.iter().zip(&end).enumerate() {
            if e > s {
                let mut b = RecordBatch::new(p as u32);
                self.topic.read_into(p as u32, *s, *e, &mut b);
                batches.push(b);
            }
        }
        Ok(batches)
    }

    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        let n = self.topic.partition_count() as usize;
        let (a, b) = (offset.partitions(n).ok()?, latest.partitions(n).ok()?);
        Some(b.iter().zip(&a).map(|(b, a)| b.saturating_sub(*a)).sum())
    }

    fn set_rate_limit(&mut self, max_records: Option<u64>) {
        self.rate_limit = max_records;
    }

    fn wakes_on_data(&self) -> bool {
        true
    }

    fn wait_for_data(&mut self, timeout: Duration) {
        self.topic.wait_past(None, &self.latest_seen, timeout);
    }
}

impl ContinuousSource for TopicSource {
    fn identity(&self) -> String {
        Source::identity(self)
    }

    fn partition_count(&self) -> u32 {
        self.topic.partition_count()
    }

    fn initial_positions(&mut self) -> Result<Vec<u64>, ConnectorError> {
        Ok(vec![0; self.topic.partition_count() as usize])
    }

    fn reader(&self, partition: u32) -> Result<Box<dyn PartitionReader>, ConnectorError> {
        Ok(Box::new(TopicReader {
            topic: self.topic.clone(),
            partition,
            length_seen: 0,
        }))
    }

    fn positions(&self, offset: &Offset) -> Result<Vec<u64>, ConnectorError> {
        offset.partitions(self.topic.partition_count() as usize)
    }

    fn latest_positions(&mut self) -> Option<Vec<u64>> {
        Some(self.topic.lengths())
    }
}

/// One partition of a [`MemoryTopic`], read by a continuous task.
struct TopicReader {
    topic: MemoryTopic,
    partition: u32,
    /// The partition's length at the last read: a wait returns once it
    /// grows past it.
    length_seen: u64,
}

impl PartitionReader for TopicReader {
    fn read(
        &mut self,
        from: u64,
        until: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, ConnectorError> {
        let to = until.min(from.saturating_add(max as u64));
        let (end, length) = self.topic.read_into(self.partition, from, to, out);
        self.length_seen = length;
        Ok(end)
    }

    fn wait_for_data(&mut self, timeout: Duration) -> bool {
        let seen = [self.length_seen];
        self.topic.wait_past(Some(self.partition), &seen, timeout);
        true
    }
}

/// One batch (or epoch) a [`MemorySink`] committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedBatch {
    pub id: u64,
    /// The output values routed to this sink, in order.
    pub values: Vec<String>,
}

/// An exactly-once sink in memory: a batch id it has committed is not
/// written again (as the log and file sinks skip a replayed batch).
#[derive(Clone, Default)]
pub struct MemorySink {
    committed: Arc<Mutex<Vec<CommittedBatch>>>,
}

impl MemorySink {
    /// Every committed batch, in commit order.
    pub fn batches(&self) -> Vec<CommittedBatch> {
        self.committed.lock().unwrap().clone()
    }

    /// Every committed value, in commit order.
    pub fn values(&self) -> Vec<String> {
        let committed = self.committed.lock().unwrap();
        committed.iter().flat_map(|b| b.values.clone()).collect()
    }

    /// Keep only the batches whose id `keep` accepts, as if the process had
    /// died before the sink committed the others.
    pub fn retain(&self, keep: impl Fn(u64) -> bool) {
        self.committed.lock().unwrap().retain(|b| keep(b.id));
    }

    /// The ids of the committed batches.
    pub fn ids(&self) -> BTreeSet<u64> {
        self.committed
            .lock()
            .unwrap()
            .iter()
            .map(|b| b.id)
            .collect()
    }
}

impl Sink for MemorySink {
    fn description(&self) -> String {
        "memory".into()
    }

    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let mut committed = self.committed.lock().unwrap();
        if committed.iter().any(|b| b.id == batch_id) {
            return Ok(0);
        }
        let values: Vec<String> = batch
            .records()
            .map(|o| String::from_utf8_lossy(o.value).into_owned())
            .collect();
        let n = values.len() as u64;
        committed.push(CommittedBatch {
            id: batch_id,
            values,
        });
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_wakes_on_an_append_not_at_its_timeout() {
        let topic = MemoryTopic::new(1);
        let mut reader = topic.source("t").reader(0).unwrap();
        let mut out = RecordBatch::new(0);
        assert_eq!(reader.read(0, u64::MAX, 10, &mut out).unwrap(), 0);
        let writer = topic.clone();
        let appending = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            writer.append(0, "a");
        });
        let started = Instant::now();
        assert!(reader.wait_for_data(Duration::from_secs(30)));
        assert!(started.elapsed() < Duration::from_secs(10));
        appending.join().unwrap();
        assert_eq!(reader.read(0, u64::MAX, 10, &mut out).unwrap(), 1);
    }

    #[test]
    fn batches_take_at_most_the_trigger_limit_across_partitions() {
        let topic = MemoryTopic::with(vec![vec!["a".into(); 3], vec!["b".into(); 4]]);
        let mut source = topic.source("t").max_records_per_trigger(5);
        let start = source.initial_offset().unwrap();
        let latest = source.latest_offset().unwrap();
        let end = source.next_end(&start, &latest).unwrap();
        assert_eq!(end.partitions(2).unwrap(), [3, 2]);
        let read = source.read(&start, &end).unwrap();
        assert_eq!(read.iter().map(RecordBatch::len).sum::<usize>(), 5);
    }
}
