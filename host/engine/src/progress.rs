//! Progress of one batch, with Spark's StreamingQueryProgress field names so
//! existing dashboards and habits carry over.

use serde::{Deserialize, Serialize};

/// Wall-clock time in milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DurationMs {
    pub latest_offset: u64,
    pub wal_commit: u64,
    pub add_batch: u64,
    pub commit: u64,
    pub trigger_execution: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceProgress {
    pub description: String,
    pub start_offset: serde_json::Value,
    pub end_offset: serde_json::Value,
    pub latest_offset: serde_json::Value,
    pub num_input_rows: u64,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SinkProgress {
    pub description: String,
    pub num_output_rows: u64,
}

/// Per-record latency of a continuous epoch: event timestamp (the time the
/// record was appended to the source) to commit in the sinks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyMs {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl LatencyMs {
    /// Percentiles of `now_ms - t` over event timestamps `t`.
    pub fn since(timestamps: impl Iterator<Item = i64>, now_ms: i64) -> LatencyMs {
        let mut lat: Vec<u64> = timestamps.map(|t| (now_ms - t).max(0) as u64).collect();
        lat.sort_unstable();
        let pct = |q: f64| {
            lat.get(((lat.len().max(1) - 1) as f64 * q).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        LatencyMs {
            p50: pct(0.5),
            p99: pct(0.99),
            max: pct(1.0),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub id: String,
    pub run_id: String,
    pub batch_id: u64,
    /// Trigger start, ms since the Unix epoch.
    pub timestamp: i64,
    pub num_input_rows: u64,
    pub input_rows_per_second: f64,
    pub processed_rows_per_second: f64,
    /// Records refused by the transform (skipped under the `skip` policy).
    pub num_rejected_rows: u64,
    /// `numRejectedRows` by why (`bad-record`, `trap`, `deadline`, ...).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub rejected_rows_by_kind: std::collections::BTreeMap<String, u64>,
    /// Records available but not yet in a batch.
    pub lag: Option<u64>,
    pub duration_ms: DurationMs,
    pub sources: Vec<SourceProgress>,
    pub sink: SinkProgress,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyMs>,
    /// Stateful queries: the transform's state, one entry per operator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state_operators: Vec<StateOperatorProgress>,
    /// Queries with event time: `min`, `max`, `avg` of the batch's event
    /// times and the `watermark` it ran with (RFC 3339, as Spark prints them).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub event_time: std::collections::BTreeMap<String, String>,
    /// What the transform reported through its `metrics` import, over all
    /// its instances since the query started in this process.
    #[serde(default, skip_serializing_if = "TransformMetrics::is_empty")]
    pub transform_metrics: TransformMetrics,
}

/// Counters and gauges a transform reports (the WIT `metrics` interface).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransformMetrics {
    /// Summed over the instances.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub counters: std::collections::BTreeMap<String, u64>,
    /// Each instance's last value, summed over the instances.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub gauges: std::collections::BTreeMap<String, f64>,
    /// Measured by the host, not reported by the guest: the linear memory
    /// its live instances hold, and the fuel they burnt (metered guests).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub memory_bytes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fuel_consumed: u64,
    /// Instances replaced for holding most of their memory limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub instances_recycled: u64,
    /// Metric updates refused: a name that is not a metric name, or past
    /// the limit on distinct names.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TransformMetrics {
    pub fn is_empty(&self) -> bool {
        self.counters.is_empty()
            && self.gauges.is_empty()
            && self.memory_bytes == 0
            && self.fuel_consumed == 0
            && self.instances_recycled == 0
            && self.dropped == 0
    }

    /// Keep what an instance let go of counted ([`Self::add`] of its
    /// counters and totals; its gauges and memory were the live
    /// instance's and go with it).
    pub fn add_retired(&mut self, o: &TransformMetrics) {
        self.add(&TransformMetrics {
            counters: o.counters.clone(),
            fuel_consumed: o.fuel_consumed,
            instances_recycled: o.instances_recycled,
            dropped: o.dropped,
            ..Default::default()
        });
    }

    /// Add another instance's figures.
    pub fn add(&mut self, o: &TransformMetrics) {
        for (k, v) in &o.counters {
            let c = self.counters.entry(k.clone()).or_default();
            *c = c.saturating_add(*v);
        }
        for (k, v) in &o.gauges {
            *self.gauges.entry(k.clone()).or_default() += v;
        }
        self.memory_bytes = self.memory_bytes.saturating_add(o.memory_bytes);
        self.fuel_consumed = self.fuel_consumed.saturating_add(o.fuel_consumed);
        self.instances_recycled = self.instances_recycled.saturating_add(o.instances_recycled);
        self.dropped = self.dropped.saturating_add(o.dropped);
    }
}

/// Spark's StateOperatorProgress for one stateful operator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateOperatorProgress {
    pub operator_name: String,
    pub num_rows_total: u64,
    /// Rows put in the batch (each put counts, as in Spark).
    pub num_rows_updated: u64,
    /// Rows removed in the batch.
    #[serde(default)]
    pub num_rows_removed: u64,
    pub memory_used_bytes: u64,
    pub num_rows_dropped_by_watermark: u64,
    /// Slowest state checkpoint of the batch.
    pub commit_time_ms: u64,
    pub num_state_partitions: u64,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub custom_metrics: std::collections::BTreeMap<String, u64>,
}

impl Progress {
    /// One line for a terminal status display. Continuous epochs (the ones
    /// with a latency) show it, since latency is what that mode is for.
    pub fn status_line(&self) -> String {
        let lag = self.lag.map_or("?".to_string(), |l| l.to_string());
        let mut line = match &self.latency_ms {
            Some(l) => format!(
                "epoch {}: {} rows, {} out, latency p50 {} ms p99 {} ms max {} ms, commit {} ms, lag {}",
                self.batch_id,
                self.num_input_rows,
                self.sink.num_output_rows,
                l.p50,
                l.p99,
                l.max,
                self.duration_ms.trigger_execution,
                lag
            ),
            None => format!(
                "batch {}: {} rows in {} ms ({:.0} rows/s in, {:.0} rows/s processed), {} out, lag {}",
                self.batch_id,
                self.num_input_rows,
                self.duration_ms.trigger_execution,
                self.input_rows_per_second,
                self.processed_rows_per_second,
                self.sink.num_output_rows,
                lag
            ),
        };
        // Records that did not become output, where users look first.
        let late: u64 = self
            .state_operators
            .iter()
            .map(|o| o.num_rows_dropped_by_watermark)
            .sum();
        if self.num_rejected_rows > 0 {
            line.push_str(&format!(", {} rejected", self.num_rejected_rows));
        }
        if late > 0 {
            line.push_str(&format!(", {late} dropped as late"));
        }
        line
    }
}

/// Longest metric name, in bytes.
pub const MAX_METRIC_NAME: usize = 200;

/// Whether `name` is a Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`):
/// names are republished in `/metrics` and progress reports, so none may
/// carry quotes, newlines or braces into the text others read.
pub fn metric_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_METRIC_NAME
        && !b[0].is_ascii_digit()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(latency_ms: Option<LatencyMs>) -> Progress {
        Progress {
            id: "q".into(),
            run_id: "r".into(),
            batch_id: 7,
            timestamp: 0,
            num_input_rows: 10,
            input_rows_per_second: 0.0,
            processed_rows_per_second: 0.0,
            num_rejected_rows: 0,
            rejected_rows_by_kind: Default::default(),
            lag: Some(3),
            duration_ms: DurationMs::default(),
            sources: vec![],
            sink: SinkProgress::default(),
            latency_ms,
            state_operators: vec![],
            event_time: Default::default(),
            transform_metrics: Default::default(),
        }
    }

    #[test]
    fn latency_percentiles_are_nearest_rank() {
        let l = LatencyMs::since((0..100).map(|i| 1000 - i), 1000);
        assert_eq!((l.p50, l.p99, l.max), (50, 98, 99));
        assert_eq!(LatencyMs::since(std::iter::empty(), 5).max, 0);
    }

    #[test]
    fn status_line_names_epochs_and_latency_in_continuous_mode() {
        let batch = progress(None).status_line();
        assert!(
            batch.starts_with("batch 7: 10 rows") && batch.ends_with("lag 3"),
            "{batch}"
        );
        let l = LatencyMs {
            p50: 2,
            p99: 9,
            max: 11,
        };
        let epoch = progress(Some(l)).status_line();
        assert!(epoch.starts_with("epoch 7: 10 rows"), "{epoch}");
        assert!(epoch.contains("p50 2 ms p99 9 ms max 11 ms"), "{epoch}");
    }

    #[test]
    fn status_line_counts_rejected_and_late_records() {
        let mut p = progress(None);
        p.num_rejected_rows = 4;
        p.state_operators = vec![StateOperatorProgress {
            num_rows_dropped_by_watermark: 9,
            ..StateOperatorProgress::default()
        }];
        let line = p.status_line();
        assert!(
            line.ends_with("lag 3, 4 rejected, 9 dropped as late"),
            "{line}"
        );
    }
}
