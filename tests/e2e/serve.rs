//! `weir serve` through a real HTTP client against a spawned server: the
//! tenant and component life cycle, refused uploads that store nothing,
//! tenant isolation (another tenant's names answer 404 and change nothing),
//! and no raw token anywhere under the data directory.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use serde_json::{Value, json};

use crate::testkit::{guest, weir};

struct Server {
    child: Child,
    base: String,
    admin: String,
    http: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(data: &Path, extra: &[&str]) -> Server {
        Self::spawn(data, extra, None)
    }

    /// The same data directory again: the admin token exists already and
    /// is not printed.
    fn restart(data: &Path, admin: &str) -> Server {
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
    fn call(
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

    fn tenant(&self, name: &str) -> String {
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

enum Body {
    Json(Value),
    Bytes(Vec<u8>),
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
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

#[test]
fn tenants_and_components_life_cycle_with_isolation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    assert_eq!(
        s.call("GET", "/healthz", None, None),
        (200, json!({"status": "ok"}))
    );
    // No token, an unknown token, a tenant token on admin endpoints.
    let (st, v) = s.call("GET", "/v1/tenants", None, None);
    assert_eq!((st, v["error"].as_str()), (401, Some("unauthorized")));
    assert_eq!(s.call("GET", "/v1/tenants", Some("weir_nope"), None).0, 401);
    let acme = s.tenant("acme");
    let other = s.tenant("other");
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(json!({"name": "acme"}))),
    );
    assert_eq!((st, v["error"].as_str()), (409, Some("conflict")));
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(json!({"name": "Bad Name"}))),
    );
    assert_eq!(st, 400, "{v}");
    let (st, v) = s.call("GET", "/v1/tenants", Some(&acme), None);
    assert_eq!((st, v["error"].as_str()), (403, Some("forbidden")));
    let (st, v) = s.call("GET", "/v1/tenants", Some(&s.admin), None);
    assert_eq!(st, 200);
    assert_eq!(v.as_array().unwrap().len(), 2);

    // Upload: validated, content-addressed, idempotent.
    let bytes = std::fs::read(guest("uppercase")).unwrap();
    let id = weir::runtime::sha256_hex(&bytes);
    let (st, v) = s.call(
        "POST",
        "/v1/components",
        Some(&acme),
        Some(Body::Bytes(bytes.clone())),
    );
    assert_eq!(st, 201, "{v}");
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["world"], "transformer");
    assert!(
        v["exports"]
            .to_string()
            .contains("weir:transform/transform"),
        "{v}"
    );
    let (st, again) = s.call(
        "POST",
        "/v1/components",
        Some(&acme),
        Some(Body::Bytes(bytes.clone())),
    );
    assert_eq!((st, &again["id"]), (200, &v["id"]));
    assert!(data.join("components").join(format!("{id}.wasm")).exists());
    let path = format!("/v1/components/{id}");
    assert_eq!(s.call("GET", &path, Some(&acme), None).0, 200);
    // The admin is not a tenant.
    assert_eq!(s.call("GET", "/v1/components", Some(&s.admin), None).0, 403);

    // Another tenant sees nothing of acme's and changes nothing.
    let (st, v) = s.call("GET", &path, Some(&other), None);
    assert_eq!((st, v["error"].as_str()), (404, Some("not-found")));
    assert_eq!(s.call("DELETE", &path, Some(&other), None).0, 404);
    assert_eq!(
        s.call("GET", "/v1/components", Some(&other), None),
        (200, json!([]))
    );
    assert_eq!(
        s.call("GET", &path, Some(&acme), None).0,
        200,
        "still there"
    );

    // Rotating a token retires the old one.
    let (st, v) = s.call("POST", "/v1/tenants/other/token", Some(&s.admin), None);
    assert_eq!(st, 200);
    assert_eq!(s.call("GET", "/v1/components", Some(&other), None).0, 401);
    let other = v["token"].as_str().unwrap().to_string();
    assert_eq!(s.call("GET", "/v1/components", Some(&other), None).0, 200);

    // No raw token is stored anywhere under the data directory.
    for f in files_under(&data) {
        let content = std::fs::read(&f).unwrap();
        for t in [&s.admin, &acme, &other] {
            assert!(
                !content.windows(t.len()).any(|w| w == t.as_bytes()),
                "{} holds a raw token",
                f.display()
            );
        }
    }

    // Delete: the bytes go when no tenant has them.
    assert_eq!(s.call("DELETE", &path, Some(&acme), None).0, 204);
    assert_eq!(s.call("GET", &path, Some(&acme), None).0, 404);
    assert!(!data.join("components").join(format!("{id}.wasm")).exists());
    assert_eq!(
        s.call("DELETE", "/v1/tenants/other", Some(&s.admin), None)
            .0,
        204
    );
    assert_eq!(s.call("GET", "/v1/components", Some(&other), None).0, 401);
    assert_eq!(s.call("GET", "/v1/nothing", Some(&acme), None).0, 404);
}

#[test]
fn bad_uploads_are_refused_with_their_reason_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &["--max-component-size", "256KiB"]);
    let acme = s.tenant("acme");
    let upload = |bytes: Vec<u8>| {
        s.call(
            "POST",
            "/v1/components",
            Some(&acme),
            Some(Body::Bytes(bytes)),
        )
    };
    let (st, v) = upload(b"hello, I am text".to_vec());
    assert_eq!(
        (st, v["error"].as_str()),
        (400, Some("invalid-component")),
        "{v}"
    );
    let (st, v) = upload(wat::parse_str("(module (func (export \"f\")))").unwrap());
    assert_eq!(st, 400, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("core"), "{v}");
    let (st, v) = upload(std::fs::read(guest("not-a-transform")).unwrap());
    assert_eq!(st, 400, "{v}");
    assert!(
        !v["detail"].as_str().unwrap().contains("/tmp/"),
        "names the upload: {v}"
    );
    let (st, v) = upload(vec![0u8; 300 << 10]);
    assert_eq!((st, v["error"].as_str()), (413, Some("too-large")), "{v}");
    assert_eq!(
        s.call("GET", "/v1/components", Some(&acme), None),
        (200, json!([]))
    );
    assert!(files_under(&data.join("components")).is_empty());
    assert!(files_under(&data.join("tmp")).is_empty());
}

fn append(log: &Path, values: std::ops::Range<u32>) {
    let mut t = weir::log::Topic::open(log, "in")
        .or_else(|_| weir::log::Topic::create(log, "in", 2))
        .unwrap();
    let mut parts = vec![
        weir::engine::RecordBatch::new(0),
        weir::engine::RecordBatch::new(1),
    ];
    for i in values {
        parts[(i % 2) as usize].push(None, format!("v{i:05}").as_bytes(), 0, 0);
    }
    t.append(None, &parts, || {}).unwrap();
}

/// Wait until the output topic holds `n` values; return them sorted.
fn output(log: &Path, n: usize) -> Vec<String> {
    let started = std::time::Instant::now();
    loop {
        let mut got = crate::testkit::topic_values(log, "out").unwrap_or_default();
        if got.len() >= n || started.elapsed() > std::time::Duration::from_secs(30) {
            got.sort();
            return got;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn expected(n: u32) -> Vec<String> {
    (0..n).map(|i| format!("V{i:05}")).collect()
}

/// `PUT /v1/pipelines/{name}` with a TOML body.
fn put(s: &Server, token: &str, name: &str, text: &str) -> (u16, Value) {
    let url = format!("{}/v1/pipelines/{name}", s.base);
    let mut r = s
        .http
        .put(&url)
        .header("Authorization", &format!("Bearer {token}"))
        .send(text)
        .unwrap();
    let body = r.body_mut().read_to_string().unwrap_or_default();
    (
        r.status().as_u16(),
        serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
    )
}

const PIPELINE: &str = r#"
[[source]]
type = "log"
path = "log"
topic = "in"
[transform]
component = "COMPONENT"
[sink.default]
type = "log"
path = "log"
topic = "out"
partitions = 2
"#;

#[test]
fn pipelines_run_confined_stop_start_and_survive_a_sigkill_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let other = s.tenant("other");
    let bytes = std::fs::read(guest("uppercase")).unwrap();
    let (st, c) = s.call(
        "POST",
        "/v1/components",
        Some(&acme),
        Some(Body::Bytes(bytes)),
    );
    assert_eq!(st, 201, "{c}");
    let id = c["id"].as_str().unwrap().to_string();
    let spec = PIPELINE.replace("COMPONENT", &id);
    // Confinement: nothing outside the tenant's data, no Kafka, own components only.
    for (bad, why) in [
        (
            spec.replace(
                "path = \"log\"\ntopic = \"in\"",
                "path = \"../other/log\"\ntopic = \"in\"",
            ),
            "outside the tenant's data",
        ),
        (
            spec.replace(
                "path = \"log\"\ntopic = \"out\"",
                "path = \"/tmp\"\ntopic = \"out\"",
            ),
            "outside the tenant's data",
        ),
        (
            format!("checkpoint = \"/etc/x\"\n{spec}"),
            "outside the tenant's data",
        ),
        (spec.replace(&id, "0000"), "no component `0000`"),
    ] {
        let (st, v) = put(&s, &acme, "up", &bad);
        assert_eq!(st, 400, "{v}");
        assert!(v["detail"].as_str().unwrap().contains(why), "{v}");
    }
    let (st, v) = put(&s, &other, "up", &spec);
    assert_eq!(st, 400, "another tenant's component is not theirs: {v}");

    let log = data.join("tenants/acme/log");
    append(&log, 0..100);
    let (st, v) = put(&s, &acme, "up", &spec);
    assert_eq!(st, 201, "{v}");
    assert_eq!(output(&log, 100), expected(100));
    let (st, v) = s.call("GET", "/v1/pipelines/up", Some(&acme), None);
    assert_eq!((st, v["state"].as_str()), (200, Some("running")), "{v}");
    assert!(v["progress"]["batchId"].is_number(), "{v}");
    // Another tenant: 404 everywhere, nothing changes.
    assert_eq!(s.call("GET", "/v1/pipelines/up", Some(&other), None).0, 404);
    assert_eq!(
        s.call("POST", "/v1/pipelines/up/stop", Some(&other), None)
            .0,
        404
    );
    assert_eq!(
        s.call("DELETE", "/v1/pipelines/up", Some(&other), None).0,
        404
    );
    assert_eq!(
        s.call("GET", "/v1/pipelines", Some(&other), None),
        (200, json!([]))
    );
    // A component in use cannot be deleted.
    assert_eq!(
        s.call("DELETE", &format!("/v1/components/{id}"), Some(&acme), None)
            .0,
        409
    );

    // Stop, more input, start: it resumes from its checkpoint.
    let (st, v) = s.call("POST", "/v1/pipelines/up/stop", Some(&acme), None);
    assert_eq!((st, v["state"].as_str()), (200, Some("stopped")), "{v}");
    append(&log, 100..200);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(output(&log, 0).len(), 100, "stopped means stopped");
    assert_eq!(
        s.call("POST", "/v1/pipelines/up/start", Some(&acme), None)
            .0,
        200
    );
    assert_eq!(output(&log, 200), expected(200));

    // SIGKILL the service mid-run; a restart resumes the running pipeline,
    // and the output holds every record once.
    append(&log, 200..2000);
    let admin = s.admin.clone();
    drop(s);
    let s = Server::restart(&data, &admin);
    assert_eq!(output(&log, 2000), expected(2000));
    let list = s.call("GET", "/v1/pipelines", Some(&acme), None).1;
    assert_eq!(list[0]["state"], "running", "{list}");
    assert_eq!(
        s.call("DELETE", "/v1/pipelines/up?purge=true", Some(&acme), None)
            .0,
        204
    );
    assert!(!data.join("tenants/acme/checkpoints/up").exists());
    assert_eq!(s.call("GET", "/v1/pipelines/up", Some(&acme), None).0, 404);

    // Deleting a tenant stops its running pipelines.
    assert_eq!(put(&s, &acme, "again", &spec).0, 201);
    assert_eq!(
        s.call("DELETE", "/v1/tenants/acme", Some(&s.admin), None).0,
        204
    );
    let before = crate::testkit::topic_values(&log, "out").unwrap().len();
    append(&log, 2000..2100);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        crate::testkit::topic_values(&log, "out").unwrap().len(),
        before
    );
}
