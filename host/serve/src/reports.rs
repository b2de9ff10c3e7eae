//! What a pipeline tells its owner: recent progress (`.../progress`), its
//! guests' logs (`.../logs`, `follow` as server-sent events), its dead
//! letters (`.../dead-letters`), and `GET /metrics` for Prometheus.

use std::convert::Infallible;
use std::path::Path as FsPath;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::AppState;
use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::logs::LogLine;
use weir_engine::RecordBatch;
use weir_pipeline::spec::SinkSpec;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Since {
    /// Only reports of batches (epochs) after this id.
    since: Option<u64>,
}

/// `GET /v1/pipelines/{name}/progress?since=ID`: the kept reports, oldest
/// first (the last [`super::supervisor::RECENT_PROGRESS`] since the service
/// started).
pub async fn progress(
    State(state): State<AppState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
    Path(name): Path<String>,
    Query(q): Query<Since>,
) -> ApiResult<Response> {
    let tenant = caller.tenant()?;
    super::pipelines::find(&state, tenant, &name)?;
    if let Some(c) = &state.cluster
        && let Some(answer) = c.forward(tenant, &name, &headers, &uri).await?
    {
        return Ok(answer);
    }
    let reports = state.supervisor.progress_since(tenant, &name, q.since);
    let mut v = serde_json::to_value(reports).map_err(ApiError::internal)?;
    super::confine::TenantRoot::shown(&state.data, tenant).redact_json(&mut v);
    Ok(Json(v).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    /// How many of the last lines (default 100).
    tail: Option<usize>,
    /// Keep the response open and send new lines as server-sent events.
    #[serde(default)]
    follow: bool,
}

/// `GET /v1/pipelines/{name}/logs?tail=N&follow=true`.
/// How often a log follower's token is checked again: a rotated or
/// revoked token (or a deleted tenant) closes the stream within this.
const TOKEN_RECHECK: std::time::Duration = std::time::Duration::from_secs(1);

pub async fn logs(
    State(state): State<AppState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    uri: axum::http::Uri,
    Path(name): Path<String>,
    Query(q): Query<LogQuery>,
) -> ApiResult<Response> {
    let tenant = caller.tenant()?;
    super::pipelines::find(&state, tenant, &name)?;
    if let Some(c) = &state.cluster
        && let Some(answer) = c.forward(tenant, &name, &headers, &uri).await?
    {
        return Ok(answer);
    }
    let tail = q.tail.unwrap_or(100).min(super::logs::KEPT_LINES);
    let log = super::logs::register(tenant, &name);
    if !q.follow {
        return Ok(Json(log.tail(tail)).into_response());
    }
    let token = super::auth::token_hash(&headers)
        .ok_or_else(|| ApiError::internal("a caller without a token"))?;
    let holder = state.store.caller(&token)?;
    let (kept, rx) = log.follow(tail);
    let (tx, events) = tokio::sync::mpsc::channel::<Event>(64);
    let store = state.store.clone();
    tokio::spawn(async move {
        for l in &kept {
            if tx.send(log_event(l)).await.is_err() {
                return;
            }
        }
        let mut live = BroadcastStream::new(rx);
        let mut recheck = tokio::time::interval(TOKEN_RECHECK);
        loop {
            tokio::select! {
                line = live.next() => {
                    let event = match line {
                        None => return,
                        Some(Ok(l)) => log_event(&l),
                        // A follower slower than its guest: say what it missed.
                        Some(Err(BroadcastStreamRecvError::Lagged(n))) => Event::default()
                            .event("skipped")
                            .data(format!("{n} lines not sent: the reader fell behind")),
                    };
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
                _ = recheck.tick() => {
                    if store.caller(&token).ok().flatten() != holder {
                        let _ = tx
                            .send(Event::default().event("closed").data("the token was rotated or revoked"))
                            .await;
                        return;
                    }
                }
                _ = tx.closed() => return,
            }
        }
    });
    let stream = tokio_stream::wrappers::ReceiverStream::new(events).map(Ok::<_, Infallible>);
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

fn log_event(l: &LogLine) -> Event {
    Event::default()
        .id(l.seq.to_string())
        .json_data(l)
        .unwrap_or_else(|_| Event::default().comment("unencodable line"))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// How many of the newest (default 100, at most 10,000).
    limit: Option<usize>,
}

/// `GET /v1/pipelines/{name}/dead-letters?limit=N`: the newest committed
/// dead letters of the pipeline's `[sink.dead-letter]`, oldest first.
pub async fn dead_letters(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Query(q): Query<Limit>,
) -> ApiResult<Json<Vec<Value>>> {
    let tenant = caller.tenant()?;
    let p = super::pipelines::find(&state, tenant, &name)?;
    let spec = super::pipelines::stored_spec(&state, &p).map_err(ApiError::internal)?;
    let sink = spec
        .sinks
        .iter()
        .find(|(route, _)| route.as_deref() == Some(weir_engine::DEAD_LETTER))
        .map(|(_, s)| s.clone())
        .ok_or_else(|| ApiError::not_found("[sink.dead-letter] in this pipeline"))?;
    let limit = q.limit.unwrap_or(100).min(10_000);
    let letters = tokio::task::spawn_blocking(move || read_letters(&sink, limit))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok(Json(letters))
}

fn read_letters(sink: &SinkSpec, limit: usize) -> Result<Vec<Value>, String> {
    let mut values: Vec<(i64, Vec<u8>)> = Vec::new();
    match sink {
        SinkSpec::Log { root, topic, .. } => {
            if !root.join(topic).exists() {
                return Ok(vec![]);
            }
            let mut t = weir_log::Topic::open(root, topic).map_err(|e| e.to_string())?;
            let ends = t.committed_ends().map_err(|e| e.to_string())?;
            for (p, end) in ends.iter().enumerate() {
                let mut b = RecordBatch::new(p as u32);
                let from = end.saturating_sub(limit as u64);
                t.read(p as u32, from, *end, &mut b)
                    .map_err(|e| e.to_string())?;
                for i in 0..b.len() {
                    let r = b.get(i);
                    values.push((r.timestamp, r.value.to_vec()));
                }
            }
            values.sort_by_key(|(ts, _)| *ts);
        }
        SinkSpec::Files { dir, .. } => {
            let lines = files_or_none(dir)?;
            values = lines.into_iter().map(|l| (0, l)).collect();
        }
        SinkSpec::Console | SinkSpec::Kafka(_) => {
            return Err("dead letters can be read back from log and file sinks only".into());
        }
    }
    let skip = values.len().saturating_sub(limit);
    Ok(values
        .into_iter()
        .skip(skip)
        .map(|(_, v)| letter(&v))
        .collect())
}

fn files_or_none(dir: &FsPath) -> Result<Vec<Vec<u8>>, String> {
    if !dir.exists() {
        return Ok(vec![]);
    }
    weir_connectors::file_sink::read_committed(dir).map_err(|e| e.to_string())
}

/// A dead letter as JSON: written as the value (`values` files, log
/// topics) or inside a `records` line's `value`.
fn letter(bytes: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()));
    match v.get("value").and_then(Value::as_str) {
        Some(inner) if v.get("error").is_none() => serde_json::from_str(inner).unwrap_or(v),
        _ => v,
    }
}

/// `GET /metrics`: Prometheus text. The admin token sees every tenant's
/// series; a tenant token its own.
pub async fn metrics(State(state): State<AppState>, caller: Caller) -> Response {
    let tenant = match &caller {
        Caller::Admin => None,
        Caller::Tenant(t) | Caller::AdminFor(t) => Some(t.as_str()),
    };
    let mut text = state.supervisor.metrics.encode(tenant);
    if tenant.is_none() {
        text.push_str(&crate::cluster::metrics(&state));
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}
