//! One segment file of a partition: its records' sparse index, loaded from
//! its index file and extended by scanning, and reads of its bytes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use super::super::LogError;
use super::super::record::{FRAME_HEADER, MAX_BODY, frame_len};
use super::index_file;

/// One sparse index entry per this many records.
pub(super) const INDEX_EVERY: u64 = 512;
/// A scan reads about what the records it wants take, at least this much
/// and at most this much per read (more for one larger record).
const SCAN_MIN: usize = 4 << 10;
const SCAN_MAX: usize = 4 << 20;

#[derive(Debug)]
pub(super) struct Segment {
    pub(super) base: u64,
    pub(super) path: PathBuf,
    /// Bytes of valid records scanned so far.
    pub(super) len: u64,
    /// Offset just past the last scanned record.
    pub(super) end: u64,
    /// `(offset, position)` pairs, ascending.
    pub(super) index: Vec<(u64, u64)>,
    /// Where the last read ended, `(offset, position)`: the next read of a
    /// reader that follows the data starts there instead of at an index
    /// entry up to `INDEX_EVERY` records back.
    pub(super) cursor: Option<(u64, u64)>,
    /// What the segment's index file holds, once read: `None` until the
    /// first scan or index write needs it.
    pub(super) persisted: Option<Persisted>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Persisted {
    /// Bytes of valid entries in the file.
    pub bytes: u64,
    /// The last entry's offset (the base when there is none).
    pub last: u64,
}

impl Segment {
    /// A segment starting at offset `base`, not scanned yet.
    pub(super) fn empty(base: u64, path: PathBuf) -> Self {
        Segment {
            base,
            path,
            len: 0,
            end: base,
            index: vec![(base, 0)],
            cursor: None,
            persisted: None,
        }
    }

    /// Read the segment's index file once. Its entries name committed
    /// records, so when they reach past what this handle has scanned, the
    /// scan goes on from the last of them.
    pub(super) fn load_index(&mut self) -> Result<Persisted, LogError> {
        if let Some(p) = self.persisted {
            return Ok(p);
        }
        let file_len = match std::fs::metadata(&self.path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(err) => {
                return Err(LogError::Io {
                    path: self.path.clone(),
                    err,
                });
            }
        };
        let loaded = index_file::load(&index_file::path_of(&self.path), self.base, file_len)?;
        let last = loaded.entries.last().copied();
        if let Some((offset, position)) = last
            && offset > self.end
        {
            let known = self.index.last().map_or(self.base, |(o, _)| *o);
            self.index
                .extend(loaded.entries.iter().filter(|(o, _)| *o > known));
            self.end = offset;
            self.len = position;
        }
        let p = Persisted {
            bytes: loaded.valid_bytes,
            last: last.map_or(self.base, |(o, _)| o),
        };
        self.persisted = Some(p);
        Ok(p)
    }

    /// Write the index entries of records below `committed` that the index
    /// file lacks (see `index_file` for why only those).
    pub(super) fn persist_index(&mut self, committed: u64) -> Result<(), LogError> {
        if self.base >= committed || (self.index.len() <= 1 && self.persisted.is_none()) {
            return Ok(());
        }
        let p = self.load_index()?;
        let from = self.index.partition_point(|(o, _)| *o <= p.last);
        let to = self.index.partition_point(|(o, _)| *o < committed);
        let Some(new) = self.index.get(from..to).filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        index_file::append(&index_file::path_of(&self.path), p.bytes, new)?;
        self.persisted = Some(Persisted {
            bytes: p.bytes + (new.len() * index_file::ENTRY) as u64,
            last: new[new.len() - 1].0,
        });
        Ok(())
    }

    pub(super) fn io(&self) -> impl Fn(std::io::Error) -> LogError + '_ {
        |err| LogError::Io {
            path: self.path.clone(),
            err,
        }
    }

    /// The index entry at or before `offset`: where to start scanning.
    pub(super) fn index_before(&self, offset: u64) -> (u64, u64) {
        self.index
            .iter()
            .rev()
            .find(|(o, _)| *o <= offset)
            .copied()
            .unwrap_or((self.base, 0))
    }

    /// The closest known position at or before `offset`: the index's or
    /// the last read's end.
    pub(super) fn position_before(&self, offset: u64) -> (u64, u64) {
        let indexed = self.index_before(offset);
        match self.cursor {
            Some(c) if c.0 <= offset && c.0 >= indexed.0 => c,
            _ => indexed,
        }
    }

    /// Index records from `end` until `target` (or the valid data ends),
    /// reading in chunks: a small step into a big segment reads about the
    /// step. Returns the bytes read, `None` when the file is gone.
    pub(super) fn scan(&mut self, target: u64) -> Result<Option<u64>, LogError> {
        self.load_index()?;
        if self.end >= target {
            return Ok(Some(0));
        }
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(LogError::Io {
                    path: self.path.clone(),
                    err,
                });
            }
        };
        f.seek(SeekFrom::Start(self.len)).map_err(self.io())?;
        let mut buf = Vec::new();
        let (mut pos, mut read, mut eof) = (0usize, 0u64, false);
        while self.end < target {
            if let Some(len) = frame_len(&buf[pos..]) {
                if (self.end - self.base).is_multiple_of(INDEX_EVERY)
                    && self.index.last().is_none_or(|(o, _)| *o < self.end)
                {
                    self.index.push((self.end, self.len));
                }
                pos += len;
                self.len += len as u64;
                self.end += 1;
                continue;
            }
            if eof {
                // A torn or corrupt tail, or the end: stop before it.
                break;
            }
            // Keep the partial frame and read on: about what the records
            // still wanted take at the segment's average size so far, and
            // the whole frame when its header says it is longer.
            buf.drain(..pos);
            pos = 0;
            let frame = match buf.get(..4) {
                Some(h) => {
                    let body = u32::from_le_bytes(h.try_into().expect("4 bytes")) as usize;
                    (FRAME_HEADER + body.min(MAX_BODY)).saturating_sub(buf.len())
                }
                None => 0,
            };
            let average = match self.end - self.base {
                0 => 128,
                n => self.len / n + 1,
            };
            let estimate = (target - self.end)
                .saturating_mul(average)
                .clamp(SCAN_MIN as u64, SCAN_MAX as u64) as usize;
            let want = frame.max(estimate);
            // Room first: `read_to_end` into a full buffer reads in small,
            // growing pieces, a syscall each.
            buf.reserve(want);
            let got = (&mut f)
                .take(want as u64)
                .read_to_end(&mut buf)
                .map_err(self.io())?;
            read += got as u64;
            eof = got < want;
        }
        Ok(Some(read))
    }

    /// The segment's bytes from `pos` up to `stop`.
    pub(super) fn bytes(&self, pos: u64, stop: u64) -> Result<Vec<u8>, LogError> {
        let mut f = File::open(&self.path).map_err(self.io())?;
        f.seek(SeekFrom::Start(pos)).map_err(self.io())?;
        let want = stop.saturating_sub(pos);
        let mut buf = Vec::with_capacity(usize::try_from(want).unwrap_or(0).min(64 << 20));
        f.take(want).read_to_end(&mut buf).map_err(self.io())?;
        Ok(buf)
    }
}
