//! weir's embedded log: durable, partitioned, append-only topics on local
//! disk, so a pipeline (and the demo) needs no broker.
//!
//! Layout: `<root>/<topic>/topic.json`, `<root>/<topic>/<partition>/<base>.log`
//! segments of CRC-framed records, and `<root>/<topic>/commits`. A write
//! appends records to the partitions, fsyncs them, then appends one commit
//! entry with every partition's new end: readers never look past the last
//! commit, so a write becomes visible atomically across partitions, and a
//! crash mid-write leaves only invisible bytes that the next writer cuts.

mod commits;
mod cuts;
mod epoch_writer;
mod name;
mod partition;
mod record;
mod uncommitted;
pub mod watch;

use std::fs::File;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use commits::CommitRange;
use commits::{CommitEntry, CommitFile, CommitState};
use cuts::CutLog;
pub use epoch_writer::EpochWriter;
pub use name::{MAX_TOPIC_NAME, check_topic_name};
use partition::Partition;
pub use uncommitted::{Fetched, UncommittedReader};
use weir_engine::RecordBatch;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{path}: corrupt log: {problem}")]
    Corrupt { path: PathBuf, problem: String },
    #[error("topic `{name}` does not exist in {root} (create it with `weir log create`)")]
    NoTopic { name: String, root: PathBuf },
    #[error("topic `{name}` already exists in {root} with {partitions} partition(s)")]
    Exists {
        name: String,
        root: PathBuf,
        partitions: u32,
    },
    #[error("record of {size} bytes exceeds the log's limit of {max} bytes")]
    TooLarge { size: usize, max: usize },
    #[error(
        "topic `{name}` is held by {holder}, which writes it as it produces records (write = \"as-produced\"); no other writer can commit to it until that stops"
    )]
    Busy { name: String, holder: String },
    #[error("epoch {epoch} was written after it ended (the writer is at epoch {open})")]
    EpochEnded { epoch: u64, open: u64 },
    #[error("epoch {epoch} was committed before it ended")]
    EpochNotEnded { epoch: u64 },
    #[error("partition {partition} does not exist (the topic has {partitions})")]
    NoPartition { partition: u32, partitions: u32 },
    #[error("topic name `{}`: {why}", name.escape_debug())]
    BadName { name: String, why: &'static str },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct TopicMeta {
    partitions: u32,
    segment_bytes: u64,
}

/// Who is writing, so a replayed write can be recognised and skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer {
    pub id: [u8; 16],
    pub sequence: u64,
}

/// The outcome of [`Topic::append`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// Written and committed; the new committed end of each partition.
    Committed(Vec<u64>),
    /// This writer had already committed this sequence number: nothing written.
    AlreadyCommitted,
}

/// An open topic.
pub struct Topic {
    name: String,
    dir: PathBuf,
    partitions: Vec<Partition>,
    commits: CommitFile,
    /// The commit file as this handle last read it (writers only).
    commit_state: CommitState,
    cuts: CutLog,
}

/// How long a writer waits for the lock an [`EpochWriter`] holds.
const BUSY_PATIENCE: std::time::Duration = if cfg!(test) {
    std::time::Duration::from_millis(200)
} else {
    std::time::Duration::from_secs(5)
};
/// The file naming the [`EpochWriter`] that holds the topic.
const EPOCH_WRITER: &str = ".epoch-writer";

/// Default segment size.
pub const SEGMENT_BYTES: u64 = 64 << 20;

impl Topic {
    pub fn create(root: &Path, name: &str, partitions: u32) -> Result<Topic, LogError> {
        Self::create_with(root, name, partitions, SEGMENT_BYTES)
    }

    pub fn create_with(
        root: &Path,
        name: &str,
        partitions: u32,
        segment_bytes: u64,
    ) -> Result<Topic, LogError> {
        check_topic_name(name)?;
        let dir = root.join(name);
        if let Ok(existing) = Self::open(root, name) {
            return Err(LogError::Exists {
                name: name.into(),
                root: root.into(),
                partitions: existing.partition_count(),
            });
        }
        let meta = TopicMeta {
            partitions: partitions.max(1),
            segment_bytes,
        };
        let bytes = serde_json::to_vec_pretty(&meta).expect("topic metadata serializes");
        weir_engine::durable::write_atomic(&dir.join("topic.json"), &bytes).map_err(|err| {
            LogError::Io {
                path: dir.clone(),
                err,
            }
        })?;
        Self::open(root, name)
    }

    pub fn open(root: &Path, name: &str) -> Result<Topic, LogError> {
        check_topic_name(name)?;
        let dir = root.join(name);
        let meta_path = dir.join("topic.json");
        let bytes = match std::fs::read(&meta_path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(LogError::NoTopic {
                    name: name.into(),
                    root: root.into(),
                });
            }
            Err(err) => {
                return Err(LogError::Io {
                    path: meta_path,
                    err,
                });
            }
        };
        let meta: TopicMeta = serde_json::from_slice(&bytes).map_err(|e| LogError::Corrupt {
            path: meta_path.clone(),
            problem: e.to_string(),
        })?;
        let partitions = (0..meta.partitions)
            .map(|p| Partition::open(dir.join(p.to_string()), meta.segment_bytes))
            .collect::<Result<_, _>>()?;
        Ok(Topic {
            name: name.into(),
            commits: CommitFile::new(&dir, meta.partitions as usize),
            commit_state: CommitState::default(),
            cuts: CutLog::new(&dir, meta.partitions as usize),
            dir,
            partitions,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn partition_count(&self) -> u32 {
        self.partitions.len() as u32
    }

    /// The average size of a committed record on disk (frame included),
    /// `None` before any: for estimating how many records fit in a budget.
    pub fn average_record_bytes(&self) -> Result<Option<u64>, LogError> {
        let records: u64 = self.committed_ends()?.iter().sum();
        if records == 0 {
            return Ok(None);
        }
        let mut bytes = 0u64;
        for p in 0..self.partitions.len() {
            let dir = self.dir.join(p.to_string());
            let entries = std::fs::read_dir(&dir).map_err(|err| LogError::Io {
                path: dir.clone(),
                err,
            })?;
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().ends_with(".log") {
                    bytes += e.metadata().map_or(0, |m| m.len());
                }
            }
        }
        Ok(Some(bytes.div_ceil(records).max(1)))
    }

    /// Read committed records `[from, to)` of `partition` into `out`.
    pub fn read(
        &mut self,
        partition: u32,
        from: u64,
        to: u64,
        out: &mut RecordBatch,
    ) -> Result<(), LogError> {
        let count = self.partition_count();
        let p = self
            .partitions
            .get_mut(partition as usize)
            .ok_or(LogError::NoPartition {
                partition,
                partitions: count,
            })?;
        p.read(from, to, out)
    }

    /// The topic's writer lock. Ordinary writers hold it for one append; an
    /// [`EpochWriter`] holds it while it runs and says so in
    /// `.epoch-writer`, so a writer kept waiting by one fails after
    /// [`BUSY_PATIENCE`] with who holds it, instead of hanging.
    fn lock(&self) -> Result<File, LogError> {
        let path = self.dir.join(".lock");
        let f = File::create(&path).map_err(|err| LogError::Io {
            path: path.clone(),
            err,
        })?;
        let started = std::time::Instant::now();
        loop {
            match f.try_lock() {
                Ok(()) => return Ok(f),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(err)) => return Err(LogError::Io { path, err }),
            }
            if started.elapsed() >= BUSY_PATIENCE
                && let Ok(holder) = std::fs::read_to_string(self.dir.join(EPOCH_WRITER))
            {
                return Err(LogError::Busy {
                    name: self.name.clone(),
                    holder: holder.trim().to_string(),
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Append `per_partition[p]` to partition `p` and commit them together.
    /// With a `writer`, a sequence at or below that writer's last committed
    /// one is skipped, which makes replays idempotent. `before_commit` runs
    /// after the data is durable and before the commit entry (fault tests).
    pub fn append(
        &mut self,
        writer: Option<Writer>,
        per_partition: &[RecordBatch],
        before_commit: impl FnOnce(),
    ) -> Result<Appended, LogError> {
        if per_partition.len() > self.partitions.len() {
            return Err(LogError::NoPartition {
                partition: per_partition.len() as u32 - 1,
                partitions: self.partition_count(),
            });
        }
        let _lock = self.lock()?;
        self.commits.refresh(&mut self.commit_state)?;
        if let Some(w) = writer
            && self
                .commit_state
                .sequences
                .get(&w.id)
                .is_some_and(|s| *s >= w.sequence)
        {
            return Ok(Appended::AlreadyCommitted);
        }
        let committed = self.last_read_ends();
        self.cut_to(&committed)?;
        let mut ends = committed.clone();
        for (p, part) in self.partitions.iter_mut().enumerate() {
            if let Some(batch) = per_partition.get(p)
                && !batch.is_empty()
            {
                ends[p] = part.append(batch, true)?;
            }
        }
        before_commit();
        let w = writer.unwrap_or(Writer {
            id: [0; 16],
            sequence: 0,
        });
        self.commits.append(
            &mut self.commit_state,
            &CommitEntry {
                writer: w.id,
                sequence: w.sequence,
                ends: ends.clone(),
            },
        )?;
        self.persist_index(&ends);
        Ok(Appended::Committed(ends))
    }

    /// After a commit entry is durable: the index entries of the records it
    /// committed go to the segments' index files. A failure costs later
    /// readers a scan, not data, and the commit has happened: it is logged
    /// (at most a few lines a second), not returned.
    pub(crate) fn persist_index(&mut self, ends: &[u64]) {
        static WARNINGS: weir_engine::SharedLogBudget = weir_engine::SharedLogBudget::new(1);
        for (part, end) in self.partitions.iter_mut().zip(ends) {
            if let Err(e) = part.persist_index(*end)
                && WARNINGS.admit().admit
            {
                tracing::warn!(topic = %self.name, "writing a segment index: {e} (readers scan the segment instead)");
            }
        }
    }

    /// The committed ends as this handle last read the commit file.
    fn last_read_ends(&self) -> Vec<u64> {
        self.commit_state
            .ends
            .clone()
            .unwrap_or_else(|| vec![0; self.partitions.len()])
    }

    /// Each partition's end as this handle has written or scanned it.
    fn written_ends(&self) -> Vec<u64> {
        self.partitions.iter().map(Partition::scanned_end).collect()
    }

    /// The segment files holding records past `from[p]` of each partition.
    fn files_from(&self, from: &[u64]) -> Vec<PathBuf> {
        self.partitions
            .iter()
            .zip(from)
            .flat_map(|(p, f)| p.files_from(*f))
            .collect()
    }

    /// The partition directories that gained a segment file since `from`.
    fn dirs_with_new_segments(&self, from: &[u64]) -> Vec<PathBuf> {
        self.partitions
            .iter()
            .zip(from)
            .filter_map(|(p, f)| p.dir_with_new_segments(*f))
            .collect()
    }

    /// Cut whatever a crashed writer left past the `committed` ends (the
    /// caller holds the lock), logging the cut before the first byte goes
    /// and after the last, when there is one.
    fn cut_to(&mut self, committed: &[u64]) -> Result<(), LogError> {
        let mut logged = false;
        let cuts = &self.cuts;
        let mut log_cut = || {
            if !logged {
                cuts.append(committed)?;
                logged = true;
            }
            Ok(())
        };
        for (p, part) in self.partitions.iter_mut().enumerate() {
            if !part.is_clean(committed[p]) {
                part.truncate_to(committed[p], &mut log_cut)?;
            }
        }
        if logged {
            // Again once the bytes are gone: a reader that applied the first
            // entry may have read them again before they went.
            self.cuts.append(committed)?;
        }
        Ok(())
    }

    /// The partition for a key: Kafka's default partitioner (murmur2), the
    /// same route as Kafka producers and the state exchange take.
    pub fn partition_for(&self, key: &[u8]) -> u32 {
        weir_engine::exchange::murmur2::partition_of(key, self.partition_count())
    }
}

#[cfg(test)]
mod tests;
