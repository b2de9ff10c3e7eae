//! weir's Prometheus metrics (`GET /metrics` of `weir serve`, and of
//! `weir run --metrics`). They are fed from the same progress reports the
//! API and the command line show, so the two cannot disagree. Names
//! and labels are listed in README "Service" ("Metrics"); a tenant token
//! sees only its own series.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use weir_engine::Progress;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PipelineLabels {
    pub tenant: String,
    pub pipeline: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    tenant: String,
    pipeline: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabels {
    tenant: String,
    pipeline: String,
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThrottleLabels {
    tenant: String,
    /// `delayed` or `refused`.
    outcome: String,
}

/// Batch and epoch durations: 1 ms to about 65 s.
#[derive(Clone)]
struct Durations;

impl MetricConstructor<Histogram> for Durations {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(0.001, 2.0, 17))
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// What a pipeline's previous report already added to the counters that
/// the engine reports as totals since its query started.
#[derive(Default)]
struct Seen {
    run_id: String,
    fuel: u64,
    counters: BTreeMap<String, u64>,
    gauges: Vec<String>,
    /// Group mode: the partitions the member held at its last report.
    partitions: std::collections::BTreeSet<String>,
}

pub struct Metrics {
    registry: Registry,
    input_rows: Family<PipelineLabels, Counter>,
    output_rows: Family<PipelineLabels, Counter>,
    rejected_rows: Family<KindLabels, Counter>,
    late_rows: Family<PipelineLabels, Counter>,
    batches: Family<PipelineLabels, Counter>,
    batch_duration: Family<PipelineLabels, Histogram, Durations>,
    epoch_commit: Family<PipelineLabels, Histogram, Durations>,
    lag: Family<PipelineLabels, Gauge>,
    watermark: Family<PipelineLabels, FloatGauge>,
    state_rows: Family<PipelineLabels, Gauge>,
    state_bytes: Family<PipelineLabels, Gauge>,
    guest_memory: Family<PipelineLabels, Gauge>,
    fuel: Family<PipelineLabels, Counter>,
    restarts: Family<PipelineLabels, Counter>,
    running: Family<PipelineLabels, Gauge>,
    guest_counters: Family<NameLabels, Counter>,
    guest_gauges: Family<NameLabels, FloatGauge>,
    group_partitions: Family<group::PartitionLabels, Gauge>,
    api_throttled: Family<ThrottleLabels, Counter>,
    seen: Mutex<HashMap<PipelineLabels, Seen>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            input_rows: Family::default(),
            output_rows: Family::default(),
            rejected_rows: Family::default(),
            late_rows: Family::default(),
            batches: Family::default(),
            batch_duration: Family::new_with_constructor(Durations),
            epoch_commit: Family::new_with_constructor(Durations),
            lag: Family::default(),
            watermark: Family::default(),
            state_rows: Family::default(),
            state_bytes: Family::default(),
            guest_memory: Family::default(),
            fuel: Family::default(),
            restarts: Family::default(),
            running: Family::default(),
            guest_counters: Family::default(),
            guest_gauges: Family::default(),
            group_partitions: Family::default(),
            api_throttled: Family::default(),
            seen: Mutex::new(HashMap::new()),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register("weir_input_rows", "Records read", m.input_rows.clone());
        r.register(
            "weir_output_rows",
            "Records written to the sinks",
            m.output_rows.clone(),
        );
        r.register(
            "weir_rejected_rows",
            "Records refused, by kind (bad-record, trap, deadline, ...)",
            m.rejected_rows.clone(),
        );
        r.register(
            "weir_late_rows",
            "Records dropped as later than the watermark",
            m.late_rows.clone(),
        );
        r.register(
            "weir_batches",
            "Committed batches or epochs",
            m.batches.clone(),
        );
        r.register(
            "weir_batch_duration_seconds",
            "Micro-batch trigger execution time",
            m.batch_duration.clone(),
        );
        r.register(
            "weir_epoch_commit_duration_seconds",
            "Continuous epoch commit time",
            m.epoch_commit.clone(),
        );
        r.register(
            "weir_lag_records",
            "Records available but not yet read",
            m.lag.clone(),
        );
        r.register(
            "weir_watermark_seconds",
            "Event-time watermark, seconds since the Unix epoch",
            m.watermark.clone(),
        );
        r.register("weir_state_rows", "Keyed state rows", m.state_rows.clone());
        r.register(
            "weir_state_bytes",
            "Keyed state size",
            m.state_bytes.clone(),
        );
        r.register(
            "weir_guest_memory_bytes",
            "Linear memory held by the pipeline's guest instances",
            m.guest_memory.clone(),
        );
        r.register(
            "weir_guest_fuel",
            "Fuel burnt (metered guests)",
            m.fuel.clone(),
        );
        r.register(
            "weir_restarts",
            "Restarts after failures",
            m.restarts.clone(),
        );
        r.register(
            "weir_pipeline_running",
            "1 while the pipeline runs",
            m.running.clone(),
        );
        r.register(
            "weir_guest_counter",
            "Counters the guest reports through its metrics import",
            m.guest_counters.clone(),
        );
        r.register(
            "weir_guest_gauge",
            "Gauges the guest reports through its metrics import",
            m.guest_gauges.clone(),
        );
        r.register(
            "weir_group_partition_held",
            "Group mode: 1 for each input partition the member holds, 0 for one it held before",
            m.group_partitions.clone(),
        );
        r.register(
            "weir_api_throttled_requests",
            "API requests over the tenant's max-requests-per-second, delayed or refused",
            m.api_throttled.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Count a request of `tenant` held by its request rate: `outcome` is
    /// `delayed` (let through after waiting its turn) or `refused` (429).
    pub fn throttled(&self, tenant: &str, outcome: &str) {
        self.api_throttled
            .get_or_create(&ThrottleLabels {
                tenant: tenant.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
    }

    /// Fold one progress report of `l`'s pipeline in.
    pub fn record(&self, l: &PipelineLabels, p: &Progress) {
        self.input_rows.get_or_create(l).inc_by(p.num_input_rows);
        self.output_rows
            .get_or_create(l)
            .inc_by(p.sink.num_output_rows);
        self.batches.get_or_create(l).inc();
        for (kind, n) in &p.rejected_rows_by_kind {
            let k = KindLabels {
                tenant: l.tenant.clone(),
                pipeline: l.pipeline.clone(),
                kind: kind.clone(),
            };
            self.rejected_rows.get_or_create(&k).inc_by(*n);
        }
        let secs = |ms: u64| ms as f64 / 1000.0;
        if p.latency_ms.is_some() {
            self.epoch_commit
                .get_or_create(l)
                .observe(secs(p.duration_ms.commit));
        } else {
            self.batch_duration
                .get_or_create(l)
                .observe(secs(p.duration_ms.trigger_execution));
        }
        if let Some(lag) = p.lag {
            self.lag
                .get_or_create(l)
                .set(lag.min(i64::MAX as u64) as i64);
        }
        if let Some(w) = p
            .event_time
            .get("watermark")
            .and_then(|w| humantime::parse_rfc3339(w).ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        {
            self.watermark.get_or_create(l).set(w.as_secs_f64());
        }
        let (mut rows, mut bytes, mut late) = (0u64, 0u64, 0u64);
        for op in &p.state_operators {
            rows += op.num_rows_total;
            bytes += op.memory_used_bytes;
            late += op.num_rows_dropped_by_watermark;
        }
        if !p.state_operators.is_empty() {
            self.state_rows.get_or_create(l).set(rows as i64);
            self.state_bytes.get_or_create(l).set(bytes as i64);
        }
        self.late_rows.get_or_create(l).inc_by(late);
        let tm = &p.transform_metrics;
        self.guest_memory
            .get_or_create(l)
            .set(tm.memory_bytes.min(i64::MAX as u64) as i64);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let s = seen.entry(l.clone()).or_default();
        // A new run of the query starts its totals over.
        if s.run_id != p.run_id {
            *s = Seen {
                run_id: p.run_id.clone(),
                ..Seen::default()
            };
        }
        self.record_group(l, p, &mut s.partitions);
        self.fuel
            .get_or_create(l)
            .inc_by(tm.fuel_consumed.saturating_sub(s.fuel));
        s.fuel = tm.fuel_consumed;
        // Guests can only set metric names (the runtime refuses others);
        // checked again here, since these become label values others read.
        let named = |name: &String| weir_engine::metric_name(name);
        for (name, total) in tm.counters.iter().filter(|(n, _)| named(n)) {
            let before = s.counters.insert(name.clone(), *total).unwrap_or(0);
            self.guest_counters
                .get_or_create(&self.named(l, name))
                .inc_by(total.saturating_sub(before));
        }
        for (name, v) in tm.gauges.iter().filter(|(n, _)| named(n)) {
            self.guest_gauges
                .get_or_create(&self.named(l, name))
                .set(*v);
            if !s.gauges.contains(name) {
                s.gauges.push(name.clone());
            }
        }
    }

    fn named(&self, l: &PipelineLabels, name: &str) -> NameLabels {
        NameLabels {
            tenant: l.tenant.clone(),
            pipeline: l.pipeline.clone(),
            name: name.to_string(),
        }
    }

    pub fn restarted(&self, l: &PipelineLabels) {
        self.restarts.get_or_create(l).inc();
    }

    pub fn set_running(&self, l: &PipelineLabels, running: bool) {
        self.running.get_or_create(l).set(running as i64);
    }

    /// Drop a deleted pipeline's series.
    pub fn forget(&self, l: &PipelineLabels) {
        for f in [
            &self.input_rows,
            &self.output_rows,
            &self.late_rows,
            &self.batches,
            &self.fuel,
            &self.restarts,
        ] {
            f.remove(l);
        }
        for f in [
            &self.lag,
            &self.state_rows,
            &self.state_bytes,
            &self.guest_memory,
            &self.running,
        ] {
            f.remove(l);
        }
        self.batch_duration.remove(l);
        self.epoch_commit.remove(l);
        self.watermark.remove(l);
        let seen = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(l);
        for kind in weir_engine::RejectKind::ALL {
            self.rejected_rows.remove(&KindLabels {
                tenant: l.tenant.clone(),
                pipeline: l.pipeline.clone(),
                kind: kind.as_str().to_string(),
            });
        }
        if let Some(s) = seen {
            for name in s.counters.keys() {
                self.guest_counters.remove(&self.named(l, name));
            }
            for name in &s.gauges {
                self.guest_gauges.remove(&self.named(l, name));
            }
        }
    }

    /// The text exposition; with `tenant`, only that tenant's series.
    pub fn encode(&self, tenant: Option<&str>) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        match tenant {
            None => text,
            Some(t) => exposition::for_tenant(&text, t),
        }
    }
}

mod exposition;
mod group;
mod summary;

#[cfg(test)]
mod tests;
