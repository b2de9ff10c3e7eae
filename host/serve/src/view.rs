//! How the API shows a pipeline: its row, what the supervisor says of it,
//! its figures from the metrics (the same series `/metrics` exposes), and
//! on its own page its spec and checkpoint position.

use serde_json::{Value, json};

use super::AppState;
use super::store::PipelineRow;
use super::supervisor::Status;
use weir_engine::durable::read_entry;
use weir_engine::wal::Metadata;
use weir_engine::{CheckpointStore, LocalCheckpointStore};
use weir_metrics::PipelineLabels;

/// The list's view of `p`; `detail` adds the newest progress report, the
/// spec and the checkpoint.
pub fn pipeline(state: &AppState, p: &PipelineRow, detail: bool) -> Value {
    let (s, nodes) = status(state, p);
    // The stored spec as the service runs it (confined under the tenant's
    // current quotas); a spec they no longer allow shows its reason.
    let spec = super::pipelines::stored_spec(state, p);
    let labels = PipelineLabels {
        tenant: p.tenant.clone(),
        pipeline: p.name.clone(),
    };
    let mut v = json!({
        "tenant": p.tenant,
        "name": p.name,
        "component": p.has_component().then_some(&p.component),
        "desired": p.desired,
        "state": s.state,
        "mode": spec.as_ref().ok().map(|s| s.mode.execution().name()),
        "last-error": s.last_error,
        "restarts": s.restarts,
        "watermark": Value::Null,
        "metrics": state.supervisor.metrics.summary(&labels),
    });
    if let Some(nodes) = nodes {
        let grouped = spec.as_ref().is_ok_and(|s| s.group.is_some());
        if grouped {
            v["node"] = Value::Null;
            v["nodes"] = nodes.into();
        } else {
            v["node"] = nodes.first().cloned().into();
        }
    }
    if let Some(pr) = &s.progress {
        v["input-rows-per-second"] = pr.input_rows_per_second.into();
        v["processed-rows-per-second"] = pr.processed_rows_per_second.into();
        v["lag"] = pr.lag.into();
        if let Some(w) = pr.event_time.get("watermark") {
            v["watermark"] = w.clone().into();
        }
        if detail {
            v["progress"] = serde_json::to_value(pr).unwrap_or_default();
        }
    }
    if detail {
        v["spec"] = shown_spec(&p.spec, &p.component).into();
        v["checkpoint"] = match spec {
            Ok(spec) => match spec.checkpoint.dir() {
                Some(dir) => checkpoint(dir),
                None => json!({"location": spec.checkpoint.to_string()}),
            },
            Err(e) => json!({"error": e}),
        };
    }
    // What the engine reports names places by their server paths.
    super::confine::TenantRoot::shown(&state.data, &p.tenant).redact_json(&mut v);
    v
}

/// How `p` is doing and, in a cluster, the nodes running it: this node's
/// own word if it runs it, else what the live nodes report.
fn status(state: &AppState, p: &PipelineRow) -> (Status, Option<Vec<String>>) {
    let local = state.supervisor.status(&p.tenant, &p.name);
    let Some(c) = &state.cluster else {
        return (local, None);
    };
    let runners = c.runners(&p.tenant, &p.name);
    let mut nodes: Vec<String> = runners.iter().map(|(n, _)| n.clone()).collect();
    // What `Supervisor::running` counts, without listing every pipeline.
    let here = matches!(local.state.as_str(), "running" | "restarting");
    if here {
        if !nodes.iter().any(|n| n == c.node()) {
            nodes.insert(0, c.node().to_string());
        }
        return (local, Some(nodes));
    }
    let s = match runners.first() {
        Some((_, r)) => Status {
            state: r.state.clone(),
            last_error: r.last_error.clone(),
            restarts: r.restarts,
            progress: None,
        },
        None => Status {
            state: if p.desired == "running" {
                "unassigned"
            } else {
                "stopped"
            }
            .into(),
            ..Status::default()
        },
    };
    (s, Some(nodes))
}

/// The stored TOML as its owner wrote it: the transform names the
/// component by id (stored, it names the file under the data directory),
/// so the text can be edited and sent back with `PUT`.
fn shown_spec(spec: &str, component: &str) -> String {
    let Ok(mut table) = toml::from_str::<toml::Table>(spec) else {
        return spec.to_string();
    };
    if let Some(toml::Value::Table(t)) = table.get_mut("transform") {
        t.insert("component".into(), component.into());
    }
    toml::to_string(&table).unwrap_or_else(|_| spec.to_string())
}

/// `{unit, last-committed, pending}`: the newest committed batch (epoch)
/// and the one planned after it but not committed, if any.
pub fn checkpoint(dir: &std::path::Path) -> Value {
    if !dir.join("metadata").exists() {
        return json!({"unit": Value::Null, "last-committed": Value::Null, "pending": Value::Null});
    }
    let read = || -> Result<Value, weir_engine::CheckpointError> {
        let store = LocalCheckpointStore::open(dir)?;
        let meta: Option<Metadata> = read_entry(&store, "metadata")?;
        let unit = meta.map_or("batch", |m| m.mode.unit());
        let last = store.list_numbered("commits")?.last().copied();
        let planned = store.list_numbered("offsets")?.last().copied();
        let pending = planned.filter(|p| last.is_none_or(|c| *p > c));
        Ok(json!({"unit": unit, "last-committed": last, "pending": pending}))
    };
    read().unwrap_or_else(|e| json!({"error": e.to_string()}))
}
