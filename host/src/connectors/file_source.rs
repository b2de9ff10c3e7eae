//! Files appearing in a directory, one record per line (like Spark's file
//! source). Files are taken in (modification time, name) order, at most
//! `max-files-per-trigger` per batch and as many as fit in
//! `max-bytes-per-trigger` (at least one); every file ever listed is recorded in
//! the checkpoint (`sources/<i>/<n>`) before a batch uses it, so a re-run
//! batch reads exactly the same files. Offsets: the number of files consumed.
//!
//! Records: value = the line; partition = the file's index in that list;
//! offset = the line number (from 1), so errors point at "file k, line n".

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde_json::json;

use crate::engine::checkpoint::{encode_entry, read_entry};
use crate::engine::{ConnectorError, Offset, RecordBatch, Source, SourceCheckpoint};

pub use crate::spec::LineFormat;

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
        }
    }

    /// Batches take files up to `bytes` in all (at least one file).
    pub fn with_max_bytes_per_trigger(mut self, bytes: u64) -> Self {
        self.max_bytes_per_trigger = bytes;
        self
    }

    fn index(o: &Offset) -> Result<usize, ConnectorError> {
        o.as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| ConnectorError(format!("file source offset {o} is not a file count")))
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

    fn read_file(
        &self,
        index: usize,
        path: &Path,
        out: &mut RecordBatch,
    ) -> Result<(), ConnectorError> {
        let bytes =
            std::fs::read(path).map_err(|e| ConnectorError(format!("{}: {e}", path.display())))?;
        let mtime = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        out.partition = index as u32;
        let mut lines = bytes.split(|b| *b == b'\n').peekable();
        let mut n = 0i64;
        while let Some(mut line) = lines.next() {
            n += 1;
            if lines.peek().is_none() && line.is_empty() {
                break; // the final newline
            }
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if self.format == LineFormat::Json && line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            out.push(None, line, mtime, n);
        }
        Ok(())
    }
}

impl Source for FileSource {
    fn description(&self) -> String {
        format!("files:{}", self.dir.display())
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
        Ok(json!(0))
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
        Ok(json!(self.files.len()))
    }

    fn next_end(&mut self, start: &Offset, upto: &Offset) -> Result<Offset, ConnectorError> {
        let (start, upto) = (Self::index(start)?, Self::index(upto)?);
        let mut end = match self.max_files_per_trigger {
            Some(m) => upto.min(start + m),
            None => upto,
        };
        // As many files as fit in the byte budget, at least one.
        let mut bytes = 0u64;
        for i in start..end {
            let path = self.dir.join(&self.files[i]);
            let size = std::fs::metadata(&path)
                .map_err(|e| ConnectorError(format!("{}: {e}", path.display())))?
                .len();
            bytes = bytes.saturating_add(size);
            if i > start && bytes > self.max_bytes_per_trigger {
                end = i;
                break;
            }
        }
        Ok(json!(end.max(start)))
    }

    fn read(&mut self, start: &Offset, end: &Offset) -> Result<Vec<RecordBatch>, ConnectorError> {
        let (start, end) = (Self::index(start)?, Self::index(end)?);
        if end > self.files.len() {
            return Err(ConnectorError(format!(
                "offset {end} refers to files this source never listed (the checkpoint's sources/ log has {})",
                self.files.len()
            )));
        }
        let mut out = Vec::new();
        for i in start..end {
            let mut b = RecordBatch::new(i as u32);
            self.read_file(i, &self.dir.join(&self.files[i]), &mut b)?;
            out.push(b);
        }
        Ok(out)
    }

    fn records_between(&self, offset: &Offset, latest: &Offset) -> Option<u64> {
        // Lag in files, not records: reading them to count would cost a pass.
        Some((Self::index(latest).ok()?).saturating_sub(Self::index(offset).ok()?) as u64)
    }

    fn task_of(&self, partition: u32) -> u32 {
        partition % self.tasks
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::engine::LocalCheckpointStore;

    #[test]
    fn batches_take_files_up_to_the_byte_budget_and_at_least_one() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::create_dir(&input).unwrap();
        // Five files of 100, 100, 300, 50 and 50 bytes, in name order.
        for (i, n) in [100, 100, 300, 50, 50].into_iter().enumerate() {
            let line = format!("{}\n", "x".repeat(n - 1));
            std::fs::write(input.join(format!("{i}.txt")), line).unwrap();
        }
        let store = Arc::new(LocalCheckpointStore::open(dir.path().join("cp")).unwrap());
        let mut s = FileSource::new(input, LineFormat::Raw, None).with_max_bytes_per_trigger(250);
        s.attach(SourceCheckpoint {
            store,
            dir: "sources/0".into(),
        })
        .unwrap();
        let latest = s.latest_offset().unwrap();
        let mut ends = vec![];
        let mut at = json!(0);
        while at != latest {
            let end = s.next_end(&at, &latest).unwrap();
            let read: usize = s
                .read(&at, &end)
                .unwrap()
                .iter()
                .map(|b| b.values.len())
                .sum();
            let files = FileSource::index(&end).unwrap() - FileSource::index(&at).unwrap();
            assert!(read <= 250 || files == 1, "{read} bytes in {files} files");
            ends.push(end.clone());
            at = end;
        }
        // 100 + 100; 300 alone (over the budget, but one file always goes);
        // 50 + 50.
        assert_eq!(ends, vec![json!(2), json!(3), json!(5)]);
    }
}
