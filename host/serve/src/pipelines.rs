//! `/v1/pipelines`: a tenant creates or replaces a pipeline by name from
//! its TOML (the transform named by component id), lists, shows, stops,
//! starts and deletes it. A pipeline is confined to the tenant's data root
//! and runs with the tenant's quotas; replacing a running one stops it after
//! its current batch or epoch and starts the new spec from the checkpoint.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use super::auth::Caller;
use super::catalog::Change;
use super::confine;
use super::error::{ApiError, ApiResult};
use super::store::{PipelineRow, TenantRow};
use weir_pipeline::spec::{GuestEnv, Pipeline};

pub(super) fn tenant_row(state: &AppState, tenant: &str) -> ApiResult<TenantRow> {
    state
        .store
        .tenant(tenant)?
        .ok_or_else(|| ApiError::not_found(&format!("tenant `{tenant}`")))
}

/// The pipeline TOML with its component id resolved to the stored bytes,
/// its name set and a default checkpoint; validated and confined.
fn resolve(state: &AppState, t: &TenantRow, name: &str, text: &str) -> ApiResult<Resolved> {
    let tenant = t.name.as_str();
    let mut table: toml::Table = toml::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("pipeline: {}", e.message())))?;
    table.insert("name".into(), name.into());
    match &state.cluster {
        // Every node must reach it, and the service's credentials must
        // reach no bucket a tenant names: the cluster places it.
        Some(c) => {
            if table.contains_key("checkpoint") {
                return Err(ApiError::bad_request(
                    "checkpoint: in cluster mode the service keeps each pipeline's checkpoint on its object store; leave `checkpoint` out",
                ));
            }
            table.insert("checkpoint".into(), c.checkpoint_of(tenant, name).into());
        }
        None => {
            table
                .entry("checkpoint")
                .or_insert_with(|| format!("checkpoints/{name}").into());
        }
    }
    let component = table
        .get("transform")
        .and_then(|t| t.get("component"))
        .and_then(|c| c.as_str())
        .map(|c| c.trim_start_matches("sha256:").to_string())
        .ok_or_else(|| {
            ApiError::bad_request("transform.component: give the id of an uploaded component")
        })?;
    if state.store.component(tenant, &component)?.is_none() {
        return Err(ApiError::bad_request(format!(
            "transform.component: no component `{}` (upload it to /v1/components first)",
            component.escape_debug()
        )));
    }
    // Named from the tenant's root, so that the same text finds the bytes
    // under any node's data directory.
    let path = format!("../../components/{component}.wasm");
    if let Some(toml::Value::Table(t)) = table.get_mut("transform") {
        t.insert("component".into(), path.into());
    }
    let text = toml::to_string(&table).map_err(ApiError::internal)?;
    let spec = confined(state, t, &text).map_err(ApiError::bad_request)?;
    Ok(Resolved {
        spec,
        text,
        component,
    })
}

/// A pipeline as PUT: validated, with the text stored and the component.
struct Resolved {
    spec: Pipeline,
    text: String,
    component: String,
}

/// `text` parsed as tenant `t`'s pipeline: relative to its data root, its
/// guest variables from its own list, every place, number and client
/// confined. Refusals name no server path.
fn confined(state: &AppState, t: &TenantRow, text: &str) -> Result<Pipeline, String> {
    let root = confine::TenantRoot::open(&state.data, &t.name).map_err(|e| {
        tracing::error!("serve: the data root of {}: {e}", t.name);
        "the tenant's data directory cannot be opened (see the server's log)".to_string()
    })?;
    let spec = Pipeline::parse_with(text, "pipeline", root.dir(), GuestEnv::Only(&t.guest_env))
        .map_err(|e| root.redact(&e.message))?;
    let checkpoints = state.cluster.as_ref().map(|c| c.checkpoints_of(&t.name));
    let allowed = confine::Allowed {
        brokers: &t.kafka_brokers,
        grants: &t.grants,
        max_memory: t.max_memory,
        cluster_checkpoints: checkpoints.as_deref(),
    };
    confine::pipeline(&spec, &root, &allowed).map_err(|e| root.redact(&e))?;
    Ok(spec)
}

fn view(state: &AppState, p: &PipelineRow, detail: bool) -> Value {
    super::view::pipeline(state, p, detail)
}

pub(super) fn find(state: &AppState, tenant: &str, name: &str) -> ApiResult<PipelineRow> {
    state
        .store
        .pipelines(Some(tenant))?
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ApiError::not_found(&format!("pipeline `{name}`")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutOptions {
    /// Keep a stateful checkpoint's state with a changed component (as
    /// `weir run --upgrade`).
    #[serde(default)]
    upgrade: bool,
}

pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(opts): Query<PutOptions>,
    text: String,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let tenant = caller.tenant()?.to_string();
    if !super::tenants::valid_name(&name) {
        return Err(ApiError::bad_request(format!(
            "pipeline name `{name}`: use 1-63 lowercase letters, digits and dashes"
        )));
    }
    let t = tenant_row(&state, &tenant)?;
    let Resolved {
        spec,
        text,
        component,
    } = resolve(&state, &t, &name, &text)?;
    // Check and insert as one step per tenant: parallel PUTs cannot all
    // pass the pipeline quota.
    let _quota_lock = state.tenant_lock(&tenant).await;
    // The tenant as it is now (it may have been deleted meanwhile).
    let t = tenant_row(&state, &tenant)?;
    super::quota::check(&state, &t)?;
    let existing = state.store.pipelines(Some(&tenant))?;
    let row = PipelineRow {
        tenant: tenant.clone(),
        name: name.clone(),
        spec: text,
        component,
        desired: "running".into(),
    };
    let before = existing.into_iter().find(|p| p.name == name);
    if before.is_none() {
        within_quota(&state.store, &t)?;
    }
    // On one node it starts here, and is stored only if it started; in a
    // cluster it starts where its slot is held (see `cluster::placement`).
    if state.cluster.is_none()
        && let Err(e) = state
            .start_pipeline(t.clone(), name.clone(), spec, opts.upgrade)
            .await
    {
        // Refused (e.g. by the checkpoint's upgrade rule): the spec that
        // ran before runs on.
        if let Some(p) = before.filter(|p| p.desired == "running") {
            let st = state.clone();
            let _ = tokio::task::spawn_blocking(move || start_or_halt(&st, &t, &p, "kept")).await;
        }
        return Err(e);
    }
    let stored = row.clone();
    let new = state
        .write(Box::new(move |store| {
            let t = store
                .tenant(&stored.tenant)?
                .ok_or_else(|| ApiError::not_found(&format!("tenant `{}`", stored.tenant)))?;
            let new = !store
                .pipelines(Some(&stored.tenant))?
                .iter()
                .any(|p| p.name == stored.name);
            if new {
                within_quota(store, &t)?;
            }
            if store
                .component(&stored.tenant, &stored.component)?
                .is_none()
            {
                return Err(ApiError::conflict(format!(
                    "component `{}` was deleted meanwhile",
                    stored.component
                )));
            }
            let change = Change::Pipeline {
                row: stored.clone(),
            };
            Ok((vec![change], new))
        }))
        .await?;
    state.placed();
    state.store.event(
        Some(&tenant),
        &row.name,
        if new { "deployed" } else { "replaced" },
        &row.component,
    );
    let status = if new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view(&state, &row, false))))
}

/// Room for one more pipeline of tenant `t` (counted over the store, which
/// in a cluster holds every node's).
fn within_quota(store: &super::store::Store, t: &TenantRow) -> ApiResult<()> {
    if store.pipelines(Some(&t.name))?.len() as u64 >= t.max_pipelines {
        return Err(ApiError::quota(format!(
            "tenant `{}` may have {} pipeline(s); delete one first",
            t.name, t.max_pipelines
        )));
    }
    Ok(())
}

/// Set whether tenant `tenant`'s pipeline `name` should run.
async fn set_desired(state: &AppState, tenant: &str, name: &str, desired: &str) -> ApiResult<()> {
    let (tenant, name, desired) = (tenant.to_string(), name.to_string(), desired.to_string());
    state
        .write(Box::new(move |store| {
            let mut row = store
                .pipelines(Some(&tenant))?
                .into_iter()
                .find(|p| p.name == name)
                .ok_or_else(|| ApiError::not_found(&format!("pipeline `{name}`")))?;
            row.desired = desired.clone();
            Ok((vec![Change::Pipeline { row }], ()))
        }))
        .await?;
    state.placed();
    Ok(())
}

/// A tenant's pipelines; with the admin token (and no `Weir-Tenant`),
/// every tenant's.
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Value>>> {
    let rows = match caller {
        Caller::Admin => state.store.pipelines(None)?,
        c => state.store.pipelines(Some(c.tenant()?))?,
    };
    Ok(Json(rows.iter().map(|p| view(&state, p, false)).collect()))
}

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let p = find(&state, caller.tenant()?, &name)?;
    Ok(Json(view(&state, &p, true)))
}

pub async fn stop(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let tenant = caller.tenant()?.to_string();
    let p = find(&state, &tenant, &name)?;
    set_desired(&state, &tenant, &name, "stopped").await?;
    if state.cluster.is_none() {
        state.stop_pipelines(&tenant, vec![name]).await?;
    }
    state
        .store
        .event(Some(&p.tenant), &p.name, "stopped", "by request");
    Ok(Json(view(
        &state,
        &find(&state, &p.tenant, &p.name)?,
        false,
    )))
}

pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    let tenant = caller.tenant()?.to_string();
    let p = find(&state, &tenant, &name)?;
    let t = tenant_row(&state, &tenant)?;
    let spec = startable(&state, &t, &p).map_err(ApiError::bad_request)?;
    super::quota::check(&state, &t)?;
    if state.cluster.is_none() {
        state.start_pipeline(t, name.clone(), spec, false).await?;
    }
    set_desired(&state, &tenant, &name, "running").await?;
    state
        .store
        .event(Some(&tenant), &name, "started", "by request");
    Ok(Json(view(&state, &find(&state, &tenant, &name)?, false)))
}

#[derive(Debug, Deserialize)]
pub struct DeleteOptions {
    /// Also remove the pipeline's checkpoint.
    #[serde(default)]
    purge: bool,
}

pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(opts): Query<DeleteOptions>,
) -> ApiResult<StatusCode> {
    let tenant = caller.tenant()?.to_string();
    let p = find(&state, &tenant, &name)?;
    if state.cluster.is_none() {
        state.forget_pipelines(&tenant, vec![name.clone()]).await?;
    }
    let (owner, gone) = (tenant.clone(), name.clone());
    state
        .write(Box::new(move |_| {
            let change = Change::PipelineGone {
                tenant: owner.clone(),
                name: gone.clone(),
            };
            Ok((vec![change], ()))
        }))
        .await?;
    state.placed();
    if opts.purge {
        purge(&state, &p).await?;
    }
    state.store.event(Some(&tenant), &name, "deleted", "");
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a deleted pipeline's checkpoint: its directory, or in a cluster
/// its objects once the node that ran it has let go of it.
async fn purge(state: &AppState, p: &PipelineRow) -> ApiResult<()> {
    match &state.cluster {
        None => {
            if let Ok(spec) = stored_spec(state, p)
                && let Some(dir) = spec.checkpoint.dir()
            {
                // Confined when it was stored and again just now.
                let _ = std::fs::remove_dir_all(dir);
            }
            Ok(())
        }
        Some(c) => {
            let (c, tenant, name) = (c.clone(), p.tenant.clone(), p.name.clone());
            tokio::task::spawn_blocking(move || c.purge_checkpoint(&tenant, &name))
                .await
                .map_err(ApiError::internal)?
                .map_err(ApiError::unavailable)
        }
    }
}

/// A stored pipeline's spec, read as it was validated (relative to the
/// tenant's data root, with its guest variables).
pub(super) fn stored_spec(state: &AppState, p: &PipelineRow) -> Result<Pipeline, String> {
    let t = state
        .store
        .tenant(&p.tenant)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no tenant `{}`", p.tenant))?;
    startable(state, &t, p)
}

/// A stored pipeline's spec, confined again under its tenant's current
/// quotas and allow-lists (the admin may have narrowed them since).
pub(crate) fn startable(
    state: &AppState,
    t: &TenantRow,
    p: &PipelineRow,
) -> Result<Pipeline, String> {
    confined(state, t, &p.spec)
}

/// After a tenant's quotas changed: its running pipelines start again
/// under them (or stop, failed, when they no longer fit).
pub async fn restart_running(state: &AppState, t: &TenantRow) {
    let rows = match state.store.pipelines(Some(&t.name)) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("serve: listing pipelines of {}: {e}", t.name);
            return;
        }
    };
    let (state, t) = (state.clone(), t.clone());
    let _ = tokio::task::spawn_blocking(move || {
        for p in rows.iter().filter(|p| p.desired == "running") {
            start_or_halt(&state, &t, p, "restarted");
        }
    })
    .await;
}

/// Start a stored pipeline, or mark it failed with the reason it cannot.
fn start_or_halt(state: &AppState, t: &TenantRow, p: &PipelineRow, event: &str) {
    let started = (|| -> Result<(), String> {
        let spec = startable(state, t, p)?;
        if let Some(why) = super::quota::over(state, t) {
            return Err(why);
        }
        state.supervisor.start(&state.store, t, &p.name, &spec)
    })();
    match started {
        Ok(()) => state.store.event(Some(&p.tenant), &p.name, event, ""),
        Err(e) => {
            state.supervisor.halt(&p.tenant, &p.name, &e);
            state.store.event(Some(&p.tenant), &p.name, "failed", &e);
        }
    }
}

/// At start: every pipeline that should run, runs again from its checkpoint.
pub fn resume_all(state: &AppState) {
    let rows = match state.store.pipelines(None) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!("serve: listing pipelines to resume: {e}");
            return;
        }
    };
    for p in rows.into_iter().filter(|p| p.desired == "running") {
        match state.store.tenant(&p.tenant) {
            Ok(Some(t)) => start_or_halt(state, &t, &p, "resumed"),
            Ok(None) => {}
            Err(e) => tracing::error!("serve: reading tenant {}: {e}", p.tenant),
        }
    }
}
