//! A group batch's progress: Spark's fields, with this member's id and
//! partitions in the source's metrics (each member reports its own share).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::GroupQuery;
use crate::output::Rejections;
use crate::progress::{DurationMs, Progress, SinkProgress, SourceProgress, now_ms};
use crate::state::TaskStats;
use crate::state::run::progress_fields;

/// What one batch did, summed over this member's partitions.
#[derive(Default)]
pub(super) struct Batch {
    pub rows: u64,
    pub output_rows: u64,
    pub rejected: Rejections,
    starts: BTreeMap<String, i64>,
    ends: BTreeMap<String, i64>,
    stats: TaskStats,
}

impl Batch {
    pub fn add(
        &mut self,
        partition: u32,
        start: Option<i64>,
        end: Option<i64>,
        rows: u64,
        stats: &TaskStats,
    ) {
        if let (Some(s), Some(e)) = (start, end) {
            self.starts.insert(partition.to_string(), s);
            self.ends.insert(partition.to_string(), e);
        }
        self.rows += rows;
        self.stats.merge(stats);
    }
}

impl GroupQuery {
    pub(super) fn progress(
        &self,
        b: &Batch,
        started: Instant,
        processed: Duration,
        commit: Duration,
    ) -> Progress {
        let ms = |d: Duration| d.as_millis() as u64;
        let total = started.elapsed();
        let per_second = |d: Duration| {
            let s = d.as_secs_f64();
            if s > 0.0 { b.rows as f64 / s } else { 0.0 }
        };
        let held: Vec<String> = self.owned.keys().map(u32::to_string).collect();
        let mut metrics = BTreeMap::new();
        metrics.insert("member".into(), self.member.member_id());
        metrics.insert("partitions".into(), held.join(","));
        let mut stats = b.stats.clone();
        stats.rows_total = self.owned.values().map(|o| o.state_rows()).sum();
        let watermark = self
            .owned
            .values()
            .filter_map(|o| o.watermark_for(&self.options.state))
            .min();
        let state = progress_fields(
            &self.options.state,
            &stats,
            self.owned.len() as u64,
            watermark,
        );
        Progress {
            id: self.member.description(),
            run_id: self.run_id.clone(),
            batch_id: self.batch_id,
            timestamp: now_ms() - total.as_millis() as i64,
            num_input_rows: b.rows,
            input_rows_per_second: per_second(total),
            processed_rows_per_second: per_second(processed + commit),
            num_rejected_rows: b.rejected.total(),
            rejected_rows_by_kind: b.rejected.by_kind(),
            lag: None,
            duration_ms: DurationMs {
                latest_offset: 0,
                wal_commit: 0,
                add_batch: ms(processed),
                commit: ms(commit),
                trigger_execution: ms(total),
            },
            sources: vec![SourceProgress {
                description: self.member.description(),
                start_offset: serde_json::json!(b.starts),
                end_offset: serde_json::json!(b.ends),
                latest_offset: serde_json::Value::Null,
                num_input_rows: b.rows,
                metrics,
            }],
            sink: SinkProgress {
                description: self.member.description(),
                num_output_rows: b.output_rows,
            },
            latency_ms: None,
            state_operators: state.operators,
            event_time: state.event_time,
            transform_metrics: Default::default(),
        }
    }
}
