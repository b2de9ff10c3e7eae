//! One partition: segment files `<base-offset>.log`, offsets = record index.
//! The in-memory state is a sparse index (offset -> file position) built by
//! scanning, and is only ever trusted up to a known committed end.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::LogError;
use super::record::{FRAME_HEADER, MAX_BODY, decode, encode, frame_len};
use crate::engine::batch::RecordBatch;

/// One sparse index entry per this many records.
const INDEX_EVERY: u64 = 512;
/// A scan reads about what the records it wants take, at least this much
/// and at most this much per read (more for one larger record).
const SCAN_MIN: usize = 4 << 10;
const SCAN_MAX: usize = 4 << 20;

#[derive(Debug)]
struct Segment {
    base: u64,
    path: PathBuf,
    /// Bytes of valid records scanned so far.
    len: u64,
    /// Offset just past the last scanned record.
    end: u64,
    /// `(offset, position)` pairs, ascending.
    index: Vec<(u64, u64)>,
    /// Where the last read ended, `(offset, position)`: the next read of a
    /// reader that follows the data starts there instead of at an index
    /// entry up to `INDEX_EVERY` records back.
    cursor: Option<(u64, u64)>,
}

pub(crate) struct Partition {
    dir: PathBuf,
    segments: Vec<Segment>,
    segment_bytes: u64,
    read_bytes: u64,
}

fn seg_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

impl Segment {
    fn io(&self) -> impl Fn(std::io::Error) -> LogError + '_ {
        |err| LogError::Io {
            path: self.path.clone(),
            err,
        }
    }

    /// The index entry at or before `offset`: where to start scanning.
    fn index_before(&self, offset: u64) -> (u64, u64) {
        self.index
            .iter()
            .rev()
            .find(|(o, _)| *o <= offset)
            .copied()
            .unwrap_or((self.base, 0))
    }

    /// The closest known position at or before `offset`: the index's or
    /// the last read's end.
    fn position_before(&self, offset: u64) -> (u64, u64) {
        let indexed = self.index_before(offset);
        match self.cursor {
            Some(c) if c.0 <= offset && c.0 >= indexed.0 => c,
            _ => indexed,
        }
    }

    /// Index records from `end` until `target` (or the valid data ends),
    /// reading in chunks: a small step into a big segment reads about the
    /// step. Returns the bytes read, `None` when the file is gone.
    fn scan(&mut self, target: u64) -> Result<Option<u64>, LogError> {
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
    fn bytes(&self, pos: u64, stop: u64) -> Result<Vec<u8>, LogError> {
        let mut f = File::open(&self.path).map_err(self.io())?;
        f.seek(SeekFrom::Start(pos)).map_err(self.io())?;
        let mut buf = Vec::new();
        f.take(stop.saturating_sub(pos))
            .read_to_end(&mut buf)
            .map_err(self.io())?;
        Ok(buf)
    }
}

impl Partition {
    pub(crate) fn open(dir: PathBuf, segment_bytes: u64) -> Result<Self, LogError> {
        std::fs::create_dir_all(&dir).map_err(|err| LogError::Io {
            path: dir.clone(),
            err,
        })?;
        let mut bases: Vec<u64> = std::fs::read_dir(&dir)
            .map_err(|err| LogError::Io {
                path: dir.clone(),
                err,
            })?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".log")?.parse().ok()
            })
            .collect();
        bases.sort_unstable();
        if bases.is_empty() {
            bases.push(0);
        }
        let segments = bases
            .into_iter()
            .map(|base| Segment {
                base,
                path: seg_path(&dir, base),
                len: 0,
                end: base,
                index: vec![(base, 0)],
                cursor: None,
            })
            .collect();
        Ok(Partition {
            dir,
            segments,
            segment_bytes,
            read_bytes: 0,
        })
    }

    /// Offset just past the last record scanned so far.
    pub(crate) fn scanned_end(&self) -> u64 {
        self.segments.last().map_or(0, |s| s.end)
    }

    /// Scan forward until `target` records are indexed (or the data ends).
    /// Returns the offset reached.
    pub(crate) fn scan_to(&mut self, target: u64) -> Result<u64, LogError> {
        let n = self.segments.len();
        for i in 0..n {
            let next_base = self.segments.get(i + 1).map(|s| s.base);
            let seg = &mut self.segments[i];
            if seg.end >= target {
                break;
            }
            if next_base.is_some_and(|b| seg.end >= b) {
                continue;
            }
            // A segment that is gone ends what is readable.
            let Some(read) = seg.scan(target)? else {
                break;
            };
            self.read_bytes += read;
        }
        Ok(self.scanned_end())
    }

    /// Bytes read from segment files so far, by scans and reads.
    #[cfg(test)]
    pub(crate) fn read_bytes(&self) -> u64 {
        self.read_bytes
    }

    /// Append the records of `(start, end]` of partition data into `out`.
    pub(crate) fn read(
        &mut self,
        from: u64,
        to: u64,
        out: &mut RecordBatch,
    ) -> Result<(), LogError> {
        if from >= to {
            return Ok(());
        }
        if self.scan_to(to)? < to {
            return Err(LogError::Corrupt {
                path: self.dir.clone(),
                problem: format!(
                    "records up to offset {to} are committed but only {} are readable",
                    self.scanned_end()
                ),
            });
        }
        let mut offset = from;
        for seg in &mut self.segments {
            if offset >= to {
                break;
            }
            if seg.end <= offset {
                continue;
            }
            let (idx_off, pos) = seg.position_before(offset);
            // Read only up to `to`'s position when scanned up to it, else
            // the first indexed position past it.
            let stop = if to >= seg.end {
                seg.len
            } else {
                seg.index
                    .iter()
                    .find(|(o, _)| *o > to)
                    .map_or(seg.len, |(_, p)| *p)
            };
            let buf = seg.bytes(pos, stop)?;
            self.read_bytes += buf.len() as u64;
            let mut p = 0usize;
            let mut cur = idx_off;
            while cur < to.min(seg.end) {
                let len = frame_len(&buf[p..]).ok_or_else(|| LogError::Corrupt {
                    path: seg.path.clone(),
                    problem: format!("record {cur} failed its CRC check"),
                })?;
                if cur >= offset {
                    let d = decode(&buf[p..p + len]).ok_or_else(|| LogError::Corrupt {
                        path: seg.path.clone(),
                        problem: format!("record {cur} is malformed"),
                    })?;
                    out.push_raw_value(d.key, d.value, d.headers, d.timestamp, cur as i64);
                }
                p += len;
                cur += 1;
            }
            seg.cursor = Some((cur, pos + p as u64));
            offset = cur;
        }
        Ok(())
    }

    /// Whether the files hold exactly the records up to `committed` that this
    /// handle has scanned (no other writer's data, no crashed writer's bytes).
    pub(crate) fn is_clean(&self, committed: u64) -> bool {
        let Some(seg) = self.segments.last() else {
            return false;
        };
        seg.end == committed
            && std::fs::metadata(&seg.path).map_or(seg.len == 0, |m| m.len() == seg.len)
            && !seg_path(&self.dir, seg.end).exists()
    }

    /// Cut everything past `committed` (a crashed writer's leftovers): the
    /// caller holds the topic lock.
    pub(crate) fn truncate_to(&mut self, committed: u64) -> Result<(), LogError> {
        self.scan_to(committed)?;
        if self.scanned_end() < committed {
            return Err(LogError::Corrupt {
                path: self.dir.clone(),
                problem: format!(
                    "commit says {committed} records but only {} are readable",
                    self.scanned_end()
                ),
            });
        }
        while self.segments.len() > 1
            && self.segments.last().unwrap().base >= committed
            && self.segments.last().unwrap().base > 0
        {
            let seg = self.segments.pop().unwrap();
            // A segment of uncommitted records left in place would be read
            // again after the next append: failing to remove it is an error.
            match std::fs::remove_file(&seg.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(LogError::Io {
                        path: seg.path.clone(),
                        err,
                    });
                }
            }
        }
        let seg = self.segments.last_mut().unwrap();
        // Find the byte position of `committed` inside the last segment.
        let mut pos = 0;
        if committed > seg.base {
            let (o, p) = seg.index_before(committed);
            let buf = seg.bytes(p, u64::MAX)?;
            let mut q = 0usize;
            for _ in o..committed {
                q += frame_len(&buf[q..]).expect("scanned above");
            }
            pos = p + q as u64;
        }
        // The next append must land right after the committed records, so
        // the cut has to happen (and be durable) or the truncation fails.
        let io = |err| LogError::Io {
            path: seg.path.clone(),
            err,
        };
        match OpenOptions::new().write(true).open(&seg.path) {
            Ok(f) => {
                f.set_len(pos).map_err(io)?;
                f.sync_all().map_err(io)?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && pos == 0 => {}
            Err(err) => return Err(io(err)),
        }
        seg.len = pos;
        seg.end = committed;
        seg.index.retain(|(o, _)| *o < committed || *o == seg.base);
        seg.cursor = seg.cursor.filter(|(o, _)| *o <= committed);
        Ok(())
    }

    /// Append `batch` after the current end and fsync; returns the new end.
    pub(crate) fn append(&mut self, batch: &RecordBatch) -> Result<u64, LogError> {
        let mut buf = Vec::with_capacity(batch.values.len() + batch.len() * 32);
        let mut i = 0;
        while i < batch.len() {
            let seg_len = self.segments.last().unwrap().len;
            if seg_len >= self.segment_bytes {
                let base = self.scanned_end();
                self.segments.push(Segment {
                    base,
                    path: seg_path(&self.dir, base),
                    len: 0,
                    end: base,
                    index: vec![(base, 0)],
                    cursor: None,
                });
                crate::engine::checkpoint::sync_dir(&self.dir).map_err(|err| LogError::Io {
                    path: self.dir.clone(),
                    err,
                })?;
            }
            let seg = self.segments.last_mut().unwrap();
            buf.clear();
            // Fill this segment up to its size limit.
            while i < batch.len() && (seg.len + buf.len() as u64) < self.segment_bytes {
                let r = batch.get(i);
                if r.value.len()
                    + r.key.map_or(0, <[u8]>::len)
                    + r.headers.len()
                    + FRAME_HEADER
                    + 24
                    > MAX_BODY
                {
                    return Err(LogError::TooLarge {
                        size: r.value.len(),
                        max: MAX_BODY,
                    });
                }
                if (seg.end - seg.base).is_multiple_of(INDEX_EVERY) {
                    seg.index.push((seg.end, seg.len + buf.len() as u64));
                }
                encode(&mut buf, &r);
                seg.end += 1;
                i += 1;
            }
            let io = |err| LogError::Io {
                path: seg.path.clone(),
                err,
            };
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&seg.path)
                .map_err(io)?;
            let mut w = BufWriter::new(f);
            w.write_all(&buf).map_err(io)?;
            let f = w.into_inner().map_err(|e| io(e.into_error()))?;
            f.sync_data().map_err(io)?;
            seg.len += buf.len() as u64;
        }
        Ok(self.scanned_end())
    }
}
