//! A partition beyond its committed end: what readers of uncommitted
//! records and the epoch writer need. The in-memory index past the commit
//! is trusted only until the next cut, which [`Partition::forget_from`]
//! undoes.

use std::path::PathBuf;

use super::{Partition, Segment, seg_path};
use crate::LogError;
use weir_engine::RecordBatch;

impl Partition {
    /// Segment files written after this handle listed the directory (a
    /// crashed writer's roll-over past the commit), added unscanned so a
    /// cut removes them too.
    pub(crate) fn list_new_segments(&mut self) -> Result<(), LogError> {
        let last = self.segments.last().map_or(0, |s| s.base);
        let entries = std::fs::read_dir(&self.dir).map_err(|err| LogError::Io {
            path: self.dir.clone(),
            err,
        })?;
        let mut bases: Vec<u64> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().to_str()?.strip_suffix(".log")?.parse().ok())
            .filter(|b| *b > last)
            .collect();
        bases.sort_unstable();
        for base in bases {
            self.segments
                .push(Segment::empty(base, seg_path(&self.dir, base)));
        }
        Ok(())
    }

    /// Append up to `max` records written from `from` on, committed or not,
    /// to `out` (a torn record being written ends the read); returns the
    /// position after them.
    pub(crate) fn read_written(
        &mut self,
        from: u64,
        max: usize,
        out: &mut RecordBatch,
    ) -> Result<u64, LogError> {
        let to = from.saturating_add(max as u64);
        self.scan_range(from, to, false)?;
        let to = to.min(self.scanned_end());
        self.read(from, to, out)?;
        Ok(to.max(from))
    }

    /// Forget what was scanned from offset `cut` on (a writer removed it):
    /// the next read scans the files again from an index entry before it.
    pub(crate) fn forget_from(&mut self, cut: u64) {
        while self.segments.len() > 1 && self.segments.last().is_some_and(|s| s.base >= cut) {
            self.segments.pop();
        }
        let seg = self.segments.last_mut().expect("a partition has a segment");
        if seg.end <= cut {
            return;
        }
        seg.index.retain(|(o, _)| *o <= cut);
        let (end, len) = seg.index.last().copied().unwrap_or((seg.base, 0));
        seg.index.pop();
        seg.end = end;
        seg.len = len;
        seg.cursor = None;
    }

    /// The files of the segments holding offsets from `from` on (what an
    /// epoch's commit makes durable).
    pub(crate) fn files_from(&self, from: u64) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for (i, seg) in self.segments.iter().enumerate() {
            let next = self.segments.get(i + 1).map_or(u64::MAX, |s| s.base);
            if next > from && seg.end > seg.base {
                files.push(seg.path.clone());
            }
        }
        files
    }

    /// This partition's directory if a segment holding records was created
    /// after `from` was committed: its name is durable only once the
    /// directory is fsynced.
    pub(crate) fn dir_with_new_segments(&self, from: u64) -> Option<PathBuf> {
        self.segments
            .iter()
            .any(|s| s.base >= from && s.end > s.base)
            .then(|| self.dir.clone())
    }
}
