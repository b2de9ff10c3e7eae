//! The topic's commit file: fixed-size entries `writer (16 bytes), sequence
//! u64, end offset u64 per partition, crc32`. Readers see each partition only
//! up to the ends of the last valid entry, so everything a writer appended
//! becomes visible at once, and a writer's (id, sequence) makes a replayed
//! batch recognisable.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::LogError;

/// What one commit made visible: the start and end offset of each
/// partition.
pub struct CommitRange {
    /// Per partition, the end of the log before the commit.
    pub start: Vec<u64>,
    /// Per partition, the end the commit made visible.
    pub end: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitEntry {
    pub writer: [u8; 16],
    pub sequence: u64,
    pub ends: Vec<u64>,
}

/// What a writer needs to know of the commit file.
#[derive(Debug, Default)]
pub(crate) struct CommitState {
    /// Bytes of valid entries read so far.
    pub valid_len: u64,
    /// Ends of the last valid entry.
    pub ends: Option<Vec<u64>>,
    /// The last sequence each writer committed.
    pub sequences: HashMap<[u8; 16], u64>,
}

impl CommitState {
    fn record(&mut self, e: &CommitEntry, size: u64) {
        self.valid_len += size;
        self.ends = Some(e.ends.clone());
        self.sequences.insert(e.writer, e.sequence);
    }
}

/// What the topic's readers learn from its commit file.
impl super::Topic {
    /// The committed end offset of every partition (what readers may see).
    pub fn committed_ends(&self) -> Result<Vec<u64>, LogError> {
        Ok(self
            .commits
            .last()?
            .map_or_else(|| vec![0; self.partitions.len()], |e| e.ends))
    }

    /// The offsets `[start, end)` per partition of what `writer` committed
    /// as each sequence (a sink's batch or epoch) in `sequences`.
    pub fn committed_ranges(
        &self,
        writer: &[u8; 16],
        sequences: std::ops::RangeInclusive<u64>,
    ) -> Result<std::collections::BTreeMap<u64, CommitRange>, LogError> {
        self.commits.ranges_of(writer, sequences)
    }
}

pub(crate) struct CommitFile {
    path: PathBuf,
    partitions: usize,
}

impl CommitFile {
    pub(crate) fn new(dir: &Path, partitions: usize) -> Self {
        CommitFile {
            path: dir.join("commits"),
            partitions,
        }
    }

    fn entry_size(&self) -> usize {
        16 + 8 + 8 * self.partitions + 4
    }

    fn io(&self, err: std::io::Error) -> LogError {
        LogError::Io {
            path: self.path.clone(),
            err,
        }
    }

    fn decode(&self, buf: &[u8]) -> Option<CommitEntry> {
        let n = self.entry_size();
        let crc = u32::from_le_bytes(buf[n - 4..n].try_into().ok()?);
        if crc32fast::hash(&buf[..n - 4]) != crc {
            return None;
        }
        let ends = (0..self.partitions)
            .map(|p| u64::from_le_bytes(buf[24 + 8 * p..32 + 8 * p].try_into().unwrap()))
            .collect();
        Some(CommitEntry {
            writer: buf[..16].try_into().unwrap(),
            sequence: u64::from_le_bytes(buf[16..24].try_into().unwrap()),
            ends,
        })
    }

    /// Bring `state` up to date, reading only the entries appended since
    /// its last refresh (a writer holding the topic lock calls this before
    /// every append, so the whole file is never re-read on the hot path).
    pub(crate) fn refresh(&self, state: &mut CommitState) -> Result<(), LogError> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                *state = CommitState::default();
                return Ok(());
            }
            Err(e) => return Err(self.io(e)),
        };
        let len = f.metadata().map_err(|e| self.io(e))?.len();
        if len < state.valid_len {
            // Replaced or cut behind our back: start over.
            *state = CommitState::default();
        }
        f.seek(SeekFrom::Start(state.valid_len))
            .map_err(|e| self.io(e))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(|e| self.io(e))?;
        for chunk in bytes.chunks_exact(self.entry_size()) {
            let Some(e) = self.decode(chunk) else { break };
            state.record(&e, self.entry_size() as u64);
        }
        Ok(())
    }

    /// The last valid entry (reads only the file's tail).
    pub(crate) fn last(&self) -> Result<Option<CommitEntry>, LogError> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(e)),
        };
        let len = f.metadata().map_err(|e| self.io(e))?.len();
        let size = self.entry_size() as u64;
        let mut n = len / size;
        let mut buf = vec![0; size as usize];
        while n > 0 {
            f.seek(SeekFrom::Start((n - 1) * size))
                .map_err(|e| self.io(e))?;
            f.read_exact(&mut buf).map_err(|e| self.io(e))?;
            if let Some(e) = self.decode(&buf) {
                return Ok(Some(e));
            }
            n -= 1;
        }
        Ok(None)
    }

    /// What the entries `writer` committed as sequences in `sequences`
    /// made visible, by sequence: the ends before each and its own. One
    /// read of the file however many are asked for.
    pub(crate) fn ranges_of(
        &self,
        writer: &[u8; 16],
        sequences: std::ops::RangeInclusive<u64>,
    ) -> Result<std::collections::BTreeMap<u64, CommitRange>, LogError> {
        let mut found = std::collections::BTreeMap::new();
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(e) => return Err(self.io(e)),
        };
        let mut before = vec![0; self.partitions];
        for chunk in bytes.chunks_exact(self.entry_size()) {
            let Some(e) = self.decode(chunk) else { break };
            if &e.writer == writer && sequences.contains(&e.sequence) {
                found.insert(
                    e.sequence,
                    CommitRange {
                        start: before,
                        end: e.ends.clone(),
                    },
                );
            }
            before = e.ends;
        }
        Ok(found)
    }

    /// Durably append `entry` after the valid entries of `state` (cutting a
    /// torn tail left by a crash), and record it in `state`.
    pub(crate) fn append(
        &self,
        state: &mut CommitState,
        entry: &CommitEntry,
    ) -> Result<(), LogError> {
        let valid_len = state.valid_len;
        let mut buf = Vec::with_capacity(self.entry_size());
        buf.extend_from_slice(&entry.writer);
        buf.extend_from_slice(&entry.sequence.to_le_bytes());
        for e in &entry.ends {
            buf.extend_from_slice(&e.to_le_bytes());
        }
        let crc = crc32fast::hash(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        append_entry(&self.path, valid_len, &buf).map_err(|e| self.io(e))?;
        state.record(entry, buf.len() as u64);
        Ok(())
    }
}

/// Durably write `entry` at `valid_len` of the file at `path` (created if
/// missing), cutting whatever torn entry a crash left there. The first
/// entry (at 0: the file may be new) also gets the file named on disk (its
/// directory fsynced), or a power cut could take the entry with the name;
/// later entries cost no more than their own fsync.
pub(crate) fn append_entry(path: &Path, valid_len: u64, entry: &[u8]) -> std::io::Result<()> {
    let created = valid_len == 0;
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    f.set_len(valid_len)?;
    f.seek(SeekFrom::Start(valid_len))?;
    f.write_all(entry)?;
    f.sync_data()?;
    if created {
        weir_engine::durable::sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    }
    Ok(())
}
