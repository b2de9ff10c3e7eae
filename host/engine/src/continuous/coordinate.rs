//! The epoch coordinator of a running continuous query: it ends an epoch
//! every checkpoint interval, gathers every task's report of it, commits
//! it, and decides when an idle query may stop.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::task::Report;
use super::{ContinuousQuery, Epoch, early, marker, quiet};
use crate::Rejections;
use crate::options::{EngineError, RunSummary};
use crate::progress::Progress;

impl ContinuousQuery {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn coordinate(
        &mut self,
        rx: mpsc::Receiver<Result<Report, EngineError>>,
        early: &early::EarlySinks,
        (marker, quiet): (&marker::Marker, &quiet::Quiet),
        epoch: &mut u64,
        positions: &mut Vec<u64>,
        expected: usize,
        summary: &mut RunSummary,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<(), EngineError> {
        let interval = self.options.checkpoint_interval;
        let mut next_tick = Instant::now() + interval;
        marker.set_next(next_tick);
        let mut pending: BTreeMap<u64, Vec<Report>> = BTreeMap::new();
        let mut last_activity = Instant::now();
        let mut epoch_started = Instant::now();
        // The watermarks the last finished epoch's state tasks ran with.
        let mut ran_with: Vec<Option<i64>> = Vec::new();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let now = Instant::now();
            let mut wait = next_tick.saturating_duration_since(now);
            if now >= next_tick {
                // The epoch marker: tasks report the epoch that just ended.
                next_tick = now + interval;
                marker.advance(next_tick);
                // Quiet tasks send no report: decide the epoch now.
                wait = Duration::ZERO;
            }
            match rx.recv_timeout(wait) {
                Ok(Ok(report)) => pending.entry(report.epoch).or_default().push(report),
                Ok(Err(e)) => return Err(e),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            }
            // An epoch is decided once the marker has passed it and every
            // task has reported it or slept through it (see `quiet`).
            while *epoch < marker.epoch()
                && pending.get(epoch).map_or(0, Vec::len) + quiet.quiet_in(*epoch) == expected
            {
                let mut reports = pending.remove(epoch).unwrap_or_default();
                // Readers by partition, then state partitions.
                reports.sort_by_key(|r| (r.end.map_or(u32::MAX, |e| e.0), r.task));
                let mut end = positions.clone();
                let mut parts = Vec::new();
                let mut rejected = Rejections::default();
                let mut times = BTreeMap::new();
                let mut stats = Vec::new();
                for r in reports {
                    if let Some((p, e)) = r.end {
                        end[p as usize] = e;
                    }
                    rejected += r.rejected;
                    parts.extend(r.parts);
                    if let Some(task) = r.task {
                        if let Some(t) = r.time {
                            times.insert(task, t);
                        }
                        stats.push((task, r.stats));
                        self.transform_metrics.insert(task, r.metrics);
                    }
                }
                ran_with = times.values().map(|t| t.watermark_ms).collect();
                early.end_epoch(*epoch)?;
                // An epoch without input still commits when timers fired
                // in it (their output must reach the sinks).
                if end != *positions || !parts.is_empty() {
                    last_activity = Instant::now();
                    let done = Epoch {
                        id: *epoch,
                        start: positions,
                        end: &end,
                        parts,
                        rejected,
                        started: epoch_started,
                        rerun: false,
                        times,
                        stats,
                    };
                    self.commit(done, summary, on_progress)?;
                    *positions = end;
                }
                *epoch += 1;
                quiet.decided_before(*epoch);
                epoch_started = Instant::now();
            }
            let fired = self.options.state.event_time.is_none()
                || !self.options.state.stateful
                || all_ran_with(&ran_with, self.watermark.watermark_ms);
            if let Some(idle) = self.options.exit_when_idle
                && pending.is_empty()
                && fired
                && last_activity.elapsed() >= idle
            {
                // Idle and caught up: a source that can tell its end must
                // have nothing left (a slow first fetch is not idleness).
                let caught_up = self
                    .inputs
                    .latest_positions()
                    .is_none_or(|latest| latest.iter().zip(positions.iter()).all(|(l, p)| l <= p));
                if caught_up {
                    return Ok(());
                }
                last_activity = Instant::now();
            }
        }
    }
}

/// Timers the final watermark makes due have fired only once every state
/// task ran an epoch with it. Tasks read the watermark when they start an
/// epoch, racing its publication at the previous commit, so one epoch's
/// tasks may have run with different watermarks: checking one of them let
/// an idle exit skip the other partitions' last timers.
pub(super) fn all_ran_with(ran_with: &[Option<i64>], watermark: Option<i64>) -> bool {
    ran_with.iter().all(|w| *w == watermark)
}
