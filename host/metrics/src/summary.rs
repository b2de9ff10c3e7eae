//! One pipeline's figures as JSON, read from the very counters and gauges
//! `/metrics` exposes, so the dashboard and Prometheus cannot disagree.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{KindLabels, Metrics, PipelineLabels};

impl Metrics {
    /// `{input-rows, output-rows, rejected-rows: {kind: n}, late-rows,
    /// batches, lag, watermark-seconds, state-rows, state-bytes,
    /// guest-memory-bytes, restarts, running}`; a series the pipeline has
    /// not reported yet is absent (never created here).
    pub fn summary(&self, l: &PipelineLabels) -> Value {
        let mut o = serde_json::Map::new();
        let mut put = |name: &str, v: Option<Value>| {
            if let Some(v) = v {
                o.insert(name.into(), v);
            }
        };
        put("input-rows", self.input_rows.get(l).map(|c| c.get().into()));
        put(
            "output-rows",
            self.output_rows.get(l).map(|c| c.get().into()),
        );
        put("late-rows", self.late_rows.get(l).map(|c| c.get().into()));
        put("batches", self.batches.get(l).map(|c| c.get().into()));
        put("lag", self.lag.get(l).map(|g| g.get().into()));
        put(
            "watermark-seconds",
            self.watermark.get(l).map(|g| g.get().into()),
        );
        put("state-rows", self.state_rows.get(l).map(|g| g.get().into()));
        put(
            "state-bytes",
            self.state_bytes.get(l).map(|g| g.get().into()),
        );
        put(
            "guest-memory-bytes",
            self.guest_memory.get(l).map(|g| g.get().into()),
        );
        put("restarts", self.restarts.get(l).map(|c| c.get().into()));
        put(
            "running",
            self.running.get(l).map(|g| (g.get() != 0).into()),
        );
        let mut rejected = BTreeMap::new();
        for kind in weir_engine::RejectKind::ALL {
            let k = KindLabels {
                tenant: l.tenant.clone(),
                pipeline: l.pipeline.clone(),
                kind: kind.as_str().to_string(),
            };
            if let Some(c) = self.rejected_rows.get(&k) {
                rejected.insert(kind.as_str().to_string(), c.get());
            }
        }
        o.insert("rejected-rows".into(), json!(rejected));
        Value::Object(o)
    }
}
