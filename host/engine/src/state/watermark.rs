//! The watermark: the event time below which the query considers its input
//! complete, computed between batches (or at epoch commits) from the
//! largest event times seen, by one of two rules, and recorded in the
//! checkpoint so a restarted query resumes with the same one.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The watermark of the end of bounded input: 9999-12-31T23:59:59.999Z,
/// past any event time a record carries (and still printable).
pub const END_OF_INPUT_MS: i64 = 253_402_300_799_999;

/// Which event times the watermark follows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WatermarkRule {
    /// Spark's rule: the largest event time seen in each source's input,
    /// the smallest of those across sources, minus the delay. How the input
    /// is split (files, partitions, batches) does not matter.
    #[default]
    MaxEventTime,
    /// Every source partition's largest event time, the smallest of those,
    /// minus the delay (Flink's minimum over inputs): for partitioned logs
    /// whose partitions each arrive in event-time order, so a lagging
    /// partition makes nothing late. With `idle_timeout`.
    SlowestPartition,
}

impl WatermarkRule {
    pub fn as_str(self) -> &'static str {
        match self {
            WatermarkRule::MaxEventTime => "max-event-time",
            WatermarkRule::SlowestPartition => "slowest-partition",
        }
    }

    /// The name the watermark tracks source `i`'s partition `p` under.
    fn input(self, source: usize, partition: u32) -> String {
        match self {
            WatermarkRule::MaxEventTime => source.to_string(),
            WatermarkRule::SlowestPartition => format!("{source}/{partition}"),
        }
    }
}

/// The watermark and what it is computed from; written to the checkpoint
/// log so a restarted query resumes with the same watermark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watermark {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_ms: Option<i64>,
    /// Largest event time seen per tracked input: per source (`<source>`)
    /// or per source partition (`<source>/<partition>`), by the rule.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_event_ms: BTreeMap<String, i64>,
    /// Processing time (ms) at which each partition's largest event time
    /// last moved, for the idle timeout.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub moved_at_ms: BTreeMap<String, i64>,
}

impl Watermark {
    /// Fold in a partition's largest event time of a batch processed at
    /// processing time `now` (the batch's recorded time).
    pub fn observe(&mut self, partition: String, max: i64, now: i64) {
        let e = self
            .max_event_ms
            .entry(partition.clone())
            .or_insert(i64::MIN);
        if max > *e {
            *e = max;
            self.moved_at_ms.insert(partition, now);
        }
    }

    /// Under `slowest-partition`, make each of source `source`'s `partitions` an
    /// input before its first event time (processing time `now`): one
    /// whose reader has not read yet must hold the watermark back, or the
    /// other partitions would make its records late. `idle_timeout` counts
    /// from here for it.
    pub fn expect_partitions(
        &mut self,
        rule: WatermarkRule,
        source: usize,
        partitions: u32,
        now: i64,
    ) {
        if rule != WatermarkRule::SlowestPartition {
            return;
        }
        for p in 0..partitions {
            let input = rule.input(source, p);
            if !self.max_event_ms.contains_key(&input) {
                self.max_event_ms.insert(input.clone(), i64::MIN);
                self.moved_at_ms.insert(input, now);
            }
        }
    }

    /// Fold in a batch's (or epoch's) largest event time per (source,
    /// source partition), under `rule`.
    pub fn observe_all(
        &mut self,
        rule: WatermarkRule,
        maxima: &BTreeMap<(usize, u32), i64>,
        now: i64,
    ) {
        let mut per: BTreeMap<String, i64> = BTreeMap::new();
        for (&(source, partition), &max) in maxima {
            let e = per.entry(rule.input(source, partition)).or_insert(max);
            *e = (*e).max(max);
        }
        for (input, max) in per {
            self.observe(input, max, now);
        }
    }

    /// Move the watermark to (smallest tracked maximum) - delay: the
    /// slowest partition holds it back, unless it has been idle for
    /// `idle` at processing time `now`. It never moves backwards; when every
    /// partition is idle it stays where it is.
    /// After a batch: take in its largest event times (per source
    /// partition) and move on by `et`'s rule, delay and idle timeout, at
    /// processing time `now`.
    pub fn after_batch(
        &mut self,
        et: &super::EventTimeOptions,
        maxima: &BTreeMap<(usize, u32), i64>,
        now: i64,
    ) {
        self.observe_all(et.rule, maxima, now);
        self.advance(et.delay, et.idle_timeout, now);
    }

    pub fn advance(&mut self, delay: Duration, idle: Option<Duration>, now: i64) {
        let active = |p: &String| {
            idle.is_none_or(|d| {
                let moved = self.moved_at_ms.get(p).copied().unwrap_or(now);
                now.saturating_sub(moved) < d.as_millis() as i64
            })
        };
        let Some(min) = self
            .max_event_ms
            .iter()
            .filter(|(p, _)| active(p))
            .map(|(_, m)| *m)
            .min()
        else {
            return;
        };
        if min == i64::MIN {
            // An expected input has no event time yet.
            return;
        }
        let next = min.saturating_sub(delay.as_millis() as i64);
        self.watermark_ms = Some(self.watermark_ms.map_or(next, |w| w.max(next)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_partition_holds_the_watermark_and_it_never_goes_back() {
        let s = Duration::from_secs(1);
        let mut w = Watermark::default();
        w.advance(s, None, 0);
        assert_eq!(w.watermark_ms, None);
        w.observe("0/0".into(), 10_000, 0);
        w.observe("0/1".into(), 5_000, 0);
        w.advance(s, None, 0);
        assert_eq!(w.watermark_ms, Some(4_000));
        w.observe("0/1".into(), 3_000, 0);
        w.advance(s, None, 0);
        assert_eq!(w.watermark_ms, Some(4_000));
        w.observe("0/1".into(), 20_000, 0);
        w.advance(s, None, 0);
        assert_eq!(w.watermark_ms, Some(9_000));
    }

    #[test]
    fn an_idle_partition_stops_holding_the_watermark_back() {
        let (s, idle) = (Duration::from_secs(1), Some(Duration::from_secs(30)));
        let mut w = Watermark::default();
        w.observe("0/0".into(), 10_000, 0);
        w.observe("0/1".into(), 50_000, 0);
        w.advance(s, idle, 1_000);
        assert_eq!(w.watermark_ms, Some(9_000), "both active");
        // Partition 0 gets nothing new for 30 s of processing time.
        w.observe("0/1".into(), 70_000, 40_000);
        w.advance(s, idle, 40_000);
        assert_eq!(w.watermark_ms, Some(69_000), "partition 0 is idle");
        // Everyone idle: the watermark holds.
        w.advance(s, idle, 100_000);
        assert_eq!(w.watermark_ms, Some(69_000));
        // Partition 0 comes back with old data: it counts again, but the
        // watermark never moves back.
        w.observe("0/0".into(), 12_000, 100_000);
        w.advance(s, idle, 100_000);
        assert_eq!(w.watermark_ms, Some(69_000));
    }

    #[test]
    fn a_partition_not_read_yet_holds_the_watermark_back_until_idle() {
        let (s, idle) = (Duration::from_secs(1), Some(Duration::from_secs(30)));
        let mut w = Watermark::default();
        w.expect_partitions(WatermarkRule::SlowestPartition, 0, 2, 0);
        // Partition 1's reader runs ahead; partition 0's has read nothing.
        w.observe_all(
            WatermarkRule::SlowestPartition,
            &BTreeMap::from([((0, 1), 50_000)]),
            1_000,
        );
        w.advance(s, idle, 1_000);
        assert_eq!(w.watermark_ms, None, "partition 0 holds it back");
        w.observe("0/0".into(), 10_000, 2_000);
        w.advance(s, idle, 2_000);
        assert_eq!(w.watermark_ms, Some(9_000));
        // Expecting again (a restart) keeps what was seen.
        w.expect_partitions(WatermarkRule::SlowestPartition, 0, 2, 3_000);
        w.advance(s, idle, 3_000);
        assert_eq!(w.watermark_ms, Some(9_000));
        // A partition that never gets data stops holding back once idle.
        let mut w = Watermark::default();
        w.expect_partitions(WatermarkRule::SlowestPartition, 0, 2, 0);
        w.observe("0/1".into(), 50_000, 31_000);
        w.advance(s, idle, 31_000);
        assert_eq!(w.watermark_ms, Some(49_000));
        // Spark's rule has no partitions to expect.
        let mut w = Watermark::default();
        w.expect_partitions(WatermarkRule::MaxEventTime, 0, 2, 0);
        assert!(w.max_event_ms.is_empty());
    }

    #[test]
    fn spark_s_rule_follows_the_largest_event_time_of_each_source() {
        let s = Duration::from_secs(1);
        let mut w = Watermark::default();
        let maxima = BTreeMap::from([((0, 0), 10_000), ((0, 7), 3_000), ((1, 0), 8_000)]);
        w.observe_all(WatermarkRule::MaxEventTime, &maxima, 0);
        w.advance(s, None, 0);
        // Source 0's newest is 10 s whatever partition 7 says; the query
        // takes the smaller of the sources' (Spark's "min" policy).
        assert_eq!(w.watermark_ms, Some(7_000));
        let mut w = Watermark::default();
        w.observe_all(WatermarkRule::SlowestPartition, &maxima, 0);
        w.advance(s, None, 0);
        assert_eq!(w.watermark_ms, Some(2_000));
    }
}
