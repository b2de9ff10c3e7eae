//! Files appearing in a directory, one record per line (like Spark's file
//! source). Files are taken in (modification time, name) order, at most
//! `max-files-per-trigger` per batch and as many as fit in
//! `max-bytes-per-trigger`; a file larger than that is split across batches
//! at line boundaries (see `position`). Every file ever listed is recorded in
//! the checkpoint (`sources/<i>/<n>`) before a batch uses it, so a re-run
//! batch reads exactly the same files. Offsets: the number of files consumed,
//! or `{files, byte, line}` while one is part-read.
//!
//! Records: value = the line; partition = the file's index in that list;
//! offset = the line number (from 1), so errors point at "file k, line n".

use std::collections::HashSet;
use std::io::Read;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use weir_engine::durable::{encode_entry, read_entry};
use weir_engine::{ConnectorError, Offset, RecordBatch, Source, SourceCheckpoint};

/// How a file source reads lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineFormat {
    /// JSON lines: blank lines are skipped.
    Json,
    /// Every line is a record, blank ones included.
    Raw,
}

mod position;
use position::Position;

/// The longest line taken as a record (1 GiB): a batch's columns address
/// at most 4 GiB.
const MAX_LINE: usize = 1 << 30;

pub struct FileSource {
    dir: PathBuf,
    format: LineFormat,
    max_files_per_trigger: Option<usize>,
    max_bytes_per_trigger: u64,
    checkpoint: Option<SourceCheckpoint>,
    files: Vec<String>,
    seen: HashSet<String>,
    log_entries: u64,
    /// Files are spread over this many transform tasks (one per core).
    tasks: u32,
    /// The bytes planning read to cut the last file of the batch it
    /// planned, `(file, from, bytes)`, for the read of that batch.
    prefetched: Option<(usize, u64, Vec<u8>)>,
}

impl FileSource {
    pub fn new(dir: PathBuf, format: LineFormat, max_files_per_trigger: Option<usize>) -> Self {
        FileSource {
            dir,
            format,
            max_files_per_trigger,
            max_bytes_per_trigger: super::DEFAULT_MAX_BYTES_PER_TRIGGER,
            checkpoint: None,
            files: vec![],
            seen: HashSet::new(),
            log_entries: 0,
            tasks: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            prefetched: None,
        }
    }

    /// Batches take about `bytes` of input (a file over it is cut at a line
    /// boundary).
    pub fn with_max_bytes_per_trigger(mut self, bytes: u64) -> Self {
        self.max_bytes_per_trigger = bytes;
        self
    }

    fn list_new(&self) -> Result<Vec<String>, ConnectorError> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| ConnectorError(format!("{}: {e}", self.dir.display())))?;
        let mut new = Vec::new();
        for entry in entries {
            let entry =
                entry.map_err(|e| ConnectorError(format!("{}: {e}", self.dir.display())))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            // Hidden and underscore files are in-progress or metadata by convention.
            if name.starts_with('.') || name.starts_with('_') || self.seen.contains(&name) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let mtime = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .unwrap_or_default();
            new.push((mtime, name));
        }
        new.sort();
        Ok(new.into_iter().map(|(_, n)| n).collect())
    }

    /// The lines of file `index` from byte `from` (line number `line` + 1)
    /// up to byte `until` (the end when `None`), in about one batch per
    /// transform task (none under 1 MiB), so that one large file is still
    /// transformed on every core.
    fn read_file(
        &mut self,
        index: usize,
        (from, line, until): (u64, i64, Option<u64>),
        pieces: &mut Vec<RecordBatch>,
    ) -> Result<(), ConnectorError> {
        let path = self.dir.join(&self.files[index]);
        let err = |e: std::io::Error| ConnectorError(format!("{}: {e}", path.display()));
        let mut f = std::fs::File::open(&path).map_err(err)?;
        let mtime = f
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        // The bytes planning read to place the cut, when this is that range.
        let bytes = match self.prefetched.take() {
            Some((i, f, bytes))
                if i == index && f == from && until == Some(from + bytes.len() as u64) =>
            {
                bytes
            }
            _ => {
                std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(from)).map_err(err)?;
                let mut bytes = Vec::new();
                match until {
                    Some(u) => {
                        std::io::Read::take(&mut f, u.saturating_sub(from)).read_to_end(&mut bytes)
                    }
                    None => f.read_to_end(&mut bytes),
                }
                .map_err(err)?;
                bytes
            }
        };
        let piece_bytes = (bytes.len() / self.tasks as usize).max(1 << 20);
        // Pieces sized up front from the file's line count: grown by
        // doubling, their columns were copied and faulted in again and
        // again (2% of W3's time). Counting every line (memchr, a few GB/s)
        // bounds the reservation by what the file holds, where an estimate
        // from a sample of short lines could reserve far more.
        let lines = memchr::memchr_iter(b'\n', &bytes).count() + 1;
        let piece = |start: usize| {
            let left = bytes.len() - start;
            let piece = left.min(piece_bytes.saturating_add(4096));
            let records = lines.saturating_mul(piece) / bytes.len().max(1) + 1;
            RecordBatch::with_capacity(index as u32, records, piece)
        };
        let mut out = piece(0);
        let mut n = line;
        let mut start = 0;
        while start < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
            let at = start;
            let mut line = &bytes[start..end];
            start = end + 1;
            n += 1;
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if self.format == LineFormat::Json && line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if line.len() > MAX_LINE {
                return Err(ConnectorError(format!(
                    "{} line {n}: {} bytes, longer than the {MAX_LINE} a record may have",
                    path.display(),
                    line.len()
                )));
            }
            if out.columns().data_len() >= piece_bytes {
                pieces.push(std::mem::replace(&mut out, piece(at)));
            }
            out.push(None, line, mtime, n);
        }
        if !out.is_empty() {
            pieces.push(out);
        }
        Ok(())
    }

    fn size(&self, index: usize) -> Result<u64, ConnectorError> {
        let path = self.dir.join(&self.files[index]);
        std::fs::metadata(&path)
            .map(|m| m.len())
            .map_err(|e| ConnectorError(format!("{}: {e}", path.display())))
    }
}

impl Source for FileSource {
    fn identity(&self) -> String {
        format!("files:{}", self.dir.display())
    }

    /// Partition `p` is the `p`th file listed; offsets are its line numbers.
    fn locate(&self, partition: u32, offset: i64) -> Option<String> {
        let file = self.files.get(partition as usize)?;
        Some(format!("{}, line {offset}", self.dir.join(file).display()))
    }

    fn attach(&mut self, checkpoint: SourceCheckpoint) -> Result<(), ConnectorError> {
        for n in checkpoint
            .store
            .list_numbered(&checkpoint.dir)
            .map_err(|e| ConnectorError(e.to_string()))?
        {
            let path = format!("{}/{n}", checkpoint.dir);
            let names: Vec<String> = read_entry(&*checkpoint.store, &path)
                .map_err(|e| ConnectorError(e.to_string()))?
                .unwrap_or_default();
            for name in names {
                self.seen.insert(name.clone());
                self.files.push(name);
            }
            self.log_entries = n + 1;
        }
        self.checkpoint = Some(checkpoint);
        Ok(())
    }

    fn initial_offset(&mut self) -> Result<Offset, ConnectorError> {
        Ok(Position::whole(0).to_offset())
    }

    fn latest_offset(&mut self) -> Result<Offset, ConnectorError> {
        let new = self.list_new()?;
        if !new.is_empty() {
            let cp = self
                .checkpoint
                .as_ref()
                .ok_or_else(|| ConnectorError("file source used before attach".into()))?;
            // Durable before any offsets entry can refer to these files.
            let path = format!("{}/{}", cp.dir, self.log_entries);
            cp.store
                .write(&path, &encode_entry(&new))
                .map_err(|e| ConnectorError(e.to_string()))?;
            self.log_entries += 1;
            for name in new {
                self.seen.insert(name.clone());
                self.files.push(name);
            }
        }
        Ok(Position::whole(self.files.len()).to_offset())
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let (start, upto) = (Position::from_offset(start)?, Position::from_offset(upto)?);
        // Files this batch may touch, the part-read one counting as one.
        let last = match self.max_files_per_trigger {
            Some(m) => upto.files.min(start.files + m),
            None => upto.files,
        };
        // Whole files while they fit in the byte budget; the file that does
        // not is cut at a line boundary to fill it (so batches are about the
        // budget each), or, when not even its first line fits the rest of
        // the budget, left for the next batch (a first line longer than the
        // whole budget is a batch of its own).
        let budget = self.max_bytes_per_trigger;
        let mut taken = 0u64;
        let mut from = start.byte;
        for i in start.files..last {
            let size = self.size(i)?;
            let rest = size.saturating_sub(from);
            if taken.saturating_add(rest) <= budget {
                taken += rest;
                from = 0;
                continue;
            }
            let path = self.dir.join(&self.files[i]);
            let room = budget - taken;
            return Ok(match position::cut(&path, size, from, room)? {
                // Its first line is longer than the room left (or, with no
                // cut, the whole rest is one line).
                Some(c) if taken > 0 && c.byte - from > room => Position::whole(i),
                None if taken > 0 => Position::whole(i),
                Some(c) => {
                    let end = Position {
                        files: i,
                        byte: c.byte,
                        line: if i == start.files { start.line } else { 0 } + c.lines,
                    };
                    self.prefetched = Some((i, from, c.bytes));
                    end
                }
                None => Position::whole(i + 1),
            }
            .to_offset());
        }
        Ok(Position::whole(last.max(start.files)).to_offset())
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        let (start, end) = (Position::from_offset(start)?, Position::from_offset(end)?);
        let touched = end.files + usize::from(end.byte > 0);
        if touched > self.files.len() {
            return Err(ConnectorError(format!(
                "offset {} refers to files this source never listed (the checkpoint's sources/ log has {})",
                end.to_offset(),
                self.files.len()
            )));
        }
        let mut out = Vec::new();
        for i in start.files..touched {
            let (from, line) = if i == start.files {
                (start.byte, start.line)
            } else {
                (0, 0)
            };
            let until = (i == end.files).then_some(end.byte);
            self.read_file(i, (from, line, until), &mut out)?;
        }
        Ok(out)
    }

    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        // Lag in files, not records: reading them to count would cost a pass.
        let (a, b) = (
            Position::from_offset(offset).ok()?,
            Position::from_offset(latest).ok()?,
        );
        Some(b.files.saturating_sub(a.files) as u64)
    }

    fn task_of(&self, _partition: u32, piece: usize) -> u32 {
        (piece % self.tasks as usize) as u32
    }
}

#[cfg(test)]
mod tests;
