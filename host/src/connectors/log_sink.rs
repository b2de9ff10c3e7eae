//! Writes to a topic of the embedded log, exactly once: a batch is one
//! atomic commit tagged with (query, sink) and the batch id, so a batch
//! replayed after a crash is recognised and skipped.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

use super::err;
use crate::engine::{ConnectorError, RecordBatch, Sink, SinkBatch, faults};
use crate::log::{Appended, Topic, Writer};

pub struct LogSink {
    root: PathBuf,
    topic: Topic,
    route: String,
    writer: [u8; 16],
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
        let topic = match (Topic::open(&root, topic), create_partitions) {
            (Ok(t), _) => t,
            (Err(crate::log::LogError::NoTopic { .. }), Some(p)) => {
                Topic::create(&root, topic, p).map_err(|e| ConnectorError(e.to_string()))?
            }
            (Err(e), _) => return Err(ConnectorError(e.to_string())),
        };
        Ok(LogSink {
            root,
            topic,
            route: route.into(),
            writer: [0; 16],
        })
    }
}

impl Sink for LogSink {
    fn description(&self) -> String {
        format!("log:{}", self.root.join(self.topic.name()).display())
    }

    fn open(&mut self, query_id: &str) -> Result<(), ConnectorError> {
        let digest = Sha256::digest(format!("{query_id}/{}", self.route));
        self.writer.copy_from_slice(&digest[..16]);
        Ok(())
    }

    fn add_batch(&mut self, batch_id: u64, batch: &SinkBatch<'_>) -> Result<u64, ConnectorError> {
        let n = self.topic.partition_count();
        let mut parts: Vec<RecordBatch> = (0..n).map(RecordBatch::new).collect();
        let mut rows = 0u64;
        for (i, o) in batch.records().enumerate() {
            // Keyed records by key; the rest round-robin by position, which
            // is deterministic, so a replay lands exactly where it would have.
            let p = match o.key {
                Some(k) => self.topic.partition_for(k),
                None => (i as u64 % n as u64) as u32,
            };
            parts[p as usize].push_raw_value(o.key, o.value_opt(), o.headers, o.timestamp, 0);
            rows += 1;
        }
        let writer = Writer {
            id: self.writer,
            sequence: batch_id,
        };
        let name = self.description();
        match self
            .topic
            .append(Some(writer), &parts, || faults::point("mid-sink", batch_id))
            .map_err(err(name))?
        {
            Appended::Committed(_) => Ok(rows),
            Appended::AlreadyCommitted => Ok(0),
        }
    }
}
