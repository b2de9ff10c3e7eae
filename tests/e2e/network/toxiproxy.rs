//! A real Toxiproxy server (scripts/toxiproxy builds it from its Go
//! module), started by the test and driven over its HTTP API: proxies in
//! front of the broker or the object store, and toxics on them.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::testkit::{repo_root, tools_dir};

pub(crate) struct Toxiproxy {
    child: Child,
    api: String,
    http: ureq::Agent,
}

/// A port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Toxiproxy {
    pub(crate) fn start() -> Toxiproxy {
        let out = Command::new(repo_root().join("scripts/toxiproxy"))
            .env("WEIR_TOOLS_DIR", tools_dir())
            .output()
            .expect("running scripts/toxiproxy");
        assert!(
            out.status.success(),
            "building Toxiproxy: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let port = free_port();
        let child = Command::new(bin)
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting toxiproxy-server");
        let t = Toxiproxy {
            child,
            api: format!("http://127.0.0.1:{port}"),
            http: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
        };
        // Ready is an answer on its API port; nothing else tells.
        let deadline = Instant::now() + Duration::from_secs(20);
        while t.http.get(format!("{}/version", t.api)).call().is_err() {
            assert!(
                Instant::now() < deadline,
                "toxiproxy-server did not answer in 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        t
    }

    fn send(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}{path}", self.api);
        let mut resp = match (method, body) {
            ("DELETE", _) => self.http.delete(&url).call(),
            (_, Some(b)) => self.http.post(&url).send_json(&b),
            (_, None) => self.http.post(&url).send_empty(),
        }
        .unwrap_or_else(|e| panic!("toxiproxy {method} {path}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        assert!(status < 300, "toxiproxy {method} {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// A proxy `name` listening on `listen`, forwarding to `upstream`.
    pub(crate) fn proxy(&self, name: &str, listen: &str, upstream: &str) {
        self.send(
            "POST",
            "/proxies",
            Some(json!({"name": name, "listen": listen, "upstream": upstream, "enabled": true})),
        );
    }

    /// Toxic `kind` with `attributes` on both directions of `proxy`.
    pub(crate) fn toxic(&self, proxy: &str, kind: &str, attributes: Value) {
        for stream in ["upstream", "downstream"] {
            self.send(
                "POST",
                &format!("/proxies/{proxy}/toxics"),
                Some(json!({
                    "name": format!("{kind}-{stream}"),
                    "type": kind,
                    "stream": stream,
                    "toxicity": 1.0,
                    "attributes": attributes,
                })),
            );
        }
    }

    /// Remove toxic `kind` (both directions) from `proxy`.
    pub(crate) fn heal(&self, proxy: &str, kind: &str) {
        for stream in ["upstream", "downstream"] {
            self.send(
                "DELETE",
                &format!("/proxies/{proxy}/toxics/{kind}-{stream}"),
                None,
            );
        }
    }

    /// Cut the link (connections closed, new ones refused) or restore it.
    pub(crate) fn set_enabled(&self, proxy: &str, enabled: bool) {
        self.send(
            "POST",
            &format!("/proxies/{proxy}"),
            Some(json!({ "enabled": enabled })),
        );
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
