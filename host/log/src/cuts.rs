//! The topic's cut log: one fixed-size entry `end offset u64 per partition,
//! crc32` each time a writer removes records past the committed ends (a
//! crashed writer's leftovers, or an epoch that never committed). Only
//! readers of uncommitted records care: they may have read what was cut, so
//! each new entry tells them to go back to its ends and treat what they
//! read from there on as void. A writer appends the entry, durably, before
//! it removes the first byte, and again after the last, before it writes
//! anything new: a reader that applied the first entry and read the doomed
//! bytes again before they went is sent back by the second.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::LogError;

pub(crate) struct CutLog {
    path: PathBuf,
    partitions: usize,
}

impl CutLog {
    pub(crate) fn new(dir: &Path, partitions: usize) -> Self {
        CutLog {
            path: dir.join("cuts"),
            partitions,
        }
    }

    fn entry_size(&self) -> u64 {
        (8 * self.partitions + 4) as u64
    }

    fn io(&self, err: std::io::Error) -> LogError {
        LogError::Io {
            path: self.path.clone(),
            err,
        }
    }

    /// The file's length: a reader compares it before and after a read to
    /// learn whether a cut came in between (one `stat`).
    pub(crate) fn len(&self) -> Result<u64, LogError> {
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(self.io(e)),
        }
    }

    /// The ends of the valid entries from byte `from` on, and the byte just
    /// past them (where the next look starts).
    pub(crate) fn since(&self, from: u64) -> Result<(Vec<Vec<u64>>, u64), LogError> {
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), from)),
            Err(e) => return Err(self.io(e)),
        };
        f.seek(SeekFrom::Start(from)).map_err(|e| self.io(e))?;
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(|e| self.io(e))?;
        let mut cuts = Vec::new();
        let mut at = from;
        for chunk in bytes.chunks_exact(self.entry_size() as usize) {
            let Some(ends) = self.decode(chunk) else {
                break;
            };
            cuts.push(ends);
            at += self.entry_size();
        }
        Ok((cuts, at))
    }

    fn decode(&self, chunk: &[u8]) -> Option<Vec<u64>> {
        let n = chunk.len();
        let crc = u32::from_le_bytes(chunk[n - 4..].try_into().ok()?);
        (crc32fast::hash(&chunk[..n - 4]) == crc).then(|| {
            chunk[..n - 4]
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect()
        })
    }

    /// Durably record a cut to `ends` (the caller holds the topic lock),
    /// first dropping a torn entry a crash left.
    pub(crate) fn append(&self, ends: &[u64]) -> Result<(), LogError> {
        let (_, valid) = self.since(0)?;
        let mut buf = Vec::with_capacity(self.entry_size() as usize);
        for e in ends {
            buf.extend_from_slice(&e.to_le_bytes());
        }
        let crc = crc32fast::hash(&buf);
        buf.extend_from_slice(&crc.to_le_bytes());
        super::commits::append_entry(&self.path, valid, &buf).map_err(|e| self.io(e))?;
        if valid == 0 {
            // A new file: its name must be durable too.
            let dir = self.path.parent().expect("a topic directory");
            weir_engine::durable::sync_dir(dir).map_err(|e| self.io(e))?;
        }
        Ok(())
    }
}
