//! A pipeline's TOML as a tenant sends it, resolved (its component by
//! id, its name, its checkpoint) and confined to what the tenant may use,
//! on one node or in a cluster.

use super::super::AppState;
use super::super::confine;
use super::super::error::{ApiError, ApiResult};
use super::super::store::{PipelineRow, TenantRow};
use weir_pipeline::spec::{GuestEnv, Pipeline};

/// The pipeline TOML with its component id resolved to the stored bytes,
/// its name set and a default checkpoint; validated and confined.
pub(super) fn resolve(
    state: &AppState,
    t: &TenantRow,
    name: &str,
    text: &str,
) -> ApiResult<Resolved> {
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
    // A host `[window]` runs no component; anything else names one.
    let component = if table.contains_key("window") && !table.contains_key("transform") {
        None
    } else {
        Some(uploaded_component(state, tenant, &mut table)?)
    };
    let text = toml::to_string(&table).map_err(ApiError::internal)?;
    let spec = confined(state, t, &text).map_err(ApiError::bad_request)?;
    Ok(Resolved {
        spec,
        text,
        component,
    })
}

/// The id of the uploaded component `[transform] component` names, which
/// the tenant must own; the table then names its bytes.
fn uploaded_component(
    state: &AppState,
    tenant: &str,
    table: &mut toml::Table,
) -> ApiResult<String> {
    let component = table
        .get("transform")
        .and_then(|t| t.get("component"))
        .and_then(|c| c.as_str())
        .map(|c| c.trim_start_matches("sha256:").to_string())
        .ok_or_else(|| {
            ApiError::bad_request(
                "transform.component: give the id of an uploaded component (or aggregate with [window] instead of [transform])",
            )
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
    Ok(component)
}

/// A pipeline as PUT: validated, with the text stored and the component
/// (`None`: a host `[window]` runs in its place).
pub(super) struct Resolved {
    pub spec: Pipeline,
    pub text: String,
    pub component: Option<String>,
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
    let cluster = state
        .cluster
        .as_ref()
        .zip(checkpoints.as_deref())
        .map(|(c, checkpoints)| confine::ClusterPlaces {
            checkpoints,
            control: &c.config.topic_prefix,
        });
    let allowed = confine::Allowed {
        brokers: &t.kafka_brokers,
        grants: &t.grants,
        max_memory: t.max_memory,
        cluster,
    };
    confine::pipeline(&spec, &root, &allowed).map_err(|e| root.redact(&e))?;
    Ok(spec)
}

/// A stored pipeline's spec, read as it was validated (relative to the
/// tenant's data root, with its guest variables).
pub(crate) fn stored_spec(state: &AppState, p: &PipelineRow) -> Result<Pipeline, String> {
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
