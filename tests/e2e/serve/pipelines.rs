//! Pipelines through the API: confined to the tenant's data, hidden from
//! other tenants, stopped and started from their checkpoint, resumed exactly
//! once after a SIGKILL of the server, gone with their tenant. One test per
//! promise, so one failure does not hide the rest.

use std::path::Path;

use serde_json::{Value, json};

use super::Server;

fn append(log: &Path, values: std::ops::Range<u32>) {
    let values: Vec<String> = values.map(|i| format!("v{i:05}")).collect();
    append_values(log, &values);
}

/// Append `values` to the tenant's 2-partition topic `in`, alternating.
pub(crate) fn append_values(log: &Path, values: &[impl AsRef<str>]) {
    append_values_at(log, values, 0);
}

/// [`append_values`] with event time `timestamp` (ms) on every record.
pub(crate) fn append_values_at(log: &Path, values: &[impl AsRef<str>], timestamp: i64) {
    let mut t = weir_log::Topic::open(log, "in")
        .or_else(|_| weir_log::Topic::create(log, "in", 2))
        .unwrap();
    let mut parts = vec![
        weir_engine::RecordBatch::new(0),
        weir_engine::RecordBatch::new(1),
    ];
    for (i, v) in values.iter().enumerate() {
        parts[i % 2].push(None, v.as_ref().as_bytes(), timestamp, 0);
    }
    t.append(None, &parts, || {}).unwrap();
}

/// Wait until the output topic holds `n` values; return them sorted.
pub(crate) fn output(log: &Path, n: usize) -> Vec<String> {
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
pub(crate) fn put(s: &Server, token: &str, name: &str, text: &str) -> (u16, Value) {
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

/// A tenant's `in` uppercased into `out` (also the attack suite's victim).
pub(crate) const PIPELINE: &str = r#"
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

/// A running server with tenant `acme` (and `other`), acme's uppercase
/// component and the pipeline file using it.
struct Running {
    dir: tempfile::TempDir,
    s: Server,
    acme: String,
    other: String,
    id: String,
    spec: String,
}

impl Running {
    fn start() -> Running {
        let dir = tempfile::tempdir().unwrap();
        let s = Server::start(&dir.path().join("data"), &[]);
        let acme = s.tenant("acme");
        let other = s.tenant("other");
        let id = s.upload(&acme, "uppercase");
        let spec = PIPELINE.replace("COMPONENT", &id);
        Running {
            dir,
            s,
            acme,
            other,
            id,
            spec,
        }
    }

    fn data(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    /// acme's embedded log.
    fn log(&self) -> std::path::PathBuf {
        self.data().join("tenants/acme/log")
    }

    /// acme's pipeline `up` running over 100 records, their output there.
    fn up(&self) {
        append(&self.log(), 0..100);
        let (st, v) = put(&self.s, &self.acme, "up", &self.spec);
        assert_eq!(st, 201, "{v}");
        assert_eq!(output(&self.log(), 100), expected(100));
    }
}

#[test]
fn a_pipeline_file_reaching_outside_its_tenant_is_refused() {
    let r = Running::start();
    let (spec, id) = (&r.spec, &r.id);
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
        (spec.replace(id, "0000"), "no component `0000`"),
    ] {
        let (st, v) = put(&r.s, &r.acme, "up", &bad);
        assert_eq!(st, 400, "{v}");
        assert!(v["detail"].as_str().unwrap().contains(why), "{v}");
    }
    let (st, v) = put(&r.s, &r.other, "up", spec);
    assert_eq!(st, 400, "another tenant's component is not theirs: {v}");
}

#[test]
fn another_tenant_cannot_see_or_touch_a_running_pipeline() {
    let r = Running::start();
    r.up();
    let (s, acme, other) = (&r.s, &r.acme, &r.other);
    // A batch's progress report follows its output (it is sent once the
    // batch has committed), so it may take a moment to show.
    let v = s.wait_for(acme, "up", |v| v["progress"]["batchId"].is_number());
    assert_eq!(v["state"].as_str(), Some("running"), "{v}");
    assert_eq!(s.call("GET", "/v1/pipelines/up", Some(other), None).0, 404);
    assert_eq!(
        s.call("DELETE", "/v1/pipelines/up", Some(other), None).0,
        404
    );
    for path in ["/v1/pipelines/up/start", "/v1/pipelines/up/stop"] {
        assert_eq!(s.call("POST", path, Some(other), None).0, 404, "{path}");
    }
    assert_eq!(
        s.call("GET", "/v1/pipelines", Some(other), None),
        (200, json!([]))
    );
    assert_eq!(
        s.call("GET", "/v1/pipelines/up", Some(acme), None).1["state"],
        "running",
        "the owner's pipeline runs on"
    );
    // A component in use cannot be deleted.
    assert_eq!(
        s.call(
            "DELETE",
            &format!("/v1/components/{}", r.id),
            Some(acme),
            None
        )
        .0,
        409
    );
}

#[test]
fn a_stopped_pipeline_writes_nothing_and_resumes_from_its_checkpoint() {
    let r = Running::start();
    r.up();
    let (s, acme, log) = (&r.s, &r.acme, r.log());
    let (st, v) = s.call("POST", "/v1/pipelines/up/stop", Some(acme), None);
    assert_eq!((st, v["state"].as_str()), (200, Some("stopped")), "{v}");
    append(&log, 100..200);
    // Nothing to wait for: a stopped pipeline must not act in this time.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(output(&log, 0).len(), 100, "stopped means stopped");
    assert_eq!(
        s.call("POST", "/v1/pipelines/up/start", Some(acme), None).0,
        200
    );
    assert_eq!(output(&log, 200), expected(200));
}

#[test]
fn a_sigkilled_server_resumes_its_pipelines_exactly_once_and_purge_deletes_the_checkpoint() {
    let Running {
        dir, s, acme, spec, ..
    } = Running::start();
    let data = dir.path().join("data");
    let log = data.join("tenants/acme/log");
    append(&log, 0..100);
    assert_eq!(put(&s, &acme, "up", &spec).0, 201);
    // SIGKILL the service mid-run; a restart resumes the running pipeline,
    // and the output holds every record once.
    append(&log, 100..2000);
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
}

#[test]
fn deleting_a_tenant_stops_its_pipelines_and_removes_its_data() {
    let r = Running::start();
    r.up();
    assert_eq!(
        r.s.call("DELETE", "/v1/tenants/acme", Some(&r.s.admin), None)
            .0,
        204
    );
    let root = r.data().join("tenants/acme");
    assert!(!root.exists());
    // Nothing to wait for: a stopped pipeline must not write again.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!root.exists(), "a deleted tenant's pipeline wrote again");
}

#[test]
fn a_failing_sink_is_retried_with_backoff_and_a_bad_record_is_final() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let id = s.upload(&acme, "uppercase");
    let spec = PIPELINE.replace("COMPONENT", &id).replace(
        "type = \"log\"\npath = \"log\"\ntopic = \"out\"\npartitions = 2",
        "type = \"files\"\npath = \"out\"",
    );
    let root = data.join("tenants/acme");
    let log = root.join("log");
    append(&log, 0..100);
    assert_eq!(put(&s, &acme, "up", &spec).0, 201);
    let committed = |n: usize| {
        let started = std::time::Instant::now();
        loop {
            let got =
                weir_connectors::file_sink::read_committed(&root.join("out")).unwrap_or_default();
            if got.len() >= n || started.elapsed() > std::time::Duration::from_secs(20) {
                let mut got: Vec<String> = got
                    .into_iter()
                    .map(|l| String::from_utf8(l).unwrap())
                    .collect();
                got.sort();
                return got;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    };
    assert_eq!(committed(100), expected(100));
    // The sink's manifest directory becomes a file: every batch now fails.
    let manifests = root.join("out/_weir/manifest");
    std::fs::rename(&manifests, root.join("out/_weir/manifest.bak")).unwrap();
    std::fs::write(&manifests, b"in the way").unwrap();
    append(&log, 100..200);
    let v = s.wait_for(&acme, "up", |v| v["restarts"].as_u64().unwrap_or(0) >= 2);
    assert_eq!(v["state"], "restarting", "{v}");
    assert!(
        v["last-error"].as_str().unwrap().contains("manifest"),
        "{v}"
    );
    // Fixed: the next restart resumes from the checkpoint, exactly once.
    std::fs::remove_file(&manifests).unwrap();
    std::fs::rename(root.join("out/_weir/manifest.bak"), &manifests).unwrap();
    assert_eq!(committed(200), expected(200));
    let v = s.wait_for(&acme, "up", |v| v["state"] == "running");
    assert_eq!(v["state"], "running", "{v}");

    // A record the error policy says to stop at: failed for good, no restarts.
    let failing = format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\non-error = \"fail\"\n[transform.limits]\nmax-record-size = \"4B\"\n[sink.default]\ntype = \"files\"\npath = \"out2\"\n"
    );
    append(&log, 200..201);
    let (st, v) = put(&s, &acme, "strict", &failing);
    assert_eq!(st, 201, "{v}");
    let v = s.wait_for(&acme, "strict", |v| v["state"] == "failed");
    assert_eq!(v["state"], "failed", "{v}");
    assert_eq!(v["restarts"], 0, "{v}");
    assert!(
        v["last-error"].as_str().unwrap().contains("bad record"),
        "{v}"
    );
}
