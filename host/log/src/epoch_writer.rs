//! Writing a topic as records are produced, committing per epoch: the
//! writer behind a continuous pipeline's `write = "as-produced"` log sink.
//!
//! Records reach the segment files (not fsynced) as soon as a task hands
//! them over, so readers of uncommitted records see them at once; an
//! epoch's commit fsyncs them and appends one commit entry, as
//! [`super::Topic::append`] does, so read-committed readers see whole
//! epochs exactly once.
//!
//! An epoch's records must all sit before the next epoch's in every
//! partition, or a commit would cover records of an epoch that may still
//! be re-run. Tasks run ahead into later epochs, so records of an epoch
//! after the open one are held in memory until every task has passed the
//! open one's end ([`EpochWriter::end_epoch`]), then written. The writer
//! holds the topic's lock while it runs: it is the topic's only writer.

use std::collections::BTreeMap;
use std::fs::File;
use std::sync::Mutex;

use super::commits::{CommitEntry, CommitFile, CommitState};
use super::{EPOCH_WRITER, LogError, Topic};
use weir_engine::RecordBatch;

pub struct EpochWriter {
    dir: std::path::PathBuf,
    writer: [u8; 16],
    partitions: u32,
    inner: Mutex<Inner>,
    /// The commit file: only the committer touches it, apart from the
    /// writes so that its fsyncs never hold a task up.
    commits: Mutex<(CommitFile, CommitState)>,
    _lock: File,
}

struct Inner {
    topic: Topic,
    /// The epoch being written now; records of later ones are held.
    open: u64,
    /// This writer's last committed epoch (a re-run epoch at or below it
    /// was committed by an earlier run: its records are dropped).
    committed: Option<u64>,
    held: BTreeMap<u64, Vec<RecordBatch>>,
    /// Ended epochs with records, not committed yet: each partition's end,
    /// and rows.
    ended: BTreeMap<u64, (Vec<u64>, u64)>,
    /// Rows written to the open epoch so far.
    rows: u64,
    /// Each partition's end at the last commit: files from there on are
    /// fsynced by the next one.
    durable: Vec<u64>,
}

impl EpochWriter {
    /// Take `topic` for writer `writer` (its commit entries are tagged with
    /// it), described to other writers as `holder`; whatever a crashed run
    /// left past the committed ends is cut (and the cut logged).
    pub fn open(mut topic: Topic, writer: [u8; 16], holder: &str) -> Result<Self, LogError> {
        let lock = topic.lock()?;
        let dir = topic.dir.clone();
        std::fs::write(dir.join(EPOCH_WRITER), holder).map_err(|err| LogError::Io {
            path: dir.join(EPOCH_WRITER),
            err,
        })?;
        topic.commits.refresh(&mut topic.commit_state)?;
        let committed_ends = topic.last_read_ends();
        topic.cut_to(&committed_ends)?;
        let state = std::mem::take(&mut topic.commit_state);
        let committed = state.sequences.get(&writer).copied();
        let file = CommitFile::new(&dir, topic.partitions.len());
        Ok(EpochWriter {
            dir,
            writer,
            partitions: topic.partition_count(),
            inner: Mutex::new(Inner {
                topic,
                open: 0,
                committed,
                held: BTreeMap::new(),
                ended: BTreeMap::new(),
                rows: 0,
                durable: committed_ends,
            }),
            commits: Mutex::new((file, state)),
            _lock: lock,
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn partition_count(&self) -> u32 {
        self.partitions
    }

    /// The partition for a key (as [`Topic::partition_for`]), without
    /// taking the writers' lock: it is asked once per keyed record.
    pub fn partition_for(&self, key: &[u8]) -> u32 {
        weir_engine::exchange::murmur2::partition_of(key, self.partitions)
    }

    /// The first epoch this run writes, before any write.
    pub fn begin(&self, epoch: u64) {
        let mut inner = self.inner();
        inner.open = epoch;
        inner.held.clear();
    }

    /// Write each of `parts` to its partition as part of `epoch`: now when it is
    /// the open epoch, when the open one ends when it is later. Called from
    /// any task; an epoch this writer committed before is dropped.
    pub fn write(&self, epoch: u64, parts: Vec<RecordBatch>) -> Result<(), LogError> {
        let mut inner = self.inner();
        if inner.committed.is_some_and(|c| epoch <= c) {
            return Ok(());
        }
        if epoch < inner.open {
            return Err(LogError::EpochEnded {
                epoch,
                open: inner.open,
            });
        }
        if epoch > inner.open {
            let held = inner.held.entry(epoch).or_default();
            held.extend(parts.into_iter().filter(|b| !b.is_empty()));
            return Ok(());
        }
        inner.append(&parts)
    }

    /// Every task has passed the end of `epoch` (and those before it):
    /// note where it ends, then write what the next epoch held back.
    pub fn end_epoch(&self, epoch: u64) -> Result<(), LogError> {
        let mut inner = self.inner();
        while inner.open <= epoch {
            let (open, rows) = (inner.open, std::mem::take(&mut inner.rows));
            // An epoch without records ends where the one before it did:
            // nothing to keep (idle epochs would pile up otherwise).
            if rows > 0 {
                let ends = inner.topic.written_ends();
                inner.ended.insert(open, (ends, rows));
            }
            inner.open += 1;
            let next = inner.open;
            if let Some(held) = inner.held.remove(&next) {
                inner.append(&held)?;
            }
        }
        Ok(())
    }

    /// Make ended `epoch` durable and visible to read-committed readers;
    /// the rows it committed, `None` when this writer had committed it in
    /// an earlier run.
    pub fn commit(&self, epoch: u64) -> Result<Option<u64>, LogError> {
        let (ends, rows, files, dirs) = {
            let mut inner = self.inner();
            if inner.committed.is_some_and(|c| epoch <= c) {
                inner.ended.remove(&epoch);
                return Ok(None);
            }
            if epoch >= inner.open {
                return Err(LogError::EpochNotEnded { epoch });
            }
            // Without an entry it had no records, and epochs commit in
            // order: it ends where the last commit did.
            let (ends, rows) = inner
                .ended
                .remove(&epoch)
                .unwrap_or_else(|| (inner.durable.clone(), 0));
            let files = inner.topic.files_from(&inner.durable);
            let dirs = inner.topic.dirs_with_new_segments(&inner.durable);
            inner.durable.clone_from(&ends);
            (ends, rows, files, dirs)
        };
        for path in files {
            // An fsync through any descriptor makes the file's data durable.
            let synced = File::open(&path).and_then(|f| f.sync_data());
            synced.map_err(|err| LogError::Io { path, err })?;
        }
        // And the names of segments created in this epoch, before the
        // commit entry that counts their records (most epochs: none).
        for dir in dirs {
            weir_engine::durable::sync_dir(&dir).map_err(|err| LogError::Io { path: dir, err })?;
        }
        let mut commits = self.commits.lock().unwrap_or_else(|e| e.into_inner());
        let (file, state) = &mut *commits;
        file.append(
            state,
            &CommitEntry {
                writer: self.writer,
                sequence: epoch,
                ends: ends.clone(),
            },
        )?;
        let mut inner = self.inner();
        inner.committed = Some(epoch);
        inner.topic.persist_index(&ends);
        Ok(Some(rows))
    }
}

impl Inner {
    fn append(&mut self, parts: &[RecordBatch]) -> Result<(), LogError> {
        let partitions = self.topic.partition_count();
        for batch in parts.iter().filter(|b| !b.is_empty()) {
            let part = self
                .topic
                .partitions
                .get_mut(batch.partition as usize)
                .ok_or(LogError::NoPartition {
                    partition: batch.partition,
                    partitions,
                })?;
            part.append(batch, false)?;
            self.rows += batch.len() as u64;
        }
        Ok(())
    }
}

impl Drop for EpochWriter {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.dir.join(EPOCH_WRITER));
    }
}
