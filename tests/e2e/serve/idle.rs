//! Idle pipelines hold no thread: two tenants' forty pipelines park until
//! their topics' next commit wakes them, the server's thread count stays
//! the same whatever the count, and a stop reaches a parked pipeline at
//! once.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Server;
use super::attacks::tenant_with;
use super::pipelines::{PIPELINE, put};

const PER_TENANT: usize = 20;

fn spec(id: &str, p: usize) -> String {
    PIPELINE
        .replace("COMPONENT", id)
        .replace("topic = \"in\"", &format!("topic = \"in{p}\""))
        .replace("topic = \"out\"", &format!("topic = \"out{p}\""))
}

fn append(log: &Path, topic: &str, value: &str) {
    let mut t = weir_log::Topic::open(log, topic)
        .or_else(|_| weir_log::Topic::create(log, topic, 1))
        .unwrap();
    let mut b = weir_engine::RecordBatch::new(0);
    b.push(None, value.as_bytes(), 0, 0);
    t.append(None, &[b], || {}).unwrap();
}

fn threads(s: &Server) -> u64 {
    crate::testkit::process_usage(s.pid()).threads
}

#[test]
fn idle_pipelines_park_without_threads_and_wake_on_their_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let s = Server::start(&data, &[]);
    let before = threads(&s);
    let mut tenants = Vec::new();
    for name in ["acme", "bravo"] {
        let token = tenant_with(&s, name, serde_json::json!({"max-pipelines": PER_TENANT}));
        let id = s.upload(&token, "uppercase");
        let log = data.join(format!("tenants/{name}/log"));
        for p in 0..PER_TENANT {
            append(&log, &format!("in{p}"), "first");
            let (st, v) = put(&s, &token, &format!("p{p}"), &spec(&id, p));
            assert_eq!(st, 201, "{v}");
        }
        tenants.push((token, log));
    }
    // Every pipeline ran its first record, then parked.
    let outputs = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        for (_, log) in &tenants {
            for p in 0..PER_TENANT {
                let out = format!("out{p}");
                while crate::testkit::topic_values(log, &out)
                    .unwrap_or_default()
                    .len()
                    < n
                {
                    assert!(Instant::now() < deadline, "{} {out}", log.display());
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    };
    outputs(1);
    // Forty pipelines (three threads each before they parked): the
    // server holds a few threads per tenant at most.
    let parked = threads(&s);
    assert!(
        parked <= before + 8,
        "{parked} threads with 40 idle pipelines ({before} before any)"
    );
    for (_, log) in &tenants {
        for p in 0..PER_TENANT {
            append(log, &format!("in{p}"), "second");
        }
    }
    outputs(2);
    let (_, log) = &tenants[0];
    assert_eq!(
        crate::testkit::topic_values(log, "out7").unwrap(),
        ["FIRST", "SECOND"]
    );
    // A stop wakes a parked pipeline: it ends at once, not after the
    // stop's grace.
    let (token, _) = &tenants[1];
    let started = Instant::now();
    let (st, v) = s.call("POST", "/v1/pipelines/p3/stop", Some(token), None);
    assert_eq!(st, 200, "{v}");
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    let v = s.wait_for(token, "p3", |v| v["state"] == "stopped");
    assert_eq!(v["state"], "stopped", "{v}");
    assert!(threads(&s) <= before + 8);
}
