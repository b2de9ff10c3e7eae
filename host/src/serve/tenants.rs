//! `/v1/tenants`: the admin creates tenants with quotas (each gets a token,
//! shown once), lists, deletes them and rotates their tokens.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::auth::{Caller, hash, new_token};
use super::error::{ApiError, ApiResult};
use super::store::TenantRow;

/// `POST /v1/tenants` body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct NewTenant {
    name: String,
    max_pipelines: Option<u64>,
    /// A size such as "1GiB".
    max_memory: Option<String>,
    cpu_weight: Option<u64>,
    /// A size such as "256MiB": all of the tenant's stored components.
    max_component_bytes: Option<String>,
}

/// Tenant names: what may appear in paths, logs and directory names.
pub fn valid_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
}

fn size(key: &str, v: Option<String>, default: u64) -> ApiResult<u64> {
    match v {
        None => Ok(default),
        Some(s) => crate::spec::parse_size(&s)
            .map(|n| n as u64)
            .map_err(|e| ApiError::bad_request(format!("{key}: {e}"))),
    }
}

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<NewTenant>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    caller.admin()?;
    if !valid_name(&body.name) {
        return Err(ApiError::bad_request(format!(
            "tenant name `{}`: use 1-63 lowercase letters, digits and dashes",
            body.name
        )));
    }
    let row = TenantRow {
        max_pipelines: body.max_pipelines.unwrap_or(10),
        max_memory: size("max-memory", body.max_memory, 1 << 30)?,
        cpu_weight: body.cpu_weight.unwrap_or(1).max(1),
        max_component_bytes: size("max-component-bytes", body.max_component_bytes, 1 << 30)?,
        name: body.name,
    };
    let token = new_token();
    if !state.store.create_tenant(&row, &hash(&token))? {
        return Err(ApiError::conflict(format!("tenant `{}` exists", row.name)));
    }
    state
        .store
        .event(Some(&row.name), &row.name, "tenant-created", "");
    let mut v = serde_json::to_value(&row).expect("a tenant row serializes");
    v["token"] = token.into();
    Ok((StatusCode::CREATED, Json(v)))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<TenantRow>>> {
    caller.admin()?;
    Ok(Json(state.store.tenants()?))
}

pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.admin()?;
    let ids: Vec<String> = state
        .store
        .components(&name)?
        .into_iter()
        .map(|c| c.id)
        .collect();
    // Its pipelines stop (after their current batch) before their rows go.
    let names: Vec<String> = state
        .store
        .pipelines(Some(&name))?
        .into_iter()
        .map(|p| p.name)
        .collect();
    state.forget_pipelines(&name, names).await?;
    if !state.store.delete_tenant(&name)? {
        return Err(ApiError::not_found(&format!("tenant `{name}`")));
    }
    for id in ids {
        super::components::forget_bytes(&state, &id)?;
    }
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
    if !state.store.set_tenant_token(&name, &hash(&token))? {
        return Err(ApiError::not_found(&format!("tenant `{name}`")));
    }
    state.store.event(Some(&name), &name, "token-rotated", "");
    Ok(Json(serde_json::json!({ "name": name, "token": token })))
}
