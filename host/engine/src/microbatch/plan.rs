//! Deciding the next batch: its offset range (or why there is none), by
//! the trigger's rules. Deciding has no side effect outside the query's
//! memory, so the next batch may be decided while the previous one
//! commits (see `ahead.rs`).

use std::time::{Duration, Instant};

use super::MicroBatchQuery;
use crate::connector::Offset;
use crate::options::{EngineError, Trigger};
use crate::wal::{OffsetEntry, OffsetRange};

/// Where the loop stands between batches.
pub(super) struct Cursor {
    /// The id the next batch gets.
    pub batch_id: u64,
    /// Where each source's next range starts.
    pub start: Vec<Offset>,
    /// A batch to run again over its recorded range (a crashed run's).
    pub pending: Option<OffsetEntry>,
    /// Once and AvailableNow: the latest offsets when the run started.
    pub snapshot: Option<Vec<Offset>>,
    /// The watermark the previous batch ran with (unknown after a restart).
    pub last_watermark: Option<i64>,
}

/// A batch decided and not yet written ahead.
pub(super) struct Planned {
    pub entry: OffsetEntry,
    /// The sources' latest offsets when it was decided.
    pub latest: Vec<Offset>,
    /// A crashed run's batch, run again over its recorded range.
    pub rerun: bool,
    /// The backpressure limit it was decided under.
    pub limit: Option<u64>,
    pub trigger_start: Instant,
    /// Asking the sources for their latest offsets.
    pub latest_offset: Duration,
}

impl Planned {
    /// Whether more input than this batch takes was already known when it
    /// was decided (a catch-up, or AvailableNow's later batches).
    pub fn more_known(&self, snapshot: Option<&Vec<Offset>>) -> bool {
        let upto = snapshot.unwrap_or(&self.latest);
        self.entry
            .sources
            .iter()
            .zip(upto)
            .any(|(r, latest)| r.end != *latest)
    }
}

pub(super) enum Plan {
    Batch(Box<Planned>),
    /// No input and nothing for the watermark to fire: the trigger waits
    /// (Default, ProcessingTime) from `trigger_start`.
    Idle {
        trigger_start: Instant,
    },
    /// Bounded input moved the watermark to its end: decide again.
    Again,
    /// Once and AvailableNow: everything there was is done.
    Done,
}

impl MicroBatchQuery {
    /// The next batch from `cursor`, or why there is none.
    pub(super) fn plan(&mut self, cursor: &mut Cursor) -> Result<Plan, EngineError> {
        let trigger_start = Instant::now();
        let timestamp = self.options.state.clock.now_ms();
        if let Some(entry) = cursor.pending.take() {
            let latest = self.latest()?;
            return Ok(Plan::Batch(Box::new(Planned {
                entry,
                latest,
                rerun: true,
                limit: None,
                trigger_start,
                latest_offset: trigger_start.elapsed(),
            })));
        }
        let limit = self.apply_rate_limit();
        let latest = self.latest()?;
        let upto = cursor.snapshot.as_ref().unwrap_or(&latest);
        let mut ranges = Vec::new();
        for (i, s) in cursor.start.iter().enumerate() {
            let end = if self.options.trigger == Trigger::Once {
                upto[i].clone()
            } else {
                self.sources[i]
                    .next_end(s, &upto[i])
                    .map_err(self.source_err(i))?
            };
            ranges.push(OffsetRange {
                start: s.clone(),
                end,
            });
        }
        // A stateful query whose watermark moved runs a batch without data
        // (Spark's no-data batch), so windows and timers the new watermark
        // closes fire without waiting for more input.
        self.idle_advance(timestamp);
        let no_data_batch = self.options.state.stateful
            && self.options.state.event_time.is_some()
            && self.watermark.watermark_ms.is_some()
            && self.watermark.watermark_ms != cursor.last_watermark;
        if ranges.iter().all(|r| r.start == r.end) && !no_data_batch {
            return Ok(match self.options.trigger {
                Trigger::Once | Trigger::AvailableNow => match self.end_of_input() {
                    true => Plan::Again,
                    false => Plan::Done,
                },
                Trigger::Default | Trigger::ProcessingTime(_) => Plan::Idle { trigger_start },
            });
        }
        let entry = OffsetEntry {
            batch_id: cursor.batch_id,
            timestamp_ms: timestamp,
            sources: ranges,
            watermark: self
                .options
                .state
                .event_time
                .is_some()
                .then(|| self.watermark.clone()),
            task_times: Default::default(),
        };
        Ok(Plan::Batch(Box::new(Planned {
            entry,
            latest,
            rerun: false,
            limit,
            trigger_start,
            latest_offset: trigger_start.elapsed(),
        })))
    }
}
