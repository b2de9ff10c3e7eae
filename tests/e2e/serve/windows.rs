//! A host `[window]` pipeline through the service: no component to
//! upload, the same confinement and ceilings as any pipeline's, and its
//! state charged to the tenant's memory quota as a guest's keyed state is.

use serde_json::{Value, json};

use super::Server;
use super::attacks::{assert_refused, tenant_with};
use super::pipelines::{append_values, output, put};

const WINDOW: &str = r#"
[[source]]
type = "log"
path = "log"
topic = "in"
[window]
size = "10s"
MAX
[state]
key-field = "k"
[event-time]
field = "ts"
delay = "1s"
[sink.default]
type = "log"
path = "log"
topic = "out"
"#;

#[test]
fn a_tenant_counts_by_window_without_a_component_within_its_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let log = data.join("tenants/acme/log");
    // Keys a and b, one record a second for 30 s: the final watermark (29 s
    // - 1 s) closes the windows [0, 10 s) and [10 s, 20 s) of each key.
    let values: Vec<String> = (0..30)
        .flat_map(|i| ["a", "b"].map(|k| format!(r#"{{"k":"{k}","ts":{}}}"#, i * 1000)))
        .collect();
    append_values(&log, &values);
    let (status, body) = put(&s, &acme, "counts", &WINDOW.replace("MAX", ""));
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["component"], Value::Null, "{body}");
    let got = output(&log, 4);
    let row = |k: &str, start: u32| {
        format!(
            r#"{{"key":"{k}","start":{start},"end":{},"count":10}}"#,
            start + 10_000
        )
    };
    assert_eq!(
        got,
        [row("a", 0), row("a", 10_000), row("b", 0), row("b", 10_000)]
    );

    // The numbers a tenant sets: the service's ceiling on window state,
    // and the bound on the windows one record falls in.
    let mallory = s.tenant("mallory");
    for (max, needle) in [
        ("max-state = \"100000GiB\"", "window.max-state"),
        ("slide = \"1ms\"", "at most 100 are allowed"),
    ] {
        let text = WINDOW.replace("MAX", max);
        assert_refused(put(&s, &mallory, "hog", &text), 400, needle, &data);
    }

    // 20,000 keys open in one window hold about 2 MB of state: more than a
    // tenant with 1 MiB of memory may hold, whatever its max-state says.
    let tiny = tenant_with(&s, "tiny", json!({"max-memory": "1MiB"}));
    let keys: Vec<String> = (0..20_000)
        .map(|i| format!(r#"{{"k":"key-{i:05}","ts":1000}}"#))
        .collect();
    append_values(&data.join("tenants/tiny/log"), &keys);
    let (status, body) = put(&s, &tiny, "many", &WINDOW.replace("MAX", ""));
    assert_eq!(status, 201, "{body}");
    let v = s.wait_for(&tiny, "many", |v| {
        v["last-error"]
            .as_str()
            .is_some_and(|e| e.contains("reached its guest memory quota"))
    });
    assert!(
        v["last-error"].as_str().is_some_and(
            |e| e.contains("tenant `tiny` reached its guest memory quota of 1048576 bytes")
        ),
        "{v}"
    );
    // acme's pipeline is untouched by it.
    let (_, acme_view) = s.call("GET", "/v1/pipelines/counts", Some(&acme), None);
    assert_eq!(acme_view["state"], "running", "{acme_view}");
}
