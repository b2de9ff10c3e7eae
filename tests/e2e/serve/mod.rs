//! `weir serve` through a real HTTP client (ureq) against a spawned server.
//! The harness: start or restart a server on a free port, call it, read
//! the JSON answer.

pub(crate) mod attacks;
mod browser;
mod client;
mod components;
mod dashboard;
mod idle;
pub(crate) mod pipelines;
mod replay;
mod reports;
mod tenancy;
mod upgrade;
mod windows;

use std::path::Path;

use serde_json::{Value, json};

/// The spawned server (its `base` address and `admin` token through
/// `Deref`) and an HTTP client for it.
pub(crate) struct Server {
    serve: crate::testkit::Serve,
    pub(crate) http: ureq::Agent,
}

impl std::ops::Deref for Server {
    type Target = crate::testkit::Serve;
    fn deref(&self) -> &Self::Target {
        &self.serve
    }
}

impl std::ops::DerefMut for Server {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.serve
    }
}

impl Server {
    pub(crate) fn start(data: &Path, extra: &[&str]) -> Server {
        Self::spawn(data, extra, None)
    }

    /// The same data directory again: the admin token exists already and
    /// is not printed.
    pub(crate) fn restart(data: &Path, admin: &str) -> Server {
        Self::spawn(data, &[], Some(admin))
    }

    fn spawn(data: &Path, extra: &[&str], admin: Option<&str>) -> Server {
        Self::wrap(crate::testkit::Serve::spawn(data, extra, admin))
    }

    /// A server with extra environment variables, started in `cwd`.
    pub(crate) fn start_with(
        data: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
        cwd: Option<&Path>,
    ) -> Server {
        Self::wrap(crate::testkit::Serve::spawn_with(
            data, extra, None, env, cwd,
        ))
    }

    /// A spawned server with the client (the cluster tests spawn theirs
    /// with their own arguments, environment and admin token).
    pub(crate) fn wrap(serve: crate::testkit::Serve) -> Server {
        Server {
            serve,
            http: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
        }
    }

    /// `token`'s pipeline `name`'s log followed (`?follow=true` and
    /// `extra`), read on a thread of its own: `open <status>` first, then
    /// each line of the stream, then `ended`.
    pub(crate) fn follow_logs(
        &self,
        token: &str,
        name: &str,
        extra: &str,
    ) -> std::sync::mpsc::Receiver<String> {
        use std::io::BufRead as _;
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let url = format!("{}/v1/pipelines/{name}/logs?follow=true{extra}", self.base);
        let auth = format!("Bearer {token}");
        let http = self.http.clone();
        std::thread::spawn(move || {
            let resp = http
                .get(&url)
                .header("Authorization", &auth)
                .call()
                .unwrap();
            let _ = tx.send(format!("open {}", resp.status().as_u16()));
            let reader = std::io::BufReader::new(resp.into_body().into_reader());
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    return;
                }
            }
            let _ = tx.send("ended".into());
        });
        rx
    }

    /// (status, JSON body or null).
    /// `GET /metrics` as `token` sees it (the Prometheus text).
    pub(crate) fn metrics(&self, token: &str) -> String {
        let r = self
            .http
            .get(format!("{}/metrics", self.base))
            .header("Authorization", &format!("Bearer {token}"))
            .call();
        r.unwrap().body_mut().read_to_string().unwrap()
    }

    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Body>,
    ) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut resp = match (method, body) {
            ("GET" | "DELETE", None) => {
                let mut r = if method == "GET" {
                    self.http.get(&url)
                } else {
                    self.http.delete(&url)
                };
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call().unwrap()
            }
            (_, body) => {
                let mut r = self.http.post(&url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                match body {
                    Some(Body::Json(v)) => r.send_json(&v).unwrap(),
                    Some(Body::Bytes(b)) => r.send(&b[..]).unwrap(),
                    None => r.send_empty().unwrap(),
                }
            }
        };
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Upload the test guest `guest` as `token`'s tenant; its id.
    pub(crate) fn upload(&self, token: &str, guest: &str) -> String {
        let bytes = std::fs::read(crate::testkit::guest(guest)).unwrap();
        let (st, c) = self.call(
            "POST",
            "/v1/components",
            Some(token),
            Some(Body::Bytes(bytes)),
        );
        assert_eq!(st, 201, "{c}");
        c["id"].as_str().unwrap().to_string()
    }

    /// Wait (at most a minute) until `token`'s pipeline `name` has
    /// committed batch (epoch) `n`.
    pub(crate) fn wait_committed(&self, token: &str, name: &str, n: u64) {
        let started = std::time::Instant::now();
        let path = format!("/v1/pipelines/{name}");
        while self.call("GET", &path, Some(token), None).1["checkpoint"]["last-committed"]
            .as_u64()
            .is_none_or(|c| c < n)
        {
            assert!(
                started.elapsed().as_secs() < 60,
                "{name} did not commit {n}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// `PATCH /v1/tenants/{tenant}` as the admin.
    pub(crate) fn patch_tenant(&self, tenant: &str, body: Value) -> (u16, Value) {
        let mut r = self
            .http
            .patch(format!("{}/v1/tenants/{tenant}", self.base))
            .header("Authorization", &format!("Bearer {}", self.admin))
            .send_json(&body)
            .unwrap();
        let text = r.body_mut().read_to_string().unwrap_or_default();
        (
            r.status().as_u16(),
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }

    /// Poll `token`'s pipeline `name` until `pred` holds (20 s at most);
    /// its last view.
    pub(crate) fn wait_for(&self, token: &str, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let started = std::time::Instant::now();
        loop {
            let v = self
                .call("GET", &format!("/v1/pipelines/{name}"), Some(token), None)
                .1;
            if pred(&v) || started.elapsed() > std::time::Duration::from_secs(20) {
                return v;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub(crate) fn tenant(&self, name: &str) -> String {
        let (s, v) = self.call(
            "POST",
            "/v1/tenants",
            Some(&self.admin),
            Some(Body::Json(json!({"name": name}))),
        );
        assert_eq!(s, 201, "{v}");
        v["token"].as_str().unwrap().to_string()
    }
}

pub(crate) enum Body {
    Json(Value),
    Bytes(Vec<u8>),
}

pub(crate) fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
