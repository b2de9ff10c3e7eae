//! The dashboard: static files compiled into the binary (no build step,
//! nothing fetched from elsewhere), served at `/`. The page talks only to
//! the `/v1` API with the token the user logs in with.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Revalidated on every load: the files change with the binary.
const CACHE: &str = "no-cache";

/// The scripts, in the order `index.html` loads them.
const SCRIPTS: [(&str, &str); 6] = [
    ("core.js", include_str!("dashboard/core.js")),
    ("chart.js", include_str!("dashboard/chart.js")),
    ("list.js", include_str!("dashboard/list.js")),
    ("actions.js", include_str!("dashboard/actions.js")),
    ("detail.js", include_str!("dashboard/detail.js")),
    ("main.js", include_str!("dashboard/main.js")),
];

fn file(kind: &'static str, body: &'static str) -> Response {
    (
        [(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, CACHE)],
        body,
    )
        .into_response()
}

pub async fn index() -> Response {
    file(
        "text/html; charset=utf-8",
        include_str!("dashboard/index.html"),
    )
}

pub async fn style() -> Response {
    file(
        "text/css; charset=utf-8",
        include_str!("dashboard/style.css"),
    )
}

/// `GET /{name}.js`: one of [`SCRIPTS`].
pub async fn script(Path(name): Path<String>) -> Response {
    match SCRIPTS.iter().find(|(n, _)| *n == name) {
        Some((_, body)) => file("text/javascript; charset=utf-8", body),
        None => ApiError::not_found(&format!("dashboard file `{name}`")).into_response(),
    }
}
