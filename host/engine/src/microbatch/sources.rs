//! The micro-batch query's dealings with its sources between batches:
//! where a run starts, latest offsets, lag, metrics and backpressure rate
//! limits.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::MicroBatchQuery;
use crate::connector::ConnectorError;
use crate::connector::Offset;
use crate::options::{EngineError, Trigger};
use crate::progress::now_ms;
use crate::wal::{self, OffsetEntry, Resume};

impl MicroBatchQuery {
    /// Backpressure: bound the next batch by the estimated processing rate
    /// times the trigger interval, shared evenly by the sources.
    pub(super) fn apply_rate_limit(&mut self) -> Option<u64> {
        let Trigger::ProcessingTime(interval) = self.options.trigger else {
            return None;
        };
        let rate = self.backpressure.as_ref()?.rate()?;
        let total = (rate * interval.as_secs_f64()).ceil().max(1.0) as u64;
        let each = total.div_ceil(self.sources.len() as u64);
        for s in &mut self.sources {
            s.set_rate_limit(Some(each));
        }
        Some(each)
    }

    /// Feed the backpressure estimator with the batch that just finished.
    pub(super) fn update_rate(
        &mut self,
        previous: Option<Instant>,
        started: Instant,
        records: u64,
        took: Duration,
    ) {
        let (Some(est), Trigger::ProcessingTime(interval)) =
            (&mut self.backpressure, self.options.trigger)
        else {
            return;
        };
        // How late this batch started against its schedule.
        let delay = previous.map_or(Duration::ZERO, |p| {
            started.saturating_duration_since(p + interval)
        });
        est.update(now_ms(), records, took, delay, interval);
    }

    pub(super) fn source_metrics(&self, i: usize, limit: Option<u64>) -> BTreeMap<String, String> {
        let mut m = self.sources[i].metrics();
        if let Some(l) = limit {
            m.insert("backpressureLimit".into(), l.to_string());
        }
        m
    }

    pub(super) fn latest(&mut self) -> Result<Vec<Offset>, EngineError> {
        let mut out = Vec::new();
        for i in 0..self.sources.len() {
            out.push(
                self.sources[i]
                    .latest_offset()
                    .map_err(self.source_err(i))?,
            );
        }
        Ok(out)
    }

    pub(super) fn lag(&self, entry: &OffsetEntry, latest: &[Offset]) -> Option<u64> {
        let mut total = 0;
        for (i, r) in entry.sources.iter().enumerate() {
            total += self.sources[i].records_between(&r.end, &latest[i])?;
        }
        Some(total)
    }

    /// Where this run starts: (batch id, start offsets, a batch to re-run),
    /// by Spark's recovery rule over the checkpoint's logs.
    pub(super) fn start_position(
        &mut self,
    ) -> Result<(u64, Vec<Offset>, Option<OffsetEntry>), EngineError> {
        Ok(match wal::resume(&*self.store)? {
            Resume::Fresh => {
                let mut start = Vec::new();
                for i in 0..self.sources.len() {
                    let source = &mut self.sources[i];
                    let o = wal::initial_offset(&*self.store, i, || {
                        source.initial_offset().map_err(|err| EngineError::Source {
                            name: source.description(),
                            err,
                        })
                    })?;
                    start.push(o);
                }
                (0, start, None)
            }
            Resume::Continue {
                next_batch,
                start,
                watermark,
            } => {
                self.watermark = watermark;
                (next_batch, start, None)
            }
            Resume::Rerun(entry) => {
                let start = entry.sources.iter().map(|r| r.start.clone()).collect();
                self.watermark = entry.watermark.clone().unwrap_or_default();
                (entry.batch_id, start, Some(entry))
            }
        })
    }

    /// A bad record that stops the query, placed where its source says it
    /// is (a files source: the file and line, not the file's index).
    pub(super) fn located(&self, err: EngineError) -> EngineError {
        let EngineError::BadRecord {
            source_name,
            partition,
            offset,
            place,
            reason,
        } = err
        else {
            return err;
        };
        let place = self
            .sources
            .iter()
            .find(|s| s.description() == source_name)
            .and_then(|s| s.locate(partition, offset))
            .unwrap_or(place);
        EngineError::BadRecord {
            source_name,
            partition,
            offset,
            place,
            reason,
        }
    }

    pub(super) fn source_err(&self, i: usize) -> impl Fn(ConnectorError) -> EngineError + '_ {
        move |err| EngineError::Source {
            name: self.sources[i].description(),
            err,
        }
    }
}
