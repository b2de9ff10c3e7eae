//! What only the node running a pipeline holds (its guests' recent log
//! lines, its recent progress reports: memory, not the config topic) is
//! fetched from that node when another one is asked, so any node answers
//! every API call, as a Kafka Connect worker forwards to the one that
//! knows. The caller's own token goes along: the other node checks it
//! again. A forwarded request is never forwarded further.

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::Response;

use super::Cluster;
use crate::error::{ApiError, ApiResult};

/// Marks a request one node sent another.
const FORWARDED: &str = "weir-forwarded-by";

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // A followed log is a long answer: only its start is bounded.
            .read_timeout(Duration::from_secs(60))
            .build()
            .expect("an HTTP client without special settings builds")
    })
}

impl Cluster {
    /// The API of another live node running `tenant`'s `name`, when this
    /// node does not run it and the request was not forwarded already.
    fn runner_elsewhere(&self, tenant: &str, name: &str, headers: &HeaderMap) -> Option<String> {
        if headers.contains_key(FORWARDED) {
            return None;
        }
        let runners = self.board.runners(&format!("{tenant}/{name}"));
        if runners.iter().any(|(node, _)| node == self.node()) {
            return None;
        }
        let nodes = self.board.nodes();
        runners.iter().find_map(|(node, _)| {
            nodes
                .iter()
                .find(|(r, alive, _)| *alive && r.node == *node)
                .and_then(|(r, _, _)| r.url.clone())
        })
    }

    /// Ask the node running the pipeline, if another one does: its answer
    /// as it gave it (a followed log streams through).
    pub async fn forward(
        &self,
        tenant: &str,
        name: &str,
        headers: &HeaderMap,
        uri: &Uri,
    ) -> ApiResult<Option<Response>> {
        let Some(base) = self.runner_elsewhere(tenant, name, headers) else {
            return Ok(None);
        };
        let path = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
        let url = format!("{}{path}", base.trim_end_matches('/'));
        let mut request = client().get(&url).header(FORWARDED, self.node());
        if let Some(auth) = headers.get(header::AUTHORIZATION) {
            request = request.header(header::AUTHORIZATION, auth);
        }
        let unreachable = |e: reqwest::Error| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "unavailable",
                format!("the node running pipeline `{name}` did not answer: {e}"),
            )
        };
        let mut answer = request.send().await.map_err(unreachable)?;
        let mut response = Response::builder().status(answer.status().as_u16());
        for h in [header::CONTENT_TYPE, header::CACHE_CONTROL] {
            if let Some(v) = answer.headers().get(&h) {
                response = response.header(h, v);
            }
        }
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, reqwest::Error>>(16);
        tokio::spawn(async move {
            loop {
                let chunk = answer.chunk().await.transpose();
                let Some(chunk) = chunk else { return };
                let failed = chunk.is_err();
                if tx.send(chunk).await.is_err() || failed {
                    return;
                }
            }
        });
        let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
        response.body(body).map(Some).map_err(ApiError::internal)
    }
}
