//! The dashboard: three static files compiled into the binary (no build
//! step, nothing fetched from elsewhere), served at `/`. The page talks
//! only to the `/v1` API with the token the user logs in with.

use axum::http::header;
use axum::response::IntoResponse;

const INDEX: &str = include_str!("dashboard/index.html");
const APP: &str = include_str!("dashboard/app.js");
const STYLE: &str = include_str!("dashboard/style.css");

/// Revalidated on every load: the files change with the binary.
const CACHE: &str = "no-cache";

pub async fn index() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        INDEX,
    )
}

pub async fn app() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        APP,
    )
}

pub async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        STYLE,
    )
}
