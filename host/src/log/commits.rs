//! The topic's commit file: fixed-size entries `writer (16 bytes), sequence
//! u64, end offset u64 per partition, crc32`. Readers see each partition only
//! up to the ends of the last valid entry, so everything a writer appended
//! becomes visible at once, and a writer's (id, sequence) makes a replayed
//! batch recognisable.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::LogError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommitEntry {
    pub writer: [u8; 16],
    pub sequence: u64,
    pub ends: Vec<u64>,
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

    /// All valid entries, oldest first, and the byte length they span (a
    /// torn last entry is excluded).
    pub(crate) fn read_all(&self) -> Result<(Vec<CommitEntry>, u64), LogError> {
        let mut bytes = Vec::new();
        match File::open(&self.path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(|e| self.io(e))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((vec![], 0)),
            Err(e) => return Err(self.io(e)),
        }
        let mut out = Vec::new();
        for chunk in bytes.chunks_exact(self.entry_size()) {
            match self.decode(chunk) {
                Some(e) => out.push(e),
                None => break,
            }
        }
        let valid = (out.len() * self.entry_size()) as u64;
        Ok((out, valid))
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

    /// Durably append `entry` after the first `valid_len` bytes (cutting a
    /// torn tail left by a crash).
    pub(crate) fn append(&self, valid_len: u64, entry: &CommitEntry) -> Result<(), LogError> {
        let mut buf = Vec::with_capacity(self.entry_size());
        buf.extend_from_slice(&entry.writer);
        buf.extend_from_slice(&entry.sequence.to_le_bytes());
        for e in &entry.ends {
            buf.extend_from_slice(&e.to_le_bytes());
        }
        let crc = crc32fast::hash(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        let mut f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        f.set_len(valid_len).map_err(|e| self.io(e))?;
        f.seek(SeekFrom::Start(valid_len)).map_err(|e| self.io(e))?;
        f.write_all(&buf).map_err(|e| self.io(e))?;
        f.sync_data().map_err(|e| self.io(e))
    }
}
