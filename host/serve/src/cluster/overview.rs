//! `GET /v1/cluster` (the admin's): the nodes, the slots each holds, the
//! pipelines each runs and their state; and the `weir_cluster_*` series
//! this node adds to `/metrics`.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};

pub async fn overview(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Value>> {
    caller.admin()?;
    let Some(c) = state.cluster.clone() else {
        return Err(ApiError::not_found(
            "cluster: this service runs on one node (start it with `weir serve --cluster FILE`)",
        ));
    };
    let nodes: Vec<Value> = c
        .board
        .nodes()
        .into_iter()
        .map(|(r, alive, ago)| {
            json!({
                "node": r.node,
                "url": r.url,
                "alive": alive,
                "seen-ms-ago": ago.as_millis() as u64,
                "slots": if alive { r.slots.clone() } else { vec![] },
                "pipelines": if alive { r.pipelines.len() } else { 0 },
                "config-lag": r.config_lag,
            })
        })
        .collect();
    let rows = state.store.pipelines(None)?;
    let pipelines: Vec<Value> = rows
        .iter()
        .map(|p| {
            let runners = c.runners(&p.tenant, &p.name);
            json!({
                "tenant": p.tenant,
                "name": p.name,
                "desired": p.desired,
                "slot": super::slots::slot_of(&p.tenant, &p.name, c.slots),
                "nodes": runners.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                "state": runners.first().map(|(_, r)| r.state.clone()),
                "lag": runners.iter().filter_map(|(_, r)| r.lag).max(),
            })
        })
        .collect();
    Ok(Json(json!({
        "node": c.node(),
        "slots": c.slots,
        "config-lag": c.log.lag(),
        "nodes": nodes,
        "pipelines": pipelines,
    })))
}

/// This node's `weir_cluster_*` series (Prometheus text).
pub fn metrics(state: &AppState) -> String {
    let Some(c) = &state.cluster else {
        return String::new();
    };
    let alive = c
        .board
        .nodes()
        .iter()
        .filter(|(_, alive, _)| *alive)
        .count();
    let running = state.supervisor.running().len();
    let lag = c.log.lag().unwrap_or(-1);
    format!(
        "# HELP weir_cluster_nodes Live nodes this node hears from (itself included).\n\
         # TYPE weir_cluster_nodes gauge\nweir_cluster_nodes {alive}\n\
         # HELP weir_cluster_slots_held Slots this node holds.\n\
         # TYPE weir_cluster_slots_held gauge\nweir_cluster_slots_held {}\n\
         # HELP weir_cluster_pipelines_running Pipelines (or group members) running on this node.\n\
         # TYPE weir_cluster_pipelines_running gauge\nweir_cluster_pipelines_running {running}\n\
         # HELP weir_cluster_config_lag Config records this node has not read yet (-1: unknown).\n\
         # TYPE weir_cluster_config_lag gauge\nweir_cluster_config_lag {lag}\n",
        c.held().len()
    )
}
