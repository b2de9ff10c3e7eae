//! One partition: segment files `<base-offset>.log`, offsets = record index.
//! The in-memory state is a sparse index (offset -> file position) built by
//! scanning only the segments a read or a truncation needs (a segment's
//! offsets start at the base in its name), and is only ever trusted up to a
//! known committed end.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::LogError;
use super::record::{FRAME_HEADER, MAX_BODY, decode, encode, frame_len};
use segment::{INDEX_EVERY, Segment};
use weir_engine::{RecordBatch, RecordRef};

mod index_file;
mod segment;
mod written;

pub(crate) struct Partition {
    dir: PathBuf,
    segments: Vec<Segment>,
    segment_bytes: u64,
    read_bytes: u64,
}

fn seg_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

impl Partition {
    pub(crate) fn open(dir: PathBuf, segment_bytes: u64) -> Result<Self, LogError> {
        weir_engine::durable::create_dir_all(&dir).map_err(|err| LogError::Io {
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
            .map(|base| Segment::empty(base, seg_path(&dir, base)))
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

    /// Index the records of `[from, to)`: each segment holding some of
    /// them, from where it was scanned to up to `to` (or its end), so a
    /// read near the end of a long partition does not scan its start.
    /// With `strict`, records up to `to` must be there (they are
    /// committed); without, the scan stops where the written data does.
    fn scan_range(&mut self, from: u64, to: u64, strict: bool) -> Result<(), LogError> {
        let mut i = 0;
        while i < self.segments.len() {
            let next_base = self.segments.get(i + 1).map(|s| s.base);
            i += 1;
            if next_base.is_some_and(|b| b <= from) {
                continue;
            }
            let seg = &mut self.segments[i - 1];
            if seg.base >= to {
                break;
            }
            let want = next_base.map_or(to, |b| b.min(to));
            if seg.end >= want {
                continue;
            }
            let read = seg.scan(want)?;
            self.read_bytes += read.unwrap_or(0);
            if seg.end >= want {
                continue;
            }
            // A writer rolls to a segment named by the end of the last one:
            // one that rolled after this handle opened is found here.
            let rolled = seg_path(&self.dir, seg.end);
            if next_base.is_none() && seg.end > seg.base && rolled.exists() {
                let base = seg.end;
                self.segments.push(Segment::empty(base, rolled));
                continue;
            }
            if !strict {
                return Ok(());
            }
            // Gone or short: the committed records are not all there.
            return Err(LogError::Corrupt {
                path: seg.path.clone(),
                problem: format!(
                    "records up to offset {want} are committed but only {} are readable",
                    seg.end
                ),
            });
        }
        Ok(())
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
        self.scan_range(from, to, true)?;
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
                    out.push_record(&RecordRef::new(
                        d.key,
                        d.value,
                        d.headers,
                        d.timestamp,
                        cur as i64,
                    ));
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
    /// caller holds the topic lock. `before_cut` runs before the first byte
    /// goes (the topic logs the cut there, for readers of uncommitted
    /// records), and not at all when there is nothing to cut.
    pub(crate) fn truncate_to(
        &mut self,
        committed: u64,
        before_cut: &mut dyn FnMut() -> Result<(), LogError>,
    ) -> Result<(), LogError> {
        self.list_new_segments()?;
        while self.segments.len() > 1
            && self.segments.last().unwrap().base >= committed
            && self.segments.last().unwrap().base > 0
        {
            before_cut()?;
            let seg = self.segments.pop().unwrap();
            // Only uncommitted records: its index file has no entries.
            let _ = std::fs::remove_file(index_file::path_of(&seg.path));
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
        // The last segment now holds the committed end.
        self.scan_range(committed.saturating_sub(1), committed, true)?;
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
                if f.metadata().map_err(io)?.len() > pos {
                    before_cut()?;
                    f.set_len(pos).map_err(io)?;
                    f.sync_all().map_err(io)?;
                }
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

    /// Write the index entries of records below `committed`, which a
    /// commit entry has just made durable, to the segments' index files.
    pub(crate) fn persist_index(&mut self, committed: u64) -> Result<(), LogError> {
        for seg in &mut self.segments {
            seg.persist_index(committed)?;
        }
        Ok(())
    }

    /// Append `batch` after the current end, with `sync` durably; returns
    /// the new end.
    pub(crate) fn append(&mut self, batch: &RecordBatch, sync: bool) -> Result<u64, LogError> {
        let mut buf = Vec::with_capacity(batch.columns().data_len() + batch.len() * 32);
        let mut i = 0;
        while i < batch.len() {
            let seg_len = self.segments.last().unwrap().len;
            if seg_len >= self.segment_bytes {
                let base = self.scanned_end();
                // Its file is created by the write below, and named on
                // disk (the directory fsynced) after it when `sync`.
                self.segments
                    .push(Segment::empty(base, seg_path(&self.dir, base)));
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
            let created = seg.len == 0 && !seg.path.exists();
            let f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&seg.path)
                .map_err(io)?;
            let mut w = BufWriter::new(f);
            w.write_all(&buf).map_err(io)?;
            let f = w.into_inner().map_err(|e| io(e.into_error()))?;
            if sync {
                f.sync_data().map_err(io)?;
                if created {
                    weir_engine::durable::sync_dir(&self.dir).map_err(|err| LogError::Io {
                        path: self.dir.clone(),
                        err,
                    })?;
                }
            }
            seg.len += buf.len() as u64;
        }
        Ok(self.scanned_end())
    }
}
