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
    /// Records available but not yet in a batch.
    pub lag: Option<u64>,
    pub duration_ms: DurationMs,
    pub sources: Vec<SourceProgress>,
    pub sink: SinkProgress,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyMs>,
}

impl Progress {
    /// One line for a terminal status display.
    pub fn status_line(&self) -> String {
        let lag = self.lag.map_or("?".to_string(), |l| l.to_string());
        format!(
            "batch {}: {} rows in {} ms ({:.0} rows/s in, {:.0} rows/s processed), {} out, lag {}",
            self.batch_id,
            self.num_input_rows,
            self.duration_ms.trigger_execution,
            self.input_rows_per_second,
            self.processed_rows_per_second,
            self.sink.num_output_rows,
            lag
        )
    }
}
