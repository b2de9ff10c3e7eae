//! Pipelines through the API: confined to the tenant's data, stopped and
//! started from their checkpoint, resumed exactly once after a SIGKILL of
//! the server.

use std::path::Path;

use serde_json::{Value, json};

use super::{Body, Server};
use crate::testkit::guest;

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
