//! What a running pipeline reports through the API: progress since a batch,
//! guest logs (tail and followed as server-sent events), dead letters and
//! Prometheus metrics, each visible to its tenant only.

use std::time::Duration;

use serde_json::Value;

use super::Server;
use super::pipelines::{append_values, put};

const PIPELINE: &str = r#"
[[source]]
type = "log"
path = "log"
topic = "in"
[transform]
component = "COMPONENT"
on-error = "dead-letter"
[sink.default]
type = "log"
path = "log"
topic = "out"
[sink.dead-letter]
type = "log"
path = "log"
topic = "dead"
"#;

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn progress_logs_dead_letters_and_metrics_reach_their_tenant_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let acme = s.tenant("acme");
    let other = s.tenant("other");
    let spec = PIPELINE.replace("COMPONENT", &s.upload(&acme, "misbehave"));
    let log = data.join("tenants/acme/log");
    weir_log::Topic::create(&log, "in", 2).unwrap();
    let (st, v) = put(&s, &acme, "obs", &spec);
    assert_eq!(st, 201, "{v}");

    // Follow the logs before any data arrives: lines come as events.
    let rx = s.follow_logs(&acme, "obs", "&tail=0");
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(10)).unwrap(),
        "open 200"
    );

    let values = ["log", "ok", "bad", "log", "ok", "bad", "log", "ok", "ok"];
    append_values(&log, &values);
    let wait = |topic: &str, n: usize| {
        let started = std::time::Instant::now();
        while crate::testkit::topic_values(&log, topic)
            .unwrap_or_default()
            .len()
            < n
        {
            assert!(started.elapsed() < Duration::from_secs(30), "no {topic}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait("out", 7);
    // A trap in a batch of its own (the guard retries a trapped batch's
    // records one by one, so a guest's side effects there repeat).
    append_values(&log, &["panic"]);
    wait("dead", 3);

    // The followed stream carried the guest's lines as JSON events.
    let mut followed = 0;
    while followed < 3 {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("followed log lines");
        if let Some(data) = line.strip_prefix("data:") {
            let v: Value = serde_json::from_str(data.trim()).unwrap();
            if v["message"] == "log record seen" {
                assert!(v["guest"].as_str().unwrap().starts_with("acme/obs/"), "{v}");
                followed += 1;
            }
        }
    }
    let (st, lines) = s.call("GET", "/v1/pipelines/obs/logs?tail=50", Some(&acme), None);
    assert_eq!(st, 200, "{lines}");
    let seen = lines
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["message"] == "log record seen")
        .count();
    assert_eq!(seen, 3, "{lines}");

    // Dead letters: the two bad records and the trap, with their kinds.
    let (st, letters) = s.call("GET", "/v1/pipelines/obs/dead-letters", Some(&acme), None);
    assert_eq!(st, 200, "{letters}");
    let mut kinds: Vec<&str> = letters
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["error"]["kind"].as_str().unwrap())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["bad-record", "bad-record", "trap"], "{letters}");

    // Progress: every report since the start, and none after the last.
    let (st, reports) = s.call("GET", "/v1/pipelines/obs/progress", Some(&acme), None);
    assert_eq!(st, 200);
    let reports = reports.as_array().unwrap().clone();
    let input: u64 = reports
        .iter()
        .map(|p| p["numInputRows"].as_u64().unwrap())
        .sum();
    assert_eq!(input, 10);
    let last = reports.last().unwrap()["batchId"].as_u64().unwrap();
    let (_, after) = s.call(
        "GET",
        &format!("/v1/pipelines/obs/progress?since={last}"),
        Some(&acme),
        None,
    );
    assert_eq!(after, Value::Array(vec![]));

    // Prometheus text: the same counts, per kind; only the caller's tenant.
    let get_text = |token: Option<&str>| {
        let mut r = s.http.get(format!("{}/metrics", s.base));
        if let Some(t) = token {
            r = r.header("Authorization", &format!("Bearer {t}"));
        }
        let mut resp = r.call().unwrap();
        (
            resp.status().as_u16(),
            resp.body_mut().read_to_string().unwrap(),
        )
    };
    let (st, text) = get_text(Some(&acme));
    assert_eq!(st, 200);
    let p = r#"tenant="acme",pipeline="obs""#;
    assert_eq!(
        metric(&text, &format!("weir_input_rows_total{{{p}}}")),
        Some(10.0),
        "{text}"
    );
    // Three of the ten were dead-lettered: rejected, not output.
    assert_eq!(
        metric(&text, &format!("weir_output_rows_total{{{p}}}")),
        Some(7.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            &format!("weir_rejected_rows_total{{{p},kind=\"bad-record\"}}")
        ),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            &format!("weir_rejected_rows_total{{{p},kind=\"trap\"}}")
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            &format!("weir_guest_counter_total{{{p},name=\"logged\"}}")
        ),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, &format!("weir_pipeline_running{{{p}}}")),
        Some(1.0)
    );
    assert!(metric(&text, &format!("weir_guest_memory_bytes{{{p}}}")).unwrap() > 0.0);
    let (_, admin_text) = get_text(Some(&s.admin));
    assert!(admin_text.contains(p));
    let (_, theirs) = get_text(Some(&other));
    assert!(!theirs.contains("acme"), "{theirs}");
    assert_eq!(get_text(None).0, 401);

    // Another tenant: 404 on each, nothing shown.
    for path in ["progress", "logs", "dead-letters"] {
        let (st, v) = s.call(
            "GET",
            &format!("/v1/pipelines/obs/{path}"),
            Some(&other),
            None,
        );
        assert_eq!(st, 404, "{path}: {v}");
    }
    // Deleting the pipeline drops its series.
    assert_eq!(
        s.call("DELETE", "/v1/pipelines/obs", Some(&acme), None).0,
        204
    );
    assert!(!get_text(Some(&s.admin)).1.contains(p));
}
