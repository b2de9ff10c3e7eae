//! Tenancy the admin sets: the data quota (a tenant over it has its
//! pipelines stopped and cannot start more) and the Kafka broker allow-list.

use std::time::Duration;

use serde_json::json;

use super::pipelines::{append_values, put};
use super::{Body, Server};

#[test]
fn a_tenant_over_its_data_quota_is_stopped_and_refused_until_raised() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &["--quota-interval", "100ms"]);
    let (st, v) = s.call(
        "POST",
        "/v1/tenants",
        Some(&s.admin),
        Some(Body::Json(
            json!({"name": "acme", "max-data-bytes": "256KiB"}),
        )),
    );
    assert_eq!(st, 201, "{v}");
    let acme = v["token"].as_str().unwrap().to_string();
    let id = s.upload(&acme, "uppercase");
    let log = data.join("tenants/acme/log");
    weir_log::Topic::create(&log, "in", 2).unwrap();
    let spec = format!(
        "[[source]]\ntype = \"log\"\npath = \"log\"\ntopic = \"in\"\n[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"files\"\npath = \"out\"\n"
    );
    let (st, v) = put(&s, &acme, "fill", &spec);
    assert_eq!(st, 201, "{v}");
    // About 400 KiB of input (and as much output): over the quota.
    let big: Vec<String> = (0..400)
        .map(|i| format!("{i:04}{}", "x".repeat(1020)))
        .collect();
    append_values(&log, &big);
    let v = s.wait_for(&acme, "fill", |v| v["state"] == "failed");
    assert_eq!(v["state"], "failed", "{v}");
    let why = v["last-error"].as_str().unwrap();
    assert!(
        why.contains("max-data-bytes") && why.contains("acme"),
        "{why}"
    );
    let (st, v) = s.call("POST", "/v1/pipelines/fill/start", Some(&acme), None);
    assert_eq!(
        (st, v["error"].as_str()),
        (403, Some("quota-exceeded")),
        "{v}"
    );
    let (st, _) = put(&s, &acme, "another", &spec.replace("\"out\"", "\"out2\""));
    assert_eq!(st, 403);

    // Raised: the pipeline that should run starts again, from its checkpoint.
    let (st, v) = s.patch_tenant("acme", json!({"max-data-bytes": "64MiB"}));
    assert_eq!(
        (st, v["max-data-bytes"].as_u64()),
        (200, Some(64 << 20)),
        "{v}"
    );
    let v = s.wait_for(&acme, "fill", |v| v["state"] == "running");
    assert_eq!(v["state"], "running", "{v}");
    let started = std::time::Instant::now();
    loop {
        let out = weir_connectors::file_sink::read_committed(&data.join("tenants/acme/out"))
            .unwrap_or_default();
        if out.len() == 400 {
            let mut got: Vec<String> = out
                .into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect();
            got.sort();
            let mut want: Vec<String> = big.iter().map(|v| v.to_uppercase()).collect();
            want.sort();
            assert_eq!(got, want, "every record once");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{} records",
            out.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The pipeline-count quota refuses the same way.
    let (st, _) = s.patch_tenant("acme", json!({"max-pipelines": 1}));
    assert_eq!(st, 200);
    let (st, v) = put(&s, &acme, "another", &spec.replace("\"out\"", "\"out2\""));
    assert_eq!(
        (st, v["error"].as_str()),
        (403, Some("quota-exceeded")),
        "{v}"
    );
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("may have 1 pipeline"),
        "{v}"
    );
    // Only the admin sets quotas.
    let mut r = s
        .http
        .patch(format!("{}/v1/tenants/acme", s.base))
        .header("Authorization", &format!("Bearer {acme}"))
        .send_json(json!({"max-data-bytes": "1TiB"}))
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        403,
        "{}",
        r.body_mut().read_to_string().unwrap()
    );
    assert_eq!(s.patch_tenant("nobody", json!({})).0, 404);
    assert_eq!(
        s.patch_tenant("acme", json!({"max-data-bytes": "lots"})).0,
        400
    );
}

#[test]
fn kafka_brokers_and_properties_come_from_the_tenants_allow_list() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let id = s.upload(&acme, "uppercase");
    let spec = |servers: &str, extra: &str| {
        format!(
            "[[source]]\ntype = \"kafka\"\nbootstrap-servers = \"{servers}\"\ntopics = [\"in\"]\n{extra}[transform]\ncomponent = \"{id}\"\n[sink.default]\ntype = \"files\"\npath = \"out\"\n"
        )
    };
    let refused = |text: &str, why: &str| {
        let (st, v) = put(&s, &acme, "k", text);
        assert_eq!(st, 400, "{v}");
        assert!(v["detail"].as_str().unwrap().contains(why), "{v}");
    };
    refused(&spec("127.0.0.1:9092", ""), "may use no Kafka brokers");
    let (st, v) = s.patch_tenant("acme", json!({"kafka-brokers": ["127.0.0.1:9092"]}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["kafka-brokers"], json!(["127.0.0.1:9092"]));
    refused(
        &spec("127.0.0.1:9093", ""),
        "not on this tenant's allow-list",
    );
    refused(
        &spec(
            "127.0.0.1:9092",
            "[source.properties]\n\"ssl.key.location\" = \"/etc/shadow\"\n",
        ),
        "`ssl.key.location` is not allowed",
    );
    assert_eq!(
        s.patch_tenant("acme", json!({"kafka-brokers": ["no-port"]}))
            .0,
        400
    );
    assert_eq!(
        s.call("GET", "/v1/pipelines", Some(&acme), None).1,
        json!([])
    );
}
