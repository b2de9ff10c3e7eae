//! Writes to a topic of the embedded log, exactly once: a batch is one
//! atomic commit tagged with (query, sink) and the batch id, so a batch
//! replayed after a crash is recognised and skipped.
//!
//! With `write = "as-produced"` (continuous mode), tasks write their
//! records to the topic as they make them, through an [`EpochWriter`], and
//! each epoch's commit makes them durable and visible to read-committed
//! readers; readers of uncommitted records see them at once.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::err;
use weir_engine::{ConnectorError, EarlyWrites, RecordBatch, RecordRef, Sink, SinkBatch, faults};
use weir_log::{Appended, EpochWriter, Topic, Writer};

pub struct LogSink {
    root: PathBuf,
    /// `None` once an epoch writer has taken it.
    topic: Option<Topic>,
    name: String,
    route: String,
    writer: [u8; 16],
    as_produced: bool,
    early: Option<Arc<Early>>,
}

impl LogSink {
    /// `route` names the output this sink serves; it is part of the writer
    /// identity so two sinks of one query never mistake each other's commits.
    pub fn open(
        root: PathBuf,
        topic: &str,
        route: &str,
        create_partitions: Option<u32>,
    ) -> Result<Self, ConnectorError> {
        Self::open_creating(
            root,
            topic,
            route,
            create_partitions,
            weir_log::SEGMENT_BYTES,
        )
    }

    /// [`LogSink::open`], a topic it creates rolling its segments at
    /// `segment_bytes` (an existing topic keeps its own size).
    pub fn open_creating(
        root: PathBuf,
        topic: &str,
        route: &str,
        create_partitions: Option<u32>,
        segment_bytes: u64,
    ) -> Result<Self, ConnectorError> {
        let topic = match (Topic::open(&root, topic), create_partitions) {
            (Ok(t), _) => t,
            (Err(weir_log::LogError::NoTopic { .. }), Some(p)) => {
                Topic::create_with(&root, topic, p, segment_bytes)
                    .map_err(|e| ConnectorError(e.to_string()))?
            }
            (Err(e), _) => return Err(ConnectorError(e.to_string())),
        };
        Ok(LogSink {
            root,
            name: topic.name().to_string(),
            topic: Some(topic),
            route: route.into(),
            writer: [0; 16],
            as_produced: false,
            early: None,
        })
    }

    /// The sink of an existing topic, or of none when it does not exist
    /// yet, to read its committed output back (`weir replay`) without
    /// creating anything.
    pub fn existing(root: PathBuf, topic: &str, route: &str) -> Result<Self, ConnectorError> {
        let opened = match Topic::open(&root, topic) {
            Ok(t) => Some(t),
            Err(weir_log::LogError::NoTopic { .. }) => None,
            Err(e) => return Err(ConnectorError(e.to_string())),
        };
        Ok(LogSink {
            root,
            name: topic.to_string(),
            topic: opened,
            route: route.into(),
            writer: [0; 16],
            as_produced: false,
            early: None,
        })
    }

    /// Write records as tasks produce them (continuous mode only).
    pub fn as_produced(mut self, yes: bool) -> Self {
        self.as_produced = yes;
        self
    }
}

/// The writer identity a query's sink for output `route` commits under:
/// how a batch's records are found again (`weir replay`).
fn writer_id(query_id: &str, route: &str) -> [u8; 16] {
    let digest = Sha256::digest(format!("{query_id}/{route}"));
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

/// A log record as one line of JSON: its key, value and headers.
fn as_json_line(b: &RecordBatch, i: usize) -> String {
    let r = b.get(i);
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    let mut o = serde_json::json!({
        "key": r.key.map(text),
        "value": r.value_opt().map(text),
    });
    if !r.headers.is_empty() {
        o["headers"] = r
            .headers()
            .map(|(n, v)| serde_json::json!([n, text(v)]))
            .collect();
    }
    o.to_string()
}

/// Which partition each record goes to: keyed records by key, the rest
/// round-robin from `next` (deterministic per batch for a committed write,
/// so a replay lands where it would have).
fn spread(
    batch: &SinkBatch<'_>,
    partitions: u32,
    by_key: impl Fn(&[u8]) -> u32,
    next: u64,
) -> (Vec<RecordBatch>, u64) {
    let mut parts: Vec<RecordBatch> = (0..partitions).map(RecordBatch::new).collect();
    let mut rows = 0u64;
    for o in batch.records() {
        let p = match o.key {
            Some(k) => by_key(k),
            None => ((next + rows) % partitions as u64) as u32,
        };
        parts[p as usize].push_record(&RecordRef::new(
            o.key,
            o.value_opt(),
            o.headers,
            o.timestamp,
            0,
        ));
        rows += 1;
    }
    (parts, rows)
}

/// The sink's epoch writer, shared with the tasks.
struct Early {
    writer: EpochWriter,
    /// Where unkeyed records go round-robin next.
    next: AtomicU64,
}

impl EarlyWrites for Early {
    fn begin(&self, epoch: u64) {
        self.writer.begin(epoch);
    }

    fn write(&self, epoch: u64, batch: &SinkBatch<'_>) -> Result<(), ConnectorError> {
        let n = self.writer.partition_count();
        let next = self.next.load(Ordering::Relaxed);
        let (parts, rows) = spread(batch, n, |k| self.writer.partition_for(k), next);
        self.next.fetch_add(rows, Ordering::Relaxed);
        self.writer
            .write(epoch, parts)
            .map_err(|e| ConnectorError(e.to_string()))
    }

    fn end_epoch(&self, epoch: u64) -> Result<(), ConnectorError> {
        self.writer
            .end_epoch(epoch)
            .map_err(|e| ConnectorError(e.to_string()))
    }
}

impl Sink for LogSink {
    fn description(&self) -> String {
        format!("log:{}", self.root.join(&self.name).display())
    }

    fn open(&mut self, query_id: &str) -> Result<(), ConnectorError> {
        self.writer = writer_id(query_id, &self.route);
        if self.as_produced
            && let Some(topic) = self.topic.take()
        {
            let holder = format!("the query {query_id} (output `{}`)", self.route);
            let writer =
                EpochWriter::open(topic, self.writer, &holder).map_err(err(self.description()))?;
            self.early = Some(Arc::new(Early {
                writer,
                next: AtomicU64::new(0),
            }));
        }
        Ok(())
    }

    fn early_writes(&self) -> Option<Arc<dyn EarlyWrites>> {
        self.early.clone().map(|e| e as Arc<dyn EarlyWrites>)
    }

    /// The records of each batch the query's writer for this output
    /// committed, found by the commits it tagged with its batch ids.
    fn read_back(
        &mut self,
        query_id: &str,
        batches: RangeInclusive<u64>,
    ) -> Result<Option<BTreeMap<u64, Vec<String>>>, ConnectorError> {
        let mut out: BTreeMap<u64, Vec<String>> = batches.clone().map(|n| (n, vec![])).collect();
        let name = self.description();
        let writer = writer_id(query_id, &self.route);
        let Some(topic) = self.topic.as_mut() else {
            // No topic: nothing was ever committed to it.
            return Ok(Some(out));
        };
        for (n, range) in topic
            .committed_ranges(&writer, batches)
            .map_err(err(&name))?
        {
            let lines = out.entry(n).or_default();
            for (p, (start, end)) in range.start.iter().zip(&range.end).enumerate() {
                let mut b = RecordBatch::new(p as u32);
                topic
                    .read(p as u32, *start, *end, &mut b)
                    .map_err(err(&name))?;
                lines.extend((0..b.len()).map(|i| as_json_line(&b, i)));
            }
        }
        Ok(Some(out))
    }

    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let name = self.description();
        if let Some(early) = &self.early {
            // The tasks wrote the epoch's records already: commit them.
            faults::point("mid-sink", batch_id);
            return Ok(early
                .writer
                .commit(batch_id)
                .map_err(err(name))?
                .unwrap_or(0));
        }
        let Some(topic) = self.topic.as_mut() else {
            return Err(ConnectorError(format!("{name}: the sink is not open")));
        };
        let n = topic.partition_count();
        let (parts, rows) = spread(batch, n, |k| topic.partition_for(k), 0);
        let writer = Writer {
            id: self.writer,
            sequence: batch_id,
        };
        match topic
            .append(Some(writer), &parts, || faults::point("mid-sink", batch_id))
            .map_err(err(name))?
        {
            Appended::Committed(_) => Ok(rows),
            Appended::AlreadyCommitted => Ok(0),
        }
    }
}
