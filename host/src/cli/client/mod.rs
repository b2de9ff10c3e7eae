//! The `weir serve` client commands (`weir deploy`, `ls`, `logs`, `stop`,
//! `start`, `rm`, `components`): thin wrappers over the HTTP API, for the
//! server at `--server` / `WEIR_SERVER` with the token in `WEIR_TOKEN`.

pub mod commands;

use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

pub use commands::{ComponentsArgs, DeployArgs, LogsArgs, LsArgs, NameArgs, RmArgs};

/// Where the server is and who is calling.
#[derive(clap::Args, Clone)]
pub struct Server {
    /// The weir server's URL.
    #[arg(long, env = "WEIR_SERVER", default_value = "http://127.0.0.1:7600")]
    server: String,
    /// The tenant's (or the admin's) token.
    #[arg(long, env = "WEIR_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

/// One API call's outcome: the status and the body.
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> anyhow::Result<Value> {
        serde_json::from_str(&self.body)
            .context("the server answered with something that is not JSON")
    }
}

impl Server {
    fn agent(&self, timeout: Option<Duration>) -> ureq::Agent {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(timeout)
            .build()
            .into()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.trim_end_matches('/'))
    }

    fn token(&self) -> anyhow::Result<&str> {
        self.token
            .as_deref()
            .context("no token: set WEIR_TOKEN (or --token) to the token your admin gave you")
    }

    /// Call the API; a refusal becomes the server's one-line detail.
    pub fn call(&self, method: &str, path: &str, body: Option<Body<'_>>) -> anyhow::Result<Answer> {
        let token = self.token()?;
        let auth = format!("Bearer {token}");
        let url = self.url(path);
        let agent = self.agent(Some(Duration::from_secs(120)));
        let sent = match (method, body) {
            ("GET", _) => agent.get(&url).header("Authorization", &auth).call(),
            ("DELETE", _) => agent.delete(&url).header("Authorization", &auth).call(),
            ("PUT", Some(Body::Text(t))) => agent.put(&url).header("Authorization", &auth).send(t),
            ("POST", Some(Body::Bytes(b))) => {
                agent.post(&url).header("Authorization", &auth).send(b)
            }
            _ => agent.post(&url).header("Authorization", &auth).send_empty(),
        };
        let mut resp = sent.map_err(|e| self.unreachable(e))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .unwrap_or_default();
        let answer = Answer { status, body };
        if status >= 400 {
            bail!("{}", refusal(&answer));
        }
        Ok(answer)
    }

    /// A GET whose body is read as it comes (server-sent events).
    pub fn stream(&self, path: &str) -> anyhow::Result<impl std::io::BufRead> {
        let auth = format!("Bearer {}", self.token()?);
        let mut resp = self
            .agent(None)
            .get(self.url(path))
            .header("Authorization", &auth)
            .call()
            .map_err(|e| self.unreachable(e))?;
        let status = resp.status().as_u16();
        if status >= 400 {
            let body = resp.body_mut().read_to_string().unwrap_or_default();
            bail!("{}", refusal(&Answer { status, body }));
        }
        Ok(std::io::BufReader::new(resp.into_body().into_reader()))
    }

    fn unreachable(&self, e: ureq::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "cannot reach the weir server at {}: {e} (start it with `weir serve`, or point --server / WEIR_SERVER at it)",
            self.server
        )
    }
}

pub enum Body<'a> {
    Text(&'a str),
    Bytes(&'a [u8]),
}

/// `the server refused (404 not-found): no pipeline `x``.
fn refusal(a: &Answer) -> String {
    match serde_json::from_str::<Value>(&a.body) {
        Ok(v) if v["detail"].is_string() => format!(
            "the server refused ({} {}): {}",
            a.status,
            v["error"].as_str().unwrap_or("error"),
            v["detail"].as_str().unwrap_or_default()
        ),
        _ => format!("the server refused ({}): {}", a.status, a.body.trim()),
    }
}
