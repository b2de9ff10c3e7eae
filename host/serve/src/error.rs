//! API errors: every failure is JSON `{"error": <code>, "detail": <one line
//! a user can act on>}` with the status that says what kind of failure it is.

use axum::Json;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// A stable, machine-readable code (`not-found`, `invalid-component`...).
    pub error: &'static str,
    pub detail: String,
    /// When the same request may succeed (a `Retry-After` header).
    pub retry_after: Option<std::time::Duration>,
}

impl ApiError {
    pub fn new(status: StatusCode, error: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            error,
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// Say when the request may be sent again (whole seconds, at least 1).
    pub fn retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", format!("no {what}"))
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", detail)
    }

    /// A tenant quota refuses it (403 `quota-exceeded`): the same request
    /// succeeds once the tenant frees room or the admin raises the quota.
    pub fn quota(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "quota-exceeded", detail)
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflict", detail)
    }

    /// The cluster's control plane cannot take the write now (503); the
    /// same request may succeed shortly.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", detail)
            .retry_after(std::time::Duration::from_secs(1))
    }

    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!("serve: {detail}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            detail.to_string(),
        )
    }
}

impl From<rusqlite::Error> for ApiError {
    fn from(e: rusqlite::Error) -> Self {
        ApiError::internal(format!("store: {e}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.error, "detail": self.detail });
        let mut r = (self.status, Json(body)).into_response();
        if let Some(after) = self.retry_after {
            let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        r
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// `axum::Json` whose refusal is the API's JSON error: 400 with serde's
/// reason (an unknown field, a wrong type), not axum's plain text.
pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(JsonBody(v)),
            Err(e) => Err(ApiError::bad_request(e.body_text())),
        }
    }
}

/// Every error response as the API's JSON: axum's own refusals (a bad
/// query string or path, a body over its limit, a wrong method) are plain
/// text or empty; they are rewritten here, so a client parses one shape.
///
/// Every error's text also has the data directory's path replaced by
/// `<data>`: a client never learns where the server keeps its files.
pub async fn json_errors(
    axum::extract::State(data): axum::extract::State<std::path::PathBuf>,
    resp: Response,
) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let retry_after = resp.headers().get(RETRY_AFTER).cloned();
    let is_json = resp
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let body = axum::body::to_bytes(resp.into_body(), 256 << 10)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&body).replace(&data.display().to_string(), "<data>");
    if is_json {
        let mut r = (status, text).into_response();
        r.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        );
        if let Some(v) = retry_after {
            r.headers_mut().insert(RETRY_AFTER, v);
        }
        return r;
    }
    let text = text.trim().to_string();
    let (error, fallback) = match status {
        StatusCode::METHOD_NOT_ALLOWED => (
            "method-not-allowed",
            "this endpoint does not take that method",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ("too-large", "the request body is over the limit"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (
            "unsupported-media-type",
            "send the body as the endpoint expects",
        ),
        s if s.is_server_error() => ("internal", "the server failed"),
        _ => ("bad-request", "the request is malformed"),
    };
    let detail = if text.is_empty() {
        fallback.to_string()
    } else {
        text
    };
    ApiError::new(status, error, detail).into_response()
}
