//! `POST /v1/pipelines/{name}/replay`: one of the tenant's uploaded
//! components replayed over committed batches of the pipeline (see
//! [`weir_pipeline::replay`]), under the tenant's memory quota, in a scratch
//! directory under the data directory's `tmp/`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::auth::Caller;
use super::error::{ApiError, ApiResult, JsonBody};
use weir_pipeline::replay::{self, ReplayError, ReplayOptions, Report};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ReplayRequest {
    /// The candidate: an uploaded component's id.
    component: String,
    from: Option<u64>,
    to: Option<u64>,
    /// Differences listed per output and batch (at most 100).
    shown: Option<usize>,
}

pub async fn replay(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<ReplayRequest>,
) -> ApiResult<Json<Report>> {
    let tenant = caller.tenant()?.to_string();
    let p = super::pipelines::find(&state, &tenant, &name)?;
    let t = super::pipelines::tenant_row(&state, &tenant)?;
    let id = req.component.trim_start_matches("sha256:").to_string();
    if state.store.component(&tenant, &id)?.is_none() {
        return Err(ApiError::bad_request(format!(
            "component: no component `{id}` (upload it to /v1/components first)"
        )));
    }
    let spec = super::pipelines::stored_spec(&state, &p).map_err(ApiError::internal)?;
    let opts = ReplayOptions {
        candidate: super::components::bytes_path(&state, &id),
        from: req.from,
        to: req.to,
        shown: req.shown.unwrap_or(replay::DEFAULT_SHOWN).min(100),
        scratch_in: state.data.join("tmp"),
    };
    let st = state.clone();
    let report = tokio::task::spawn_blocking(move || {
        let quota = st.supervisor.tenant_quota(&t);
        replay::replay(&st.runtime, &spec, Some(quota), &opts)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| match e {
        ReplayError::Refused(m) => ApiError::bad_request(m),
        ReplayError::Run(m) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "replay-failed", m),
        ReplayError::Io(m) => ApiError::internal(m),
    })?;
    state
        .store
        .event(Some(&tenant), &name, "replayed", &format!("sha256:{id}"));
    Ok(Json(report))
}
