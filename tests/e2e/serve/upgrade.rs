//! Replacing a stateful pipeline's component through the API: refused
//! without `?upgrade=true` (the old spec keeps running), swapped with it.

use serde_json::Value;

use super::Server;
use super::pipelines::put;

fn put_with(s: &Server, token: &str, path: &str, text: &str) -> (u16, Value) {
    let mut r = s
        .http
        .put(format!("{}/v1/pipelines/{path}", s.base))
        .header("Authorization", &format!("Bearer {token}"))
        .send(text)
        .unwrap();
    let body = r.body_mut().read_to_string().unwrap_or_default();
    (
        r.status().as_u16(),
        serde_json::from_str(&body).unwrap_or(Value::Null),
    )
}

#[test]
fn a_stateful_component_swap_needs_upgrade_and_keeps_the_old_one_running_until_then() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let dedup = s.upload(&acme, "dedup");
    let counts = s.upload(&acme, "window-count");
    let log = data.join("tenants/acme/log");
    weir_log::Topic::create(&log, "in", 2).unwrap();
    let spec = |id: &str| {
        format!(
            "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[state]\nkey-field = \"id\"\n[transform]\ncomponent = \"{id}\"\n[transform.config]\nkey-field = \"id\"\n[sink.default]\ntype = \"files\"\npath = \"out\"\n"
        )
    };
    let (st, v) = put(&s, &acme, "keyed", &spec(&dedup));
    assert_eq!(st, 201, "{v}");
    let (st, v) = put(&s, &acme, "keyed", &spec(&counts));
    assert_eq!(st, 400, "{v}");
    let why = v["detail"].as_str().unwrap();
    assert!(why.contains("?upgrade=true"), "{why}");
    let (_, v) = s.call("GET", "/v1/pipelines/keyed", Some(&acme), None);
    assert_eq!(
        (v["state"].as_str(), v["component"].as_str()),
        (Some("running"), Some(dedup.as_str())),
        "{v}"
    );
    let (st, v) = put_with(&s, &acme, "keyed?upgrade=true", &spec(&counts));
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["state"].as_str(), v["component"].as_str()),
        (Some("running"), Some(counts.as_str())),
        "{v}"
    );
    assert_eq!(
        put_with(&s, &acme, "keyed?upgrade=maybe", &spec(&counts)).0,
        400
    );
}
