//! Running recorded batches again, for `weir replay`: the query takes each
//! batch's `offsets/N` entry as a re-run takes an uncommitted one (its
//! exact ranges, processing time and watermark), so a candidate transform
//! sees what the live one saw. Nothing is planned beyond the recorded
//! batches, and the sources are not told of commits (a Kafka source would
//! otherwise move its monitoring group's offsets).

use super::MicroBatchQuery;
use crate::wal::OffsetEntry;

impl MicroBatchQuery {
    /// Run exactly `entries`, in order, then stop. The checkpoint must
    /// resume at the first of them: fresh for batch 0, else holding the
    /// committed batch before it (and its state version).
    pub fn replay(&mut self, entries: Vec<OffsetEntry>) {
        self.replay = Some(entries.into());
    }

    /// The next recorded batch, with the watermark it ran with; `None`
    /// when all have run.
    pub(super) fn next_replayed(&mut self) -> Option<OffsetEntry> {
        let entry = self.replay.as_mut()?.pop_front()?;
        self.watermark = entry.watermark.clone().unwrap_or_default();
        Some(entry)
    }
}
