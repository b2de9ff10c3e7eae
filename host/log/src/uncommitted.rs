//! Reading a topic without waiting for commits (Kafka's `read_uncommitted`
//! isolation): records are seen as soon as a writer has written them,
//! before the commit that makes them durable.
//!
//! The rule a reader follows: records past the committed end may be cut (a
//! writer crashed, or its epoch never committed). A writer logs each cut in
//! the topic's cut log before it removes a byte; this reader compares the
//! log's length before and after every read, and when it grew, moves each
//! partition back to the cut's end and reports [`Fetched::Rewound`]: the
//! records it returned from that offset on are void, and what is read next
//! from there replaces them. Records below the committed end are never cut.

use std::time::Duration;

use super::watch::Watch;
use super::{LogError, Topic};
use weir_engine::RecordBatch;

/// What one [`UncommittedReader::fetch`] found.
// Records are nearly every answer: boxing them would allocate per fetch to
// shrink the rare rewind.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Fetched {
    /// The records after the partition's position (possibly none).
    Records(RecordBatch),
    /// The partition moved back to this offset: the records returned from
    /// it on were cut.
    Rewound(u64),
}

pub struct UncommittedReader {
    topic: Topic,
    positions: Vec<u64>,
    /// Bytes of the cut log already applied.
    cuts_seen: u64,
    /// Per partition, a rewind not reported yet.
    rewound: Vec<Option<u64>>,
    watch: Watch,
}

impl UncommittedReader {
    /// Read `topic` from `positions` (one per partition). Cuts logged
    /// before now do not concern them.
    pub fn new(topic: Topic, positions: Vec<u64>) -> Result<Self, LogError> {
        let n = topic.partition_count();
        if positions.len() != n as usize {
            return Err(LogError::NoPartition {
                partition: positions.len() as u32,
                partitions: n,
            });
        }
        let (_, cuts_seen) = topic.cuts.since(0)?;
        Ok(UncommittedReader {
            watch: Watch::with_partitions(topic.dir(), n),
            rewound: vec![None; n as usize],
            topic,
            positions,
            cuts_seen,
        })
    }

    pub fn topic(&self) -> &Topic {
        &self.topic
    }

    pub fn position(&self, partition: u32) -> u64 {
        self.positions[partition as usize]
    }

    /// Up to `max` records of `partition` after its position, committed or
    /// not (the position moves past them), or the rewind a cut caused.
    pub fn fetch(&mut self, partition: u32, max: usize) -> Result<Fetched, LogError> {
        let p = partition as usize;
        if p >= self.positions.len() {
            return Err(LogError::NoPartition {
                partition,
                partitions: self.topic.partition_count(),
            });
        }
        self.watch.look();
        let before = self.topic.cuts.len()?;
        if before != self.cuts_seen {
            self.apply_cuts()?;
        }
        if let Some(to) = self.rewound[p].take() {
            return Ok(Fetched::Rewound(to));
        }
        let mut batch = RecordBatch::new(partition);
        let read = self.topic.partitions[p].read_written(self.positions[p], max, &mut batch);
        // A cut between the two looks may have changed the bytes read:
        // drop them (a misread from it included) and rewind.
        if self.topic.cuts.len()? != before {
            self.apply_cuts()?;
            let to = self.rewound[p].take().unwrap_or(self.positions[p]);
            return Ok(Fetched::Rewound(to));
        }
        match read {
            Ok(next) => {
                self.positions[p] = next;
                Ok(Fetched::Records(batch))
            }
            Err(e) => self.after_failed_read(partition, max, e),
        }
    }

    /// A writer cutting its uncommitted tail shortens the file under a
    /// read (between its two cut entries): past the committed end that is
    /// not corruption. Below it, a committed read tells.
    fn after_failed_read(
        &mut self,
        partition: u32,
        max: usize,
        e: LogError,
    ) -> Result<Fetched, LogError> {
        let p = partition as usize;
        let committed = self.topic.committed_ends()?[p];
        let from = self.positions[p];
        self.topic.partitions[p].forget_from(committed.min(from));
        let mut batch = RecordBatch::new(partition);
        if from >= committed {
            tracing::debug!(
                "log {}: uncommitted read failed ({e}); retrying",
                self.topic.name()
            );
            return Ok(Fetched::Records(batch));
        }
        let to = committed.min(from.saturating_add(max as u64));
        self.topic.read(partition, from, to, &mut batch)?;
        self.positions[p] = to;
        Ok(Fetched::Records(batch))
    }

    fn apply_cuts(&mut self) -> Result<(), LogError> {
        let (cuts, at) = self.topic.cuts.since(self.cuts_seen)?;
        for ends in cuts {
            for (p, cut) in ends.into_iter().enumerate() {
                let Some(pos) = self.positions.get_mut(p) else {
                    continue;
                };
                self.topic.partitions[p].forget_from(cut);
                if *pos > cut {
                    *pos = cut;
                    let r = &mut self.rewound[p];
                    *r = Some(r.map_or(cut, |prev| prev.min(cut)));
                }
            }
        }
        self.cuts_seen = at;
        Ok(())
    }

    /// Wait until something may have been written to or cut from the topic,
    /// at most `timeout` (without inotify, a plain sleep).
    pub fn wait(&mut self, timeout: Duration) {
        self.watch.wait(timeout);
    }
}
