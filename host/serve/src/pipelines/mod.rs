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

mod local;
mod spec;

pub use local::{restart_running, resume_all};
pub(crate) use spec::{startable, stored_spec};

use local::start_or_halt;
use spec::{Resolved, resolve};

use super::AppState;
use super::auth::Caller;
use super::catalog::Change;
use super::error::{ApiError, ApiResult};
use super::store::{PipelineRow, TenantRow};

pub(super) fn tenant_row(state: &AppState, tenant: &str) -> ApiResult<TenantRow> {
    state
        .store
        .tenant(tenant)?
        .ok_or_else(|| ApiError::not_found(&format!("tenant `{tenant}`")))
}

fn view(state: &AppState, p: &PipelineRow, detail: bool) -> Value {
    super::view::pipeline(state, p, detail)
}

pub(super) fn find(state: &AppState, tenant: &str, name: &str) -> ApiResult<PipelineRow> {
    state
        .store
        .pipeline(tenant, name)?
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
    let row = PipelineRow {
        tenant: tenant.clone(),
        name: name.clone(),
        spec: text,
        component: component.unwrap_or_default(),
        desired: "running".into(),
        upgrade: opts.upgrade,
    };
    let before = state.store.pipeline(&tenant, &name)?;
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
            let new = store.pipeline(&stored.tenant, &stored.name)?.is_none();
            if new {
                within_quota(store, &t)?;
            }
            if stored.has_component()
                && store
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
    if store.pipeline_count(&t.name)? >= t.max_pipelines {
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
                .pipeline(&tenant, &name)?
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
