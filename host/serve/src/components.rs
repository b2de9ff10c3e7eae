//! `/v1/components`: a tenant uploads raw `.wasm` bytes, validated exactly
//! as `weir validate` validates a file (nothing is stored when they are
//! refused); the same bytes always get the same id, their SHA-256. Bytes
//! are stored once under `<data>/components/<id>.wasm`, whichever tenants
//! upload them.

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::StatusCode;

use super::AppState;
use super::auth::Caller;
use super::catalog::Change;
use super::error::{ApiError, ApiResult};
use super::store::ComponentRow;

pub(crate) fn bytes_path(state: &AppState, id: &str) -> std::path::PathBuf {
    state.data.join("components").join(format!("{id}.wasm"))
}

pub async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> ApiResult<(StatusCode, Json<ComponentRow>)> {
    let tenant = caller.tenant()?.to_string();
    let limit = state.max_component_size;
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            format!("a component may have at most {limit} bytes"),
        )
    })?;
    // Check and store as one step per tenant: parallel uploads cannot all
    // pass the component-bytes quota.
    let _quota_lock = state.tenant_lock(&tenant).await;
    let quota = state
        .store
        .tenant(&tenant)?
        .map_or(0, |t| t.max_component_bytes);
    let used = state.store.component_bytes(&tenant)?;
    let id = weir_runtime::sha256_hex(&bytes);
    if let Some(c) = state.store.component(&tenant, &id)? {
        return Ok((StatusCode::OK, Json(c)));
    }
    if used.saturating_add(bytes.len() as u64) > quota {
        return Err(ApiError::quota(format!(
            "tenant `{tenant}` may store {quota} bytes of components and has {used}; delete one first"
        )));
    }
    let st = state.clone();
    let row = tokio::task::spawn_blocking(move || -> ApiResult<ComponentRow> {
        let row = validate_and_store(&st, &bytes)?;
        // In a cluster the bytes are on the object store before any
        // record names them, so every node can fetch what it runs.
        if let Some(c) = &st.cluster {
            c.put_component(&row.id, &bytes)
                .map_err(|e| ApiError::unavailable(format!("storing the component: {e}")))?;
        }
        Ok(row)
    })
    .await
    .map_err(ApiError::internal)??;
    let (owner, new) = (tenant.clone(), row.clone());
    let row = state
        .write(Box::new(move |store| {
            if let Some(c) = store.component(&owner, &new.id)? {
                return Ok((vec![], c));
            }
            let quota = store.tenant(&owner)?.map_or(0, |t| t.max_component_bytes);
            let used = store.component_bytes(&owner)?;
            if used.saturating_add(new.size) > quota {
                return Err(ApiError::quota(format!(
                    "tenant `{owner}` may store {quota} bytes of components and has {used}; delete one first"
                )));
            }
            let change = Change::Component {
                tenant: owner.clone(),
                row: new.clone(),
            };
            Ok((vec![change], new.clone()))
        }))
        .await?;
    state.store.event(
        Some(&tenant),
        &row.id,
        "component-uploaded",
        &format!("{} bytes", row.size),
    );
    Ok((StatusCode::CREATED, Json(row)))
}

/// Load the bytes as `weir validate` does (compile, check the world and
/// the imports); keep them only if that succeeds.
fn validate_and_store(state: &AppState, bytes: &[u8]) -> ApiResult<ComponentRow> {
    let id = weir_runtime::sha256_hex(bytes);
    let tmp_dir = state.data.join("tmp");
    weir_engine::durable::create_dir_all(&tmp_dir).map_err(ApiError::internal)?;
    let mut tmp = tempfile::Builder::new()
        .suffix(".wasm")
        .tempfile_in(&tmp_dir)
        .map_err(ApiError::internal)?;
    // Synced before it is renamed into components/ (and that directory
    // synced after), so the row the store commits never names a file a
    // power cut could take.
    std::io::Write::write_all(tmp.as_file_mut(), bytes).map_err(ApiError::internal)?;
    tmp.as_file().sync_all().map_err(ApiError::internal)?;
    // Checked for what it is, a valid component of the world; what it
    // imports beyond it is reported, and granted (or not) per pipeline.
    let grantable: Vec<String> = super::tenants::GRANTABLE
        .iter()
        .map(|g| g.to_string())
        .collect();
    let component = state.runtime.load(tmp.path(), &grantable).map_err(|e| {
        // A component refused after it compiled leaves no native code.
        state.runtime.forget_compiled(&id);
        let reason = e.to_string();
        // Name the upload, not the temporary file it was checked in.
        let reason = reason.replace(&tmp.path().display().to_string(), "component");
        ApiError::new(StatusCode::BAD_REQUEST, "invalid-component", reason)
    })?;
    let info = component.info();
    let row = ComponentRow {
        id: id.clone(),
        size: bytes.len() as u64,
        world: if info.stateful {
            format!("stateful-{}", weir_runtime::WORLD)
        } else {
            weir_runtime::WORLD.to_string()
        },
        imports: info.interfaces.imports.clone(),
        exports: info.interfaces.exports.clone(),
    };
    let path = bytes_path(state, &id);
    if !path.exists() {
        tmp.persist(&path)
            .map_err(|e| ApiError::internal(e.error))?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        weir_engine::durable::sync_dir(dir).map_err(ApiError::internal)?;
    }
    Ok(row)
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<ComponentRow>>> {
    Ok(Json(state.store.components(caller.tenant()?)?))
}

fn find(state: &AppState, tenant: &str, id: &str) -> ApiResult<ComponentRow> {
    state
        .store
        .component(tenant, id)?
        .ok_or_else(|| ApiError::not_found(&format!("component `{id}`")))
}

pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ComponentRow>> {
    Ok(Json(find(&state, caller.tenant()?, &id)?))
}

pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let tenant = caller.tenant()?;
    let (owner, gone) = (tenant.to_string(), id.clone());
    state
        .write(Box::new(move |store| {
            if store.component(&owner, &gone)?.is_none() {
                return Err(ApiError::not_found(&format!("component `{gone}`")));
            }
            let users = store.pipelines_using(&owner, &gone)?;
            if !users.is_empty() {
                return Err(ApiError::conflict(format!(
                    "component `{gone}` is used by pipeline(s) {}; delete or change them first",
                    users.join(", ")
                )));
            }
            let change = Change::ComponentGone {
                tenant: owner.clone(),
                id: gone.clone(),
            };
            Ok((vec![change], ()))
        }))
        .await?;
    forget_bytes(&state, &id)?;
    state
        .store
        .event(Some(tenant), &id, "component-deleted", "");
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a component's bytes once no tenant has it.
pub fn forget_bytes(state: &AppState, id: &str) -> ApiResult<()> {
    if !state.store.component_referenced(id)? {
        state.runtime.forget_compiled(id);
        match std::fs::remove_file(bytes_path(state, id)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(ApiError::internal(e)),
        }
    }
    Ok(())
}
