//! `/v1/tenants`: the admin creates tenants with quotas (each gets a token,
//! shown once), lists, deletes them and rotates their tokens.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::auth::{Caller, hash, new_token};
use super::catalog::Change;
use super::error::{ApiError, ApiResult, JsonBody};
use super::store::TenantRow;

/// `POST /v1/tenants` body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct NewTenant {
    name: String,
    #[serde(flatten)]
    quotas: Quotas,
}

/// Quotas and allow-lists, each optional: defaults at creation, unchanged
/// by `PATCH` when left out.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Quotas {
    max_pipelines: Option<u64>,
    /// A size such as "1GiB": guest memory over all its pipelines.
    max_memory: Option<String>,
    cpu_weight: Option<u64>,
    /// A size such as "256MiB": all of the tenant's stored components.
    max_component_bytes: Option<String>,
    /// A size such as "10GiB": checkpoints, embedded logs and file output.
    max_data_bytes: Option<String>,
    /// `host:port` of each Kafka broker its pipelines may use.
    kafka_brokers: Option<Vec<String>>,
    /// Variables its guests may be given (`[transform.sandbox] env`), with
    /// their values: the only environment a tenant's guest can see.
    guest_env: Option<BTreeMap<String, String>>,
    /// Interfaces its pipelines may grant their guests (`wasi:sockets`,
    /// `wasi:filesystem`): the admin decides per tenant.
    grants: Option<Vec<String>>,
    /// Its API calls per second (see `serve::rates`).
    max_requests_per_second: Option<u64>,
}

/// What an admin may allow a tenant's pipelines to grant: the WASI
/// packages the sandbox can back with an empty context (no network reached,
/// no directory but the granted read-only ones).
pub const GRANTABLE: &[&str] = &["wasi:sockets", "wasi:filesystem"];

/// Most variables in a tenant's guest-env, and the longest value.
const MAX_GUEST_VARS: usize = 64;
const MAX_GUEST_VALUE: usize = 32 << 10;

fn check_guest_env(env: &BTreeMap<String, String>) -> ApiResult<()> {
    if env.len() > MAX_GUEST_VARS {
        return Err(ApiError::bad_request(format!(
            "guest-env: at most {MAX_GUEST_VARS} variables"
        )));
    }
    for (name, value) in env {
        let plain = (1..=128).contains(&name.len())
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !plain {
            return Err(ApiError::bad_request(format!(
                "guest-env: `{}` is not a variable name (letters, digits and `_`, at most 128)",
                name.escape_debug()
            )));
        }
        if value.len() > MAX_GUEST_VALUE || value.contains('\0') {
            return Err(ApiError::bad_request(format!(
                "guest-env.{name}: a value has at most {MAX_GUEST_VALUE} bytes and no NUL"
            )));
        }
    }
    Ok(())
}

impl Quotas {
    /// Apply to `row` (which holds the defaults or the current values).
    fn apply(self, row: &mut TenantRow) -> ApiResult<()> {
        if let Some(n) = self.max_pipelines {
            row.max_pipelines = n;
        }
        if let Some(n) = self.cpu_weight {
            row.cpu_weight = n.max(1);
        }
        if let Some(n) = self.max_requests_per_second {
            if !(1..=super::rates::MAX_PER_SECOND).contains(&n) {
                return Err(ApiError::bad_request(format!(
                    "max-requests-per-second: {n} is not between 1 and {}",
                    super::rates::MAX_PER_SECOND
                )));
            }
            row.max_requests_per_second = n;
        }
        size(&mut row.max_memory, "max-memory", self.max_memory)?;
        size(
            &mut row.max_component_bytes,
            "max-component-bytes",
            self.max_component_bytes,
        )?;
        size(
            &mut row.max_data_bytes,
            "max-data-bytes",
            self.max_data_bytes,
        )?;
        if let Some(brokers) = self.kafka_brokers {
            for b in &brokers {
                super::confine::broker_address(b).map_err(ApiError::bad_request)?;
            }
            row.kafka_brokers = brokers.iter().map(|b| b.to_ascii_lowercase()).collect();
        }
        if let Some(grants) = self.grants {
            if let Some(g) = grants.iter().find(|g| !GRANTABLE.contains(&g.as_str())) {
                return Err(ApiError::bad_request(format!(
                    "grants: `{}` cannot be granted (grantable: {})",
                    g.escape_debug(),
                    GRANTABLE.join(", ")
                )));
            }
            row.grants = grants;
        }
        if let Some(env) = self.guest_env {
            check_guest_env(&env)?;
            row.guest_env = env;
        }
        Ok(())
    }
}

/// Tenant names: what may appear in paths, logs and directory names.
pub fn valid_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

fn size(into: &mut u64, key: &str, v: Option<String>) -> ApiResult<()> {
    if let Some(s) = v {
        *into = weir_pipeline::spec::parse_size(&s)
            .map(|n| n as u64)
            .map_err(|e| ApiError::bad_request(format!("{key}: {e}")))?;
    }
    Ok(())
}

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<NewTenant>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    caller.admin()?;
    if !valid_name(&body.name) {
        return Err(ApiError::bad_request(format!(
            "tenant name `{}`: use 1-63 lowercase letters, digits and dashes",
            body.name
        )));
    }
    let mut row = TenantRow {
        max_pipelines: 10,
        max_memory: 1 << 30,
        cpu_weight: 1,
        max_component_bytes: 1 << 30,
        max_data_bytes: 10 << 30,
        kafka_brokers: vec![],
        guest_env: BTreeMap::new(),
        grants: vec![],
        max_requests_per_second: super::rates::DEFAULT_PER_SECOND,
        name: body.name,
    };
    body.quotas.apply(&mut row)?;
    let token = new_token();
    let (new, token_hash) = (row.clone(), hash(&token));
    state
        .write(Box::new(move |store| {
            if store.tenant(&new.name)?.is_some() {
                return Err(ApiError::conflict(format!("tenant `{}` exists", new.name)));
            }
            let change = Change::Tenant {
                row: new.clone(),
                token_hash: token_hash.clone(),
            };
            Ok((vec![change], ()))
        }))
        .await?;
    state
        .store
        .event(Some(&row.name), &row.name, "tenant-created", "");
    let mut v = row.shown();
    v["token"] = token.into();
    Ok((StatusCode::CREATED, Json(v)))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<serde_json::Value>>> {
    caller.admin()?;
    Ok(Json(
        state
            .store
            .tenants()?
            .iter()
            .map(TenantRow::shown)
            .collect(),
    ))
}

/// `DELETE /v1/tenants/{name}`: its pipelines stop, then its rows, its
/// components' bytes (unless another tenant has them) and its whole data
/// root go, so a later tenant of the same name starts empty.
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.admin()?;
    // No PUT or upload of the tenant's runs meanwhile.
    let _quota_lock = state.tenant_lock(&name).await;
    if state.store.tenant(&name)?.is_none() {
        return Err(ApiError::not_found(&format!("tenant `{name}`")));
    }
    let ids: Vec<String> = state
        .store
        .components(&name)?
        .into_iter()
        .map(|c| c.id)
        .collect();
    let names: Vec<String> = state
        .store
        .pipelines(Some(&name))?
        .into_iter()
        .map(|p| p.name)
        .collect();
    let names_before = names.clone();
    state.forget_pipelines(&name, names).await?;
    if state.supervisor.tenant_still_stopping(&name) {
        return Err(ApiError::conflict(format!(
            "tenant `{name}` has pipelines that are still stopping; try again shortly"
        )));
    }
    let gone = name.clone();
    state
        .write(Box::new(move |store| {
            if store.tenant(&gone)?.is_none() {
                return Err(ApiError::not_found(&format!("tenant `{gone}`")));
            }
            Ok((gone_with_rows(store, &gone)?, ()))
        }))
        .await?;
    for id in ids {
        super::components::forget_bytes(&state, &id)?;
    }
    let root = super::confine::TenantRoot::path_of(&state.data, &name);
    let removed = tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&root) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    })
    .await
    .map_err(ApiError::internal)?;
    if let Err(e) = removed {
        return Err(ApiError::internal(format!(
            "tenant `{name}` was deleted but its data was not all removed: {e}"
        )));
    }
    if let Some(c) = state.cluster.clone() {
        let (tenant, pipelines) = (name.clone(), names_before.clone());
        tokio::task::spawn_blocking(move || c.purge_tenant(&tenant, &pipelines))
            .await
            .map_err(ApiError::internal)?
            .map_err(|e| {
                ApiError::unavailable(format!(
                    "tenant `{name}` was deleted but its checkpoints were not all removed: {e}"
                ))
            })?;
    }
    state.supervisor.forget_tenant(&name);
    state.quota_locks.forget(&name);
    state.data_usage.forget(&name);
    state.rates.forget(&name);
    state.store.event(Some(&name), &name, "tenant-deleted", "");
    Ok(StatusCode::NO_CONTENT)
}

pub async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.admin()?;
    let token = new_token();
    let (tenant, token_hash) = (name.clone(), hash(&token));
    state
        .write(Box::new(move |store| {
            let row = store
                .tenant(&tenant)?
                .ok_or_else(|| ApiError::not_found(&format!("tenant `{tenant}`")))?;
            let change = Change::Tenant {
                row,
                token_hash: token_hash.clone(),
            };
            Ok((vec![change], ()))
        }))
        .await?;
    state.store.event(Some(&name), &name, "token-rotated", "");
    Ok(Json(serde_json::json!({ "name": name, "token": token })))
}

/// `PATCH /v1/tenants/{name}`: change quotas or the broker allow-list. The
/// tenant's running pipelines restart (from their checkpoints) under them.
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<Quotas>,
) -> ApiResult<Json<serde_json::Value>> {
    caller.admin()?;
    let tenant = name.clone();
    let row = state
        .write(Box::new(move |store| {
            let mut row = store
                .tenant(&tenant)?
                .ok_or_else(|| ApiError::not_found(&format!("tenant `{tenant}`")))?;
            let token_hash = store.token_hash(&tenant)?.unwrap_or_default();
            body.clone().apply(&mut row)?;
            Ok((
                vec![Change::Tenant {
                    row: row.clone(),
                    token_hash,
                }],
                row,
            ))
        }))
        .await?;
    state.store.event(Some(&name), &name, "tenant-updated", "");
    super::pipelines::restart_running(&state, &row).await;
    Ok(Json(row.shown()))
}

/// A deleted tenant's changes: its components and pipelines go too, each
/// by its own record, so no row of it outlives it in a compacted log.
fn gone_with_rows(store: &super::store::Store, name: &str) -> ApiResult<Vec<Change>> {
    let mut changes: Vec<Change> = store
        .pipelines(Some(name))?
        .into_iter()
        .map(|p| Change::PipelineGone {
            tenant: name.to_string(),
            name: p.name,
        })
        .collect();
    changes.extend(
        store
            .components(name)?
            .into_iter()
            .map(|c| Change::ComponentGone {
                tenant: name.to_string(),
                id: c.id,
            }),
    );
    changes.push(Change::TenantGone {
        name: name.to_string(),
    });
    Ok(changes)
}
