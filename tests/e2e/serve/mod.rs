//! `weir serve` through a real HTTP client (ureq) against a spawned server.
//! The harness: start or restart a server on a free port, call it, read
//! the JSON answer.

mod client;
mod components;
mod pipelines;
mod reports;
mod tenancy;
mod upgrade;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use serde_json::{Value, json};

use crate::testkit::weir;

pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
    pub(crate) admin: String,
    pub(crate) http: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
        let mut child = weir()
            .arg("serve")
            .arg("--data")
            .arg(data)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let admin = match admin {
            Some(a) => a.to_string(),
            None => {
                let mut line = String::new();
                BufReader::new(child.stdout.take().unwrap())
                    .read_line(&mut line)
                    .unwrap();
                line
            }
        };
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("serve exited before listening")
                .unwrap();
            if let Some(addr) = line.strip_prefix("weir serve: listening on ") {
                break addr.trim().to_string();
            }
        };
        // Keep draining the server's log so it never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        let http: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Server {
            child,
            base,
            admin: admin.trim().to_string(),
            http,
        }
    }

    /// (status, JSON body or null).
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
